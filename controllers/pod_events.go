package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/slimpod"
)

// podEventHandler turns pod events into PodSet reconciles, like Owns(Pod)
// does, and in the same step records them in the expectations.
//
// The two must happen in one handler: if expectations were updated by a
// separate informer handler, the reconcile queued here could run before the
// observation was recorded, find its expectations unmet, and wait for an event
// that already came.
//
// Every event counts, readiness changes included. An orphan that carries a
// PodSet's name label queues that PodSet so that it can be adopted.
//
// The PodSet is queued batchPeriod after the event, not at once, as the
// kube-controller-manager's Job controller does with its pod events: while a
// thousand pods are created, scheduled and turn Ready, their events arrive
// by the thousand per second, and a reconcile per event (each one looking at
// every pod of the PodSet) costs CPU the API server needs. Events within the
// period share one reconcile; a PodSet already queued is not delayed further.
// The expectations are updated at once, whatever the period.
type podEventHandler struct {
	expectations *consistency.Expectations
	batchPeriod  time.Duration
	// records is where the pods that left the cache by losing their
	// app.example.com/podset label, rather than by being deleted, are recorded for
	// their PodSet (see claims.go).
	records *podSetRecords
}

// enqueueOwner queues the PodSet whose write this event observed: at once
// when it was the last write the PodSet waited for, since the PodSet may
// have more pods to create or delete and nothing else to wait for (the
// ReplicaSet controller's second slow-start burst starts just as soon);
// otherwise at the end of the batch period.
func (h *podEventHandler) enqueueOwner(q queue, podSet types.NamespacedName, fulfilled bool) {
	if fulfilled {
		q.Add(reconcile.Request{NamespacedName: podSet})
		return
	}
	h.enqueue(q, podSet)
}

// enqueue queues the PodSet at the end of the batch period.
func (h *podEventHandler) enqueue(q queue, podSet types.NamespacedName) {
	req := reconcile.Request{NamespacedName: podSet}
	if h.batchPeriod <= 0 {
		q.Add(req)
		return
	}
	q.AddAfter(req, h.batchPeriod)
}

var _ handler.TypedEventHandler[client.Object, reconcile.Request] = &podEventHandler{}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *podEventHandler) Create(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
	pod, ok := slimpod.Of(e.Object)
	if !ok {
		return
	}
	h.expectations.PodEventSeen(pod.Namespace, pod.ResourceVersion)
	if pod.DeletionTimestamp != nil {
		// After a restart, a pod can first show up already terminating: it
		// is no creation to count, but may be a deletion we waited for.
		h.deleted(pod, q)
		return
	}
	if owner, uid, ok := podSetOwner(pod); ok {
		fulfilled := h.expectations.PodCreationObserved(consistency.Key(owner.Namespace, owner.Name, uid), pod.UID)
		h.enqueueOwner(q, owner, fulfilled)
		return
	}
	h.enqueueLabelledPodSet(pod, q)
}

func (h *podEventHandler) Update(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
	oldPod, ok1 := slimpod.Of(e.ObjectOld)
	newPod, ok2 := slimpod.Of(e.ObjectNew)
	if !ok1 || !ok2 || oldPod.ResourceVersion == newPod.ResourceVersion {
		return // a resync: nothing changed
	}
	h.expectations.PodEventSeen(newPod.Namespace, newPod.ResourceVersion)
	labelsChanged := !equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels)

	if newPod.DeletionTimestamp != nil && oldPod.DeletionTimestamp == nil {
		// Graceful deletion has begun; the pod no longer counts, so the
		// deletion is observed now rather than when the kubelet is done.
		h.deleted(newPod, q)
		if labelsChanged {
			h.deleted(oldPod, q)
		}
		return
	}

	oldOwner, _, hadOwner := podSetOwner(oldPod)
	newOwner, _, hasOwner := podSetOwner(newPod)
	if hadOwner && (!hasOwner || oldOwner != newOwner) {
		h.enqueue(q, oldOwner)
	}
	if hasOwner {
		h.enqueue(q, newOwner)
		return
	}
	if labelsChanged || hadOwner {
		h.enqueueLabelledPodSet(newPod, q)
	}
}

func (h *podEventHandler) Delete(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
	pod, ok := slimpod.Of(e.Object)
	if !ok {
		return
	}
	if !e.DeleteStateUnknown {
		// A tombstone carries the pod's last known version, not the
		// watch's.
		h.expectations.PodEventSeen(pod.Namespace, pod.ResourceVersion)
	}
	// A tombstone (DeleteStateUnknown: the watch broke and a relist no
	// longer found the pod) may hide a stray just the same.
	if owner, uid, owned := podSetOwner(pod); owned && mayBeStray(pod) && h.records != nil {
		if rec := h.records.ofOwner(owner, uid); rec != nil {
			rec.strays.add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.UID)
		}
	}
	h.deleted(pod, q)
}

func (h *podEventHandler) Generic(_ context.Context, e event.TypedGenericEvent[client.Object], q queue) {
	if pod, ok := slimpod.Of(e.Object); ok {
		if owner, _, ok := podSetOwner(pod); ok {
			h.enqueue(q, owner)
		}
	}
}

func (h *podEventHandler) deleted(pod *slimpod.Pod, q queue) {
	if owner, uid, ok := podSetOwner(pod); ok {
		fulfilled := h.expectations.DeletionObserved(consistency.Key(owner.Namespace, owner.Name, uid), pod.UID)
		h.enqueueOwner(q, owner, fulfilled)
	}
}

// podSetOwner is the PodSet that controls the pod, and its UID, if one does.
func podSetOwner(pod *slimpod.Pod) (types.NamespacedName, types.UID, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "PodSet" {
		return types.NamespacedName{}, "", false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != appv1alpha1.GroupVersion.Group {
		return types.NamespacedName{}, "", false
	}
	return types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, ref.UID, true
}

// enqueueLabelledPodSet queues the PodSet an orphan's label names, the one
// that may adopt it. Pods controlled by something else are none of its
// business.
func (h *podEventHandler) enqueueLabelledPodSet(pod *slimpod.Pod, q queue) {
	if metav1.GetControllerOfNoCopy(pod) != nil {
		return
	}
	if name := pod.Labels[appv1alpha1.LabelPodSet]; name != "" {
		h.enqueue(q, types.NamespacedName{Namespace: pod.Namespace, Name: name})
	}
}
