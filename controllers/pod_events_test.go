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
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/slimpod"
)

// webKey is the expectations key of the PodSet ns/web the events concern.
// webKey is the expectations key of unitPodSet, whose pods controlledByPodSet("web") builds.
const webKey = unitNamespace + "/web/PodSet-web-uid"

func TestPodEventHandler(t *testing.T) {
	owned := func(name string, opts ...podOption) *slimpod.Pod {
		return unitPod(name, append([]podOption{controlledByPodSet("web")}, opts...)...)
	}
	webLabel := map[string]string{appv1alpha1.LabelPodSet: "web"}

	tests := []struct {
		name          string
		expect        func(*consistency.Expectations)
		events        func(context.Context, *podEventHandler, queue)
		wantQueue     []reconcile.Request
		wantSatisfied bool
	}{
		{
			name:   "create of owned pods observes each creation and queues the owner",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 2) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(owned("a")), q)
				h.Create(ctx, createEvent(owned("b")), q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: true,
		},
		{
			name:   "one create observes one creation",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 2) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(owned("a")), q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: false,
		},
		{
			name:   "create of an orphan carrying a PodSet's name queues it, without counting as a creation",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 1) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(unitPod("a", withPodLabels(webLabel))), q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: false,
		},
		{
			name:   "create of an orphan without the label queues nothing",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 1) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(unitPod("a", withPodLabels(map[string]string{appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue}))), q)
			},
			wantSatisfied: false,
		},
		{
			name:   "create of a Deployment's pod queues nothing",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 1) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(unitPod("a", controlledBy("apps/v1", "ReplicaSet", "web"))), q)
				h.Create(ctx, createEvent(unitPod("b", controlledBy("apps/v1", "Deployment", "web"))), q)
			},
			wantSatisfied: false,
		},
		{
			name:   "create of a pod controlled by a PodSet of another API group queues nothing",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 1) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(unitPod("a", controlledBy("other.example.com/v1", "PodSet", "web"))), q)
			},
			wantSatisfied: false,
		},
		{
			name:   "create of an owned pod already terminating observes its deletion, not a creation",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(owned("a", terminatingSince(unitNow))), q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: true,
		},
		{
			name:   "update setting deletionTimestamp observes the deletion",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Update(ctx, updateEvent(owned("a"), owned("a", newerResourceVersion(), terminatingSince(unitNow))), q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: true,
		},
		{
			name:   "deletionTimestamp then delete event observe one deletion, not two",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid", "b-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				terminating := owned("a", newerResourceVersion(), terminatingSince(unitNow))
				h.Update(ctx, updateEvent(owned("a"), terminating), q)
				h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: terminating}, q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: false,
		},
		{
			name:   "update with the same resourceVersion does nothing",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Update(ctx, updateEvent(owned("a"), owned("a", terminatingSince(unitNow))), q)
			},
			wantSatisfied: false,
		},
		{
			name:   "update of an owned pod queues its owner, leaving expectations alone",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 1) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Update(ctx, updateEvent(owned("a"), owned("a", newerResourceVersion(), readySince(unitNow))), q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: false,
		},
		{
			name: "controller change queues the old and the new owner",
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Update(ctx, updateEvent(
					unitPod("a", controlledByPodSet("old")),
					unitPod("a", controlledByPodSet("new"), newerResourceVersion()),
				), q)
			},
			wantQueue: requests("old", "new"),
		},
		{
			name: "release queues the old owner and the PodSet the pod is now labelled for",
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Update(ctx, updateEvent(
					unitPod("a", controlledByPodSet("old"), withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "old"})),
					unitPod("a", withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "other"}), newerResourceVersion()),
				), q)
			},
			wantQueue: requests("old", "other"),
		},
		{
			name:   "delete of an owned pod observes its deletion",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: owned("a")}, q)
			},
			wantQueue:     requests("web"),
			wantSatisfied: true,
		},
		{
			name:   "delete of another PodSet's pod observes nothing for this one",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: unitPod("a", controlledByPodSet("other"))}, q)
			},
			wantQueue:     requests("other"),
			wantSatisfied: false,
		},
		{
			name:   "events for objects that are not pods are ignored",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 1) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				cm := &corev1.ConfigMap{}
				cm.Namespace, cm.Name = unitNamespace, "web"
				cm.OwnerReferences = unitPod("x", controlledByPodSet("web")).OwnerReferences
				h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: cm}, q)
				h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: cm}, q)
			},
			wantSatisfied: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e, h, q := newPodEventHandler(t, tt.expect, 0)

			tt.events(t.Context(), h, q)

			if tt.wantQueue == nil {
				g.Expect(drainQueue(q)).To(BeEmpty())
			} else {
				g.Expect(drainQueue(q)).To(ConsistOf(tt.wantQueue))
			}
			if tt.expect != nil {
				g.Expect(e.Satisfied(webKey)).To(Equal(tt.wantSatisfied))
			}
		})
	}
}

