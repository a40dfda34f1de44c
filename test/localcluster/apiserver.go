package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Address ranges of the cluster. Pod IPs (handed out by kwok from each
// node's spec.podCIDR) must not overlap the service range.
const (
	serviceCIDR    = "10.0.0.0/24"
	firstServiceIP = "10.0.0.1"
)

// ServiceCIDR is the range the cluster's ClusterIPs come from.
const ServiceCIDR = serviceCIDR

// apiserverArgs configures kube-apiserver like a production control plane
// where it matters to an operator (RBAC, service-account tokens, admission
// plugins, Pod Security), and for loopback where it does not.
func (c *Cluster) apiserverArgs() ([]string, error) {
	args := []string{
		"--etcd-servers=" + c.etcdServer(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.ports.apiserver),
		// The default reconciler writes the advertise address into the
		// "kubernetes" Endpoints and refuses a loopback one.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--tls-cert-file=" + c.pki.path(serverCert),
		"--tls-private-key-file=" + c.pki.path(serverKey),
		"--client-ca-file=" + c.pki.path(caCertFile),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki.path(saPublicFile),
		"--service-account-signing-key-file=" + c.pki.path(saPrivateFile),
		// The defaults plus the plugin OpenShift enables: setting
		// blockOwnerDeletion on an ownerReference then needs the "update"
		// permission on the owner's finalizers subresource, as operators
		// scaffolded by operator-sdk declare.
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		"--cert-dir=" + filepath.Join(c.workDir, "apiserver"),
		"--profiling=false",
		"--v=1",
	}
	if c.opts.RealNode != nil {
		// kubectl logs, exec and port-forward go through the API server
		// to the kubelet, at the node's address, verified by the CA.
		cert, key, err := c.pki.clientCert("kube-apiserver-kubelet-client", "system:masters")
		if err != nil {
			return nil, err
		}
		certFile, keyFile := c.pki.path("apiserver-kubelet-client.crt"), c.pki.path("apiserver-kubelet-client.key")
		if err := os.WriteFile(certFile, cert, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(keyFile, key, 0o600); err != nil {
			return nil, err
		}
		// Pods reach the API server through the "kubernetes" Service,
		// which kube-proxy sends to the node's address: listen there too
		// (the guard closes the port to everything but loopback and the
		// bridge) and publish it as the Service's endpoint.
		args = slices.DeleteFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "--bind-address=") || strings.HasPrefix(a, "--advertise-address=") ||
				strings.HasPrefix(a, "--endpoint-reconciler-type=")
		})
		args = append(args,
			"--bind-address=0.0.0.0",
			"--advertise-address="+nodeIP,
			"--endpoint-reconciler-type=lease",
			"--kubelet-client-certificate="+certFile,
			"--kubelet-client-key="+keyFile,
			"--kubelet-certificate-authority="+c.pki.path(caCertFile),
			"--kubelet-preferred-address-types=InternalIP",
		)
	}
	if len(c.opts.AuditPolicy) > 0 {
		policy := filepath.Join(c.workDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, c.opts.AuditPolicy, 0o600); err != nil {
			return nil, err
		}
		mode := c.opts.AuditLogMode
		if mode == "" {
			mode = "blocking"
		}
		args = append(args,
			"--audit-policy-file="+policy,
			"--audit-log-path="+c.AuditLogPath(),
			"--audit-log-format=json",
			"--audit-log-mode="+mode,
		)
		if mode == "batch" {
			// Flush every event on its own, without waiting to fill a batch.
			args = append(args, "--audit-log-batch-max-size=1")
		}
	}
	return append(args, c.opts.APIServerArgs...), nil
}

// etcdServer is where kube-apiserver reaches etcd: its client port, or the
// latency proxy in front of it.
func (c *Cluster) etcdServer() string {
	if c.etcdProxy != nil {
		return "http://" + c.etcdProxy.addr()
	}
	return fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)
}
