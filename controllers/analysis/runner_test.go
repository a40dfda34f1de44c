package analysis

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// gatedQuerier answers each query once the test lets it, and counts the
// queries in flight.
type gatedQuerier struct {
	gate           chan struct{}
	inFlight, most atomic.Int32
	queries        atomic.Int32
}

func (q *gatedQuerier) Query(ctx context.Context, _, _ string) (model.Value, error) {
	q.queries.Add(1)
	n := q.inFlight.Add(1)
	defer q.inFlight.Add(-1)
	for {
		most := q.most.Load()
		if n <= most || q.most.CompareAndSwap(most, n) {
			break
		}
	}
	select {
	case <-q.gate:
		return model.Vector{{Value: 0.01}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestRunnerBoundsQueriesAndNeverWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := &gatedQuerier{gate: make(chan struct{})}
	var readyMu sync.Mutex
	ready := map[string]bool{}
	var observed atomic.Int32
	r := NewRunner(ctx, q, 2, func(key string) { readyMu.Lock(); ready[key] = true; readyMu.Unlock() },
		func(time.Duration, Measurement) { observed.Add(1) })
	c := conditions(t, "result < 0.05", "")
	due := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

	start := time.Now()
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		if !r.Submit(Request{Key: key, Due: due, Namespace: "shop", Query: "up", Conditions: c}) {
			t.Fatalf("Submit(%s) started nothing", key)
		}
	}
	if r.Submit(Request{Key: "a", Due: due.Add(time.Minute), Namespace: "shop", Query: "up", Conditions: c}) {
		t.Fatal("a second measurement of run a started while one is in flight")
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("Submit waited %v with Prometheus not answering", waited)
	}
	waitFor(t, func() bool { return q.inFlight.Load() == 2 })
	time.Sleep(50 * time.Millisecond)
	if n := q.inFlight.Load(); n != 2 {
		t.Fatalf("%d queries in flight; want the 2 slots", n)
	}
	close(q.gate)
	waitFor(t, func() bool { readyMu.Lock(); defer readyMu.Unlock(); return len(ready) == 5 })
	if most := q.most.Load(); most != 2 {
		t.Fatalf("at most %d queries were in flight; want 2", most)
	}
	if n := q.queries.Load(); n != 5 {
		t.Fatalf("%d queries sent; want one per run", n)
	}
	if n := observed.Load(); n != 5 {
		t.Fatalf("%d measurements observed; want 5", n)
	}
	if r.Submit(Request{Key: "a", Due: due.Add(time.Minute), Namespace: "shop", Query: "up", Conditions: c}) {
		t.Fatal("a second measurement of run a started while its result awaits collection")
	}
	res, ok := r.Collect("a")
	if !ok || !res.Due.Equal(due) || res.Measurement.Phase != Successful {
		t.Fatalf("Collect(a) = %+v, %v", res, ok)
	}
	if _, ok := r.Collect("a"); ok {
		t.Fatal("a result was collected twice")
	}
	if !r.Submit(Request{Key: "a", Due: due.Add(time.Minute), Namespace: "shop", Query: "up", Conditions: c}) {
		t.Fatal("the next measurement of run a did not start after its result was collected")
	}
}

func TestRunnerForgetsARunThatEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := &gatedQuerier{gate: make(chan struct{})}
	var readied atomic.Int32
	r := NewRunner(ctx, q, 1, func(string) { readied.Add(1) }, nil)
	c := conditions(t, "result < 0.05", "")
	r.Submit(Request{Key: "a", Namespace: "shop", Query: "up", Conditions: c})
	waitFor(t, func() bool { return q.inFlight.Load() == 1 })
	r.Forget("a")
	// The run starts again under the same key while the old query is out.
	second := time.Date(2026, 12, 6, 10, 1, 0, 0, time.UTC)
	if !r.Submit(Request{Key: "a", Due: second, Namespace: "shop", Query: "up", Conditions: c}) {
		t.Fatal("a forgotten run could not submit again")
	}
	q.gate <- struct{}{} // the old query answers
	waitFor(t, func() bool { return q.queries.Load() == 2 })
	if _, ok := r.Collect("a"); ok || readied.Load() != 0 {
		t.Fatalf("a forgotten measurement's result was kept (ready called %d times)", readied.Load())
	}
	q.gate <- struct{}{} // the new one answers
	waitFor(t, func() bool { return readied.Load() == 1 })
	if res, ok := r.Collect("a"); !ok || !res.Due.Equal(second) {
		t.Fatalf("Collect(a) = %+v, %v; want the new measurement's result", res, ok)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
