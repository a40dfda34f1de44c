package localcluster

import (
	"context"
	"fmt"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Fault injection for the reliability suite (test/e2e, `make test-chaos`):
// pausing a process, restarting the API server, compacting etcd.

// Pause stops the process group with SIGSTOP, as a stalled VM or a long GC
// pause would: it keeps its sockets but does nothing until Resume.
func (p *Process) Pause() error {
	return p.sendOnly(syscall.SIGSTOP)
}

// Resume continues a paused process group.
func (p *Process) Resume() error {
	return p.sendOnly(syscall.SIGCONT)
}

func (p *Process) sendOnly(sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s has exited", p.name)
	default:
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Component returns the running process of a cluster component (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok).
func (c *Cluster) Component(name string) *Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == name {
			return c.procs[i]
		}
	}
	return nil
}

// RestartAPIServer kills kube-apiserver (SIGKILL, as a crash or an OOM kill
// would; on SIGTERM it waits for its long-running requests and the
// process's 15 s grace runs out anyway) and starts it again with the same
// flags, and returns once it is ready: every client's watch breaks and must
// be resumed or relisted.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	old := c.Component("kube-apiserver")
	if old == nil {
		return fmt.Errorf("kube-apiserver is not running")
	}
	if err := old.Kill(); err != nil {
		return err
	}
	args, err := c.apiserverArgs()
	if err != nil {
		return err
	}
	p, err := startProcess("kube-apiserver", c.opts.BinDir+"/kube-apiserver", args, nil, c.LogDir())
	if err != nil {
		return err
	}
	c.mu.Lock()
	for i, q := range c.procs {
		if q == old {
			c.procs[i] = p
		}
	}
	c.mu.Unlock()
	admin, err := c.adminClientset()
	if err != nil {
		return err
	}
	return waitFor(ctx, "kube-apiserver", []*Process{c.Component("etcd"), p}, apiserverReady(admin))
}

// CompactEtcd compacts etcd's history up to its current revision, so that a
// watch resumed from an older resourceVersion gets 410 Gone and must relist.
func (c *Cluster) CompactEtcd(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	resp, err := cli.Get(ctx, "compact-probe")
	if err != nil {
		return err
	}
	_, err = cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	return err
}
