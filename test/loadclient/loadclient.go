// Package loadclient is the client of the zero-downtime scenarios: it sends
// requests to one URL at a steady rate, over new connections and over
// kept-alive ones at once, and records every failure (refused, reset,
// timeout, a 5xx answer) with its time, and the latency of every request.
//
// The rate is open-loop, as a service's clients are: each request leaves on
// its tick whether or not the ones before it have come back, so a stall
// shows as failures and latency instead of as fewer requests.
package loadclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Mode is how a request reaches the server.
type Mode string

const (
	// NewConnection: each request opens a connection of its own, as a
	// client without keep-alive does; it sees a pod that no longer
	// listens as a refused connection.
	NewConnection Mode = "new connection"
	// KeptAlive: requests reuse a few open connections, as most HTTP
	// clients and proxies do; it sees a pod that goes away under an open
	// connection as a reset.
	KeptAlive Mode = "kept-alive"
)

// Options say what to send.
type Options struct {
	// URL is requested with GET.
	URL string
	// PerSecond is the rate of each mode: 25 sends 50 requests a second in
	// all.
	PerSecond int
	// Timeout bounds each request, connection included.
	Timeout time.Duration
}

// Failure is one request that did not get a good answer.
type Failure struct {
	At     time.Time
	Mode   Mode
	Reason string // "refused", "reset", "timeout", "HTTP 503", or the error
}

// Result is what Run saw.
type Result struct {
	mu        sync.Mutex
	requests  int
	failures  []Failure
	latencies []time.Duration
}

// Requests is how many requests were sent.
func (r *Result) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Failures are the failed requests, in the order they ended.
func (r *Result) Failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failures)
}

// Quantile is the q-quantile (0.99: p99) of the latencies of the requests
// that were answered; 0 when none was.
func (r *Result) Quantile(q float64) time.Duration {
	r.mu.Lock()
	l := slices.Clone(r.latencies)
	r.mu.Unlock()
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	i := int(q*float64(len(l)) + 0.5)
	return l[min(max(i-1, 0), len(l)-1)]
}

// String sums the result up: requests, failures by reason, p99.
func (r *Result) String() string {
	byReason := map[string]int{}
	failures := r.Failures()
	for _, f := range failures {
		byReason[string(f.Mode)+" "+f.Reason]++
	}
	reasons := make([]string, 0, len(byReason))
	for k, n := range byReason {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(reasons)
	s := fmt.Sprintf("%d requests, %d failed", r.Requests(), len(failures))
	if len(reasons) > 0 {
		s += " (" + strings.Join(reasons, ", ") + ")"
	}
	return s + fmt.Sprintf(", p99 %s", r.Quantile(0.99).Round(time.Millisecond))
}

func (r *Result) record(mode Mode, start time.Time, latency time.Duration, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason != "" {
		r.failures = append(r.failures, Failure{At: start, Mode: mode, Reason: reason})
		return
	}
	r.latencies = append(r.latencies, latency)
}

// Run sends requests in both modes until ctx ends, waits for those in
// flight, and returns what it saw.
func Run(ctx context.Context, o Options) *Result {
	r := &Result{}
	var wg sync.WaitGroup
	for _, mode := range []Mode{NewConnection, KeptAlive} {
		client := &http.Client{Timeout: o.Timeout, Transport: transport(mode, o.Timeout)}
		wg.Go(func() {
			defer client.CloseIdleConnections()
			tick := time.NewTicker(time.Second / time.Duration(max(o.PerSecond, 1)))
			defer tick.Stop()
			var inFlight sync.WaitGroup
			defer inFlight.Wait()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				r.mu.Lock()
				r.requests++
				r.mu.Unlock()
				inFlight.Go(func() {
					start := time.Now()
					reason := get(client, o.URL)
					r.record(mode, start, time.Since(start), reason)
				})
			}
		})
	}
	wg.Wait()
	return r
}

// transport is a client's transport in mode: one without keep-alive, or
// one that keeps a few connections open for the next requests.
func transport(mode Mode, timeout time.Duration) *http.Transport {
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
		DisableKeepAlives:   mode == NewConnection,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	return t
}

// get sends one request and reads the whole answer; it returns why it
// failed, "" when it did not.
func get(c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		return Reason(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return Reason(err)
	}
	if resp.StatusCode >= 500 {
		return fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return ""
}

// Reason names the kind of a failed request's error: refused, reset,
// timeout, or the error itself.
func Reason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return err.Error()
	}
}
