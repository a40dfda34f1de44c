package analysis

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Runner takes measurements off the reconcile workers. A reconcile that
// finds a measurement due submits it and returns; the measurement waits
// for one of a bounded number of query slots, and its result waits for the
// next reconcile of its PodSet, which the ready callback asks for. So a
// Prometheus that is slow or down holds query slots, never a reconcile
// worker, and PodSets without analyses never wait for it.
//
// A run has at most one measurement in flight or awaiting collection: a
// reconcile that comes again before the result does not send the query
// twice.
type Runner struct {
	ctx     context.Context
	querier Querier
	slots   chan struct{}
	ready   func(key string)
	observe func(took time.Duration, m Measurement)

	mu sync.Mutex
	// pending holds the submission number of each run's measurement in
	// flight, so that a run forgotten and submitted again does not take
	// the old measurement's result for the new one's.
	pending   map[string]uint64
	submitted uint64
	results   map[string]Result
}

// Request is one measurement of one run.
type Request struct {
	// Key names the run: its PodSet (by UID, so that a PodSet deleted and
	// made again under its name is another) and which of its runs.
	Key string
	// Due is when the measurement was due: what status records as its
	// time, so a new leader takes the next one an interval later.
	Due time.Time
	// Namespace is the PodSet's, Query the rendered query.
	Namespace, Query string
	Conditions       Conditions
}

// Result is a measurement taken for a Request.
type Result struct {
	Due         time.Time
	Measurement Measurement
	// Took is how long Prometheus took to answer.
	Took time.Duration
}

// NewRunner returns a Runner that sends at most slots queries at a time to
// querier, until ctx ends; ready is called with a run's key once its
// result can be collected, and observe (when not nil) with each
// measurement and the time it took.
func NewRunner(ctx context.Context, querier Querier, slots int, ready func(key string), observe func(time.Duration, Measurement)) *Runner {
	return &Runner{
		ctx: ctx, querier: querier, slots: make(chan struct{}, max(slots, 1)), ready: ready, observe: observe,
		pending: map[string]uint64{}, results: map[string]Result{},
	}
}

// Submit starts req's measurement, unless one of the same run is in flight
// or awaits collection; it says whether it started one. It never waits.
func (r *Runner) Submit(req Request) bool {
	r.mu.Lock()
	_, inFlight := r.pending[req.Key]
	_, waiting := r.results[req.Key]
	if inFlight || waiting {
		r.mu.Unlock()
		return false
	}
	r.submitted++
	n := r.submitted
	r.pending[req.Key] = n
	r.mu.Unlock()
	go r.measure(req, n)
	return true
}

func (r *Runner) measure(req Request, n uint64) {
	select {
	case r.slots <- struct{}{}:
	case <-r.ctx.Done():
		r.mu.Lock()
		if r.pending[req.Key] == n {
			delete(r.pending, req.Key)
		}
		r.mu.Unlock()
		return
	}
	start := time.Now()
	m := Measure(r.ctx, r.querier, req.Namespace, req.Query, req.Conditions)
	took := time.Since(start)
	<-r.slots
	if r.observe != nil {
		r.observe(took, m)
	}
	r.mu.Lock()
	wanted := r.pending[req.Key] == n
	if wanted {
		delete(r.pending, req.Key)
		r.results[req.Key] = Result{Due: req.Due, Measurement: m, Took: took}
	}
	r.mu.Unlock()
	if wanted && r.ready != nil {
		r.ready(req.Key)
	}
}

// Collect returns the result of key's run and forgets it, if there is one.
func (r *Runner) Collect(key string) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[key]
	delete(r.results, key)
	return res, ok
}

// Forget drops key's run: a result awaiting collection, and the result of
// a measurement in flight when it comes (the run ended, or its PodSet is
// gone).
func (r *Runner) Forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.results, key)
	delete(r.pending, key)
}

// ForgetPrefix forgets every run whose key begins with prefix.
func (r *Runner) ForgetPrefix(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.results {
		if strings.HasPrefix(key, prefix) {
			delete(r.results, key)
		}
	}
	for key := range r.pending {
		if strings.HasPrefix(key, prefix) {
			delete(r.pending, key)
		}
	}
}
