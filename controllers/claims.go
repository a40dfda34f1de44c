package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claims sorts the objects a PodSet may claim, its pods or its revisions,
// by their controller reference and labels, the way the kube controllers'
// ControllerRefManager does: an object belongs to the PodSet only while both
// its controller reference and its labels say so.
type claims[T metav1.Object] struct {
	// owned are controlled by the PodSet and match its selector,
	// terminating ones included.
	owned []T
	// orphans match the selector, have no controller and are not being
	// deleted: the PodSet may adopt them.
	orphans []T
	// unmatched are controlled by the PodSet but no longer match its
	// selector, and are not being deleted: the PodSet releases them.
	unmatched []T
}

// sortClaims sorts candidates for the PodSet of UID owner and selector.
// Objects controlled by anything else are in none of the lists: they are
// never touched.
func sortClaims[T metav1.Object](candidates []T, owner types.UID, selector labels.Selector) claims[T] {
	var c claims[T]
	for _, obj := range candidates {
		matches := selector.Matches(labels.Set(obj.GetLabels()))
		ref := metav1.GetControllerOfNoCopy(obj)
		live := obj.GetDeletionTimestamp() == nil
		switch {
		case ref != nil && ref.UID != owner:
		case ref != nil && matches:
			c.owned = append(c.owned, obj)
		case ref != nil && live:
			c.unmatched = append(c.unmatched, obj)
		case ref == nil && matches && live:
			c.orphans = append(c.orphans, obj)
		}
	}
	return c
}

// confirmLive reports whether the PodSet may adopt: the cached PodSet may be
// stale, so it is read from the API server once per reconcile, and a PodSet
// that is being deleted, or that was replaced by a namesake (errNotOnServer),
// must not adopt pods or revisions that the garbage collector would then
// leave behind or delete wrongly. A PodSet found being deleted becomes the
// reconcile's PodSet: the reconcile must not create pods from the stale copy
// either, as the ReplicaSet controller skips manageReplicas then; the
// PodSet's own deletion event brings what comes next.
func (r *PodSetReconciler) confirmLive(ctx context.Context, s *podSetScope) (bool, error) {
	if s.liveConfirmed != nil {
		return *s.liveConfirmed, nil
	}
	fresh, err := r.readPodSet(ctx, s)
	if err != nil {
		return false, err
	}
	if fresh.DeletionTimestamp != nil {
		r.actOn(s, fresh)
	}
	live := fresh.DeletionTimestamp == nil
	s.liveConfirmed = &live
	return live, nil
}
