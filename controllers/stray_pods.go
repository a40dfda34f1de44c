package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// A stray is a pod that left the operator's pod cache while still
// controlled by a PodSet and not being deleted: someone removed its
// app.example.com/podset label (to debug a pod, say). The cache holds only pods carrying
// that label, so such a pod looks deleted; its PodSet replaces it, and unless
// the stray is released it would keep the PodSet's controller reference, one
// owned live pod more than spec.replicas.
//
// The pod event handler records a possible stray when the informer reports
// the pod gone without it being marked for deletion; the next reconcile of
// its PodSet reads it from the API server and, if it still exists, releases
// it (see releaseStrays) before it may create a replacement, as the
// ReplicaSet controller releases a pod whose labels stop matching its
// selector.
//
// What this cannot see: a pod stripped of the label while the operator is
// not running. Its informer never held it, so no event reports it; it keeps
// its controller reference until the label returns (it is then adopted back
// and the PodSet scales down to spec.replicas) or the PodSet is deleted (the
// garbage collector deletes it).

// mayBeStray reports whether a pod the informer reports deleted may in fact
// only have left the informer's label selector. The event cannot tell: for a
// pod that stops matching a watch's selector, the API server sends the state
// it had before, label included. A pod that was really deleted was mostly
// marked terminating first (graceful deletion), so only the pods reported
// gone without a deletionTimestamp (deleted at once, or stripped) are looked
// up again.
func mayBeStray(pod *slimpod.Pod) bool {
	return pod.DeletionTimestamp == nil
}

// releaseStrays releases the PodSet's stray pods, reading each from the API
// server (the cache no longer holds them). Until every stray is released,
// the reconcile stops here: a replacement created before would make one owned
// live pod too many.
func (r *PodSetReconciler) releaseStrays(ctx context.Context, s *podSetScope) error {
	strays := &s.record.strays
	var errs []error
	for uid, name := range strays.list() {
		pod := &corev1.Pod{}
		err := r.APIReader.Get(ctx, name, pod)
		switch {
		case apierrors.IsNotFound(err):
			strays.done(uid)
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading stray pod %s: %w", name.Name, err))
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		if pod.UID != uid || ref == nil || ref.UID != s.podSet.UID || pod.DeletionTimestamp != nil ||
			operand.Selector(s.podSet).Matches(labels.Set(pod.Labels)) {
			// Gone, someone else's, going, or back in the cache (its
			// label restored): nothing to release.
			strays.done(uid)
			continue
		}
		if err := r.releasePod(ctx, s.podSet, &pod.ObjectMeta); err != nil {
			errs = append(errs, err)
			continue
		}
		strays.done(uid)
	}
	return errors.Join(errs...)
}
