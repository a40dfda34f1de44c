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
	// Extra holds what only some pods need kept (see PodExtra), nil for
	// the others: read it through ReadinessGates, Containers and
	// ObservedGeneration. Held in Pod itself, its fields would take every
	// Pod from the 320-byte size class to the 384-byte one.
	Extra *PodExtra
}

// PodSpec is the part of a pod's spec that the reconciler reads of every
// pod.
//
// +kubebuilder:object:generate=true
type PodSpec struct {
	// NodeName ranks pods for deletion (unscheduled ones go first).
	NodeName string
}

// PodStatus is the part of a pod's status that the reconciler reads of
// every pod.
//
// +kubebuilder:object:generate=true
type PodStatus struct {
	Phase      corev1.PodPhase
	Conditions []corev1.PodCondition
	// ContainerStatuses are those of the init containers (sidecars among
	// them), then those of the containers: every one of them counts for
	// restarts and auto-rollback, and a field of its own would take the
	// Pod out of its size class.
	ContainerStatuses []corev1.ContainerStatus
}

// PodExtra is the part of a pod that the reconciler reads of a few pods
// only: those with readiness gates (the in-place updates' among them),
// those it may update in place, and those without a revision label.
//
// +kubebuilder:object:generate=true
type PodExtra struct {
	// ReadinessGates (spec.readinessGates) tell the pods that may be
	// updated in place.
	ReadinessGates []corev1.PodReadinessGate
	// Containers (spec.containers) are compared with the pod template to
	// give a revision label to a pod that has none; the pod cache drops
	// them once it has one (see podcache).
	Containers []corev1.Container
	// ObservedGeneration (status.observedGeneration) tells whether the
	// kubelet has seen an in-place update.
	ObservedGeneration int64
}

// ReadinessGates is the pod's spec.readinessGates, as kept.
func (p *Pod) ReadinessGates() []corev1.PodReadinessGate {
	if p.Extra == nil {
		return nil
	}
	return p.Extra.ReadinessGates
}

// Containers is the pod's spec.containers, as kept.
func (p *Pod) Containers() []corev1.Container {
	if p.Extra == nil {
		return nil
	}
	return p.Extra.Containers
}

// ObservedGeneration is the pod's status.observedGeneration, as kept.
func (p *Pod) ObservedGeneration() int64 {
	if p.Extra == nil {
		return 0
	}
	return p.Extra.ObservedGeneration
}

// NewExtra is the PodExtra of those fields, or nil when all are empty.
func NewExtra(gates []corev1.PodReadinessGate, containers []corev1.Container, observedGeneration int64) *PodExtra {
	if len(gates) == 0 && len(containers) == 0 && observedGeneration == 0 {
		return nil
	}
	return &PodExtra{ReadinessGates: gates, Containers: containers, ObservedGeneration: observedGeneration}
}

// From is the slim Pod of pod. It shares pod's metadata, containers,
// conditions and container statuses rather than copying them.
func From(pod *corev1.Pod) *Pod {
	return &Pod{
		ObjectMeta: pod.ObjectMeta,
		Spec:       PodSpec{NodeName: pod.Spec.NodeName},
		Status: PodStatus{
			Phase:             pod.Status.Phase,
			Conditions:        pod.Status.Conditions,
			ContainerStatuses: allContainerStatuses(&pod.Status),
		},
		Extra: NewExtra(pod.Spec.ReadinessGates, pod.Spec.Containers, pod.Status.ObservedGeneration),
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
