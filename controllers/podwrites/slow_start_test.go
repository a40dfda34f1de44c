package podwrites

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// slowStartCases are the batch sizes slowStartBatch must use for count calls:
// doubling from 1, the last one cut to what remains.
var slowStartCases = []struct {
	count   int
	batches []int
}{
	{count: 1, batches: []int{1}},
	{count: 2, batches: []int{1, 1}},
	{count: 3, batches: []int{1, 2}},
	{count: 4, batches: []int{1, 2, 1}},
	{count: 7, batches: []int{1, 2, 4}},
	{count: 10, batches: []int{1, 2, 4, 3}},
	{count: 16, batches: []int{1, 2, 4, 8, 1}},
}

func TestSlowStartBatchZeroCountCallsNothing(t *testing.T) {
	g := NewWithT(t)
	calls := &failingCalls{}

	successes, err := SlowStart(context.Background(), 0, nil, calls.fn)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(successes).To(BeZero())
	g.Expect(calls.made).To(BeZero())
}

func TestSlowStartBatchAllSucceed(t *testing.T) {
	for _, tt := range slowStartCases {
		t.Run(fmt.Sprint(tt.count), func(t *testing.T) {
			g := NewWithT(t)
			calls := &failingCalls{}

			successes, err := SlowStart(context.Background(), tt.count, nil, calls.fn)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(successes).To(Equal(tt.count))
			g.Expect(calls.made).To(Equal(tt.count))
		})
	}
}

// Which calls form a batch does not depend on scheduling: a batch starts only
// once the previous one has returned. So making the i-th call fail and
// counting the calls made reveals where i's batch ends, for every i.
func TestSlowStartBatchBatchBoundaries(t *testing.T) {
	for _, tt := range slowStartCases {
		t.Run(fmt.Sprint(tt.count), func(t *testing.T) {
			first := 1
			for k, size := range tt.batches {
				last := first + size - 1
				for failing := first; failing <= last; failing++ {
					g := NewWithT(t)
					calls := &failingCalls{failing: map[int]bool{failing: true}}

					successes, err := SlowStart(context.Background(), tt.count, nil, calls.fn)

					g.Expect(calls.made).To(Equal(last), "call %d fails, in batch %d", failing, k+1)
					g.Expect(successes).To(Equal(last-1), "call %d fails", failing)
					g.Expect(err).To(MatchError(callError(failing)))
				}
				first = last + 1
			}
		})
	}
}

func TestSlowStartBatchStopsAfterTheBatchThatFailed(t *testing.T) {
	tests := []struct {
		name          string
		count         int
		failing       []int
		wantCalls     int
		wantSuccesses int
		wantOneOf     []int
	}{
		{name: "first call fails", count: 10, failing: []int{1}, wantCalls: 1, wantSuccesses: 0, wantOneOf: []int{1}},
		{name: "whole second batch fails", count: 10, failing: []int{2, 3}, wantCalls: 3, wantSuccesses: 1, wantOneOf: []int{2, 3}},
		{name: "two calls of the third batch fail", count: 10, failing: []int{4, 6}, wantCalls: 7, wantSuccesses: 5, wantOneOf: []int{4, 6}},
		{name: "later failures are never reached", count: 10, failing: []int{5, 9}, wantCalls: 7, wantSuccesses: 6, wantOneOf: []int{5}},
		{name: "last, short batch fails", count: 10, failing: []int{8, 10}, wantCalls: 10, wantSuccesses: 8, wantOneOf: []int{8, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			calls := &failingCalls{failing: map[int]bool{}}
			var wantErrs []error
			for _, i := range tt.failing {
				calls.failing[i] = true
			}
			for _, i := range tt.wantOneOf {
				wantErrs = append(wantErrs, callError(i))
			}

			successes, err := SlowStart(context.Background(), tt.count, nil, calls.fn)

			g.Expect(calls.made).To(Equal(tt.wantCalls))
			g.Expect(successes).To(Equal(tt.wantSuccesses))
			g.Expect(err).To(BeElementOf(wantErrs))
		})
	}
}

