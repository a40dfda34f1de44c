package localcluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// latencyProxy stands between kube-apiserver and etcd when
// Options.EtcdLatencyProxy is set: it forwards each connection to etcd's
// client port and can hold the bytes in each direction for a set latency,
// so that every etcd request takes at least twice that long, as a slow
// network or disk in front of etcd makes it. A chunk waits for the latency
// set when it was read, and chunks keep their order: latency without a cap
// on throughput. A proxy rather than `tc`'s netem, which needs a kernel
// module that a CI machine or container may not have.
type latencyProxy struct {
	ln      net.Listener
	target  string
	latency atomic.Int64 // nanoseconds, each way

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startLatencyProxy(target string) (*latencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("etcd proxy: %w", err)
	}
	p := &latencyProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *latencyProxy) addr() string { return p.ln.Addr().String() }

func (p *latencyProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

func (p *latencyProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *latencyProxy) handle(client net.Conn) {
	p.track(client, true)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.track(client, false)
		_ = client.Close()
		return
	}
	p.track(server, true)
	defer func() {
		p.track(client, false)
		p.track(server, false)
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.pipe(server, client)
	}()
	p.pipe(client, server)
	<-done
}

// pipe copies src to dst, each chunk written once its latency has passed.
// When either side fails, both connections close.
func (p *latencyProxy) pipe(dst, src net.Conn) {
	type chunk struct {
		data []byte
		due  time.Time
	}
	queue := make(chan chunk, 256)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{buf[:n], time.Now().Add(time.Duration(p.latency.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	_ = src.Close()
	_ = dst.Close()
	for range queue { //nolint:revive // drained so that the reader can end
	}
}

func (p *latencyProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// SetEtcdLatency holds every byte between kube-apiserver and etcd for d in
// each direction from now on (0: none). The cluster must have been started
// with Options.EtcdLatencyProxy.
func (c *Cluster) SetEtcdLatency(d time.Duration) error {
	if c.etcdProxy == nil {
		return errors.New("localcluster: the cluster was started without Options.EtcdLatencyProxy")
	}
	c.etcdProxy.latency.Store(int64(d))
	return nil
}
