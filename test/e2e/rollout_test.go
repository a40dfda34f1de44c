//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// revisionLabel is the label that carries a pod's template revision hash.
const revisionLabel = "controller-revision-hash"

// rolloutPodSet is a PodSet of 20 pods rolled with the default 25% / 25%.
func rolloutPodSet(name string) string {
	return fmt.Sprintf(`apiVersion: app.example.com/v1alpha1
kind: PodSet
metadata:
  name: %s
spec:
  replicas: 20
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%%, maxUnavailable: 25%%}
`, name)
}

// expectRolledOut waits until `kubectl podset rollout status` reports the
// rollout done, then checks it against the pods: replicas live pods, all
// Running and Ready, all on the update revision.
func expectRolledOut(t *testing.T, ns, name string, replicas int) *appv1alpha1.PodSet {
	t.Helper()
	out := mustKubectl(t, "podset", "rollout", "status", name, "-n", ns, "--timeout=3m")
	Expect(out).To(ContainSubstring(fmt.Sprintf("podset %q successfully rolled out", name)))
	var ps *appv1alpha1.PodSet
	Eventually(func(g Gomega) {
		ps = getPodSet(g, t.Context(), ns, name)
		g.Expect(ps.Status.ObservedGeneration).To(Equal(ps.Generation))
		pods := livePods(g, t.Context(), ns, name)
		g.Expect(pods).To(HaveLen(replicas))
		for i := range pods {
			g.Expect(isRunningAndReady(&pods[i])).To(BeTrue(), pods[i].Name)
			g.Expect(ps.Name+"-"+pods[i].Labels[revisionLabel]).To(Equal(ps.Status.UpdateRevision), pods[i].Name)
		}
		g.Expect(ps.Status.UpdatedAvailableReplicas).To(BeEquivalentTo(replicas))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return ps
}

// testRollingUpdate: a 20-pod rollout, watched from outside, never has more
// than replicas + maxSurge live pods nor fewer than replicas -
// maxUnavailable ready ones, even with the operator SIGKILLed in the middle
// and restarted; and it creates exactly one pod per pod it replaces.
func testRollingUpdate(t *testing.T) {
	const name, replicas, surge, unavailable = "rollout", 20, 5, 5
	ns := newNamespace(t, "e2e-rollout", nil)
	w := watchPods(t, ns, name)
	_, _, err := kubectlIn(t.Context(), strings.NewReader(rolloutPodSet(name)), "apply", "-n", ns, "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	first := expectRolledOut(t, ns, name, replicas).Status.UpdateRevision

	step("restarting the rollout with the plugin, killing the operator as soon as the first new pod appears")
	w.reset()
	mustKubectl(t, "podset", "rollout", "restart", name, "-n", ns)
	Eventually(func() int { _, created := w.stats(); return created }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(BeNumerically(">=", 1))
	env.operator.kill()
	_, createdBeforeKill := w.stats()
	step("%d new pods existed when the operator was killed; restarting it", createdBeforeKill)
	Expect(env.operator.start()).To(Succeed())
	ps := expectRolledOut(t, ns, name, replicas)
	maxLive, created := w.stats()
	fewestReady := w.fewestReady()
	step("most live pods %d (bound %d), fewest ready %d (bound %d), pods created %d", maxLive, replicas+surge, fewestReady, replicas-unavailable, created)
	Expect(maxLive).To(BeNumerically("<=", replicas+surge), "live pods above replicas + maxSurge")
	Expect(maxLive).To(BeNumerically(">", replicas), "the rollout never surged")
	Expect(fewestReady).To(BeNumerically(">=", replicas-unavailable), "ready pods below replicas - maxUnavailable")
	Expect(created).To(Equal(replicas), "one new pod per replaced pod, no pod too many")
	Expect(ps.Status.UpdateRevision).NotTo(Equal(first))
	Expect(ps.Status.CurrentRevision).To(Equal(ps.Status.UpdateRevision))
	Expect(ps.Spec.PodAnnotations).To(HaveKey("kubectl.kubernetes.io/restartedAt"))
	// Gone before its namespace, whose deletion would otherwise race the
	// operator replacing the pods it deletes (refused, and audited as such).
	mustKubectl(t, "delete", "podset", name, "-n", ns)
}

// testRolloutPluginVerbs runs history, undo, pause, resume and status
// through kubectl's plugin discovery against the operator, and checks
// pruning of the revision history.
func testRolloutPluginVerbs(t *testing.T) {
	const name, replicas = "verbs", 4
	ns := newNamespace(t, "e2e-verbs", nil)
	w := watchPods(t, ns, name)
	manifest := strings.Replace(rolloutPodSet(name), "replicas: 20", fmt.Sprintf("replicas: %d", replicas), 1)
	_, _, err := kubectlIn(t.Context(), strings.NewReader(manifest), "apply", "-n", ns, "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	v1 := expectRolledOut(t, ns, name, replicas).Status.UpdateRevision

	mustKubectl(t, "annotate", "podset", name, "-n", ns, "kubernetes.io/change-cause=busybox 1.36.1")
	mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=merge", "-p", `{"spec":{"image":"docker.io/library/busybox:1.36.1"}}`)
	v2 := expectRolledOut(t, ns, name, replicas).Status.UpdateRevision
	Expect(v2).NotTo(Equal(v1))

	history := mustKubectl(t, "podset", "rollout", "history", name, "-n", ns)
	Expect(history).To(MatchRegexp(`(?m)^1\s+<none>\s+<default>\s+` + v1 + `$`))
	Expect(history).To(MatchRegexp(`(?m)^2\s+busybox 1.36.1\s+docker.io/library/busybox:1.36.1\s+` + v2 + ` \(current\)$`))
	Expect(mustKubectl(t, "podset", "rollout", "history", name, "-n", ns, "--revision=2")).
		To(ContainSubstring("image: docker.io/library/busybox:1.36.1"))

	step("undo: back to revision 1, which becomes revision 3 under its old name")
	Expect(mustKubectl(t, "podset", "rollout", "undo", name, "-n", ns)).To(ContainSubstring("rolled back to revision 1"))
	ps := expectRolledOut(t, ns, name, replicas)
	Expect(ps.Status.UpdateRevision).To(Equal(v1))
	Expect(mustKubectl(t, "podset", "rollout", "history", name, "-n", ns)).To(MatchRegexp(`(?m)^3\s+<none>\s+<default>\s+` + v1 + ` \(current\)$`))

	step("pause: a template change replaces no pod; status says paused and exits 1")
	mustKubectl(t, "podset", "rollout", "pause", name, "-n", ns)
	w.reset()
	mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=merge", "-p", `{"spec":{"image":"docker.io/library/busybox:1.36.0"}}`)
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, name)
		g.Expect(ps.Status.ObservedGeneration).To(Equal(ps.Generation))
		g.Expect(ps.Status.UpdatedReplicas).To(BeZero())
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Consistently(func() int { _, created := w.stats(); return created }).
		WithContext(t.Context()).WithTimeout(poll * 12).WithPolling(poll).Should(BeZero())
	_, _, err = kubectl(t.Context(), "podset", "rollout", "status", name, "-n", ns, "--timeout=10s")
	Expect(err).To(MatchError(ContainSubstring("is paused")))
	mustKubectl(t, "podset", "rollout", "resume", name, "-n", ns)
	expectRolledOut(t, ns, name, replicas)

	step("revisionHistoryLimit 0: only the revision the pods run is kept")
	mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=merge", "-p", `{"spec":{"revisionHistoryLimit":0}}`)
	Eventually(func(g Gomega) {
		var list appsv1.ControllerRevisionList
		g.Expect(env.admin.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, cr := range list.Items {
			if ref := metav1.GetControllerOf(&cr); ref != nil && ref.Name == name {
				names = append(names, cr.Name)
			}
		}
		g.Expect(names).To(ConsistOf(getPodSet(g, t.Context(), ns, name).Status.UpdateRevision))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	mustKubectl(t, "delete", "podset", name, "-n", ns)
}
