// Command localcluster starts a local Kubernetes control plane with kwok
// nodes, or one real node (see test/localcluster), prints the KUBECONFIG to
// use, and stops everything on Ctrl-C or SIGTERM.
//
//	go run ./hack/localcluster --bin-dir bin/k8s-v1.37.0-etcd-v3.6.16-kwok-v0.8.0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/example/podset-operator/test/localcluster"
)

func main() {
	var opts localcluster.Options
	flag.StringVar(&opts.BinDir, "bin-dir", os.Getenv("K8S_BIN"), "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and kwok-stages/ (default $K8S_BIN)")
	flag.StringVar(&opts.WorkDir, "work-dir", "", "directory for certificates, kubeconfig, data and logs, kept after exit (default: a temporary directory removed on exit)")
	flag.BoolVar(&opts.KeepWorkDir, "keep", false, "keep the temporary work directory after exit, for reading the logs")
	flag.IntVar(&opts.Nodes, "nodes", 3, "number of kwok nodes")
	flag.IntVar(&opts.PodsPerNode, "pods-per-node", 5000, "pods capacity of each node")
	realNode := flag.Bool("real-node", false, "run one real node (kubelet, containerd; needs root and hack/install-real-node.sh) instead of the kwok nodes")
	images := flag.String("node-images", "bin/node-images", "with --real-node: the directory of image archives to import into the node (hack/build-node-images.sh)")
	cleanup := flag.Bool("cleanup", false, "remove what a crashed real node left on this host (bridge, firewall rules, cgroups, mounts, processes), then exit")
	cmQPS := flag.Float64("controller-manager-qps", 100, "kube-controller-manager --kube-api-qps")
	schedQPS := flag.Float64("scheduler-qps", 200, "kube-scheduler client QPS")
	flag.Parse()
	opts.ControllerManagerQPS = float32(*cmQPS)
	opts.SchedulerQPS = float32(*schedQPS)
	opts.Out = os.Stderr
	if *cleanup {
		if err := localcluster.Cleanup(func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "localcluster: "+format+"\n", args...)
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *realNode {
		node, err := localcluster.RealNodeImages(*images)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts.RealNode = node
	}

	// The first signal starts an orderly stop; a second one (impatient
	// Ctrl-C) restores the default action and kills us, and Pdeathsig then
	// takes the children down.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.KubeconfigPath())
	if reg := c.RegistryHost(); reg != "" {
		// What a user needs to push an image that the node pulls.
		fmt.Printf("# the node's registry: %s (HTTPS, CA %s; push quay.io/a/b:v1 as %s/a/b:v1)\n", reg, c.CAFile(), reg)
	}
	fmt.Fprintln(os.Stderr, "local cluster running; press Ctrl-C to stop it")
	<-ctx.Done()
	stop()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
