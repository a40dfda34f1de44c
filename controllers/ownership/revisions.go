package ownership

import (
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
)

// RevisionPodSetField indexes the cached ControllerRevisions by the names
// of the PodSets they may belong to (operand.PodSetNames): the one their
// label names, and the one that controls them, so that a revision the PodSet
// controls is found even after its labels stopped naming the PodSet, and
// can be released. Listed by namespace and label alone, every reconcile
// scanned every revision of its namespace: with thousands of PodSets in one
// namespace that made the operator's CPU grow with the square of their
// number (docs/benchmarks.md, "Growth"). One index rather than one for the
// label and one for the controller: controller-runtime keeps each value of
// an index twice (by namespace and across them), in sets of their own, and
// the revision of most PodSets is both labelled and controlled by it.
const RevisionPodSetField = "podSetRevisionNames"

// IndexRevisionByPodSet is the index function of RevisionPodSetField.
func IndexRevisionByPodSet(obj client.Object) []string {
	return operand.PodSetNames(obj)
}

// RevisionSelector selects the ControllerRevisions of ps. Revisions carry
// only the labels of the pod selector that name the PodSet and this
// operator, and every revision any version of the operator made carries
// both; so a revision left behind by a PodSet deleted with --cascade=orphan
// matches its re-created namesake, as its pods do.
func RevisionSelector(ps *appv1alpha1.PodSet) labels.Selector {
	return labels.SelectorFromSet(labels.Set{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue})
}
