package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// podOf creates a pod named name that ps controls (owner nil: a bare pod).
func podOf(g Gomega, ns, name string, owner *appv1alpha1.PodSet) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	g.Expect(k8s.Create(context.Background(), pod)).To(Succeed())
}

func TestDeletePod(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	ps := podSetWithHistory(g, ns, "example.com/web:1")
	g.Expect(k8s.Patch(context.Background(), get(g, ps), mergePatch(`{"spec":{"replicas":4}}`))).To(Succeed())
	for _, name := range []string{"web-a", "web-b", "web-c"} {
		podOf(g, ns, name, ps)
	}
	podOf(g, ns, "bare", nil)
	other := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}}
	g.Expect(k8s.Create(context.Background(), other)).To(Succeed())
	podOf(g, ns, "api-a", other)

	out, err := run(ns, "delete-pod", "web-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("pod/web-a marked for deletion by podset.app.example.com/web\n"))
	g.Expect(get(g, ps).Spec.ScaleStrategy.PodsToDelete).To(Equal([]string{"web-a"}))
	g.Expect(*get(g, ps).Spec.Replicas).To(BeEquivalentTo(4), "replaced, not scaled down")

	// With --scale-down, replicas drops by the names not listed yet, in
	// the same write.
	out, err = run(ns, "delete-pod", "web-a", "web-b", "--scale-down")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("podset.app.example.com/web scaled from 4 to 3\n"))
	g.Expect(out).To(ContainSubstring("(1 of the pods were marked already)"))
	g.Expect(get(g, ps).Spec.ScaleStrategy.PodsToDelete).To(Equal([]string{"web-a", "web-b"}))
	g.Expect(*get(g, ps).Spec.Replicas).To(BeEquivalentTo(3))

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"nosuch"}, `pod "nosuch": pods "nosuch" not found`},
		{[]string{"bare"}, `pod "bare" is not controlled by a PodSet`},
		{[]string{"web-c", "api-a"}, `pod "web-c" belongs to podset "web", pod "api-a" to podset "api"`},
		{[]string{"web-c", "web-c"}, `pod "web-c" is named twice`},
	} {
		_, err := run(ns, append([]string{"delete-pod"}, tc.args...)...)
		g.Expect(err).To(MatchError(ContainSubstring(tc.err)), "%v", tc.args)
	}
	g.Expect(get(g, ps).Spec.ScaleStrategy.PodsToDelete).To(Equal([]string{"web-a", "web-b"}), "a refused command writes nothing")
}

func mergePatch(patch string) client.Patch {
	return client.RawPatch(client.Merge.Type(), []byte(patch))
}
