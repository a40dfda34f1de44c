package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
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
// added meanwhile is never lost (the write fails with a conflict, and the
// reconcile is retried). A name is known as the PodSet's pod when the pods
// show it, when an earlier look while it was listed did (the record), or
// when the last status written before this reconcile listed it.
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
	keep, unknown, seen := sortPodsToDelete(names, s.pods, rec.namedSeen, s.listedPodNames)
	rec.namedSeen = seen
	if len(keep) == len(names) {
		return nil
	}
	if err := r.Fence.Allow(); err != nil {
		return err
	}
	orig := ps.DeepCopy()
	ps.Spec.ScaleStrategy.PodsToDelete = keep
	if err := r.Patch(ctx, ps, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		// A conflict too: the change that made this copy stale may be
		// one no watch predicate passes (a label).
		return fmt.Errorf("removing names from spec.scaleStrategy.podsToDelete: %w", err)
	}
	rec.namedSeen = seen.Intersection(sets.New(keep...))
	if len(unknown) > 0 {
		r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventPodToDeleteUnknown, "Delete", "%s",
			eventNote("spec.scaleStrategy.podsToDelete: no pod of this PodSet is named "+strings.Join(unknown, ", ")+"; the names are ignored and removed from the list"))
	}
	return nil
}

// sortPodsToDelete sorts the names of spec.scaleStrategy.podsToDelete: keep
// are those of live pods among pods; unknown those of no pod among pods, of
// none seen while the names were listed (seen, the record's) and of none
// the last status listed (listed). The rest name pods that are going or
// gone, and leave the list quietly. It returns seen with the pods seen now,
// only the names listed kept.
func sortPodsToDelete(names []string, pods []*slimpod.Pod, seen sets.Set[string], listed []string) (keep, unknown []string, seenAfter sets.Set[string]) {
	listedNames := sets.New(names...)
	seenAfter = seen.Intersection(listedNames)
	live := sets.New[string]()
	for _, pod := range pods {
		if !listedNames.Has(pod.Name) {
			continue
		}
		seenAfter.Insert(pod.Name)
		if operand.IsLive(pod) {
			live.Insert(pod.Name)
		}
	}
	inStatus := sets.New(listed...)
	for _, name := range names {
		switch {
		case live.Has(name):
			keep = append(keep, name)
		case !seenAfter.Has(name) && !inStatus.Has(name):
			unknown = append(unknown, name)
		}
	}
	return keep, unknown, seenAfter
}
