// Package operand is what a PodSet's pods are: their labels and selector,
// the pod a revision's template makes (always under the restricted Pod
// Security profile), whether a pod is live, ready or available, and which
// pods a scale-down deletes first. It knows nothing of the reconciler.
package operand

import (
	"k8s.io/apimachinery/pkg/labels"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Labels are the labels of every pod of ps.
func Labels(ps *appv1alpha1.PodSet) map[string]string {
	return map[string]string{
		appv1alpha1.LabelName:      appv1alpha1.NameValue,
		appv1alpha1.LabelInstance:  ps.Name,
		appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue,
		appv1alpha1.LabelPodSet:    ps.Name,
	}
}

// Selector selects the pods of ps.
func Selector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(Labels(ps))
}

// ManagedSelector selects every pod this operator may manage; the
// manager's pod informer is restricted to it.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})
}
