//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const sample = "podset-sample"

// testTutorialFlow is the README tutorial, typed as a user would type it.
func testTutorialFlow(t *testing.T) {
	ns := newNamespace(t, "e2e-tutorial", nil)

	step("applying the sample: 3 pods")
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	expectOperatorLabels(t, ns, sample)

	step("patching replicas to 5")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":5}}`)
	expectSettled(t, ns, 5)

	step("patching replicas to 1")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":1}}`)
	expectSettled(t, ns, 1)

	step("showing the PodSet as a user sees it")
	mustKubectl(t, "get", "podsets,pods", "-n", ns, "-o", "wide")

	step("deleting the PodSet: the garbage collector removes its pods")
	var before corev1.PodList
	Expect(env.admin.List(t.Context(), &before, client.InNamespace(ns), client.MatchingLabels{podSetLabel: sample})).To(Succeed())
	Expect(before.Items).NotTo(BeEmpty())
	mustKubectl(t, "delete", "podset", sample, "-n", ns, "--wait=true")
	Eventually(func(g Gomega) {
		var list corev1.PodList
		g.Expect(env.admin.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{podSetLabel: sample})).To(Succeed())
		g.Expect(list.Items).To(BeEmpty(), "pods left after deleting the PodSet")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// expectOperatorLabels checks the labels the operator promises on its pods.
func expectOperatorLabels(t *testing.T, ns, name string) {
	t.Helper()
	pods := livePods(Default, t.Context(), ns, name)
	Expect(pods).NotTo(BeEmpty())
	for _, p := range pods {
		Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "podset"), p.Name)
		Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", name), p.Name)
		Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "podset-operator"), p.Name)
		Expect(p.Labels).To(HaveKeyWithValue(podSetLabel, name), p.Name)
	}
}

// testScaleSubresource scales with `kubectl scale` (which only works through
// the scale subresource) and reads the printer columns of `kubectl get`.
func testScaleSubresource(t *testing.T) {
	ns := newNamespace(t, "e2e-scale", nil)
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)

	step("kubectl scale --replicas=4 goes through the scale subresource")
	mustKubectl(t, "scale", "podset", sample, "-n", ns, "--replicas=4")
	expectSettled(t, ns, 4)

	step("reading the scale subresource directly")
	var scale struct {
		Spec   struct{ Replicas int32 } `json:"spec"`
		Status struct {
			Replicas int32
			Selector string
		} `json:"status"`
	}
	raw, err := env.clientset.Discovery().RESTClient().Get().
		AbsPath("/apis/app.example.com/v1alpha1/namespaces", ns, "podsets", sample, "scale").DoRaw(t.Context())
	Expect(err).NotTo(HaveOccurred(), string(raw))
	Expect(json.Unmarshal(raw, &scale)).To(Succeed())
	Expect(scale.Spec.Replicas).To(BeEquivalentTo(4))
	Expect(scale.Status.Replicas).To(BeEquivalentTo(4))
	// The selector must select exactly the PodSet's pods (an HPA relies on it).
	sel, err := metav1.ParseToLabelSelector(scale.Status.Selector)
	Expect(err).NotTo(HaveOccurred())
	selector, err := metav1.LabelSelectorAsSelector(sel)
	Expect(err).NotTo(HaveOccurred())
	var selected corev1.PodList
	Expect(env.admin.List(t.Context(), &selected, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector})).To(Succeed())
	Expect(selected.Items).To(HaveLen(4), "pods selected by the scale subresource's selector %q", scale.Status.Selector)

	step("kubectl get podsets shows the printer columns")
	out := mustKubectl(t, "get", "podsets", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	Expect(lines).To(HaveLen(2))
	Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}))
	Expect(strings.Fields(lines[1])[:6]).To(Equal([]string{sample, "4", "4", "4", "4", "4"}))
	// The short name and the "all" category from the CRD work too.
	Expect(mustKubectl(t, "get", "ps", "-n", ns, "-o", "name")).To(ContainSubstring("podset.app.example.com/" + sample))
	Expect(mustKubectl(t, "get", "all", "-n", ns, "-o", "name")).To(ContainSubstring("podset.app.example.com/" + sample))

	mustKubectl(t, "delete", "podset", sample, "-n", ns)
}
