package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// errExited marks a start failure caused by a component exiting, which on a
// busy machine is usually a port taken between freePorts and the bind.
type errExited struct{ err error }

func (e errExited) Error() string { return e.err.Error() }
func (e errExited) Unwrap() error { return e.err }

// waitFor polls check every 200ms until it returns nil, ctx ends, or one of
// the watched processes exits (then there is no point in waiting further).
func waitFor(ctx context.Context, what string, watched []*Process, check func(context.Context) error) error {
	var last error
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range watched {
			if gone, err := p.Exited(); gone {
				return errExited{fmt.Errorf("waiting for %s: %w (see %s)", what, err, p.LogPath())}
			}
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// httpOK returns a check that GETs url and expects 200. The components'
// health endpoints are served on loopback with self-signed certificates, and
// only health is read from them, so the certificate is not verified.
func httpOK(url string) func(context.Context) error {
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// apiserverReady asks /readyz, which only succeeds once every post-start
// hook (RBAC bootstrap roles, priority classes, ...) has finished.
func apiserverReady(cs kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s", err, body)
		}
		return nil
	}
}

// nodesReady checks that the nodes report Ready and have lost the
// not-ready taint the node lifecycle controller puts on new nodes (the
// scheduler would not place pods there before).
func nodesReady(cs kubernetes.Interface, names []string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, name := range names {
			node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			ready := false
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = true
				}
			}
			if !ready {
				return fmt.Errorf("node %s is not Ready yet", node.Name)
			}
			for _, t := range node.Spec.Taints {
				if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
					return fmt.Errorf("node %s still has taint %s", node.Name, t.Key)
				}
			}
		}
		return nil
	}
}

// WaitForDefaultServiceAccount waits until the service-account controller
// has created the "default" ServiceAccount of namespace ns. Pods created in a
// namespace before that are rejected by the ServiceAccount admission plugin,
// so tests creating a namespace should wait for it.
func WaitForDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return waitFor(ctx, "service account "+ns+"/default", nil, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}
