package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestCachedPodsKeepWhatTheReconcilerReads(t *testing.T) {
	g := NewWithT(t)
	var transform func(any) (any, error)
	for obj, byObject := range CacheOptions(nil).ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			transform = byObject.Transform
		}
	}
	g.Expect(transform).NotTo(BeNil(), "no Transform for pods")

	pod := newPod(unitPodSet(1), managerDefaultImage)
	pod.Name, pod.UID = "web-1", "uid-1"
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "PodSet", Name: "web", UID: "ps-uid"}}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Spec.NodeName = "node-1"
	pod.Status = corev1.PodStatus{
		Phase:             corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "podset", RestartCount: 2}},
	}
	want := pod.DeepCopy()

	out, err := transform(pod)

	g.Expect(err).NotTo(HaveOccurred())
	slim := out.(*corev1.Pod)
	g.Expect(slim.ManagedFields).To(BeEmpty())
	g.Expect(slim.Spec).To(Equal(corev1.PodSpec{NodeName: "node-1"}))
	g.Expect(slim.Status).To(Equal(want.Status))
	want.ManagedFields = nil
	g.Expect(slim.ObjectMeta).To(Equal(want.ObjectMeta))
	g.Expect(isPodLive(slim)).To(BeTrue())
	g.Expect(isPodReady(slim)).To(BeTrue())
	g.Expect(restartCount(slim)).To(Equal(int32(2)))
}

func TestCachedPodTransformPassesTombstonesThrough(t *testing.T) {
	g := NewWithT(t)
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/web-1"}
	out, err := slimPod(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}
