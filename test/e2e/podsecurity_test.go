//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var restricted = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// testPodSecurityRestricted: the operand pods are admitted in a namespace
// that enforces the restricted profile. The refused plain pod proves that
// enforcement is really on, so the admission of the operand pods means
// something.
func testPodSecurityRestricted(t *testing.T) {
	ns := newNamespace(t, "e2e-restricted", restricted)

	step("a pod without a restricted security context is refused in %s", ns)
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	err := env.admin.Create(t.Context(), plain)
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Pod Security to refuse the pod, got %v", err)
	Expect(err.Error()).To(ContainSubstring("violates PodSecurity"))

	step("the operand pods are admitted there and become Ready")
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	mustKubectl(t, "delete", "podset", sample, "-n", ns)
}

// testManagerDeploymentAdmitted: the Deployment rendered from config/default
// was applied into the operator's namespace, labelled restricted, during
// setup. Under kwok no container runs, so admission is what is checked: no
// Pod Security warning when applying it, and its pod got created (the
// ReplicaSet controller's create is refused otherwise).
func testManagerDeploymentAdmitted(t *testing.T) {
	var ns corev1.Namespace
	Expect(env.admin.Get(t.Context(), client.ObjectKey{Name: env.operatorNS}, &ns)).To(Succeed())
	Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	Expect(env.applyStderr).NotTo(ContainSubstring("PodSecurity"), "warnings when applying config/default")

	step("waiting for the manager Deployment's pod in %s", env.operatorNS)
	Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.admin.Get(t.Context(), client.ObjectKey{Namespace: env.operatorNS, Name: env.deployment.GetName()}, &d)).To(Succeed())
		for _, c := range d.Status.Conditions {
			g.Expect(c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue).To(BeFalse(),
				"Deployment ReplicaFailure: %s", c.Message)
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		g.Expect(err).NotTo(HaveOccurred())
		var pods corev1.PodList
		g.Expect(env.admin.List(t.Context(), &pods, client.InNamespace(env.operatorNS), client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty(), "no pod admitted for Deployment %s; events:\n%s", d.Name, namespaceEvents(g, env.operatorNS))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// namespaceEvents returns the Warning events of ns, which carry the
// ReplicaSet controller's FailedCreate messages.
func namespaceEvents(g Gomega, ns string) string {
	var events corev1.EventList
	g.Expect(env.admin.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	out := ""
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning {
			out += fmt.Sprintf("%s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return out
}
