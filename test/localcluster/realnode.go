package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// RealNode, set in Options, replaces the kwok nodes with one node whose
// containers really run: a kubelet (built from the same release as the
// control plane, BinDir/kubelet) with Debian's containerd, runc and CNI
// plugins. It needs root, and changes the host while it runs (a bridge,
// firewall rules, cgroups, mounts); Stop, or Cleanup after a crash, puts
// everything back (see realnode_host.go). hack/install-real-node.sh
// installs the packages.
//
// The node pulls every image, the pod sandbox's too, from the cluster's own
// registry (registry.go), into which the cluster pushes Images before the
// kubelet starts, under the names that pods give.
type RealNode struct {
	// Images are docker-archive tars to push into the registry.
	Images []string
	// SandboxImage is the name of the pause image, one of Images.
	SandboxImage string
}

// RealNodeName is the name of the real node.
const RealNodeName = "localcluster-node"

// RealNodeIP is the real node's address: the host's own on the node's
// bridge, which its pods reach (the API server advertises it).
const RealNodeIP = nodeIP

// Host tools the real node runs; hack/install-real-node.sh installs them.
var realNodeTools = []string{"containerd", "ctr", "runc", "ip", "iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore", "conntrack"}

// cniBinDir is where Debian's containernetworking-plugins puts the plugins.
const cniBinDir = "/usr/lib/cni"

// realNode is the running node: its directory and the host lock.
type realNode struct {
	dir  string
	lock *os.File
}

func (n *realNode) path(elem ...string) string {
	return filepath.Join(append([]string{n.dir}, elem...)...)
}

// containerdSocket is short on purpose: a unix socket path is limited to
// 108 bytes, and containerd derives longer ones from it.
func (n *realNode) containerdSocket() string { return n.path("containerd.sock") }

// checkRealNodeHost says what is missing for a real node, all at once.
func checkRealNodeHost(binDir string) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (the real node changes the host's network and cgroups)")
	}
	for _, t := range realNodeTools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	for _, p := range []string{filepath.Join(cniBinDir, "bridge"), filepath.Join(cniBinDir, "host-local"), filepath.Join(cniBinDir, "loopback"), RegistryBinary} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, b := range []string{"kubelet", "kube-proxy"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			missing = append(missing, filepath.Join(binDir, b)+" (make real-node-tools)")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a real node needs: %s (hack/install-real-node.sh installs the packages)", strings.Join(missing, ", "))
	}
	return nil
}

// prepareRealNode takes the host and puts the bridge and the guard in place,
// before any component listens: the API server of a real-node cluster
// listens on every interface (pods reach it through the node's address),
// and the guard keeps its port closed to all but loopback and the bridge.
func (c *Cluster) prepareRealNode() error {
	if err := checkRealNodeHost(c.opts.BinDir); err != nil {
		return err
	}
	if c.node == nil {
		lock, err := lockHost()
		if err != nil {
			return err
		}
		c.node = &realNode{dir: filepath.Join(c.workDir, "node"), lock: lock}
	}
	return prepareHost(c.workDir, c.ports.apiserver)
}

// startRealNode starts containerd with the images, then the kubelet and
// kube-proxy. The caller waits for the Node to be Ready.
func (c *Cluster) startRealNode(ctx context.Context) error {
	opts := c.opts.RealNode
	n := c.node
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs"} {
		if err := os.MkdirAll(n.path(d), 0o700); err != nil {
			return err
		}
	}
	if err := c.startRegistry(ctx); err != nil {
		return err
	}
	if err := c.startClusterDNS(net.JoinHostPort(nodeIP, "53")); err != nil {
		return err
	}
	for _, img := range opts.Images {
		names, err := c.PushImageArchive(ctx, img)
		if err != nil {
			return err
		}
		c.logf("pushed %s into the registry: %s", filepath.Base(img), strings.Join(names, ", "))
	}
	if err := n.writeRegistryHosts(c.RegistryHost(), c.CAFile()); err != nil {
		return err
	}
	if err := n.writeContainerdConfig(opts.SandboxImage); err != nil {
		return err
	}
	if err := n.writeCNIConfig(); err != nil {
		return err
	}
	containerd, err := c.runHost(ctx, "containerd", []string{"--config", n.path("containerd", "config.toml")})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "containerd", []*Process{containerd}, func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", n.containerdSocket(), "version").Run()
	}); err != nil {
		return err
	}

	if err := c.writeKubeletFiles(); err != nil {
		return err
	}
	_, err = c.runHost(ctx, "kubelet", []string{
		"--config=" + n.path("kubelet", "config.yaml"),
		"--kubeconfig=" + c.componentKubeconfig("kubelet"),
		"--root-dir=" + n.path("kubelet"),
		"--cert-dir=" + n.path("kubelet", "pki"),
		"--hostname-override=" + RealNodeName,
		"--node-ip=" + nodeIP,
		"--v=1",
	})
	if err != nil {
		return err
	}
	if err := c.writeKubeProxyConfig(); err != nil {
		return err
	}
	_, err = c.runHost(ctx, "kube-proxy", []string{"--config=" + n.path("kube-proxy.yaml"), "--v=1"})
	return err
}

