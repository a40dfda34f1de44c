package ownership

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// RefManager claims one PodSet's pods and revisions. Every write is a
// merge patch of the ownerReferences alone, under the optimistic lock: it
// fails if the object changed since it was read (another controller
// adopted it meanwhile, say), and a field the operator's slim copy does not
// hold is never sent.
type RefManager struct {
	// Client sends the patches.
	Client client.Writer
	Scheme *runtime.Scheme
	// Owner is the PodSet that claims.
	Owner *appv1alpha1.PodSet
	// CanAdopt is asked before each adoption whether the PodSet may adopt:
	// the cached PodSet may be stale, and a PodSet being deleted, or
	// replaced by a namesake, must not adopt what the garbage collector
	// would then leave behind or delete wrongly. It may answer from a
	// read made once per reconcile.
	CanAdopt func(context.Context) (bool, error)
}

// ClaimPods returns the pods among candidates that belong to the PodSet:
// those it controls and whose labels still match its selector, and the
// matching orphans it adopted. It releases the controlled pods that no
// longer match, as the ReplicaSet controller does.
func (m *RefManager) ClaimPods(ctx context.Context, candidates []*slimpod.Pod) ([]*slimpod.Pod, error) {
	c := Sort(candidates, m.Owner.UID, operand.Selector(m.Owner))
	claimed := c.Owned
	var errs []error
	if orphans := slices.DeleteFunc(c.Orphans, releasedByAnEarlierRelease); len(orphans) > 0 {
		adopted, err := m.adoptPods(ctx, orphans)
		claimed = append(claimed, adopted...)
		errs = append(errs, err)
	}
	for _, pod := range c.Unmatched {
		errs = append(errs, m.ReleasePod(ctx, &pod.ObjectMeta))
	}
	return claimed, kerrors.NewAggregate(errs)
}

// releasedByAnEarlierRelease reports whether an orphan that carries the
// PodSet's label lacks app.kubernetes.io/name, instance or managed-by, which
// every pod the operator makes carries (the template's values or its own).
// Up to 0.4.0 the selector held all three, and a pod stripped of one (to
// debug it) was released and replaced; adopting it now would take back a
// pod its user took out, and delete another to make room.
func releasedByAnEarlierRelease(orphan *slimpod.Pod) bool {
	for _, k := range []string{appv1alpha1.LabelName, appv1alpha1.LabelInstance, appv1alpha1.LabelManagedBy} {
		if _, ok := orphan.Labels[k]; !ok {
			return true
		}
	}
	return false
}

// adoptPods makes the PodSet the controller of the orphans, if it may
// adopt.
func (m *RefManager) adoptPods(ctx context.Context, orphans []*slimpod.Pod) ([]*slimpod.Pod, error) {
	if may, err := m.CanAdopt(ctx); !may || err != nil {
		return nil, err
	}
	var adopted []*slimpod.Pod
	var errs []error
	for _, orphan := range orphans {
		orig := orphan.MetadataOnly() // orphan is the cache's object
		pod := orig.DeepCopy()
		if err := controllerutil.SetControllerReference(m.Owner, pod, m.Scheme); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.Client.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("adopting pod %s: %w", pod.Name, err))
			}
			continue
		}
		adopted = append(adopted, slimpod.From(pod))
		metrics.PodsAdopted.Inc()
	}
	return adopted, kerrors.NewAggregate(errs)
}

// ReleasePod removes the PodSet's ownerReference from a pod whose labels no
// longer match, so that it lives on unmanaged (and a replacement is
// created). It reads the pod's metadata only, which it does not change.
func (m *RefManager) ReleasePod(ctx context.Context, meta *metav1.ObjectMeta) error {
	orig := &corev1.Pod{ObjectMeta: *meta.DeepCopy()}
	pod := orig.DeepCopy()
	pod.OwnerReferences = withoutOwner(pod.OwnerReferences, m.Owner)
	err := m.Client.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing pod %s: %w", pod.Name, err)
	}
	if err == nil {
		metrics.PodsReleased.Inc()
	}
	return nil
}

// ClaimRevisions returns the revisions among candidates that belong to the
// PodSet, adopting matching orphans and releasing controlled revisions that
// no longer match RevisionSelector, as the StatefulSet and DaemonSet
// controllers do for theirs. A PodSet re-created after `kubectl delete
// --cascade=orphan` thus finds the history of the pods it adopts.
func (m *RefManager) ClaimRevisions(ctx context.Context, candidates []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, error) {
	c := Sort(candidates, m.Owner.UID, RevisionSelector(m.Owner))
	claimed := c.Owned
	var errs []error
	for _, cr := range c.Orphans {
		adopted, err := m.AdoptRevision(ctx, cr)
		if adopted != nil {
			claimed = append(claimed, adopted)
		}
		errs = append(errs, err)
	}
	for _, cr := range c.Unmatched {
		errs = append(errs, m.releaseRevision(ctx, cr))
	}
	return claimed, kerrors.NewAggregate(errs)
}

// AdoptRevision makes the PodSet the controller of an orphaned revision
// that matches its selector; nil when it may not adopt, or when the
// revision changed or went meanwhile.
func (m *RefManager) AdoptRevision(ctx context.Context, orphan *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if may, err := m.CanAdopt(ctx); !may || err != nil {
		return nil, err
	}
	cr := orphan.DeepCopy()
	if err := controllerutil.SetControllerReference(m.Owner, cr, m.Scheme); err != nil {
		return nil, err
	}
	if err := m.Client.Patch(ctx, cr, client.MergeFromWithOptions(orphan, client.MergeFromWithOptimisticLock{})); err != nil {
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
func (m *RefManager) releaseRevision(ctx context.Context, cached *appsv1.ControllerRevision) error {
	cr := cached.DeepCopy()
	cr.OwnerReferences = withoutOwner(cr.OwnerReferences, m.Owner)
	err := m.Client.Patch(ctx, cr, client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing revision %s: %w", cr.Name, err)
	}
	return nil
}

// withoutOwner is refs without those naming owner.
func withoutOwner(refs []metav1.OwnerReference, owner *appv1alpha1.PodSet) []metav1.OwnerReference {
	kept := refs[:0:0]
	for _, ref := range refs {
		if ref.UID != owner.UID {
			kept = append(kept, ref)
		}
	}
	return kept
}
