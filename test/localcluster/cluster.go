package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Cluster is a running local cluster. Its methods are safe for concurrent use.
type Cluster struct {
	opts        Options
	workDir     string
	ownsWorkDir bool
	pki         *pki
	ports       clusterPorts
	admin       *rest.Config
	// node is the real node, when Options.RealNode is set.
	node *realNode
	// dns is the real node's cluster DNS (dns.go).
	dns net.PacketConn
	// etcdProxy, with Options.EtcdLatencyProxy, is how kube-apiserver
	// reaches etcd (etcdproxy.go).
	etcdProxy *latencyProxy

	mu      sync.Mutex
	procs   []*Process // in start order
	stopped bool
}

// startAttempts bounds the retries when a component loses its port to
// another process between freePorts and its own bind.
const startAttempts = 3

// Start starts etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, registers opts.Nodes fake Nodes, and returns once
// the Nodes are Ready and the "default" ServiceAccount exists, so pods can be
// created right away. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts.setDefaults()
	if opts.BinDir == "" {
		return nil, errors.New("localcluster: Options.BinDir is required")
	}
	if opts.Nodes > 100 {
		return nil, fmt.Errorf("localcluster: at most 100 nodes, got %d", opts.Nodes)
	}
	bin, err := filepath.Abs(opts.BinDir)
	if err != nil {
		return nil, err
	}
	opts.BinDir = bin

	c := &Cluster{opts: opts, workDir: opts.WorkDir}
	if c.workDir == "" {
		if c.workDir, err = os.MkdirTemp("", "localcluster-"); err != nil {
			return nil, err
		}
		c.ownsWorkDir = true
	} else if c.workDir, err = filepath.Abs(c.workDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		return nil, err
	}
	if c.pki, err = newPKI(filepath.Join(c.workDir, "pki")); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("localcluster: generating certificates: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	began := time.Now()
	for attempt := 1; ; attempt++ {
		err = c.start(ctx)
		if err == nil {
			break
		}
		// A failed attempt's processes must go before the next one takes
		// new ports; what they say on the way out changes nothing.
		if c.node != nil {
			_ = cleanupHost(c.logf)
		}
		_ = c.stopProcesses()
		var exited errExited
		if !errors.As(err, &exited) || attempt == startAttempts || ctx.Err() != nil {
			_ = c.Stop()
			return nil, fmt.Errorf("localcluster: %w", err)
		}
		c.logf("start failed (%v); retrying with new ports", err)
	}
	c.logf("cluster ready in %s: %d nodes, API server %s, logs in %s",
		time.Since(began).Round(time.Second), len(c.nodeNames()), c.admin.Host, c.LogDir())
	return c, nil
}

