package controllers

import (
	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
)

// The unit tests' builders, shared with package operand's tests (see
// operandtest), under the names these tests use.

const unitNamespace = operandtest.Namespace

var unitNow = operandtest.Now

type podOption = operandtest.Option

var (
	unitPod              = operandtest.Pod
	readySince           = operandtest.ReadySince
	terminatingSince     = operandtest.TerminatingSince
	newerResourceVersion = operandtest.NewerResourceVersion
	withPodLabels        = operandtest.WithLabels
	controlledByPodSet   = operandtest.ControlledByPodSet
	controlledBy         = operandtest.ControlledBy
	unitPodSet           = operandtest.PodSet
)

// newPodFromSpec builds a pod from ps's spec, as the reconciler does for its
// update revision.
func newPodFromSpec(ps *appv1alpha1.PodSet, defaultImage string) *corev1.Pod {
	return operand.NewPod(ps, revision.FromPodSet(ps), revision.Hash(revision.FromPodSet(ps), nil), defaultImage)
}
