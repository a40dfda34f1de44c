package controllers

import (
	"k8s.io/apimachinery/pkg/labels"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// podLabels are the labels of every pod of ps.
func podLabels(ps *appv1alpha1.PodSet) map[string]string {
	return map[string]string{
		appv1alpha1.LabelName:      appv1alpha1.NameValue,
		appv1alpha1.LabelInstance:  ps.Name,
		appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue,
		appv1alpha1.LabelPodSet:    ps.Name,
	}
}

// podSelector selects the pods of ps.
func podSelector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(podLabels(ps))
}

// ManagedPodsSelector selects every pod this operator may manage; the
// manager's pod informer is restricted to it.
func ManagedPodsSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})
}
