package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// With -template, the rollout's Deployments get the PodSets' pods as the
// operator renders them, the PodSets' roll changes their template's
// annotations (a short form's podAnnotations would not be allowed beside a
// template), and the direct client makes the same pods.
func TestTheTemplateReachesEveryKindOfOwnerAndTheDirectClient(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	template := realisticTemplate()
	labels := map[string]string{ownerLabel: ownerName(0)}
	want := renderedTemplate(template, labels)

	cs := fake.NewClientset()
	g.Expect(deploymentRollout{cs: cs, template: template}.create(ctx, "ns", 1, 2, 1)).To(Succeed())
	dep, err := cs.AppsV1().Deployments("ns").Get(ctx, ownerName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dep.Spec.Template).To(Equal(want))

	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podSetGVR: "PodSetList"})
	roll := podSetRollout{podSetDriver{dc: dc, template: template}}
	g.Expect(roll.create(ctx, "ns", 1, 2, 1)).To(Succeed())
	g.Expect(roll.roll(ctx, "ns", 1)).To(Succeed())
	ps, err := dc.Resource(podSetGVR).Namespace("ns").Get(ctx, ownerName(0), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	annotations, _, err := unstructured.NestedStringMap(ps.Object, "spec", "template", "metadata", "annotations")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(annotations).To(HaveKeyWithValue(rolloutAnnotation, "1"))
	g.Expect(ps.Object["spec"]).NotTo(HaveKey("podAnnotations"))
	containers, _, err := unstructured.NestedSlice(ps.Object, "spec", "template", "spec", "containers")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(containers).To(HaveLen(len(template.Spec.Containers)))

	// The direct client, with and without owners, creates the pods the
	// operator makes of the template.
	rendered := renderedTemplate(template, map[string]string{ownerLabel: "direct"})
	g.Expect(createPodsDirectly(ctx, cs, "direct", "direct", 2, template)).To(Succeed())
	g.Expect(createOwnedPodsDirectly(ctx, cs, "owned", shape{owners: 1, replicas: 2}, template)).To(Succeed())
	for _, ns := range []string{"direct", "owned"} {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(2))
		for _, pod := range pods.Items {
			g.Expect(pod.Spec).To(Equal(rendered.Spec))
			g.Expect(pod.Labels).To(HaveKeyWithValue(ownerLabel, "direct"))
		}
	}

	// Without a template, every kind keeps the short form's pod.
	g.Expect(createPodsDirectly(ctx, cs, "short", "direct", 1, nil)).To(Succeed())
	short, err := cs.CoreV1().Pods("short").Get(ctx, "direct-00000", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(short.Spec).To(Equal(podTemplate(map[string]string{ownerLabel: "direct"}).Spec))
	g.Expect(short.Spec).NotTo(Equal(rendered.Spec))
	g.Expect(corev1.PodSpec{}).NotTo(Equal(short.Spec))
}

// The memory scenario's PodSets each get a template of their own, as charts
// installed once per application do: the operator cannot share one copy.
func TestTheMemoryScenarioGivesEachPodSetItsOwnTemplate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podSetGVR: "PodSetList"})
	template := realisticTemplate()
	g.Expect(podSetDriver{dc: dc, template: template, distinct: true}.create(ctx, "ns", 2, 1, 1)).To(Succeed())
	var templates []any
	for i := range 2 {
		ps, err := dc.Resource(podSetGVR).Namespace("ns").Get(ctx, ownerName(i), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		labels, _, err := unstructured.NestedStringMap(ps.Object, "spec", "template", "metadata", "labels")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(labels).To(HaveKeyWithValue(instanceLabel, ownerName(i)))
		for k, v := range template.Labels {
			g.Expect(labels).To(HaveKeyWithValue(k, v))
		}
		templates = append(templates, ps.Object["spec"].(map[string]any)["template"])
	}
	g.Expect(templates[0]).NotTo(Equal(templates[1]))
	g.Expect(template.Labels).NotTo(HaveKey(instanceLabel), "the shared template itself is left alone")
}
