package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// revisionPodSetField indexes the cached ControllerRevisions by the PodSet
// their label names. Listed by namespace and label alone, every reconcile
// scanned every revision of its namespace: with thousands of PodSets in one
// namespace that made the operator's CPU grow with the square of their
// number (docs/benchmarks.md, "Growth").
const revisionPodSetField = "podSetRevisionLabel"

// revisionControllerField indexes the cached ControllerRevisions by the UID
// of their controller, so that a revision the PodSet controls is found even
// after its labels stopped naming the PodSet, and can be released.
const revisionControllerField = "podSetRevisionController"

// indexRevisionByPodSet is the index function of revisionPodSetField.
func indexRevisionByPodSet(obj client.Object) []string {
	if name, ok := obj.GetLabels()[appv1alpha1.LabelPodSet]; ok {
		return []string{name}
	}
	return nil
}

// indexRevisionByController is the index function of revisionControllerField.
func indexRevisionByController(obj client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// revisionSelector selects the ControllerRevisions of ps. Revisions carry
// only the labels of the pod selector that name the PodSet and this
// operator, and every revision any version of the operator made carries
// both; so a revision left behind by a PodSet deleted with --cascade=orphan
// matches its re-created namesake, as its pods do.
func revisionSelector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})
}

// claimRevisions finds the PodSet's ControllerRevisions: those it controls
// and whose labels still match revisionSelector. As claimPods does for pods,
// and as the StatefulSet and DaemonSet controllers do for their revisions,
// it adopts matching revisions that nobody controls and releases controlled
// ones that no longer match. A PodSet re-created after `kubectl delete
// --cascade=orphan` thus finds the history of the pods it adopts, and keeps
// them instead of replacing them under a new revision. Revisions with
// another controller are never touched.
func (r *PodSetReconciler) claimRevisions(ctx context.Context, s *podSetScope) error {
	ps, rs := s.podSet, &s.revisions
	labelled, controlled := &appsv1.ControllerRevisionList{}, &appsv1.ControllerRevisionList{}
	if err := r.List(ctx, labelled, client.InNamespace(ps.Namespace), client.MatchingFields{revisionPodSetField: ps.Name}); err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	// Read without copies: the cache holds only revisions with the
	// managed-by label, so one the PodSet controls that is not in labelled
	// no longer matches, and is only released, which patches a copy.
	if err := r.List(ctx, controlled, client.InNamespace(ps.Namespace), client.MatchingFields{revisionControllerField: string(ps.UID)},
		client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	// A revision of another owner under the PodSet's name still tells
	// startFirstRevision that a name may be taken.
	rs.NamesakesCached = len(labelled.Items) > 0

	// A revision may be listed twice: labelled with the PodSet's name and
	// controlled by it.
	seen := make(map[types.UID]bool, len(labelled.Items))
	var candidates []*appsv1.ControllerRevision
	for _, list := range [][]appsv1.ControllerRevision{labelled.Items, controlled.Items} {
		for i := range list {
			if cr := &list[i]; !seen[cr.UID] {
				seen[cr.UID] = true
				candidates = append(candidates, cr)
			}
		}
	}
	c := sortClaims(candidates, ps.UID, revisionSelector(ps))
	rs.All = append(rs.All, c.owned...)
	orphans, unmatched := c.orphans, c.unmatched

	var errs []error
	for _, cr := range orphans {
		adopted, err := r.adoptRevision(ctx, s, cr)
		if adopted != nil {
			rs.All = append(rs.All, adopted)
		}
		errs = append(errs, err)
	}
	for _, cr := range unmatched {
		errs = append(errs, r.releaseRevision(ctx, ps, cr))
	}
	return kerrors.NewAggregate(errs)
}

// adoptRevision makes the PodSet the controller of an orphaned revision that
// matches its selector, once a fresh read has shown the PodSet live (see
// confirmLive); nil when it may not adopt, or when the revision changed or
// went meanwhile.
func (r *PodSetReconciler) adoptRevision(ctx context.Context, s *podSetScope, orphan *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if live, err := r.confirmLive(ctx, s); !live || err != nil {
		return nil, err
	}
	cr := orphan.DeepCopy()
	if err := controllerutil.SetControllerReference(s.podSet, cr, r.Scheme); err != nil {
		return nil, err
	}
	// The optimistic lock makes the patch fail if the revision changed
	// since it was read, e.g. if another controller adopted it meanwhile.
	if err := r.Patch(ctx, cr, client.MergeFromWithOptions(orphan, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("adopting revision %s: %w", cr.Name, err)
	}
	logf.FromContext(ctx).Info("adopted an orphaned revision", "revision", cr.Name, "number", cr.Revision)
	return cr, nil
}

// releaseRevision removes the PodSet's ownerReference from a revision whose
// labels no longer match, so that the PodSet's history no longer shows it,
// nor prunes or garbage-collects it.
func (r *PodSetReconciler) releaseRevision(ctx context.Context, ps *appv1alpha1.PodSet, cached *appsv1.ControllerRevision) error {
	cr := cached.DeepCopy()
	refs := cr.OwnerReferences[:0:0]
	for _, ref := range cr.OwnerReferences {
		if ref.UID != ps.UID {
			refs = append(refs, ref)
		}
	}
	cr.OwnerReferences = refs
	err := r.Patch(ctx, cr, client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing revision %s: %w", cr.Name, err)
	}
	return nil
}
