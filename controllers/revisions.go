package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/ownership"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// DefaultRevisionHistoryLimit is the default of spec.revisionHistoryLimit.
const DefaultRevisionHistoryLimit = 10

// maxCollisionRetries bounds how many names syncRevisions tries for a new
// revision; each clash bumps collisionCount.
const maxCollisionRetries = 5

// syncRevisions finds or creates the ControllerRevision of the PodSet's pod
// template among the revisions claimRevisions found, and works out the
// current one. A template that equals a stored
// revision (a rollback) reuses it, hash and all, with the next revision
// number, so that pods still running it are kept.
func (r *PodSetReconciler) syncRevisions(ctx context.Context, s *podSetScope) error {
	ps, rs := s.podSet, &s.revisions
	rs.CollisionCount = ps.Status.CollisionCount
	rs.UpdateTemplate = operand.TemplateOf(ps)

	if ps.DeletionTimestamp != nil {
		// Nothing is created for a PodSet on its way out.
		return nil
	}
	update := revision.FindEqual(rs.All, rs.UpdateTemplate)
	if update != nil {
		s.record.recentRevision.forget()
	} else if update = s.record.recentRevision.lookup(revision.Name(ps.Name, revision.Hash(rs.UpdateTemplate, rs.CollisionCount)), time.Now()); update != nil {
		rs.All = append(rs.All, update)
	}
	var err error
	switch {
	case update == nil && !rs.NamesakesCached && len(s.pods) == 0:
		update, err = r.startFirstRevision(ctx, s)
	case update == nil:
		update, err = r.createRevision(ctx, s)
	case update.Revision < revision.NextNumber(rs.All)-1:
		// A rollback: the old revision becomes the newest again.
		update, err = r.renumberRevision(ctx, update, revision.NextNumber(rs.All))
	}
	if err != nil || update == nil {
		return err
	}
	rs.Update, rs.UpdateHash = update, revision.HashOf(update)
	rs.Current, rs.CurrentTemplate, rs.CurrentHash = currentRevision(ps, rs, s.pods)
	return nil
}

// currentRevision is the revision the pods ran before the rollout in
// progress, while some live pod runs another revision than the update one:
// status.currentRevision when it is still stored; for a PodSet that has
// never written it (one re-created over the pods and revisions it adopted),
// the newest stored revision that a live pod runs. Otherwise it is the
// update revision.
func currentRevision(ps *appv1alpha1.PodSet, rs *revision.State, pods []*slimpod.Pod) (*appsv1.ControllerRevision, revision.Template, string) {
	running := map[string]bool{}
	for _, pod := range pods {
		if hash := pod.Labels[appv1alpha1.LabelRevisionHash]; operand.IsLive(pod) && hash != rs.UpdateHash {
			running[hash] = true
		}
	}
	if len(running) == 0 || ps.Status.CurrentRevision == rs.Update.Name {
		return rs.Update, rs.UpdateTemplate, rs.UpdateHash
	}
	var current *appsv1.ControllerRevision
	for _, cr := range rs.All {
		switch {
		case ps.Status.CurrentRevision != "":
			if cr.Name != ps.Status.CurrentRevision {
				continue
			}
		case cr.Name == rs.Update.Name || !running[revision.HashOf(cr)]:
			continue
		case current != nil && current.Revision >= cr.Revision:
			continue
		}
		current = cr
	}
	if current != nil {
		if tmpl, err := revision.Decode(current); err == nil {
			return current, tmpl, revision.HashOf(current)
		}
	}
	return rs.Update, rs.UpdateTemplate, rs.UpdateHash
}