// Each call waits until every call of its expected batch has started, so the
// calls in flight when a batch's last call arrives are exactly the batch as
// run. A call waiting for a call that never comes would hang the test until
// go test's -timeout: wrongly cut batches are caught before the barrier, but
// an implementation running a batch's calls one after another still hangs it,
// with a goroutine dump pointing at batchBarrier.
func TestSlowStartBatchRunsTheCallsOfABatchConcurrently(t *testing.T) {
	g := NewWithT(t)
	want := []int{1, 2, 4, 3}
	g.Expect(batchesByFailure(10)).To(Equal(want), "batches cut wrongly, the barrier would never open")
	b := newBatchBarrier(want)

	successes, err := SlowStart(context.Background(), 10, nil, b.call)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(successes).To(Equal(10))
	g.Expect(b.sizes).To(Equal(want))
	g.Expect(b.maxInFlight).To(Equal(4))
}

// failingCalls is an fn for slowStartBatch whose i-th call (from 1, in the
// order the calls start) fails when failing[i].
type failingCalls struct {
	failing map[int]bool

	mu   sync.Mutex
	made int
}

func (c *failingCalls) fn() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	if c.failing[c.made] {
		return callError(c.made)
	}
	return nil
}

// batchesByFailure finds the batches slowStartBatch cuts count calls into by
// failing the first call of each batch and counting the calls made.
func batchesByFailure(count int) []int {
	var batches []int
	for first := 1; first <= count; {
		calls := &failingCalls{failing: map[int]bool{first: true}}
		_, _ = SlowStart(context.Background(), count, nil, calls.fn)
		if calls.made < first {
			break
		}
		batches = append(batches, calls.made-first+1)
		first = calls.made + 1
	}
	return batches
}

func callError(i int) error { return fmt.Errorf("call %d failed", i) }

type batchBarrier struct {
	mu   sync.Mutex
	cond *sync.Cond
	// ends are the 1-based indexes of the last call of each expected batch.
	ends []int

	started     int
	inFlight    int
	maxInFlight int
	sizes       []int
}

func newBatchBarrier(batches []int) *batchBarrier {
	b := &batchBarrier{}
	b.cond = sync.NewCond(&b.mu)
	end := 0
	for _, size := range batches {
		end += size
		b.ends = append(b.ends, end)
	}
	return b
}

func (b *batchBarrier) call() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started++
	b.inFlight++
	b.maxInFlight = max(b.maxInFlight, b.inFlight)
	end := b.started
	for _, e := range b.ends {
		if e >= b.started {
			end = e
			break
		}
	}
	if b.started == end {
		b.sizes = append(b.sizes, b.inFlight)
		b.cond.Broadcast()
	}
	for b.started < end {
		b.cond.Wait()
	}
	b.inFlight--
	return nil
}

// The calls of a batch hold one write slot each: however large the batch, no
// more run at once than there are slots, and every call is still made.
func TestSlowStartBatchHoldsAWriteSlotPerCall(t *testing.T) {
	g := NewWithT(t)
	slots := NewSlots(3)
	var mu sync.Mutex
	running, most, made := 0, 0, 0
	fn := func() error {
		mu.Lock()
		running++
		made++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}

	successes, err := SlowStart(context.Background(), 40, slots, fn)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(successes).To(Equal(40))
	g.Expect(made).To(Equal(40))
	g.Expect(most).To(Equal(3), "calls running at once")
	g.Expect(slots).To(BeEmpty(), "slots not given back")
}

// A call that cannot get a slot before the context ends is not made, and
// counts as failed: the caller lowers its expectations by it.
func TestSlowStartBatchStopsWhenNoSlotComesBeforeTheContextEnds(t *testing.T) {
	g := NewWithT(t)
	slots := NewSlots(1)
	g.Expect(slots.Take(context.Background())).To(Succeed()) // held elsewhere
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := &failingCalls{}

	successes, err := SlowStart(ctx, 5, slots, calls.fn)

	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(successes).To(BeZero())
	g.Expect(calls.made).To(BeZero())
}
