package controllers

import (
	"k8s.io/apimachinery/pkg/labels"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Labels every pod of a PodSet carries. The selector is the whole set: a pod
// belongs to a PodSet only while it carries all of them (and its controller
// ownerReference), so editing one of them by hand releases the pod. The
// managed-by label is special: the pod cache holds only pods carrying it, so
// a pod stripped of it leaves the operator's view; it is released all the
// same, through the informer's deletion event (see stray_pods.go).
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelPodSet names the PodSet a pod belongs to. It is also what orphaned
	// pods are matched on to find the PodSet that may adopt them.
	LabelPodSet = "app.example.com/podset"
	// LabelRevisionHash carries the hash of the pod template revision a pod
	// was made from, as the StatefulSet and DaemonSet controllers label
	// theirs. It is not part of the selector: pods of every revision are the
	// PodSet's.
	LabelRevisionHash = "controller-revision-hash"

	// NameValue is the value of app.kubernetes.io/name on every operand pod.
	NameValue = "podset"
	// ManagedByValue is the value of app.kubernetes.io/managed-by on every
	// operand pod. The manager's pod cache holds only pods carrying it, so
	// its memory grows with its own pods, not with the cluster's.
	ManagedByValue = "podset-operator"
)

// podLabels are the labels of every pod of ps.
func podLabels(ps *appv1alpha1.PodSet) map[string]string {
	return map[string]string{
		LabelName:      NameValue,
		LabelInstance:  ps.Name,
		LabelManagedBy: ManagedByValue,
		LabelPodSet:    ps.Name,
	}
}

// podSelector selects the pods of ps.
func podSelector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(podLabels(ps))
}

// ManagedPodsSelector selects every pod this operator may manage; the
// manager's pod informer is restricted to it.
func ManagedPodsSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
}
