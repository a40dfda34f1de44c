//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testHandDeletedPods: pods deleted by hand are replaced one for one. The
// watch proves that at no moment more than spec.replicas pods were live and
// that exactly as many pods were created as were deleted.
func testHandDeletedPods(t *testing.T) {
	ns := newNamespace(t, "e2e-hand-delete", nil)
	w := watchPods(t, ns, sample)
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	maxLive, created := w.stats()
	Expect(maxLive).To(Equal(3), "most live pods at once while creating 3")
	Expect(created).To(Equal(3), "pods created for 3 replicas")

	pods := livePods(Default, t.Context(), ns, sample)
	w.reset()
	step("deleting 2 of the 3 pods by hand")
	mustKubectl(t, "delete", "pod", "-n", ns, "--wait=false", pods[0].Name, pods[1].Name)
	expectSettled(t, ns, 3)
	maxLive, created = w.stats()
	Expect(maxLive).To(BeNumerically("<=", 3), "most live pods at once")
	Expect(created).To(Equal(2), "pods created to replace 2 deleted ones")

	step("deleting the rest of the pods at once")
	w.reset()
	mustKubectl(t, "delete", "pods", "-n", ns, "--wait=false", "-l", podSetLabel+"="+sample)
	expectSettled(t, ns, 3)
	maxLive, created = w.stats()
	Expect(maxLive).To(BeNumerically("<=", 3), "most live pods at once")
	Expect(created).To(Equal(3), "pods created to replace 3 deleted ones")
	mustKubectl(t, "delete", "podset", sample, "-n", ns)
}

// testOperatorKilledMidScale: the operator is SIGKILLed while it scales up
// and while it scales down, and restarted. The new process must finish the
// job from what the API server holds, without ever creating a pod too many.
func testOperatorKilledMidScale(t *testing.T) {
	ns := newNamespace(t, "e2e-restart", nil)
	w := watchPods(t, ns, sample)
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)

	const up = 25
	step("scaling to %d and killing the operator as soon as the first new pod appears", up)
	w.reset()
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, up))
	Eventually(func() int { _, created := w.stats(); return created }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(BeNumerically(">=", 1))
	env.operator.kill()
	_, createdBeforeKill := w.stats()
	step("%d of %d new pods existed when the operator was killed; restarting it", createdBeforeKill, up-3)
	Expect(env.operator.start()).To(Succeed())
	expectSettled(t, ns, up)
	maxLive, created := w.stats()
	Expect(maxLive).To(BeNumerically("<=", up), "most live pods at once")
	Expect(created).To(Equal(up-3), "pods created to go from 3 to %d", up)

	const down = 2
	step("scaling to %d and killing the operator as soon as the first pod is deleted", down)
	w.reset()
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, down))
	Eventually(func(g Gomega) {
		g.Expect(len(livePods(g, t.Context(), ns, sample))).To(BeNumerically("<", up))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(Succeed())
	env.operator.kill()
	Expect(env.operator.start()).To(Succeed())
	expectSettled(t, ns, down)
	maxLive, created = w.stats()
	Expect(maxLive).To(BeNumerically("<=", up), "most live pods at once")
	Expect(created).To(Equal(0), "pods created while scaling down")

	step("deleting pods while the operator is down, then starting it")
	env.operator.stop()
	w.reset()
	mustKubectl(t, "delete", "pods", "-n", ns, "--wait=false", "-l", podSetLabel+"="+sample)
	Expect(env.operator.start()).To(Succeed())
	expectSettled(t, ns, down)
	maxLive, created = w.stats()
	Expect(maxLive).To(BeNumerically("<=", down), "most live pods at once")
	Expect(created).To(Equal(down), "pods created to replace %d deleted ones", down)
	mustKubectl(t, "delete", "podset", sample, "-n", ns)
}

// testReleaseAndAdopt: taking a pod out of a PodSet by removing its label
// (as one does to debug a pod) makes the operator release it and create a
// replacement; putting the label back makes the operator adopt the orphan
// and delete one pod to get back to spec.replicas.
func testReleaseAndAdopt(t *testing.T) {
	ns := newNamespace(t, "e2e-adopt", nil)
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	victim := livePods(Default, t.Context(), ns, sample)[0].Name

	step("removing the %s label from pod %s", podSetLabel, victim)
	mustKubectl(t, "label", "pod", victim, "-n", ns, podSetLabel+"-")
	expectSettled(t, ns, 3)
	Eventually(func(g Gomega) {
		var pod corev1.Pod
		g.Expect(env.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: victim}, &pod)).To(Succeed())
		g.Expect(pod.DeletionTimestamp).To(BeNil(), "the released pod must live on")
		g.Expect(metav1.GetControllerOf(&pod)).To(BeNil(), "the released pod still has a controller")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("putting the label back: the orphan is adopted and one pod too many is deleted")
	mustKubectl(t, "label", "pod", victim, "-n", ns, podSetLabel+"="+sample)
	expectSettled(t, ns, 3)
	var all corev1.PodList
	Expect(env.admin.List(t.Context(), &all, client.InNamespace(ns))).To(Succeed())
	for _, p := range all.Items {
		if isLive(&p) {
			Expect(metav1.GetControllerOf(&p)).NotTo(BeNil(), "live pod %s has no controller", p.Name)
		}
	}

	// The managed-by label is a template's to set (charts set it to Helm):
	// a pod stripped of it stays the PodSet's, in its cache and counted,
	// and nothing is replaced.
	kept := livePods(Default, t.Context(), ns, sample)[0].Name
	step("removing the managed-by label from pod %s: it stays the PodSet's", kept)
	mustKubectl(t, "label", "pod", kept, "-n", ns, "app.kubernetes.io/managed-by-")
	Consistently(func(g Gomega) {
		var pod corev1.Pod
		g.Expect(env.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: kept}, &pod)).To(Succeed())
		g.Expect(pod.DeletionTimestamp).To(BeNil())
		g.Expect(metav1.GetControllerOf(&pod)).NotTo(BeNil(), "the pod was released")
		g.Expect(livePods(g, t.Context(), ns, sample)).To(HaveLen(3), "a pod was added or removed")
	}).WithContext(t.Context()).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
	expectSettled(t, ns, 3)
	mustKubectl(t, "delete", "podset", sample, "-n", ns)
}
