package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/controllers/operand"
)

// EventPodToDeleteUnknown reports names of spec.scaleStrategy.podsToDelete
// that are not the PodSet's pods.
const EventPodToDeleteUnknown = "PodToDeleteUnknown"

// prunePodsToDelete removes from spec.scaleStrategy.podsToDelete the names
// no live pod of the PodSet has: their pods are being deleted or are gone
// (the scaling step deleted them, rolloutstate.Step), or were never the
// PodSet's, which a Warning event names. It acts only on a cache that holds
// every pod the PodSet made, so that a pod created a moment ago is not
// taken for unknown, and writes with the resourceVersion it read: a name
// added meanwhile is never lost (the write fails, and the change that made
// this copy stale brings another reconcile).
func (r *PodSetReconciler) prunePodsToDelete(ctx context.Context, s *podSetScope, podCache cacheVerdict) error {
	ps, rec := s.podSet, s.record
	names := ps.Spec.PodsToDelete()
	if len(names) == 0 {
		rec.namedSeen = nil
		return nil
	}
	if ps.DeletionTimestamp != nil || s.expectationsWait > 0 || podCache.hold {
		return nil
	}
	live := sets.New[string]()
	for _, pod := range s.pods {
		if operand.IsLive(pod) {
			live.Insert(pod.Name)
		}
		if rec.namedSeen == nil {
			rec.namedSeen = sets.New[string]()
		}
		rec.namedSeen.Insert(pod.Name)
	}
	// Only the names listed are worth remembering.
	rec.namedSeen = rec.namedSeen.Intersection(sets.New(names...))
	var keep, unknown []string
	listed := sets.New(ps.Status.PodNames...)
	for _, name := range names {
		switch {
		case live.Has(name):
			keep = append(keep, name)
		case !rec.namedSeen.Has(name) && !listed.Has(name):
			unknown = append(unknown, name)
		}
	}
	if len(keep) == len(names) {
		return nil
	}
	if err := r.Fence.Allow(); err != nil {
		return err
	}
	orig := ps.DeepCopy()
	ps.Spec.ScaleStrategy.PodsToDelete = keep
	if err := r.Patch(ctx, ps, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	rec.namedSeen = rec.namedSeen.Intersection(sets.New(keep...))
	if len(unknown) > 0 {
		r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventPodToDeleteUnknown, "Delete", "%s",
			eventNote("spec.scaleStrategy.podsToDelete: no pod of this PodSet is named "+strings.Join(unknown, ", ")+"; the names are ignored and removed from the list"))
	}
	return nil
}
