package localcluster

import (
	"fmt"
	"path/filepath"
)

// etcdArgs runs a single-member etcd on loopback, plain HTTP (nothing but the
// local API server can reach it).
func (c *Cluster) etcdArgs() []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	args := []string{
		"--name=localcluster",
		"--data-dir=" + filepath.Join(c.workDir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=localcluster=" + peer,
		"--initial-cluster-state=new",
		// The data is thrown away at Stop, so durability buys nothing and
		// fsync is what makes etcd slow on shared CI disks.
		"--unsafe-no-fsync",
		// Benchmarks store 10,000+ pods and their events.
		"--quota-backend-bytes=4294967296",
		"--log-level=warn",
	}
	return append(args, c.opts.EtcdArgs...)
}
