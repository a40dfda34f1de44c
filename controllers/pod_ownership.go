package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

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

	c := sortClaims(candidates, ps.UID, operand.Selector(ps))
	s.pods = append(s.pods, c.owned...)
	orphans, unmatched := slices.DeleteFunc(c.orphans, releasedByAnEarlierRelease), c.unmatched

	var errs []error
	if len(orphans) > 0 {
		adopted, err := r.adoptPods(ctx, s, orphans)
		s.pods = append(s.pods, adopted...)
		errs = append(errs, err)
	}
	for _, pod := range unmatched {
		errs = append(errs, r.releasePod(ctx, ps, &pod.ObjectMeta))
	}
	return kerrors.NewAggregate(errs)
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

// adoptPods makes the PodSet the controller of the orphans, once a fresh read
// has shown it live (see confirmLive).
func (r *PodSetReconciler) adoptPods(ctx context.Context, s *podSetScope, orphans []*slimpod.Pod) (adopted []*slimpod.Pod, err error) {
	ps := s.podSet
	if live, err := r.confirmLive(ctx, s); !live || err != nil {
		return nil, err
	}

	var errs []error
	for _, orphan := range orphans {
		orig := orphan.MetadataOnly() // orphan is the cache's object
		pod := orig.DeepCopy()
		if err := controllerutil.SetControllerReference(ps, pod, r.Scheme); err != nil {
			errs = append(errs, err)
			continue
		}
		// The optimistic lock makes the patch fail if the pod changed since
		// it was cached, e.g. if another controller adopted it meanwhile.
		if err := r.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
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

// releasePod removes the PodSet's ownerReference from a pod whose labels no
// longer match, so that it lives on unmanaged (and a replacement is created).
// It reads the pod's metadata only, which it does not change.
func (r *PodSetReconciler) releasePod(ctx context.Context, ps *appv1alpha1.PodSet, meta *metav1.ObjectMeta) error {
	orig := &corev1.Pod{ObjectMeta: *meta.DeepCopy()}
	pod := orig.DeepCopy()
	refs := pod.OwnerReferences[:0:0]
	for _, ref := range pod.OwnerReferences {
		if ref.UID != ps.UID {
			refs = append(refs, ref)
		}
	}
	pod.OwnerReferences = refs
	err := r.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing pod %s: %w", pod.Name, err)
	}
	if err == nil {
		metrics.PodsReleased.Inc()
	}
	return nil
}
