package podwrites

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
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
	// since pod was read is never deleted in its place. On success pod's
	// resourceVersion is that of the deletion's last watch event (the pod
	// marked for graceful deletion, or removed), or empty where the answer
	// was not read.
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
	// Pods, when set, sends the deletes (see NewPodsREST): controller-runtime's
	// Delete discards the API server's answer, and with it the version of
	// the deletion, which tells the reconciler whether a deletion's event
	// is late or lost (consistency.Expectations.DeletionReturned). When
	// nil, the deletes go through Client and return no version.
	Pods  rest.Interface
	Fence *leaderfence.Fence
}

// NewPodsREST is the core/v1 REST client for APIPodControl.Pods, on the
// manager's connection (httpClient) and with its configuration (cfg),
// answered in protobuf: a delete's answer is the whole pod.
func NewPodsREST(cfg *rest.Config, httpClient *http.Client) (rest.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the pods' REST client: %w", err)
	}
	return c.RESTClient(), nil
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
	if c.Pods == nil {
		if err := c.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil {
			return err
		}
		// The answer was not read: the version pod had is the one it
		// was read at, not its deletion's.
		pod.ResourceVersion = ""
		return nil
	}
	// The answer is the pod as the delete left it: marked for graceful
	// deletion, at the version of that update, or removed (a pod never
	// bound to a node is marked, then removed at once), at the version of
	// its removal.
	deleted := &corev1.Pod{}
	err := c.Pods.Delete().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).
		Body(&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}).
		Do(ctx).Into(deleted)
	if err != nil {
		return err
	}
	pod.ResourceVersion = deleted.ResourceVersion
	return nil
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
