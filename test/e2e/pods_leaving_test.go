//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/example/podset-operator/test/localcluster"
)

// The Stage that makes a deleted pod of ignoresSigtermImage take its whole
// grace period, as a kubelet ends a container that ignores SIGTERM.
func init() {
	clusterOptions = append(clusterOptions, func(o *localcluster.Options) error {
		return addKwokStage(o, "kwok-stage-ignores-sigterm.yaml")
	})
}

// sigtermIgnoringImage runs in pods whose deletion takes their whole grace
// period (testdata/kwok-stage-ignores-sigterm.yaml).
const sigtermIgnoringImage = "registry.example.com/ignores-sigterm:1"

// recreatePodSet is a PodSet under the Recreate strategy whose pods of
// image take graceSeconds to end once deleted.
func recreatePodSet(name string, replicas, graceSeconds int, image string) string {
	return fmt.Sprintf(`apiVersion: app.example.com/v1alpha1
kind: PodSet
metadata:
  name: %s
spec:
  replicas: %d
  updateStrategy: {type: Recreate}
  template:
    spec:
      terminationGracePeriodSeconds: %d
      containers: [{name: app, image: %s}]
`, name, replicas, graceSeconds, image)
}

// testRecreate: a Recreate rollout whose old pods take 10 s to end, with
// the operator SIGKILLed while they terminate and started again. Watched
// from outside, pods of two revisions never run at once (live or
// terminating), and each old pod is replaced once.
func testRecreate(t *testing.T) {
	const name, replicas, grace = "recreate", 6, 10
	ns := newNamespace(t, "e2e-recreate", nil)
	w := watchPods(t, ns, name)
	_, _, err := kubectlIn(t.Context(), strings.NewReader(recreatePodSet(name, replicas, grace, sigtermIgnoringImage)), "apply", "-n", ns, "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	first := expectRolledOut(t, ns, name, replicas).Status.UpdateRevision

	step("a new image under Recreate; the operator killed as soon as the old pods terminate")
	w.reset()
	mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=json", "-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.example.com/shop:2"}]`)
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, name)
		g.Expect(ps.Status.TerminatingReplicas).To(BeNumerically(">", 0))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(Succeed())
	env.operator.kill()
	step("operator killed with old pods terminating; restarting it")
	Expect(env.operator.start()).To(Succeed())
	ps := expectRolledOut(t, ns, name, replicas)
	_, created := w.stats()
	step("pods created %d; moments with two revisions running: %d", created, len(w.revisionsAtOnce()))
	Expect(w.revisionsAtOnce()).To(BeEmpty(), "pods of two revisions ran at once")
	Expect(created).To(Equal(replicas), "one new pod per old pod")
	Expect(ps.Status.UpdateRevision).NotTo(Equal(first))
	mustKubectl(t, "delete", "podset", name, "-n", ns)
}

// completePodSet is a PodSet under podReplacementPolicy TerminationComplete
// whose pods take graceSeconds to end once deleted, rolled with maxSurge 1
// and maxUnavailable.
func completePodSet(name string, replicas, graceSeconds, maxUnavailable int) string {
	return fmt.Sprintf(`apiVersion: app.example.com/v1alpha1
kind: PodSet
metadata:
  name: %s
spec:
  replicas: %d
  podReplacementPolicy: TerminationComplete
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: %d}
  template:
    spec:
      terminationGracePeriodSeconds: %d
      containers: [{name: app, image: %s}]
`, name, replicas, maxUnavailable, graceSeconds, sigtermIgnoringImage)
}

// testTerminationComplete: under podReplacementPolicy TerminationComplete,
// with pods that take 8 s to end, live and terminating pods together, as
// the API server's audit log shows them, never exceed replicas when pods
// are deleted by hand and when a scale-down is followed at once by a
// scale-up, nor replicas + maxSurge through a rollout.
func testTerminationComplete(t *testing.T) {
	const name, replicas, grace = "complete", 6, 8
	scaling := newNamespace(t, "e2e-complete-scale", nil)
	rolling := newNamespace(t, "e2e-complete-roll", nil)
	for _, ns := range []string{scaling, rolling} {
		_, _, err := kubectlIn(t.Context(), strings.NewReader(completePodSet(name, replicas, grace, 1)), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred())
	}
	for _, ns := range []string{scaling, rolling} {
		expectRolledOut(t, ns, name, replicas)
	}

	step("two pods deleted by hand, then a scale-down to 3 and at once back to 6; a rollout beside")
	pods := livePods(Default, t.Context(), scaling, name)
	mustKubectl(t, "delete", "pod", "-n", scaling, "--wait=false", pods[0].Name, pods[1].Name)
	mustKubectl(t, "patch", "podset", name, "-n", rolling, "--type=json", "-p", `[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"V","value":"2"}]}]`)
	expectRolledOut(t, scaling, name, replicas)
	mustKubectl(t, "scale", "podset", name, "-n", scaling, "--replicas=3")
	Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, t.Context(), scaling, name).Status.TerminatingReplicas).To(BeEquivalentTo(3))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	mustKubectl(t, "scale", "podset", name, "-n", scaling, "--replicas=6")
	for _, ns := range []string{scaling, rolling} {
		expectRolledOut(t, ns, name, replicas)
	}

	scaled, err := auditMaxRunning(scaling)
	Expect(err).NotTo(HaveOccurred())
	rolled, err := auditMaxRunning(rolling)
	Expect(err).NotTo(HaveOccurred())
	step("most live and terminating pods at once, from the audit log: %d scaling (bound %d), %d rolling (bound %d)", scaled, replicas, rolled, replicas+1)
	Expect(scaled).To(Equal(replicas), "live and terminating pods above replicas")
	Expect(rolled).To(BeNumerically("<=", replicas+1), "live and terminating pods above replicas + maxSurge")
	for _, ns := range []string{scaling, rolling} {
		mustKubectl(t, "delete", "podset", name, "-n", ns, "--wait=false")
	}
}

