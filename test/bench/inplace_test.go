package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The resources change is done for a pod when the kubelet reports the new
// resources of a running container, not when its spec has them.
func TestResourcesChangeIsAppliedWhenTheKubeletReportsIt(t *testing.T) {
	change := nodeChanges["resources"]
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "podset", Image: inPlaceFromImage, Resources: inPlaceFromResources}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "podset", Image: "busybox:1.37.0", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			Resources: inPlaceFromResources.DeepCopy(),
		}}},
	}
	if change.inSpec(pod) || change.applied(pod) {
		t.Fatal("a pod of the old resources counts as changed")
	}
	pod.Spec.Containers[0].Resources = inPlaceToResources
	if !change.inSpec(pod) || change.applied(pod) {
		t.Fatal("the resize in the spec only: want its turn, not applied")
	}
	pod.Status.ContainerStatuses[0].Resources = inPlaceToResources.DeepCopy()
	if !change.applied(pod) {
		t.Fatal("the kubelet reports the new resources: want applied")
	}
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	if change.applied(pod) {
		t.Fatal("a container not running runs no change")
	}
}

func TestImageChangeIsAppliedWhenTheNewImageRuns(t *testing.T) {
	change := nodeChanges["image"]
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "podset", Image: inPlaceToImage}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "podset", Image: "busybox:1.37.0", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
	if !change.inSpec(pod) || change.applied(pod) {
		t.Fatal("the old image still runs: want its turn, not applied")
	}
	pod.Status.ContainerStatuses[0].Image = inPlaceToImage
	if !change.applied(pod) {
		t.Fatal("the new image runs: want applied")
	}
}
