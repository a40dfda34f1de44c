package localcluster

import (
	"fmt"
	"net"
)

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago. All listeners are held open together so the kernel cannot hand out the
// same port twice, then released for the components to bind. Another process
// could still grab one in between; Start detects that (a component exits or
// never becomes ready) and retries with new ports.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago, for a
// process started next to the cluster (the operator's metrics or probes).
// Another process could take it first; the process then fails to start,
// visibly.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// clusterPorts are the loopback ports of one cluster.
type clusterPorts struct {
	etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok int
	// The real node's kubelet: its API (on the node's address, which has
	// the same free ports as loopback) and its health endpoint.
	kubelet, kubeletHealthz int
	// The real node's kube-proxy, on loopback.
	kubeProxyHealthz, kubeProxyMetrics int
	// The real node's registry, on loopback.
	registry int
}

func pickPorts() (clusterPorts, error) {
	p, err := freePorts(11)
	if err != nil {
		return clusterPorts{}, err
	}
	return clusterPorts{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10]}, nil
}
