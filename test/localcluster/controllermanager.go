package localcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// controllerManagerArgs runs the default controller set: among others the
// garbage collector (owned pods go when their owner is deleted), namespace
// lifecycle, service-account and token controllers, node lifecycle, and the
// Deployment/ReplicaSet controllers benchmarks compare against.
func (c *Cluster) controllerManagerArgs() []string {
	args := []string{
		"--kubeconfig=" + c.componentKubeconfig("kube-controller-manager"),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.ports.controllerManager),
		"--cert-dir=" + filepath.Join(c.workDir, "kube-controller-manager"),
		"--leader-elect=false",
		// One identity per controller, as in real clusters, so RBAC denials
		// of the bootstrap roles would show up here too.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.pki.path(saPrivateFile),
		"--root-ca-file=" + c.pki.path(caCertFile),
		"--cluster-signing-cert-file=" + c.pki.path(caCertFile),
		"--cluster-signing-key-file=" + c.pki.path(caKeyFile),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kube-api-qps=" + fmt.Sprint(c.opts.ControllerManagerQPS),
		"--kube-api-burst=" + strconv.Itoa(c.opts.ControllerManagerBurst),
		"--v=1",
	}
	return append(args, c.opts.ControllerManagerArgs...)
}
