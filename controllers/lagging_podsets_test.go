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

	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/wakeups"
)

func TestLagScanQueuesLaggingPodSets(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	r := &PodSetReconciler{Expectations: newExpectations(consistency.WithClock(func() time.Time { return clock })), wakeUps: wakeups.New()}
	e := r.Expectations
	e.ExpectCreations(consistency.Key("ns", "web", "uid-1"), 1)
	e.ExpectCreations(consistency.Key("ns", "db", "uid-2"), 1)
	e.CreationObserved(consistency.Key("ns", "db", "uid-2"))
	clock = clock.Add(ExpectationsLagThreshold)
	scan := r.newLagScan()

	g.Expect(scan.Scan(context.Background())).To(BeTrue())
	g.Expect(r.wakeUps.Events).To(HaveLen(1))
	ev := <-r.wakeUps.Events
	g.Expect(client.ObjectKeyFromObject(ev.Object)).To(Equal(client.ObjectKey{Namespace: "ns", Name: "web"}))

	// A stopping manager does not block the loop on a full channel.
	for range cap(r.wakeUps.Events) {
		r.wakeUps.Events <- ev
	}
	clock = clock.Add(time.Second)
	e.ExpectCreations(consistency.Key("ns", "web", "uid-1"), 1)
	clock = clock.Add(ExpectationsLagThreshold)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Expect(scan.Scan(ctx)).To(BeFalse())
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
			r.Expectations = newExpectations(consistency.WithClock(func() time.Time { return clock }))
			key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
			r.Expectations.ExpectDeletions(key, []types.UID{pods[2].UID})
			r.Expectations.WritesReturned(key)
			clock = clock.Add(tc.lag)

			_, err := reconcileOnce(r, ps)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podsIn(g, c)).To(HaveLen(2 + tc.created))
		})
	}
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
	r.Expectations = newExpectations(consistency.WithClock(func() time.Time { return clock }))
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)

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
