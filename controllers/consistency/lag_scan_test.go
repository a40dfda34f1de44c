package consistency

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestLagScanQueuesEachLagOnce(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := NewExpectations(testTimeouts, WithClock(func() time.Time { return clock }))
	e.ExpectCreations(Key("ns", "web", "uid-1"), 1)
	e.ExpectCreations(Key("ns", "db", "uid-2"), 1)
	e.CreationObserved(Key("ns", "db", "uid-2"))
	var queued []string
	s := &LagScan{Expectations: e, Interval: time.Millisecond, Queue: func(_ context.Context, key string) bool {
		queued = append(queued, key)
		return true
	}}

	g.Expect(s.Scan(context.Background())).To(BeTrue())
	g.Expect(queued).To(BeEmpty(), "nothing lags yet")
	clock = clock.Add(testTimeouts.LagThreshold)
	g.Expect(s.Scan(context.Background())).To(BeTrue())
	g.Expect(queued).To(Equal([]string{Key("ns", "web", "uid-1")}))
	g.Expect(s.Scan(context.Background())).To(BeTrue())
	g.Expect(queued).To(HaveLen(1), "a lag is queued once")
}

// A Queue that cannot deliver (the manager is stopping) ends the scan, and
// Start returns.
func TestLagScanStopsWhenQueueCannotDeliver(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := NewExpectations(testTimeouts, WithClock(func() time.Time { return clock }))
	e.ExpectCreations(Key("ns", "web", "uid-1"), 1)
	e.ExpectCreations(Key("ns", "db", "uid-2"), 1)
	clock = clock.Add(testTimeouts.LagThreshold)
	calls := 0
	s := &LagScan{Expectations: e, Interval: time.Millisecond, Queue: func(context.Context, string) bool {
		calls++
		return false
	}}

	done := make(chan error, 1)
	go func() { done <- s.Start(context.Background()) }()
	g.Eventually(done).Should(Receive(BeNil()))
	g.Expect(calls).To(Equal(1), "the scan went on after Queue failed")
}
