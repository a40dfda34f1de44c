package slimpod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Pod is what the operator keeps of a pod: its metadata, and of its spec
// and status only what the reconciler reads. It is a client.Object, so the
// manager's pod informer can hold it and hand it to the controller's event
// handlers; it is not a kind the API server knows: writes go through
// MetadataOnly.
//
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
type Pod struct {
	metav1.ObjectMeta

	Spec   PodSpec
	Status PodStatus
}

// PodSpec is the part of a pod's spec that the reconciler reads.
//
// +kubebuilder:object:generate=true
type PodSpec struct {
	// NodeName ranks pods for deletion (unscheduled ones go first).
	NodeName string
	// ReadinessGates tell the pods that may be updated in place.
	ReadinessGates []corev1.PodReadinessGate
	// Containers are compared with the pod template to give a revision
	// label to a pod that has none; the pod cache drops them once it has
	// one (see podcache).
	Containers []corev1.Container
}

// PodStatus is the part of a pod's status that the reconciler reads.
//
// +kubebuilder:object:generate=true
type PodStatus struct {
	Phase      corev1.PodPhase
	Conditions []corev1.PodCondition
	// ContainerStatuses are those of the init containers (sidecars among
	// them), then those of the containers: every one of them counts for
	// restarts and auto-rollback, and a field of its own would take the
	// Pod out of its 384-byte size class.
	ContainerStatuses  []corev1.ContainerStatus
	ObservedGeneration int64
}

// From is the slim Pod of pod. It shares pod's metadata, containers,
// conditions and container statuses rather than copying them.
func From(pod *corev1.Pod) *Pod {
	return &Pod{
		ObjectMeta: pod.ObjectMeta,
		Spec: PodSpec{
			NodeName:       pod.Spec.NodeName,
			ReadinessGates: pod.Spec.ReadinessGates,
			Containers:     pod.Spec.Containers,
		},
		Status: PodStatus{
			Phase:              pod.Status.Phase,
			Conditions:         pod.Status.Conditions,
			ContainerStatuses:  allContainerStatuses(&pod.Status),
			ObservedGeneration: pod.Status.ObservedGeneration,
		},
	}
}

// Of is obj as a slim Pod: obj itself when it is one, From(obj) when it is
// a *corev1.Pod (a cache built without the pod transform holds those: it
// costs memory, not correctness), and false for anything else.
func Of(obj any) (*Pod, bool) {
	switch pod := obj.(type) {
	case *Pod:
		return pod, true
	case *corev1.Pod:
		return From(pod), true
	}
	return nil, false
}

// FromList is the slim Pods of a list's items, which they share.
func FromList(items []corev1.Pod) []*Pod {
	pods := make([]*Pod, len(items))
	for i := range items {
		pods[i] = From(&items[i])
	}
	return pods
}

// MetadataOnly is a corev1.Pod that holds a copy of p's metadata and
// nothing else: what a delete, a patch or a merge patch computed between
// two versions of the metadata needs. Writes to it do not reach p.
func (p *Pod) MetadataOnly() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: *p.ObjectMeta.DeepCopy()}
}

// GetObjectKind implements runtime.Object. A Pod carries no type
// information, as the objects of a typed informer carry none.
func (p *Pod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// allContainerStatuses is status's init container statuses, then its
// container statuses: the container statuses themselves when there are no
// init containers, as for most pods.
func allContainerStatuses(status *corev1.PodStatus) []corev1.ContainerStatus {
	if len(status.InitContainerStatuses) == 0 {
		return status.ContainerStatuses
	}
	return append(append(make([]corev1.ContainerStatus, 0, len(status.InitContainerStatuses)+len(status.ContainerStatuses)),
		status.InitContainerStatuses...), status.ContainerStatuses...)
}