// testNamedPods: `kubectl podset delete-pod` names two pods of a PodSet
// (maxUnavailable 0, TerminationComplete, pods that take 4 s to end), and
// two of another with --scale-down. By the audit log: the named pods are
// the only ones deleted; the first is replaced before it is deleted, and
// live and terminating pods never exceed replicas + maxSurge; the
// scale-down creates no pod. Both lists clear themselves.
func testNamedPods(t *testing.T) {
	const name, replicas, grace = "named", 6, 4
	replacing := newNamespace(t, "e2e-named-replace", nil)
	scaling := newNamespace(t, "e2e-named-scale", nil)
	before := map[string][]string{}
	for _, ns := range []string{replacing, scaling} {
		_, _, err := kubectlIn(t.Context(), strings.NewReader(completePodSet(name, replicas, grace, 0)), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred())
	}
	for _, ns := range []string{replacing, scaling} {
		expectRolledOut(t, ns, name, replicas)
		for _, pod := range livePods(Default, t.Context(), ns, name) {
			before[ns] = append(before[ns], pod.Name)
		}
		slices.Sort(before[ns])
	}

	step("two pods named for deletion; two more, in another PodSet, removed with --scale-down")
	mustKubectl(t, "podset", "delete-pod", "-n", replacing, before[replacing][0], before[replacing][1])
	mustKubectl(t, "podset", "delete-pod", "-n", scaling, "--scale-down", before[scaling][0], before[scaling][1])
	for ns, want := range map[string]int{replacing: replicas, scaling: replicas - 2} {
		Eventually(func(g Gomega) {
			ps := getPodSet(g, t.Context(), ns, name)
			g.Expect(ps.Spec.PodsToDelete()).To(BeEmpty(), "spec.scaleStrategy.podsToDelete in %s", ns)
			var live []string
			for _, pod := range livePods(g, t.Context(), ns, name) {
				live = append(live, pod.Name)
			}
			g.Expect(live).NotTo(ContainElements(before[ns][0], before[ns][1]))
			g.Expect(live).To(ContainElements(before[ns][2:]), "a pod not named was deleted")
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		expectRolledOut(t, ns, name, want)
	}

	for ns, wantCreated := range map[string]int{replacing: replicas + 2, scaling: replicas} {
		f, err := os.Open(env.cluster.AuditLogPath())
		Expect(err).NotTo(HaveOccurred())
		events, err := podEventsInAuditLog(f, ns)
		f.Close()
		Expect(err).NotTo(HaveOccurred())
		// firstReplacement is the index of the first create after the
		// PodSet's first pods.
		deleted, created, firstDelete, lastCreate, firstReplacement := map[string]bool{}, 0, -1, -1, -1
		for i, e := range events {
			switch {
			case e.Verb == "create" && e.ObjectRef.Subresource == "":
				created++
				lastCreate = i
				if created == replicas+1 {
					firstReplacement = i
				}
			case e.Verb == "delete" && e.ObjectRef.Subresource == "":
				deleted[e.ObjectRef.Name] = true
				if firstDelete < 0 {
					firstDelete = i
				}
			}
		}
		most, err := auditMaxRunning(ns)
		Expect(err).NotTo(HaveOccurred())
		step("%s, by the audit log: pods deleted %v, %d created, most live and terminating at once %d", ns, slices.Sorted(maps.Keys(deleted)), created, most)
		Expect(deleted).To(Equal(map[string]bool{before[ns][0]: true, before[ns][1]: true}), "the pods deleted")
		Expect(created).To(Equal(wantCreated), "the pods created")
		if ns == replacing {
			Expect(most).To(BeNumerically("<=", replicas+1), "live and terminating pods above replicas + maxSurge")
			Expect(firstReplacement).To(BeNumerically(">=", 0))
			Expect(firstDelete).To(BeNumerically(">", firstReplacement), "a named pod deleted before a replacement was created (maxUnavailable 0)")
		} else {
			Expect(lastCreate).To(BeNumerically("<", firstDelete), "a pod created by the scale-down")
		}
	}
	for _, ns := range []string{replacing, scaling} {
		mustKubectl(t, "delete", "podset", name, "-n", ns, "--wait=false")
	}
}
