package wakeups

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// A PodSet whose pod creates a ResourceQuota refuses is retried on the
// controller's exponential backoff, which doubles from 5 ms to 30 s
// (the reconciler's maxRetryDelay): after a minute of refusals the next attempt is half a
// minute away. Raising or deleting the quota changes nothing the
// PodSet watches (its own spec, its pods), so without help it would wait out
// that backoff after the admin had made room. The ReplicaSet controller does
// wait it out. A PodSet is woken instead by the quota events that make room
// in its namespace: the quota deleted, its hard limit raised or removed, or
// its usage lowered (another pod deleted). Only PodSets that report
// ReplicaFailure are woken, so a busy namespace's quota updates cost a look
// at the cached PodSets and nothing more; the condition is written at once
// on the first refused create (status.WriteIsUrgent), and the write's own
// event reconciles the PodSet again, so a quota raised before the condition
// reaches the cache is seen too.
//
// A woken PodSet's backoff starts again from 5 ms (wakeRefusedPodSets): the
// API server's quota admission judges a create against its own cache of the
// quota, which can be behind the operator's, so the first create after the
// wake may still be refused. Its retries then come within about as long as
// the API server took to catch up, not after the backoff the refusals before
// the wake had built.

// QuotaMadeRoom passes the ResourceQuota events after which a create it
// refused may succeed. A new quota only adds limits, so creation passes
// nothing.
func QuotaMadeRoom() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldQuota, ok1 := e.ObjectOld.(*corev1.ResourceQuota)
			newQuota, ok2 := e.ObjectNew.(*corev1.ResourceQuota)
			return ok1 && ok2 && quotaRoomGrew(&oldQuota.Status, &newQuota.Status)
		},
	}
}

// quotaRoomGrew reports whether any resource the old status limited has more
// room left (hard minus used) in the new one, or is no longer limited. The
// API server's quota admission judges a create against the status, not the
// spec: a raised spec.hard allows nothing until the quota controller has
// copied it into status.hard, and that status update is the event that
// counts.
func quotaRoomGrew(old, updated *corev1.ResourceQuotaStatus) bool {
	for name, oldHard := range old.Hard {
		newHard, stillLimited := updated.Hard[name]
		if !stillLimited {
			return true
		}
		oldRoom, newRoom := oldHard.DeepCopy(), newHard.DeepCopy()
		if used, ok := old.Used[name]; ok {
			oldRoom.Sub(used)
		}
		if used, ok := updated.Used[name]; ok {
			newRoom.Sub(used)
		}
		if newRoom.Cmp(oldRoom) > 0 {
			return true
		}
	}
	return false
}

// podSetsRefusedIn maps a quota event to the PodSets of its namespace that
// report ReplicaFailure, read from the cache without copies (only their
// conditions are read): in a namespace of thousands of PodSets and busy pods
// a quota makes room at every pod deletion.
func podSetsRefusedIn(reader client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, quota client.Object) []reconcile.Request {
		var list appv1alpha1.PodSetList
		if err := reader.List(ctx, &list, client.InNamespace(quota.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			logf.FromContext(ctx).Error(err, "listing the PodSets a quota change may unblock", "namespace", quota.GetNamespace())
			return nil
		}
		var requests []reconcile.Request
		for i := range list.Items {
			ps := &list.Items[i]
			if meta.IsStatusConditionTrue(ps.Status.Conditions, appv1alpha1.ConditionReplicaFailure) {
				requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ps.Namespace, Name: ps.Name}})
			}
		}
		return requests
	}
}

// RefusedPodSets enqueues the PodSets a quota event may unblock
// (podSetsRefusedIn), each with its backoff forgotten.
func RefusedPodSets(reader client.Reader) handler.EventHandler {
	refused := podSetsRefusedIn(reader)
	wake := func(ctx context.Context, quota client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range refused(ctx, quota) {
			q.Forget(req)
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, e.Object, q)
		},
	}
}
