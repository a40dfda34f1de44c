package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/example/podset-operator/test/localcluster"
)

// Client rate limits of kube-controller-manager and kube-scheduler. Their
// defaults (20/30 and 50/100) would make them, not the ReplicaSet controller
// or the scheduler's algorithm, the bottleneck of a 1000-pod run: the
// ReplicaSet controller alone needs one request per pod, the scheduler one
// binding per pod. At 1000/2000 neither waits on its own limiter on this
// machine; the API server's CPU is what bounds them.
const (
	componentQPS   = 1000
	componentBurst = 2000
)

// kwokPodParallelism is how many pods kwok, the benchmark's stand-in for
// the kubelets, moves to Running and Ready at once. Its default of 4, one
// status patch each, let it turn about a hundred pods a second Ready on
// this machine: a ReplicaSet creating 1000 pods in 11.6 s had each Ready
// 0.03 s after it was bound, while PodSets creating them in 9.1 s had each
// wait 2.5 s (median) for kwok (the scheduler's and kwok's logs;
// docs/architecture.md, "kwok's parallelism"). A node's own kubelet starts its pods in parallel; "all pods Ready"
// should measure the controllers, not a queue in the simulator.
const kwokPodParallelism = 32

// startCluster starts the local cluster sized for the benchmark: nodes×5000
// pod slots.
// With requests, the API server logs the controllers' requests (see
// requests.go), the operator's among them as operatorUser.
// With profiling, the API server serves /debug/pprof (the local cluster
// turns it off by default; a later flag wins).
func startCluster(ctx context.Context, binDir string, nodes int, profiling, requests bool, operatorUser string) (*localcluster.Cluster, error) {
	var apiserverArgs []string
	if profiling {
		apiserverArgs = append(apiserverArgs, "--profiling=true")
	}
	var policy []byte
	if requests {
		policy = benchAuditPolicy(operatorUser)
	}
	return localcluster.Start(ctx, localcluster.Options{
		APIServerArgs:          apiserverArgs,
		BinDir:                 binDir,
		Nodes:                  nodes,
		ControllerManagerQPS:   componentQPS,
		ControllerManagerBurst: componentBurst,
		SchedulerQPS:           componentQPS,
		SchedulerBurst:         componentBurst,
		KwokPodParallelism:     kwokPodParallelism,
		AuditPolicy:            policy,
		AuditLogMode:           "batch",
		Out:                    os.Stderr,
	})
}

// benchConfig is the benchmark's own client configuration: no client-side
// rate limit (the benchmark must not be what slows a phase down), and
// protobuf for built-in types, which costs the API server and this process
// less CPU than JSON on a machine where every core is shared.
func benchConfig(c *localcluster.Cluster) (typed, dynamic *rest.Config) {
	dynamic = c.RESTConfig()
	dynamic.QPS, dynamic.Burst = -1, 0
	dynamic.UserAgent = "podset-bench"
	typed = rest.CopyConfig(dynamic)
	typed.ContentType = "application/vnd.kubernetes.protobuf"
	typed.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return typed, dynamic
}

// installCRDs creates every CRD found in dir and waits until it is served.
func installCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD manifests in %s", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	return nil
}

// createNamespace creates a namespace and waits for its default
// ServiceAccount: pods are refused until the token controller made it.
func createNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		// The operand is built for the restricted profile; enforce it so a
		// regression there fails the benchmark instead of going unnoticed.
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	return localcluster.WaitForDefaultServiceAccount(ctx, cs, name)
}

// deleteNamespace deletes a namespace and waits until no pod and no PodSet
// is left in it, so that the next phase shares the machine with neither a
// garbage collection nor the operator's answers to it: the namespace
// controller deletes a namespace's ControllerRevisions before its PodSets,
// and each PodSet still there then tries once to store its revision again
// (refused; docs/architecture.md, "Every request accounted for", its Teardown). Waiting only for the pods
// would let the refused creates of one phase's 100 PodSets be counted in the
// next phase's writes per pod (a 1000x1 run counted 4.10 instead of 4.00). The namespace object itself may linger several
// seconds longer (the namespace controller's own retries); it costs nothing.
func deleteNamespace(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface, name string, timeout time.Duration) error {
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(name).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		podSets, err := dc.Resource(podSetGVR).Namespace(name).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(podSets.Items) == 0, nil
	})
}

// endPhase deletes a phase's namespace (deleteNamespace) and then waits for
// the operator to fall quiet (operator.waitQuiet), so that nothing of this
// phase is counted in the next.
func (b *bench) endPhase(ctx context.Context, ns string) error {
	err := deleteNamespace(ctx, b.cs, b.dc, ns, cleanupTimeout)
	b.op.waitQuiet(ctx)
	return err
}

// findProcess returns the PID of the cluster component whose executable is
// name, by its command line (it mentions the cluster's work directory), or 0.
// The local cluster does not export its children's PIDs; /proc does.
func findProcess(workDir, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == name && strings.Contains(string(data), workDir) {
			return pid
		}
	}
	return 0
}
