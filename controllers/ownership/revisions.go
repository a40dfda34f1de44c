package ownership

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// RevisionPodSetField indexes the cached ControllerRevisions by the PodSet
// their label names. Listed by namespace and label alone, every reconcile
// scanned every revision of its namespace: with thousands of PodSets in one
// namespace that made the operator's CPU grow with the square of their
// number (docs/benchmarks.md, "Growth").
const RevisionPodSetField = "podSetRevisionLabel"

// RevisionControllerField indexes the cached ControllerRevisions by the UID
// of their controller, so that a revision the PodSet controls is found even
// after its labels stopped naming the PodSet, and can be released.
const RevisionControllerField = "podSetRevisionController"

// IndexRevisionByPodSet is the index function of RevisionPodSetField.
func IndexRevisionByPodSet(obj client.Object) []string {
	if name, ok := obj.GetLabels()[appv1alpha1.LabelPodSet]; ok {
		return []string{name}
	}
	return nil
}

// IndexRevisionByController is the index function of
// RevisionControllerField.
func IndexRevisionByController(obj client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// RevisionSelector selects the ControllerRevisions of ps. Revisions carry
// only the labels of the pod selector that name the PodSet and this
// operator, and every revision any version of the operator made carries
// both; so a revision left behind by a PodSet deleted with --cascade=orphan
// matches its re-created namesake, as its pods do.
func RevisionSelector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})
}
