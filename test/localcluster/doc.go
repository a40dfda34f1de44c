// Package localcluster runs a small but real Kubernetes control plane on the
// loopback interface, as child processes, for demos, end-to-end tests and
// benchmarks on machines that have no cluster, no container engine and no
// kind.
//
// A cluster is made of etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (sigs.k8s.io/kwok). kwok plays the kubelet of a few
// fake Nodes, so pods are scheduled, bound and reported Running and Ready
// without any container being started. Everything else (admission, RBAC,
// garbage collection, service-account tokens, Pod Security) is the real code
// of the Kubernetes release the binaries were built from.
//
// The binaries are looked up in Options.BinDir (the Makefile's K8S_BIN, filled
// by `make cluster-tools`); the kwok Stage YAMLs are read from
// BinDir/kwok-stages.
//
// Typical use:
//
//	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: dir, Out: os.Stderr})
//	if err != nil { ... }
//	defer c.Stop()
//	cfg := c.RESTConfig()            // cluster-admin (system:masters) client certificate
//	path := c.KubeconfigPath()       // the same identity as a kubeconfig file
//	saCfg, err := c.ServiceAccountConfig(ctx, "ns", "sa", time.Hour) // TokenRequest API
//
// Security model: every component listens on 127.0.0.1 only, on ports picked
// at start so that two clusters on one machine do not collide. The API server
// authenticates with client certificates signed by a CA generated for this
// run (crypto/x509, no external tool) and service-account tokens signed by a
// key generated for this run; it authorizes with Node,RBAC.
//
// Lifecycle: each child runs in its own process group; Stop terminates the
// groups in reverse start order (SIGTERM, then SIGKILL after a grace period),
// waits for them, and removes the work directory unless Options.KeepWorkDir
// is set or Options.WorkDir was given by the caller. The children also get
// SIGKILL from the kernel if the process that started them dies (Pdeathsig),
// so a killed test binary leaves nothing behind.
package localcluster