// startFirstRevision stores a new PodSet's first revision beside its first
// pods rather than before them: a PodSet of one pod would otherwise wait for
// two round trips to the API server before its pod exists, where a
// ReplicaSet waits for one, and at 1000x1 the operator's workers spend a
// third of their time on it. Only a PodSet with no revision of its name and no pod
// of its own in the cache takes this path: a name taken by a namesake's
// leftover revision (the one collision that is not astronomically rare) is
// in the cache, and goes the careful way of createRevision. The pods carry
// the revision's hash either way; should the create fail after all, the next
// reconcile stores the revision the careful way, under the same name unless
// a stale cache hid a collision, in which case the new revision's pods
// replace these through a rolling update.
func (r *PodSetReconciler) startFirstRevision(ctx context.Context, s *podSetScope) (*appsv1.ControllerRevision, error) {
	rs := &s.revisions
	cr, err := r.newRevision(s.podSet, rs)
	if err != nil {
		return nil, err
	}
	created := make(chan error, 1)
	// The reconcile reads cr meanwhile; Create writes into what it sends.
	// A reconcile that ends early, before it waits for the create, must
	// still not create the revision again: record it here.
	go func(cr *appsv1.ControllerRevision) {
		err := r.Create(ctx, cr)
		if err == nil {
			s.record.recentRevision.created(cr, time.Now())
		}
		created <- err
	}(cr.DeepCopy())
	s.firstRevision = created
	rs.All = append(rs.All, cr)
	return cr, nil
}

// awaitFirstRevision waits for the revision startFirstRevision stores.
func (r *PodSetReconciler) awaitFirstRevision(s *podSetScope) error {
	if s.firstRevision == nil {
		return nil
	}
	err := <-s.firstRevision
	s.firstRevision = nil
	if err == nil || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return fmt.Errorf("creating revision %s: %w", s.revisions.Update.Name, err)
}

// newRevision is the revision of the spec's pod template, hashed with the
// PodSet's collision count, numbered after every stored one, not yet stored.
func (r *PodSetReconciler) newRevision(ps *appv1alpha1.PodSet, rs *revision.State) (*appsv1.ControllerRevision, error) {
	data, err := revision.Encode(rs.UpdateTemplate)
	if err != nil {
		return nil, err
	}
	hash := revision.Hash(rs.UpdateTemplate, rs.CollisionCount)
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      revision.Name(ps.Name, hash),
			Namespace: ps.Namespace,
			Labels: map[string]string{
				appv1alpha1.LabelPodSet:       ps.Name,
				appv1alpha1.LabelManagedBy:    appv1alpha1.ManagedByValue,
				appv1alpha1.LabelRevisionHash: hash,
			},
			Annotations: changeCause(ps),
		},
		Data:     data,
		Revision: revision.NextNumber(rs.All),
	}
	if err := controllerutil.SetControllerReference(ps, cr, r.Scheme); err != nil {
		return nil, err
	}
	return cr, nil
}

// createRevision stores the spec's template as a new revision. A name taken
// by a different template (a hash collision), or by a revision of another
// controller, bumps collisionCount and tries the next name; an orphan of the
// same template and the PodSet's labels is adopted instead.
func (r *PodSetReconciler) createRevision(ctx context.Context, s *podSetScope) (*appsv1.ControllerRevision, error) {
	ps, rs := s.podSet, &s.revisions
	for range maxCollisionRetries {
		cr, err := r.newRevision(ps, rs)
		if err != nil {
			return nil, err
		}
		err = r.Create(ctx, cr)
		if err == nil {
			s.record.recentRevision.created(cr, time.Now())
			rs.All = append(rs.All, cr)
			return cr, nil
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is going away, and the PodSet with it: no
			// revision, so no pod is created either.
			return nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating revision %s: %w", cr.Name, err)
		}
		// The cache may just lag behind a revision this operator made: the
		// API server has the last word.
		existing := &appsv1.ControllerRevision{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cr), existing); err != nil {
			return nil, fmt.Errorf("reading revision %s: %w", cr.Name, err)
		}
		if tmpl, err := revision.Decode(existing); err == nil && revision.SameTemplate(tmpl, rs.UpdateTemplate) {
			switch ref := metav1.GetControllerOfNoCopy(existing); {
			case ref != nil && ref.UID == ps.UID:
				rs.All = append(rs.All, existing)
				return existing, nil
			case ref == nil && ownership.RevisionSelector(ps).Matches(labels.Set(existing.Labels)) && existing.DeletionTimestamp == nil:
				// An orphan of this PodSet's name that the cache did not
				// show to claimRevisions: adopting it is no collision.
				adopted, err := r.refManager(s).AdoptRevision(ctx, existing)
				if err != nil || adopted == nil {
					return nil, err
				}
				rs.All = append(rs.All, adopted)
				return adopted, nil
			}
		}
		// The name is taken by another template, or by a revision this
		// PodSet may not use (another controller's).
		rs.CollisionCount = ptr.To(ptr.Deref(rs.CollisionCount, 0) + 1)
	}
	return nil, fmt.Errorf("no free revision name for PodSet %s after %d hash collisions", ps.Name, maxCollisionRetries)
}