// writeKubeProxyConfig makes kube-proxy (iptables mode) route Service
// addresses, above all the "kubernetes" Service that pods such as the
// manager use to reach the API server. It touches no sysctl it need not:
// no conntrack tuning, no NodePorts on loopback (which would turn on
// route_localnet).
func (c *Cluster) writeKubeProxyConfig() error {
	n := c.node
	config := `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ` + c.componentKubeconfig("kube-proxy") + `
mode: iptables
hostnameOverride: ` + RealNodeName + `
clusterCIDR: ` + nodeSubnet + `
healthzBindAddress: 127.0.0.1:` + strconv.Itoa(c.ports.kubeProxyHealthz) + `
metricsBindAddress: 127.0.0.1:` + strconv.Itoa(c.ports.kubeProxyMetrics) + `
nodePortAddresses: ["` + nodeIP + `/32"]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`
	return os.WriteFile(n.path("kube-proxy.yaml"), []byte(config), 0o600)
}

// runHost starts a node component: the kubelet from BinDir, containerd from
// the host.
func (c *Cluster) runHost(ctx context.Context, name string, args []string) (*Process, error) {
	if name == "kubelet" || name == "kube-proxy" {
		return c.run(ctx, name, args, nil)
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.logf("starting %s", name)
	p, err := StartProcess(name, bin, args, nil, filepath.Join(c.LogDir(), name+".log"))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
	return p, nil
}

// writeContainerdConfig confines containerd to the node's directory: its
// root, state, socket, runc state and CNI configuration, so that removing
// the directory removes it all.
func (n *realNode) writeContainerdConfig(sandboxImage string) error {
	q := strconv.Quote
	config := `version = 2
root = ` + q(n.path("containerd", "root")) + `
state = ` + q(n.path("containerd", "state")) + `
# Snapshotters this host cannot run only add noise to the log.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = ` + q(n.containerdSocket()) + `

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(n.path("containerd", "opt")) + `

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ` + q(sandboxImage) + `
  # Root without CAP_SYS_RESOURCE cannot lower a process's OOM score.
  restrict_oom_score_adj = true
  # Network namespaces under the state directory, not /var/run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ` + q(n.path("containerd", "runc")) + `
  # The registry of the cluster, also as the only mirror of the public
  # ones (registry.go).
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ` + q(n.path("certs.d")) + `
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ` + q(cniBinDir) + `
    conf_dir = ` + q(n.path("cni", "net.d")) + `
`
	return os.WriteFile(n.path("containerd", "config.toml"), []byte(config), 0o600)
}

// writeCNIConfig gives pods an address on the node's bridge. No IP
// masquerading: nothing is meant to leave the machine (and the guard drops
// it if it tries).
func (n *realNode) writeCNIConfig() error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "localcluster",
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      nodeBridge,
			"isGateway":   true,
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"dataDir": n.path("cni", "ipam"),
				"ranges": [][]map[string]string{{{
					"subnet": nodeSubnet, "rangeStart": podRangeMin, "gateway": nodeIP,
				}}},
				"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
			},
		}},
	}
	raw, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(n.path("cni", "net.d", "10-localcluster.conflist"), raw, 0o600)
}

// writeKubeletFiles writes the kubelet's configuration, serving certificate
// and kubeconfig. The kubelet authenticates the API server by the cluster
// CA and asks it (webhook) whether a caller may use its API, as in a
// production cluster; the API server calls it with a client certificate of
// system:masters.
func (c *Cluster) writeKubeletFiles() error {
	n := c.node
	certPEM, keyPEM, err := c.pki.issue("", "", "system:node:"+RealNodeName, []string{"system:nodes"}, true,
		[]string{RealNodeName}, []net.IP{net.ParseIP(nodeIP)})
	if err != nil {
		return err
	}
	certFile, keyFile := n.path("kubelet", "serving.crt"), n.path("kubelet", "serving.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	// Pods resolve Service names through the cluster's DNS (dns.go) and
	// nothing else: the resolv.conf the kubelet would take the upstream
	// servers and search path from is empty, rather than the host's, whose
	// resolvers may be outside the machine.
	resolv := n.path("kubelet", "resolv.conf")
	if err := os.WriteFile(resolv, nil, 0o644); err != nil {
		return err
	}
	cfg := kubeletv1beta1.KubeletConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Address:            nodeIP,
		Port:               int32(c.ports.kubelet),
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        ptr.To(int32(c.ports.kubeletHealthz)),
		TLSCertFile:        certFile,
		TLSPrivateKeyFile:  keyFile,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: c.pki.path(caCertFile)},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		// This host has cgroup v1 and no systemd.
		CgroupDriver:             "cgroupfs",
		FailCgroupV1:             ptr.To(false),
		FailSwapOn:               ptr.To(false),
		ContainerRuntimeEndpoint: "unix://" + n.containerdSocket(),
		PodLogsDir:               n.path("pod-logs"),
		ResolverConfig:           ptr.To(resolv),
		ClusterDNS:               []string{nodeIP},
		ClusterDomain:            ClusterDomain,
		// A test machine's disk and memory are what they are: evicting
		// pods for them would be a test failure of its own.
		// Absolute thresholds: a percentage of a large disk is gigabytes.
		EvictionHard: map[string]string{"memory.available": "1Mi", "nodefs.available": "256Mi", "imagefs.available": "256Mi"},
		// No image garbage collection for the same reason.
		ImageGCHighThresholdPercent: ptr.To(int32(100)),
		ImageGCLowThresholdPercent:  ptr.To(int32(99)),
		// Pulls come from a registry on loopback: let them run side by side.
		SerializeImagePulls: ptr.To(false),
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(n.path("kubelet", "config.yaml"), raw, 0o600)
}

// stop kills the node's containers, stops the kubelet and containerd and
// puts the host back. The other components are still running.
func (n *realNode) stop(c *Cluster) error {
	var errs []error
	if c.dns != nil {
		errs = append(errs, c.dns.Close())
	}
	for _, name := range []string{"kube-proxy", "kubelet", "containerd"} {
		if p := c.Component(name); p != nil {
			c.logf("stopping %s", name)
			errs = append(errs, p.Stop())
		}
	}
	errs = append(errs, cleanupHost(c.logf))
	if n.lock != nil {
		// The lock file goes, and its directory if nothing else is in it.
		_ = os.Remove(n.lock.Name())
		errs = append(errs, n.lock.Close())
		_ = os.Remove(stateDir)
	}
	return errors.Join(errs...)
}

// nodeNames are the Nodes that must be Ready before the cluster is.
func (c *Cluster) nodeNames() []string {
	if c.opts.RealNode != nil {
		return []string{RealNodeName}
	}
	names := make([]string, c.opts.Nodes)
	for i := range names {
		names[i] = NodeName(i)
	}
	return names
}

// RealNodeImages is a RealNode with every image archive (*.tar) that
// hack/build-node-images.sh and the Makefile's image targets write into
// dir: the pause image and the operand's default image, which it requires,
// and whatever else is there (the manager's image, the bundle, OLM's and the
// scorecard's stand-ins).
func RealNodeImages(dir string) (*RealNode, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	node := &RealNode{SandboxImage: "registry.k8s.io/pause:3.10"}
	for _, required := range []string{"pause.tar", "busybox.tar"} {
		if _, err := os.Stat(filepath.Join(abs, required)); err != nil {
			return nil, fmt.Errorf("%w (hack/build-node-images.sh %s builds it)", err, dir)
		}
	}
	if node.Images, err = filepath.Glob(filepath.Join(abs, "*.tar")); err != nil {
		return nil, err
	}
	return node, nil
}

// NodeTasks lists the containers running on the real node, container ID
// to the host PID of its main process (what `kubectl get pod` reports as
// containerd://ID), from the node's containerd.
func (c *Cluster) NodeTasks(ctx context.Context) (map[string]int, error) {
	if c.node == nil {
		return nil, errors.New("the cluster has no real node")
	}
	out, err := c.ctrCommand(ctx, "tasks", "ls").Output()
	if err != nil {
		return nil, fmt.Errorf("ctr tasks ls: %w", err)
	}
	tasks := map[string]int{}
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line) // TASK PID STATUS
		if len(f) < 3 || f[2] != "RUNNING" {
			continue
		}
		if pid, err := strconv.Atoi(f[1]); err == nil {
			tasks[f[0]] = pid
		}
	}
	return tasks, nil
}
