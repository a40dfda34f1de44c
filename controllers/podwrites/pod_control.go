package podwrites

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/controllers/leaderfence"
)

// PodControl creates, patches and deletes pods, as the kube controllers'
// PodControlInterface does. Every pod write of the reconciler goes through
// it, so a test can stand in for the API server's answers (a refused, lost
// or uncertain write) without intercepting every call of a client.
type PodControl interface {
	// CreatePod creates pod, which already carries its controller
	// reference; on success pod holds what the API server stored.
	CreatePod(ctx context.Context, pod *corev1.Pod) error
	// DeletePod deletes pod if it still has pod's UID: a namesake created
	// since pod was read is never deleted in its place.
	DeletePod(ctx context.Context, pod *corev1.Pod) error
	// PatchPod sends a strategic merge patch to pod, or to its
	// subresource ("status", "resize") when one is named; on success pod
	// holds what the API server stored.
	PatchPod(ctx context.Context, pod *corev1.Pod, subresource string, patch []byte) error
}

// APIPodControl sends the writes to the API server through Client, each
// only once Fence allows it (a nil Fence allows all). A pause can fall in the middle
// of a step, so each write asks the fence, not only the reconcile's start.
type APIPodControl struct {
	Client client.Client
	Fence  *leaderfence.Fence
}

var _ PodControl = APIPodControl{}

// CreatePod implements PodControl.
func (c APIPodControl) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	if err := c.Fence.Allow(); err != nil {
		return err
	}
	return c.Client.Create(ctx, pod)
}

// DeletePod implements PodControl.
func (c APIPodControl) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	if err := c.Fence.Allow(); err != nil {
		return err
	}
	return c.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
}

// PatchPod implements PodControl.
func (c APIPodControl) PatchPod(ctx context.Context, pod *corev1.Pod, subresource string, patch []byte) error {
	if err := c.Fence.Allow(); err != nil {
		return err
	}
	p := client.RawPatch(types.StrategicMergePatchType, patch)
	if subresource == "" {
		return c.Client.Patch(ctx, pod, p)
	}
	return c.Client.SubResource(subresource).Patch(ctx, pod, p)
}
