// Package operand is what a PodSet's pods are: their labels and selector,
// the pod a revision's template makes (always under the restricted Pod
// Security profile), whether a pod is live, ready or available, and which
// pods a scale-down deletes first. It knows nothing of the reconciler.
package operand

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Labels are the labels the operator gives every pod of ps. A pod template
// may set its own app.kubernetes.io/name, instance and managed-by instead
// (charts label their pods so, and select them in their Services); only
// app.example.com/podset, which the selector holds, is always the
// operator's.
func Labels(ps *appv1alpha1.PodSet) map[string]string {
	return map[string]string{
		appv1alpha1.LabelName:      appv1alpha1.NameValue,
		appv1alpha1.LabelInstance:  ps.Name,
		appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue,
		appv1alpha1.LabelPodSet:    ps.Name,
	}
}

// Selector selects the pods of ps: the one label no template may set.
func Selector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelPodSet: ps.Name})
}

// ManagedSelector selects every pod this operator may manage, of any
// PodSet; the manager's pod informer is restricted to it. Pods of every
// release carry app.example.com/podset.
func ManagedSelector() labels.Selector {
	req, err := labels.NewRequirement(appv1alpha1.LabelPodSet, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid key
	}
	return labels.NewSelector().Add(*req)
}

// ManagedRevisionSelector selects the ControllerRevisions the operator
// made, of any PodSet; the manager's revision informer is restricted to it.
func ManagedRevisionSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})
}

// PodSetNames are the names of the PodSets that obj, a pod or a revision,
// may belong to: the PodSet its app.example.com/podset label names, and the
// PodSet that controls it, when that is not the same one (a pod relabelled,
// say). None, one or two names; the caches index pods and revisions by
// them, so that a PodSet finds both what it controls and what it may
// adopt in one lookup.
//
// A controller is known by its reference's name, which
// SetControllerReference writes with its UID. A reference whose name and
// UID disagree, which only a hand-written one has, is found under its
// label's PodSet alone.
func PodSetNames(obj metav1.Object) []string {
	label, labelled := obj.GetLabels()[appv1alpha1.LabelPodSet]
	var controller string
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == podSetKind && referencesGroup(ref.APIVersion, appv1alpha1.GroupVersion.Group) {
		controller = ref.Name
	}
	switch {
	case controller == "" && !labelled:
		return nil
	case controller == "" || controller == label:
		return []string{label}
	case !labelled:
		return []string{controller}
	default:
		return []string{label, controller}
	}
}

const podSetKind = "PodSet"

// referencesGroup reports whether apiVersion, as an owner reference writes
// it, is of group (any version of it).
func referencesGroup(apiVersion, group string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == group
}
