package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestExpectationsLagging(t *testing.T) {
	for _, tc := range []struct {
		name string
		// steps run against expectations set at clock 0.
		steps   func(e *Expectations, advance func(time.Duration))
		lagging bool
	}{
		{"writes just set", func(_ *Expectations, _ func(time.Duration)) {}, false},
		{"no event for the threshold", func(_ *Expectations, advance func(time.Duration)) {
			advance(ExpectationsLagThreshold)
		}, true},
		{"the writes returned late: the lag counts from then", func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.WritesReturned(expKey)
			advance(ExpectationsLagThreshold / 2)
		}, false},
		{"an event came: the lag counts from it", func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.CreationObserved(expKey)
			advance(ExpectationsLagThreshold / 2)
		}, false},
		{"a deletion came, then nothing", func(e *Expectations, advance func(time.Duration)) {
			e.DeletionObserved(expKey, "a")
			advance(ExpectationsLagThreshold)
		}, true},
		{"everything came", func(e *Expectations, advance func(time.Duration)) {
			e.CreationObserved(expKey)
			e.CreationObserved(expKey)
			e.DeletionObserved(expKey, "a")
			advance(time.Minute)
		}, false},
		{"past the timeout: Expired's case, not a lag", func(_ *Expectations, advance func(time.Duration)) {
			advance(DefaultExpectationsTimeout)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := NewExpectations(DefaultExpectationsTimeout)
			e.now = func() time.Time { return clock }
			e.Expect(expKey, 2, []types.UID{"a"})
			tc.steps(e, func(d time.Duration) { clock = clock.Add(d) })
			g.Expect(e.Lagging(expKey)).To(Equal(tc.lagging))
		})
	}
}

// Each lag is reported once, and again only after progress and a new lag:
// the loop must not queue a PodSet every LagCheckInterval while it waits.
func TestExpectationsTakeLaggingReportsEachLagOnce(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := NewExpectations(DefaultExpectationsTimeout)
	e.now = func() time.Time { return clock }
	e.ExpectCreations(expKey, 2)
	e.ExpectCreations("ns/settled/uid", 1)
	e.CreationObserved("ns/settled/uid")

	g.Expect(e.TakeLagging()).To(BeEmpty())
	clock = clock.Add(ExpectationsLagThreshold)
	g.Expect(e.TakeLagging()).To(ConsistOf(expKey))
	g.Expect(e.TakeLagging()).To(BeEmpty(), "reported twice")

	e.CreationObserved(expKey)
	g.Expect(e.TakeLagging()).To(BeEmpty())
	clock = clock.Add(ExpectationsLagThreshold)
	g.Expect(e.TakeLagging()).To(ConsistOf(expKey), "a new lag after progress")
}

func TestLagQueueQueuesLaggingPodSets(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	e := NewExpectations(DefaultExpectationsTimeout)
	e.now = func() time.Time { return clock }
	e.ExpectCreations(expectationsKey("ns", "web", "uid-1"), 1)
	e.ExpectCreations(expectationsKey("ns", "db", "uid-2"), 1)
	e.CreationObserved(expectationsKey("ns", "db", "uid-2"))
	clock = clock.Add(ExpectationsLagThreshold)
	q := newLagQueue(e)

	g.Expect(q.queueLagging(context.Background())).To(BeTrue())
	g.Expect(q.wake).To(HaveLen(1))
	ev := <-q.wake
	g.Expect(client.ObjectKeyFromObject(ev.Object)).To(Equal(client.ObjectKey{Namespace: "ns", Name: "web"}))

	// A stopping manager does not block the loop on a full channel.
	for range cap(q.wake) {
		q.wake <- ev
	}
	clock = clock.Add(time.Second)
	e.ExpectCreations(expectationsKey("ns", "web", "uid-1"), 1)
	clock = clock.Add(ExpectationsLagThreshold)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Expect(q.queueLagging(ctx)).To(BeFalse())
}

// The broken watch of the fault matrix's rollout: the PodSet deleted a pod
// as its pod watch broke, and the deletion's event will come only with the
// relist, seconds to a minute later. Once the event lags, the PodSet
// checks its cache against the API server and goes on from the API
// server's pods, instead of waiting for the relist.
func TestReconcileGoesOnFromTheAPIServerWhenAwaitedEventsLag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lag     time.Duration
		created int
	}{
		{"events not late yet: it waits", ExpectationsLagThreshold / 2, 0},
		{"events late: it replaces the deleted pod", ExpectationsLagThreshold, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(3)
			pods := ownedPods(ps, 3)
			// The cache still holds the pod the PodSet deleted; the API
			// server has only the other two.
			r, c := unitReconciler(t, pods, nil, asObjects(ps, pods[:2])...)
			clock := time.Now()
			r.Expectations.now = func() time.Time { return clock }
			key := expectationsKey(ps.Namespace, ps.Name, ps.UID)
			r.Expectations.ExpectDeletions(key, []types.UID{pods[2].UID})
			r.Expectations.WritesReturned(key)
			clock = clock.Add(tc.lag)

			_, err := reconcileOnce(r, ps)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podsIn(g, c)).To(HaveLen(2 + tc.created))
		})
	}
}
