package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

// Helpers shared by the unit tests. The pods they build live in namespace
// unitNamespace, are scheduled, Running, not ready, have no owner and carry
// resourceVersion "1" unless an option says otherwise.

const unitNamespace = "ns"

// unitNow is the fixed "now" of the unit tests, far from the wall clock so
// that code reading the wall clock instead of its now argument shows.
var unitNow = time.Date(2021, time.March, 4, 12, 0, 0, 0, time.UTC)

type podOption func(*corev1.Pod)

func unitPod(name string, opts ...podOption) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         unitNamespace,
			UID:               types.UID(name + "-uid"),
			ResourceVersion:   "1",
			CreationTimestamp: metav1.NewTime(unitNow.Add(-time.Hour)),
		},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

func unscheduled() podOption {
	return func(p *corev1.Pod) { p.Spec.NodeName = "" }
}

func inPhase(phase corev1.PodPhase) podOption {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

// readySince marks the pod Ready since t.
func readySince(t time.Time) podOption {
	return withReadyCondition(corev1.ConditionTrue, t)
}

// notReadySince gives the pod a Ready condition that is False.
func notReadySince(t time.Time) podOption {
	return withReadyCondition(corev1.ConditionFalse, t)
}

func withReadyCondition(status corev1.ConditionStatus, t time.Time) podOption {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type:               corev1.PodReady,
			Status:             status,
			LastTransitionTime: metav1.NewTime(t),
		})
	}
}

// withRestarts spreads n restarts over two containers, since the count that
// matters is their sum.
func withRestarts(n int32) podOption {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "a", RestartCount: n / 2},
			{Name: "b", RestartCount: n - n/2},
		}
	}
}

func createdAt(t time.Time) podOption {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func terminatingSince(t time.Time) podOption {
	return func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t)) }
}

// newerResourceVersion marks a pod as changed since unitPod built it.
func newerResourceVersion() podOption {
	return func(p *corev1.Pod) { p.ResourceVersion = "2" }
}

func withPodLabels(l map[string]string) podOption {
	return func(p *corev1.Pod) { p.Labels = l }
}

// controlledByPodSet sets a PodSet controller reference, as
// controllerutil.SetControllerReference would.
func controlledByPodSet(name string) podOption {
	return controlledBy(appv1alpha1.GroupVersion.String(), "PodSet", name)
}

func controlledBy(apiVersion, kind, name string) podOption {
	return func(p *corev1.Pod) {
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

func unitPodSet(replicas int32) *appv1alpha1.PodSet {
	const name = "web"
	return &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  unitNamespace,
			UID:        types.UID("PodSet-" + name + "-uid"),
			Generation: 1,
		},
		Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To(replicas)},
	}
}

// newPodFromSpec builds a pod from ps's spec, as the reconciler does for its
// update revision.
func newPodFromSpec(ps *appv1alpha1.PodSet, defaultImage string) *corev1.Pod {
	return newPod(ps, revision.FromPodSet(ps), revision.Hash(revision.FromPodSet(ps), nil), defaultImage)
}
