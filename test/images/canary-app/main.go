// Command canary-app is the web server of the canary-analysis scenarios:
// the application a PodSet rolls out, whose own metrics say whether a
// version is good. It answers every request on / with its version, counts
// the requests by status code on /metrics (http_requests_total{code}), and
// is Ready on /healthz from the start. With --error-share it answers that
// share of the requests to / with 500, and stays Ready: the failure the
// kubelet does not see, which only a query of its metrics catches.
//
// Which requests fail is fixed, not random: request n (from 1) fails when
// floor(n*share) > floor((n-1)*share), so any run of 1/share requests has
// one failure (for a share of 0.25, every fourth). A scenario's failed
// requests can then be compared run for run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	listen := flag.String("listen", ":8080", "the address to serve on")
	version := flag.String("version", "v1", "the version the server answers with")
	errorShare := flag.Float64("error-share", 0, "the share of requests to / answered with 500, from 0 to 1")
	flag.Parse()
	if *errorShare < 0 || *errorShare > 1 || math.IsNaN(*errorShare) {
		log.Fatalf("--error-share %v: want a share from 0 to 1", *errorShare)
	}

	server := &http.Server{Addr: *listen, Handler: newApp(*version, *errorShare).mux(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		// The pod's preStop pause has already let the endpoints drop it.
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	log.Printf("canary-app %s serving on %s, answering %v of requests with 500", *version, *listen, *errorShare)
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// app is the server's state: its version, its failing share, and its
// requests so far.
type app struct {
	version  string
	share    float64
	registry *prometheus.Registry
	requests *prometheus.CounterVec

	mu sync.Mutex
	n  uint64
}

func newApp(version string, share float64) *app {
	a := &app{version: version, share: share, registry: prometheus.NewRegistry()}
	a.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total",
		Help: "Requests to / answered, by status code.",
	}, []string{"code"})
	// Both codes from the start, so a rate over them is defined (0, not
	// absent) before the first failure.
	a.requests.WithLabelValues("200")
	a.requests.WithLabelValues("500")
	a.registry.MustRegister(a.requests)
	return a
}

func (a *app) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", a.serve)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	return mux
}

// fails says whether the next request fails, and counts it.
func (a *app) fails() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return math.Floor(float64(a.n)*a.share) > math.Floor(float64(a.n-1)*a.share)
}

func (a *app) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if a.fails() {
		a.requests.WithLabelValues("500").Inc()
		http.Error(w, a.version+" failed this request", http.StatusInternalServerError)
		return
	}
	a.requests.WithLabelValues("200").Inc()
	fmt.Fprintln(w, a.version)
}
