// Command demo shows the operator at work with no cluster at hand: it starts
// a local control plane with kwok nodes (test/localcluster), installs the
// CRD, runs the manager binary as a child process, applies the sample
// PodSet, and shows the result as `kubectl` prints it. It then waits for
// Ctrl-C, so the user can try `kubectl scale` and `kubectl patch` from
// another shell, and stops everything it started.
//
// `make demo` builds the binaries and runs it. With DEMO_EXIT_AFTER_READY=1
// it exits once the sample is Available (a non-interactive smoke run).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/example/podset-operator/test/localcluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	binDir := flag.String("bin-dir", os.Getenv("K8S_BIN"), "directory of the cluster binaries and kubectl (default $K8S_BIN)")
	manager := flag.String("manager", "bin/manager", "the operator binary")
	sample := flag.String("sample", "config/samples/app_v1alpha1_podset.yaml", "the PodSet to apply")
	crdDir := flag.String("crd-dir", "config/crd/bases", "the CRD manifests")
	realNode := flag.Bool("real-node", false, "run one real node (kubelet, containerd; needs root) instead of the kwok nodes, so that the pods really run")
	nodeImages := flag.String("node-images", "bin/node-images", "with --real-node: the image archives to import into the node")
	flag.Parse()
	exitAfterReady := os.Getenv("DEMO_EXIT_AFTER_READY") == "1"

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	banner("starting a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
	opts := localcluster.Options{BinDir: *binDir, Out: os.Stdout}
	if *realNode {
		node, err := localcluster.RealNodeImages(*nodeImages)
		if err != nil {
			return err
		}
		opts.RealNode = node
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		banner("stopping the operator and the cluster")
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	k := kubectl{bin: filepath.Join(*binDir, "kubectl"), kubeconfig: c.KubeconfigPath()}

	banner("installing the PodSet CRD")
	if err := k.run(ctx, "apply", "--server-side", "-f", *crdDir); err != nil {
		return err
	}
	if err := c.WaitForCRDEstablished(ctx, "podsets.app.example.com", time.Minute); err != nil {
		return err
	}

	banner("running the operator: " + *manager)
	opLog := filepath.Join(c.LogDir(), "operator.log")
	op, err := startOperator(*manager, c.KubeconfigPath(), opLog)
	if err != nil {
		return err
	}
	defer func() { _ = op.Stop() }()

	banner("applying " + *sample)
	if err := k.run(ctx, "get", "nodes", "-L", "kubernetes.io/os,kubernetes.io/arch"); err != nil {
		return err
	}
	if err := k.run(ctx, "apply", "-f", *sample); err != nil {
		return err
	}
	banner("waiting for the PodSet to become Available")
	if err := k.run(ctx, "wait", "--for=condition=Available", "--timeout=180s", "podset/podset-sample"); err != nil {
		fmt.Fprintf(os.Stderr, "operator log: %s\n", opLog)
		return err
	}
	// Available can come a moment before the last status update; show the
	// settled state.
	if err := k.run(ctx, "wait", "--for=jsonpath={.status.availableReplicas}=3", "--timeout=60s", "podset/podset-sample"); err != nil {
		return err
	}
	banner("the result")
	if err := k.run(ctx, "get", "podsets,pods", "-o", "wide"); err != nil {
		return err
	}
	if err := k.showStatus(ctx, "podset-sample"); err != nil {
		return err
	}

	if exitAfterReady {
		banner("DEMO_EXIT_AFTER_READY=1: done")
		return nil
	}
	fmt.Printf(`
The operator is running (log: %s). In another shell, try:

  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get podsets,pods -w
  kubectl scale podset podset-sample --replicas=5
  kubectl patch podset podset-sample --type=merge -p '{"spec":{"replicas":2}}'
  kubectl delete pod -l app.example.com/podset=podset-sample --wait=false
  kubectl delete podset podset-sample
%s
Press Ctrl-C here to stop the operator and the cluster.
`, opLog, c.KubeconfigPath(), mustAbs(*binDir), realNodeHint(*realNode))
	select {
	case <-ctx.Done():
	case <-op.Done():
		return errors.New("the operator exited; see " + opLog)
	}
	return nil
}

// realNodeHint shows what a real node adds: the pods' processes.
func realNodeHint(real bool) string {
	if !real {
		return ""
	}
	return `
On the real node the containers run; look at one:
  kubectl exec $(kubectl get pods -l app.example.com/podset=podset-sample -o name | head -1) -- id
  kubectl exec $(kubectl get pods -l app.example.com/podset=podset-sample -o name | head -1) -- wget -qO- localhost:8080
`
}

func banner(s string) { fmt.Printf("\n==> %s\n", s) }

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

type kubectl struct{ bin, kubeconfig string }

// run shows the command as the user would type it, then its output.
func (k kubectl) run(ctx context.Context, args ...string) error {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// showStatus prints the PodSet's status, indented, as
// `kubectl get podset NAME -o jsonpath={.status}` returns it on one line.
func (k kubectl) showStatus(ctx context.Context, name string) error {
	fmt.Printf("$ kubectl get podset %s -o jsonpath={.status}\n", name)
	cmd := exec.CommandContext(ctx, k.bin, "get", "podset", name, "-o", "jsonpath={.status}")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out, "", "  "); err != nil {
		return err
	}
	fmt.Println(pretty.String())
	return nil
}

// startOperator runs the manager like `make run` does, with the cluster's
// admin kubeconfig; its own process group keeps Ctrl-C away from it so it is
// stopped in order, after the demo prints its last words.
func startOperator(bin, kubeconfig, logPath string) (*localcluster.Process, error) {
	op, err := localcluster.StartProcess("operator", bin,
		[]string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0"},
		nil, logPath)
	if err != nil {
		return nil, fmt.Errorf("%w (run `make demo`, which builds it)", err)
	}
	return op, nil
}
