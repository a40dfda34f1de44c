package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Cache indexes on pods. Listing a PodSet's pods through them costs what the
// PodSet owns, not what the namespace holds: with a thousand PodSets in one
// namespace, a plain label-filtered list would scan every pod on every
// reconcile.
const (
	// podControllerUIDIndex maps a pod to the UID of its controller.
	podControllerUIDIndex = "podset.controllerUID"
	// podSetLabelIndex maps a pod to the PodSet named by its LabelPodSet
	// label, which is how orphans are found for adoption.
	podSetLabelIndex = "podset.label"
)

// IndexPodFields registers the pod indexes the reconciler lists through.
func IndexPodFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, podControllerUIDIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &corev1.Pod{}, podSetLabelIndex, func(o client.Object) []string {
		if name, ok := o.GetLabels()[LabelPodSet]; ok {
			return []string{name}
		}
		return nil
	})
}

// claimPods finds the pods that belong to the PodSet: those it controls and
// whose labels still match its selector. On the way it adopts matching pods
// that nobody controls and releases controlled pods that no longer match, as
// the ReplicaSet controller does. Pods controlled by anything else are never
// touched.
func (r *PodSetReconciler) claimPods(ctx context.Context, s *podSetScope) error {
	ps := s.podSet
	candidates, err := r.candidatePods(ctx, ps)
	if err != nil {
		return err
	}

	selector := podSelector(ps)
	var orphans, unmatched []*corev1.Pod
	for _, pod := range candidates {
		matches := selector.Matches(labels.Set(pod.Labels))
		ref := metav1.GetControllerOf(pod)
		switch {
		case ref != nil && ref.UID != ps.UID:
			// Another controller's pod.
		case ref != nil && matches:
			s.pods = append(s.pods, pod)
		case ref != nil:
			if pod.DeletionTimestamp == nil {
				unmatched = append(unmatched, pod)
			}
		case matches && pod.DeletionTimestamp == nil:
			orphans = append(orphans, pod)
		}
	}

	var errs []error
	if len(orphans) > 0 {
		adopted, err := r.adoptPods(ctx, ps, orphans)
		s.pods = append(s.pods, adopted...)
		errs = append(errs, err)
	}
	for _, pod := range unmatched {
		errs = append(errs, r.releasePod(ctx, ps, pod))
	}
	return kerrors.NewAggregate(errs)
}

// candidatePods lists, from the cache, the pods the PodSet controls and the
// pods that carry its name label.
func (r *PodSetReconciler) candidatePods(ctx context.Context, ps *appv1alpha1.PodSet) ([]*corev1.Pod, error) {
	// The pods are the cache's own objects, not copies: with a thousand pods
	// per PodSet, deep copies were most of the operator's memory and garbage.
	// Nothing here may modify them; adoptPods and releasePod copy first.
	var owned, labelled corev1.PodList
	if err := r.List(ctx, &owned, client.InNamespace(ps.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingFields{podControllerUIDIndex: string(ps.UID)}); err != nil {
		return nil, fmt.Errorf("listing pods controlled by the PodSet: %w", err)
	}
	if err := r.List(ctx, &labelled, client.InNamespace(ps.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingFields{podSetLabelIndex: ps.Name}); err != nil {
		return nil, fmt.Errorf("listing pods labelled for the PodSet: %w", err)
	}
	seen := make(map[types.UID]bool, len(owned.Items)+len(labelled.Items))
	pods := make([]*corev1.Pod, 0, len(owned.Items)+len(labelled.Items))
	for _, list := range [][]corev1.Pod{owned.Items, labelled.Items} {
		for i := range list {
			if !seen[list[i].UID] {
				seen[list[i].UID] = true
				pods = append(pods, &list[i])
			}
		}
	}
	return pods, nil
}

// adoptPods makes the PodSet the controller of the orphans. The cached PodSet
// may be stale, so it is first read again from the API server: a PodSet that
// is being deleted, or that was replaced by a namesake, must not adopt pods
// the garbage collector would then leave behind or delete wrongly.
func (r *PodSetReconciler) adoptPods(ctx context.Context, ps *appv1alpha1.PodSet, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	fresh := &appv1alpha1.PodSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ps), fresh); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if fresh.UID != ps.UID || fresh.DeletionTimestamp != nil {
		return nil, nil
	}

	var adopted []*corev1.Pod
	var errs []error
	for _, orphan := range orphans {
		orig, pod := orphan, orphan.DeepCopy() // orphan is the cache's object
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
		adopted = append(adopted, pod)
	}
	return adopted, kerrors.NewAggregate(errs)
}

// releasePod removes the PodSet's ownerReference from a pod whose labels no
// longer match, so that it lives on unmanaged (and a replacement is created).
func (r *PodSetReconciler) releasePod(ctx context.Context, ps *appv1alpha1.PodSet, cached *corev1.Pod) error {
	orig, pod := cached, cached.DeepCopy() // cached is the cache's object
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
	return nil
}
