package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/podwrites"
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
	return operand.NewPod(ps, revision.FromPodSet(ps), revision.Hash(revision.FromPodSet(ps), nil), defaultImage, operand.OperatorPicksIDs)
}

// podControlFuncs stands in for the API server's answers to the
// reconciler's pod writes (podwrites.PodControl). A nil func sends the
// write on to next.
type podControlFuncs struct {
	next   podwrites.PodControl
	create func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error
	delete func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error
	patch  func(ctx context.Context, pod *corev1.Pod, subresource string, patch []byte, next podwrites.PodControl) error
}

func (f podControlFuncs) PatchPod(ctx context.Context, pod *corev1.Pod, subresource string, patch []byte) error {
	if f.patch == nil {
		return f.next.PatchPod(ctx, pod, subresource, patch)
	}
	return f.patch(ctx, pod, subresource, patch, f.next)
}

func (f podControlFuncs) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	if f.create == nil {
		return f.next.CreatePod(ctx, pod)
	}
	return f.create(ctx, pod, f.next)
}

func (f podControlFuncs) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	if f.delete == nil {
		return f.next.DeletePod(ctx, pod)
	}
	return f.delete(ctx, pod, f.next)
}

// interceptPodWrites puts f in front of r's pod writes as they are now
// sent (through r's Client and Fence as set at the call), so that stand-ins
// can be stacked.
func interceptPodWrites(r *PodSetReconciler, f podControlFuncs) {
	f.next = r.podControl()
	r.podWrites = f
}
