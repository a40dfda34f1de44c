package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
	q := newLagQueue(e, newWakeUps())

	g.Expect(q.queueLagging(context.Background())).To(BeTrue())
	g.Expect(q.wakeUps.ch).To(HaveLen(1))
	ev := <-q.wakeUps.ch
	g.Expect(client.ObjectKeyFromObject(ev.Object)).To(Equal(client.ObjectKey{Namespace: "ns", Name: "web"}))

	// A stopping manager does not block the loop on a full channel.
	for range cap(q.wakeUps.ch) {
		q.wakeUps.ch <- ev
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

// Creations whose events are behind a pod watch that still delivers are
// late, not lost: the watch delivers in the order of resourceVersions, so
// they are still to come, and a check against the API server would only
// load it (the memory scenario's PodSets listed their thousand pods every
// second that way). A watch that fell silent, or that delivered a newer
// version without them, lags as before; so do deletions, which return no
// version.
func TestExpectationsCreationsBehindALiveWatchDoNotLag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		steps   func(e *Expectations, advance func(time.Duration))
		lagging bool
	}{
		{"the watch delivers older versions: on their way", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, false},
		{"the watch delivered a newer version without them: lost", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "201")
		}, true},
		{"the watch fell silent: maybe broken", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.PodEventSeen("ns", "150")
			advance(ExpectationsLagThreshold)
		}, true},
		{"another namespace's watch says nothing of this one", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			advance(5 * time.Second)
			e.PodEventSeen("other", "150")
		}, true},
		{"a newer creation returned: its events are behind too", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.CreationReturned(expKey, "300")
			e.CreationReturned(expKey, "250")
			advance(5 * time.Second)
			e.PodEventSeen("ns", "260")
		}, false},
		{"no version returned", func(e *Expectations, advance func(time.Duration)) {
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, true},
		{"an uncertain creation: maybe never made", func(e *Expectations, advance func(time.Duration)) {
			e.CreationReturned(expKey, "200")
			e.CreationUncertain(expKey)
			advance(5 * time.Second)
			e.PodEventSeen("ns", "150")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			e := NewExpectations(DefaultExpectationsTimeout)
			e.now = func() time.Time { return clock }
			e.ExpectCreations(expKey, 2)
			tc.steps(e, func(d time.Duration) { clock = clock.Add(d) })
			g.Expect(e.Lagging(expKey)).To(Equal(tc.lagging))
		})
	}

	t.Run("deletions awaited: they return no version", func(t *testing.T) {
		g := NewWithT(t)
		clock := time.Unix(1000, 0)
		e := NewExpectations(DefaultExpectationsTimeout)
		e.now = func() time.Time { return clock }
		e.Expect(expKey, 1, []types.UID{"a"})
		e.CreationReturned(expKey, "200")
		clock = clock.Add(5 * time.Second)
		e.PodEventSeen("ns", "150")
		g.Expect(e.Lagging(expKey)).To(BeTrue())
	})
}

// The reconcile that creates pods records the versions its creates returned,
// and the pod event handler how far the watch has delivered: together they
// tell late events from lost ones.
func TestReconcileAndPodEventsRecordTheVersionsLagIsJudgedBy(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, _ := unitReconciler(t, nil, nil, ps)
	// The API server's versions are global and grow; the fake client's
	// are per object. These pods are made at version 500.
	c := unitClientBuilder(ps).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := cl.Create(ctx, obj, opts...); err != nil {
				return err
			}
			if _, isPod := obj.(*corev1.Pod); isPod {
				obj.SetResourceVersion("500")
			}
			return nil
		}}).Build()
	r.Client, r.APIReader = c, c
	clock := time.Now()
	r.Expectations.now = func() time.Time { return clock }
	key := expectationsKey(ps.Namespace, ps.Name, ps.UID)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))

	// The watch goes on delivering events older than the creations.
	h := &podEventHandler{expectations: r.Expectations}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	older := unitPod("elsewhere", controlledByPodSet("other"))
	older.Namespace, older.ResourceVersion = ps.Namespace, "499"
	clock = clock.Add(5 * time.Second)
	h.Create(context.Background(), createEvent(older), q)
	g.Expect(r.Expectations.Lagging(key)).To(BeFalse(), "creations behind a watch that delivers were judged lost")

	clock = clock.Add(ExpectationsLagThreshold)
	g.Expect(r.Expectations.Lagging(key)).To(BeTrue(), "a silent watch may be broken")
}