// renumberRevision gives a reused revision the next revision number.
func (r *PodSetReconciler) renumberRevision(ctx context.Context, cached *appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	cr := cached.DeepCopy()
	cr.Revision = number
	// No optimistic lock: a reconcile that reads a stale cache computes the
	// same number and patches it again, harmlessly.
	if err := r.Patch(ctx, cr, client.MergeFrom(cached)); err != nil {
		return nil, fmt.Errorf("renumbering revision %s: %w", cr.Name, err)
	}
	return cr, nil
}

// changeCause carries the PodSet's kubernetes.io/change-cause annotation to
// the revision, where `kubectl podset rollout history` shows it.
func changeCause(ps *appv1alpha1.PodSet) map[string]string {
	if cause, ok := ps.Annotations[appv1alpha1.AnnotationChangeCause]; ok {
		return map[string]string{appv1alpha1.AnnotationChangeCause: cause}
	}
	return nil
}

// labelUnrevisionedPods gives a revision label to live pods that have none:
// pods made by operator v0.1.0, before revisions existed, and orphans just
// adopted. A pod that matches the update (or current) template is labelled as
// such and kept; any other stays unlabelled, counts as an old revision and is
// replaced by the rollout. The pod cache keeps the spec of exactly these pods
// (see slimPod), which is what the comparison reads.
func (r *PodSetReconciler) labelUnrevisionedPods(ctx context.Context, s *podSetScope) error {
	rs := &s.revisions
	if rs.Update == nil || s.podSet.DeletionTimestamp != nil {
		return nil
	}
	var errs []error
	for i, pod := range s.pods {
		if !operand.IsLive(pod) || pod.Labels[appv1alpha1.LabelRevisionHash] != "" {
			continue
		}
		var hash string
		switch {
		case operand.MatchesTemplate(pod, rs.UpdateTemplate, r.DefaultImage):
			hash = rs.UpdateHash
		case rs.CurrentHash != rs.UpdateHash && operand.MatchesTemplate(pod, rs.CurrentTemplate, r.DefaultImage):
			hash = rs.CurrentHash
		default:
			continue
		}
		orig := pod.MetadataOnly() // pod is the cache's object
		labelled := orig.DeepCopy()
		labelled.Labels[appv1alpha1.LabelRevisionHash] = hash
		if err := r.Patch(ctx, labelled, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("labelling pod %s with its revision: %w", pod.Name, err))
			}
			continue
		}
		s.pods[i] = slimpod.From(labelled)
	}
	return kerrors.NewAggregate(errs)
}

// pruneRevisions deletes the oldest revisions beyond
// spec.revisionHistoryLimit, never one that is current, the update one, or
// run by a pod.
func (r *PodSetReconciler) pruneRevisions(ctx context.Context, s *podSetScope) error {
	rs := &s.revisions
	if rs.Update == nil {
		return nil
	}
	// The spec's revision, and the last completed one, which
	// auto-rollback returns to.
	keep := map[string]bool{rs.Update.Name: true, rs.Current.Name: true, s.podSet.Status.LastCompletedRevision: true}
	if rs.Spec != nil {
		keep[rs.Spec.Name] = true
	}
	for _, pod := range s.pods {
		if hash := pod.Labels[appv1alpha1.LabelRevisionHash]; hash != "" {
			keep[revision.Name(s.podSet.Name, hash)] = true
		}
	}
	limit := int(ptr.Deref(s.podSet.Spec.RevisionHistoryLimit, DefaultRevisionHistoryLimit))
	var errs []error
	for _, cr := range revision.ToPrune(rs.All, keep, limit) {
		err := r.Delete(ctx, cr, client.Preconditions{UID: &cr.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("pruning revision %s: %w", cr.Name, err))
		}
	}
	return errors.Join(errs...)
}
