package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The manager's cache holds pods as *slimpod.Pod; its client must read a
// *corev1.Pod from the API server, whole, rather than fail on the cached
// type (podcache.ClientOptions).
func TestIntegrationManagerClientReadsWholePodsFromTheAPIServer(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ps := createPodSet(t, newTestNamespace(t, nil), "whole", 1, nil)
	pod := waitForLivePods(g, ps, 1)[0]

	got := &corev1.Pod{}
	g.Expect(suiteClient.Get(context.Background(), client.ObjectKeyFromObject(&pod), got)).To(Succeed())
	// The slim pod has no security context: a read that has it came from
	// the API server.
	g.Expect(got.Spec.SecurityContext).NotTo(BeNil())
	g.Expect(got.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))

	var list corev1.PodList
	g.Expect(suiteClient.List(context.Background(), &list, client.InNamespace(ps.Namespace))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Spec.SecurityContext).NotTo(BeNil())
}