// start runs one attempt at starting every component.
func (c *Cluster) start(ctx context.Context) error {
	var err error
	if c.ports, err = pickPorts(); err != nil {
		return err
	}
	if c.opts.RealNode != nil {
		if err := c.prepareRealNode(); err != nil {
			return err
		}
	}
	// A failed attempt may have left a half-initialised member behind.
	if err := os.RemoveAll(filepath.Join(c.workDir, "etcd")); err != nil {
		return err
	}
	if err := c.writeKubeconfigs(); err != nil {
		return err
	}
	admin, err := c.adminClientset()
	if err != nil {
		return err
	}

	etcd, err := c.run(ctx, "etcd", c.etcdArgs(), nil)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "etcd", []*Process{etcd},
		httpOK(fmt.Sprintf("http://127.0.0.1:%d/health", c.ports.etcdClient))); err != nil {
		return err
	}
	if c.opts.EtcdLatencyProxy {
		if c.etcdProxy != nil { // from a failed attempt
			c.etcdProxy.close()
		}
		if c.etcdProxy, err = startLatencyProxy(fmt.Sprintf("127.0.0.1:%d", c.ports.etcdClient)); err != nil {
			return err
		}
	}

	args, err := c.apiserverArgs()
	if err != nil {
		return err
	}
	apiserver, err := c.run(ctx, "kube-apiserver", args, nil)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "kube-apiserver", []*Process{etcd, apiserver}, apiserverReady(admin)); err != nil {
		return err
	}

	kcm, err := c.run(ctx, "kube-controller-manager", c.controllerManagerArgs(), nil)
	if err != nil {
		return err
	}
	if args, err = c.schedulerArgs(); err != nil {
		return err
	}
	scheduler, err := c.run(ctx, "kube-scheduler", args, nil)
	if err != nil {
		return err
	}
	all := []*Process{etcd, apiserver, kcm, scheduler}
	checks := []struct {
		name string
		port int
		tls  bool
	}{{"kube-controller-manager", c.ports.controllerManager, true}, {"kube-scheduler", c.ports.scheduler, true}}
	if c.opts.RealNode == nil {
		if c.opts.Registry {
			if err := c.startRegistry(ctx); err != nil {
				return err
			}
		}
		if args, err = c.kwokArgs(); err != nil {
			return err
		}
		env, err := c.kwokEnv()
		if err != nil {
			return err
		}
		kwok, err := c.run(ctx, "kwok", args, env)
		if err != nil {
			return err
		}
		all = append(all, kwok)
		checks = append(checks, struct {
			name string
			port int
			tls  bool
		}{"kwok", c.ports.kwok, false})
	} else {
		if err := c.startRealNode(ctx); err != nil {
			return err
		}
		all = append(all, c.Component("containerd"), c.Component("kubelet"), c.Component("kube-proxy"))
		checks = append(checks, struct {
			name string
			port int
			tls  bool
		}{"kubelet", c.ports.kubeletHealthz, false}, struct {
			name string
			port int
			tls  bool
		}{"kube-proxy", c.ports.kubeProxyHealthz, false})
	}
	for _, hc := range checks {
		scheme := "http"
		if hc.tls {
			scheme = "https"
		}
		if err := waitFor(ctx, hc.name, all, httpOK(fmt.Sprintf("%s://127.0.0.1:%d/healthz", scheme, hc.port))); err != nil {
			return err
		}
	}

	if c.opts.RealNode == nil {
		c.logf("registering %d kwok nodes", c.opts.Nodes)
		if err := createNodes(ctx, admin, c.opts.Nodes, c.opts.PodsPerNode); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, "nodes Ready", all, nodesReady(admin, c.nodeNames())); err != nil {
		return err
	}
	// Pods are refused in a namespace until the service-account controller
	// has created its "default" ServiceAccount.
	return waitFor(ctx, "service account default/default", all, func(ctx context.Context) error {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// run starts one component and records it for Stop.
func (c *Cluster) run(ctx context.Context, name string, args, env []string) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.logf("starting %s", name)
	p, err := startProcess(name, filepath.Join(c.opts.BinDir, name), args, env, c.LogDir())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		_ = p.Stop()
		return nil, errors.New("cluster stopped")
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// writeKubeconfigs writes the admin kubeconfig and one per component, each
// with its own client certificate so the API server's RBAC sees the usual
// identities.
func (c *Cluster) writeKubeconfigs() error {
	server := "https://127.0.0.1:" + strconv.Itoa(c.ports.apiserver)
	identities := []struct {
		file, user string
		groups     []string
	}{
		{c.KubeconfigPath(), "localcluster-admin", []string{"system:masters"}},
		{c.componentKubeconfig("kube-controller-manager"), "system:kube-controller-manager", nil},
		{c.componentKubeconfig("kube-scheduler"), "system:kube-scheduler", nil},
		// kwok acts as the kubelet of every fake node at once; the Node
		// authorizer would confine a node identity to one node.
		{c.componentKubeconfig("kwok"), "kwok", []string{"system:masters"}},
		// The real node's kubelet, under the Node authorizer like any,
		// and its kube-proxy (bound to system:node-proxier by default).
		{c.componentKubeconfig("kubelet"), "system:node:" + RealNodeName, []string{"system:nodes"}},
		{c.componentKubeconfig("kube-proxy"), "system:kube-proxy", nil},
	}
	for _, id := range identities {
		cert, key, err := c.pki.clientCert(id.user, id.groups...)
		if err != nil {
			return err
		}
		if err := writeCertKubeconfig(id.file, server, c.pki.caPEM(), cert, key); err != nil {
			return err
		}
		if id.file == c.KubeconfigPath() {
			c.admin = &rest.Config{
				Host: server,
				TLSClientConfig: rest.TLSClientConfig{
					CAData: c.pki.caPEM(), CertData: cert, KeyData: key,
				},
				// Tests and benchmarks create many objects quickly.
				QPS:   100,
				Burst: 200,
			}
		}
	}
	return nil
}

// Stop stops every component in reverse start order and, if Start created
// the work directory, removes it (unless KeepWorkDir). It is idempotent.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	already := c.stopped
	c.stopped = true
	c.mu.Unlock()
	if already {
		return nil
	}
	var err error
	if c.node != nil {
		err = c.node.stop(c)
	}
	err = errors.Join(err, c.stopProcesses())
	if c.etcdProxy != nil {
		c.etcdProxy.close()
	}
	if c.ownsWorkDir && !c.opts.KeepWorkDir {
		if rmErr := os.RemoveAll(c.workDir); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
	} else {
		c.logf("cluster stopped; files kept in %s", c.workDir)
	}
	return err
}

func (c *Cluster) stopProcesses() error {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if exited, _ := procs[i].Exited(); exited {
			continue // the real node's, stopped first
		}
		c.logf("stopping %s", procs[i].name)
		errs = append(errs, procs[i].Stop())
	}
	return errors.Join(errs...)
}

// KubeconfigPath is a kubeconfig file for the cluster-admin identity
// (a client certificate in the system:masters group).
func (c *Cluster) KubeconfigPath() string { return filepath.Join(c.workDir, "kubeconfig") }

// RESTConfig returns a copy of the cluster-admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.admin) }

// adminClientset is a cluster-admin clientset of the cluster's API server.
func (c *Cluster) adminClientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.admin)
}

// WorkDir holds certificates, kubeconfigs, etcd data and logs.
func (c *Cluster) WorkDir() string { return c.workDir }

// LogDir holds one log file per component, NAME.log.
func (c *Cluster) LogDir() string { return filepath.Join(c.workDir, "logs") }

// AuditLogPath is where the API server writes audit events when
// Options.AuditPolicy is set.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.workDir, "logs", "audit.log") }

func (c *Cluster) componentKubeconfig(name string) string {
	return filepath.Join(c.workDir, name+".kubeconfig")
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.opts.Out, "localcluster: "+format+"\n", args...)
}
