// Package operandtest builds the pods and PodSets of unit tests: the
// reconciler's and the operand package's tests share one set of builders.
//
// The pods live in namespace Namespace, are scheduled, Running, not ready,
// have no owner and carry resourceVersion "1" unless an option says
// otherwise.
package operandtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Namespace is the namespace of every object built here.
const Namespace = "ns"

// Now is the fixed "now" of the unit tests, far from the wall clock so that
// code reading the wall clock instead of its now argument shows.
var Now = time.Date(2021, time.March, 4, 12, 0, 0, 0, time.UTC)

// Option changes a pod that Pod builds.
type Option func(*slimpod.Pod)

// Pod is a pod named name, created an hour before Now.
func Pod(name string, opts ...Option) *slimpod.Pod {
	pod := &slimpod.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         Namespace,
			UID:               types.UID(name + "-uid"),
			ResourceVersion:   "1",
			CreationTimestamp: metav1.NewTime(Now.Add(-time.Hour)),
		},
		Spec:   slimpod.PodSpec{NodeName: "node-1"},
		Status: slimpod.PodStatus{Phase: corev1.PodRunning},
	}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

// Unscheduled leaves the pod without a node.
func Unscheduled() Option {
	return func(p *slimpod.Pod) { p.Spec.NodeName = "" }
}

// InPhase sets the pod's phase.
func InPhase(phase corev1.PodPhase) Option {
	return func(p *slimpod.Pod) { p.Status.Phase = phase }
}

// ReadySince marks the pod Ready since t.
func ReadySince(t time.Time) Option {
	return WithReadyCondition(corev1.ConditionTrue, t)
}

// NotReadySince gives the pod a Ready condition that is False.
func NotReadySince(t time.Time) Option {
	return WithReadyCondition(corev1.ConditionFalse, t)
}

// WithReadyCondition adds a Ready condition of status, changed at t.
func WithReadyCondition(status corev1.ConditionStatus, t time.Time) Option {
	return func(p *slimpod.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type:               corev1.PodReady,
			Status:             status,
			LastTransitionTime: metav1.NewTime(t),
		})
	}
}

// WithRestarts spreads n restarts over two containers, since the count that
// matters is their sum.
func WithRestarts(n int32) Option {
	return func(p *slimpod.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "a", RestartCount: n / 2},
			{Name: "b", RestartCount: n - n/2},
		}
	}
}

// CreatedAt sets the pod's creation time.
func CreatedAt(t time.Time) Option {
	return func(p *slimpod.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

// TerminatingSince marks the pod deleted at t.
func TerminatingSince(t time.Time) Option {
	return func(p *slimpod.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t)) }
}

// NewerResourceVersion marks a pod as changed since Pod built it.
func NewerResourceVersion() Option {
	return func(p *slimpod.Pod) { p.ResourceVersion = "2" }
}

// WithLabels sets the pod's labels.
func WithLabels(l map[string]string) Option {
	return func(p *slimpod.Pod) { p.Labels = l }
}

// ControlledByPodSet sets a PodSet controller reference, as
// controllerutil.SetControllerReference would.
func ControlledByPodSet(name string) Option {
	return ControlledBy(appv1alpha1.GroupVersion.String(), "PodSet", name)
}

// ControlledBy sets a controller reference to the kind's object name.
func ControlledBy(apiVersion, kind, name string) Option {
	return func(p *slimpod.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion:         apiVersion,
			Kind:               kind,
			Name:               name,
			UID:                types.UID(kind + "-" + name + "-uid"),
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}}
	}
}

// PodSet is the PodSet "web" of replicas pods.
func PodSet(replicas int32) *appv1alpha1.PodSet {
	const name = "web"
	return &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  Namespace,
			UID:        types.UID("PodSet-" + name + "-uid"),
			Generation: 1,
		},
		Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To(replicas)},
	}
}

// AsPod is the corev1.Pod of a slim pod, for the tests that put the pods
// Pod builds on an API server or in a fake client. It shares pod's fields.
func AsPod(pod *slimpod.Pod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: pod.ObjectMeta,
		Spec: corev1.PodSpec{
			NodeName:       pod.Spec.NodeName,
			ReadinessGates: pod.ReadinessGates(),
			Containers:     pod.Containers(),
		},
		Status: corev1.PodStatus{
			Phase:              pod.Status.Phase,
			Conditions:         pod.Status.Conditions,
			ContainerStatuses:  pod.Status.ContainerStatuses,
			ObservedGeneration: pod.ObservedGeneration(),
		},
	}
}

// Apply applies opts to a corev1.Pod, as Pod applies them to the slim pods
// it builds.
func Apply(pod *corev1.Pod, opts ...Option) {
	slim := slimpod.From(pod)
	for _, opt := range opts {
		opt(slim)
	}
	full := AsPod(slim)
	pod.ObjectMeta = full.ObjectMeta
	pod.Spec.NodeName, pod.Spec.ReadinessGates, pod.Spec.Containers = full.Spec.NodeName, full.Spec.ReadinessGates, full.Spec.Containers
	pod.Status.Phase, pod.Status.Conditions, pod.Status.ContainerStatuses = full.Status.Phase, full.Status.Conditions, full.Status.ContainerStatuses
	pod.Status.ObservedGeneration = full.Status.ObservedGeneration
}
