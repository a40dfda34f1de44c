package podcache

import (
	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
)

// The builders shared by the controllers' unit tests (see operandtest).

const (
	unitNamespace    = operandtest.Namespace
	testOperandImage = "registry.example.com/operand:1.0"
)

var (
	unitPod            = operandtest.Pod
	withPodLabels      = operandtest.WithLabels
	controlledByPodSet = operandtest.ControlledByPodSet
	controlledBy       = operandtest.ControlledBy
	unitPodSet         = operandtest.PodSet
)

// newPodFromSpec builds a pod from ps's spec, as the reconciler does for its
// update revision.
func newPodFromSpec(ps *appv1alpha1.PodSet, defaultImage string) *corev1.Pod {
	return operand.NewPod(ps, revision.FromPodSet(ps), revision.Hash(revision.FromPodSet(ps), nil), defaultImage, operand.OperatorPicksIDs)
}
