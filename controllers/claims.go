package controllers

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/ownership"
	"github.com/example/podset-operator/controllers/slimpod"
)

// The phases that find what belongs to the PodSet: its stray pods released,
// its pods and revisions claimed (controllers/ownership), adopting only once
// a fresh read has shown the PodSet live.

// refManager claims for the PodSet of s.
func (r *PodSetReconciler) refManager(s *podSetScope) *ownership.RefManager {
	return &ownership.RefManager{
		Client: r.Client, Scheme: r.Scheme, Owner: s.podSet,
		CanAdopt: func(ctx context.Context) (bool, error) { return r.confirmLive(ctx, s) },
	}
}

// claimPods finds the pods that belong to the PodSet: those it controls and
// whose labels still match its selector. On the way it adopts matching pods
// that nobody controls and releases controlled pods that no longer match, as
// the ReplicaSet controller does. Pods controlled by anything else are never
// touched.
func (r *PodSetReconciler) claimPods(ctx context.Context, s *podSetScope) error {
	ps := s.podSet
	candidates, err := r.Pods.Candidates(ps.Namespace, ps.Name, ps.UID)
	if err != nil {
		return fmt.Errorf("looking up the PodSet's pods: %w", err)
	}
	claimed, err := r.refManager(s).ClaimPods(ctx, candidates)
	s.pods = append(s.pods, claimed...)
	return err
}

// claimRevisions finds the PodSet's ControllerRevisions: those it controls
// and whose labels still match ownership.RevisionSelector. As claimPods does for pods,
// and as the StatefulSet and DaemonSet controllers do for their revisions,
// it adopts matching revisions that nobody controls and releases controlled
// ones that no longer match. A PodSet re-created after `kubectl delete
// --cascade=orphan` thus finds the history of the pods it adopts, and keeps
// them instead of replacing them under a new revision. Revisions with
// another controller are never touched.
func (r *PodSetReconciler) claimRevisions(ctx context.Context, s *podSetScope) error {
	ps, rs := s.podSet, &s.revisions
	// Copies: the claimed revisions go on to be patched (adopted,
	// renumbered).
	named := &appsv1.ControllerRevisionList{}
	if err := r.List(ctx, named, client.InNamespace(ps.Namespace), client.MatchingFields{ownership.RevisionPodSetField: ps.Name}); err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	// The index has the revisions labelled with the PodSet's name and
	// those controlled by a PodSet of that name; ClaimRevisions leaves
	// those of another controller (a namesake deleted before it) alone.
	candidates := make([]*appsv1.ControllerRevision, len(named.Items))
	for i := range named.Items {
		candidates[i] = &named.Items[i]
		// A revision of another owner under the PodSet's name still
		// tells startFirstRevision that a name may be taken.
		rs.NamesakesCached = rs.NamesakesCached || named.Items[i].Labels[appv1alpha1.LabelPodSet] == ps.Name
	}
	claimed, err := r.refManager(s).ClaimRevisions(ctx, candidates)
	rs.All = append(rs.All, claimed...)
	return err
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
		if err := r.refManager(s).ReleasePod(ctx, &pod.ObjectMeta); err != nil {
			errs = append(errs, err)
			continue
		}
		strays.done(uid)
	}
	return errors.Join(errs...)
}
