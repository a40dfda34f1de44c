package loadclient

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// run sends 50 requests a second in each mode for d to url.
func run(url string, d time.Duration) *Result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return Run(ctx, Options{URL: url, PerSecond: 50, Timeout: 200 * time.Millisecond})
}

func TestAServerThatAnswersGivesNoFailure(t *testing.T) {
	g := NewWithT(t)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(2 * time.Millisecond)
		_, _ = w.Write([]byte("pod-a\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	r := run(srv.URL, time.Second)
	g.Expect(r.Failures()).To(BeEmpty())
	g.Expect(r.Requests()).To(BeNumerically("~", 90, 30), "50 a second in each mode, less the ticks a busy machine drops")
	g.Expect(r.Quantile(0.99)).To(BeNumerically(">=", 2*time.Millisecond))
	// Each request of the new-connection mode opened one; the kept-alive
	// ones shared a few.
	g.Expect(int(conns.Load())).To(BeNumerically("<", r.Requests()/2+10))
	g.Expect(int(conns.Load())).To(BeNumerically(">=", r.Requests()/2-5))
	g.Expect(r.String()).To(MatchRegexp(`^\d+ requests, 0 failed, p99 \d+ms$`))
}

func TestEachKindOfFailureIsNamed(t *testing.T) {
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}))
	defer slow.Close()
	// Answers nothing and drops the connection, as a killed process does.
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0)
			}
			_ = conn.Close()
		}
	}))
	defer reset.Close()
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()

	for _, tc := range []struct {
		name, url, reason string
	}{
		{"a 5xx answer", unavailable.URL, "HTTP 503"},
		{"no answer in time", slow.URL, "timeout"},
		{"a dropped connection", reset.URL, "reset"},
		{"nothing listening", closed, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := run(tc.url, 300*time.Millisecond)
			g.Expect(r.Requests()).To(BeNumerically(">=", 4))
			failures := r.Failures()
			g.Expect(failures).To(HaveLen(r.Requests()), "every request failed")
			modes := map[Mode]bool{}
			for _, f := range failures {
				g.Expect(f.Reason).To(Equal(tc.reason))
				g.Expect(f.At).NotTo(BeZero())
				modes[f.Mode] = true
			}
			g.Expect(modes).To(HaveLen(2), "both modes failed")
			g.Expect(r.String()).To(ContainSubstring(tc.reason))
		})
	}
}

func TestQuantile(t *testing.T) {
	g := NewWithT(t)
	r := &Result{}
	g.Expect(r.Quantile(0.99)).To(BeZero())
	for i := 1; i <= 100; i++ {
		r.record(KeptAlive, time.Now(), time.Duration(i)*time.Millisecond, "")
	}
	g.Expect(r.Quantile(0.99)).To(Equal(99 * time.Millisecond))
	g.Expect(r.Quantile(0.5)).To(Equal(50 * time.Millisecond))
	g.Expect(r.Quantile(1)).To(Equal(100 * time.Millisecond))
}