// newPodEventHandler returns a handler with fresh expectations, set up by
// expect when not nil, and the queue it fills.
func newPodEventHandler(t *testing.T, expect func(*consistency.Expectations), batchPeriod time.Duration) (*consistency.Expectations, *podEventHandler, queue) {
	e := consistency.NewExpectations(consistency.Timeouts{Expectations: time.Hour, UncertainCreation: UncertainCreationTimeout, LagThreshold: ExpectationsLagThreshold})
	if expect != nil {
		expect(e)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	return e, &podEventHandler{expectations: e, batchPeriod: batchPeriod}, q
}

func createEvent(pod *slimpod.Pod) event.TypedCreateEvent[client.Object] {
	return event.TypedCreateEvent[client.Object]{Object: pod}
}

func updateEvent(oldPod, newPod *slimpod.Pod) event.TypedUpdateEvent[client.Object] {
	return event.TypedUpdateEvent[client.Object]{ObjectOld: oldPod, ObjectNew: newPod}
}

func requests(names ...string) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(names))
	for _, n := range names {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: unitNamespace, Name: n}})
	}
	return out
}

// drainQueue returns what is queued now; it never blocks, since Get is only
// called while the queue holds something.
func drainQueue(q queue) []reconcile.Request {
	var out []reconcile.Request
	for q.Len() > 0 {
		item, _ := q.Get()
		q.Done(item)
		out = append(out, item)
	}
	return out
}

func TestPodEventHandlerBatchesEvents(t *testing.T) {
	const period = time.Second
	owned := func(name string, opts ...podOption) *slimpod.Pod {
		return unitPod(name, append([]podOption{controlledByPodSet("web")}, opts...)...)
	}
	tests := []struct {
		name   string
		expect func(*consistency.Expectations)
		events func(context.Context, *podEventHandler, queue)
		// atOnce: the PodSet is queued without waiting for the period.
		atOnce bool
	}{
		{
			name:   "creations the PodSet still waits for more of: after the period, once",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 3) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(owned("a")), q)
				h.Create(ctx, createEvent(owned("b")), q)
			},
		},
		{
			name: "status updates: after the period, once",
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Update(ctx, updateEvent(owned("a"), owned("a", readySince(unitNow), newerResourceVersion())), q)
				h.Update(ctx, updateEvent(owned("b"), owned("b", readySince(unitNow), newerResourceVersion())), q)
			},
		},
		{
			name:   "the last creation the PodSet waited for: at once",
			expect: func(e *consistency.Expectations) { e.ExpectCreations(webKey, 2) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Create(ctx, createEvent(owned("a")), q)
				h.Create(ctx, createEvent(owned("b")), q)
			},
			atOnce: true,
		},
		{
			name:   "the last deletion the PodSet waited for: at once",
			expect: func(e *consistency.Expectations) { e.ExpectDeletions(webKey, []types.UID{"a-uid"}) },
			events: func(ctx context.Context, h *podEventHandler, q queue) {
				h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: owned("a")}, q)
			},
			atOnce: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, h, q := newPodEventHandler(t, tt.expect, period)

			tt.events(t.Context(), h, q)

			if tt.atOnce {
				g.Expect(q.Len()).To(Equal(1))
			} else {
				g.Expect(q.Len()).To(BeZero(), "not queued before the period ends")
				g.Eventually(q.Len).WithTimeout(5 * period).WithPolling(10 * time.Millisecond).Should(Equal(1))
			}
			g.Expect(drainQueue(q)).To(ConsistOf(requests("web")), "one reconcile for all the events")
		})
	}
}

func TestPodEventHandlerRecordsStrays(t *testing.T) {
	owned := map[string]string{appv1alpha1.LabelPodSet: "web", appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue}
	stripped := map[string]string{appv1alpha1.LabelPodSet: "web"}
	for _, tc := range []struct {
		name      string
		pod       *slimpod.Pod
		tombstone bool
		want      bool
	}{
		// The API server reports a pod leaving a watch's selector with the
		// state it had before, managed-by label included.
		{"gone without being marked for deletion: stripped, or deleted at once", unitPod("a", withPodLabels(owned), controlledByPodSet("web")), false, true},
		{"a tombstone", unitPod("a", withPodLabels(owned), controlledByPodSet("web")), true, true},
		{"gracefully deleted", unitPod("a", withPodLabels(owned), controlledByPodSet("web"), terminatingSince(unitNow)), false, false},
		{"someone else's", unitPod("a", withPodLabels(stripped), controlledBy("apps/v1", "ReplicaSet", "web")), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, h, q := newPodEventHandler(t, nil, 0)
			h.records = newPodSetRecords()

			h.Delete(context.Background(), event.TypedDeleteEvent[client.Object]{Object: tc.pod, DeleteStateUnknown: tc.tombstone}, q)

			var strays map[types.UID]types.NamespacedName
			if rec := h.records.lookup(types.NamespacedName{Namespace: unitNamespace, Name: "web"}); rec != nil {
				strays = rec.strays.list()
			}
			if tc.want {
				g.Expect(strays).To(HaveKeyWithValue(tc.pod.UID, types.NamespacedName{Namespace: unitNamespace, Name: "a"}))
			} else {
				g.Expect(strays).To(BeEmpty())
			}
		})
	}
}
