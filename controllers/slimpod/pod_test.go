package slimpod

import (
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func fullPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-a", Namespace: "ns", UID: "uid-a", ResourceVersion: "7",
			Labels:          map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "PodSet", Name: "web", UID: "ps", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "gate"}},
			Containers:     []corev1.Container{{Name: "podset", Image: "busybox"}},
			Hostname:       "not read",
		},
		Status: corev1.PodStatus{
			Phase:              corev1.PodRunning,
			Conditions:         []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses:  []corev1.ContainerStatus{{Name: "podset", RestartCount: 2}},
			ObservedGeneration: 3,
			PodIP:              "10.0.0.1",
		},
	}
}

func TestFromKeepsWhatTheReconcilerReads(t *testing.T) {
	g := NewWithT(t)
	pod := fullPod()

	slim := From(pod)

	g.Expect(slim.ObjectMeta).To(Equal(pod.ObjectMeta))
	g.Expect(slim.Spec).To(Equal(PodSpec{NodeName: "node-1"}))
	g.Expect(slim.Status).To(Equal(PodStatus{Phase: corev1.PodRunning, Conditions: pod.Status.Conditions,
		ContainerStatuses: pod.Status.ContainerStatuses}))
	g.Expect(slim.ReadinessGates()).To(Equal(pod.Spec.ReadinessGates))
	g.Expect(slim.Containers()).To(Equal(pod.Spec.Containers))
	g.Expect(slim.ObservedGeneration()).To(Equal(int64(3)))
	g.Expect(FromList([]corev1.Pod{*pod, *pod})).To(HaveLen(2))
}

// Writes go through MetadataOnly's corev1.Pod: what the API server answers
// into it must not reach the cached pod it was made from.
func TestMetadataOnlyIsACopy(t *testing.T) {
	g := NewWithT(t)
	slim := From(fullPod())

	meta := slim.MetadataOnly()
	meta.Labels["app"] = "changed"
	meta.OwnerReferences[0].Name = "changed"
	meta.ResourceVersion = "8"

	g.Expect(meta.Spec).To(Equal(corev1.PodSpec{}))
	g.Expect(meta.Status).To(Equal(corev1.PodStatus{}))
	g.Expect(slim.Labels).To(HaveKeyWithValue("app", "web"))
	g.Expect(slim.OwnerReferences[0].Name).To(Equal("web"))
	g.Expect(slim.ResourceVersion).To(Equal("7"))
}

func TestDeepCopyIsACopy(t *testing.T) {
	g := NewWithT(t)
	slim := From(fullPod())

	c := slim.DeepCopyObject().(*Pod)
	c.Status.Conditions[0].Status = corev1.ConditionFalse
	c.Extra.Containers[0].Image = "changed"
	c.Labels["app"] = "changed"

	g.Expect(slim.Status.Conditions[0].Status).To(Equal(corev1.ConditionTrue))
	g.Expect(slim.Containers()[0].Image).To(Equal("busybox"))
	g.Expect(slim.Labels).To(HaveKeyWithValue("app", "web"))
	g.Expect(slim.GetObjectKind().GroupVersionKind().Empty()).To(BeTrue())
}

// The cache holds one Pod per pod the operator owns: it must stay a
// fraction of corev1.Pod's struct, which is what it replaces there.
func TestPodStaysSmall(t *testing.T) {
	g := NewWithT(t)
	size, full := int(unsafe.Sizeof(Pod{})), int(unsafe.Sizeof(corev1.Pod{}))
	g.Expect(size).To(BeNumerically("<=", 320), "a Pod fits the 320-byte size class of Go's allocator")
	g.Expect(size).To(BeNumerically("<", full/3), "corev1.Pod is %d bytes", full)
}

func TestOfTakesSlimAndFullPods(t *testing.T) {
	g := NewWithT(t)
	slim := From(fullPod())
	got, ok := Of(slim)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(BeIdenticalTo(slim), "a slim pod is taken as it is")

	got, ok = Of(fullPod())
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(slim), "a full pod is slimmed")

	for _, obj := range []any{nil, &corev1.Node{}, "web-a"} {
		got, ok = Of(obj)
		g.Expect(ok).To(BeFalse(), "%T", obj)
		g.Expect(got).To(BeNil())
	}
}
