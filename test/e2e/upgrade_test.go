//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// buildManagerAt builds the manager of an earlier commit of this repository
// into the test's temporary directory.
func buildManagerAt(t *testing.T, rev string) string {
	t.Helper()
	dir := t.TempDir()
	step("building the manager of %s from git history", rev)
	archive := exec.CommandContext(t.Context(), "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", env.repoRoot, rev, dir)
	out, err := archive.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "git archive %s: %s", rev, out)
	bin := filepath.Join(dir, "manager")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err = build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building the manager of %s: %s", rev, out)
	return bin
}

// testUpgradeFromV010: PodSets run by the v0.1.0 manager (no revisions, no
// revision labels) are taken over by this one without a pod deleted or
// created, their pods recognised as the current revision; a PodSet whose
// image v0.1.0 ignored is rolled to it.
func testUpgradeFromV010(t *testing.T) {
	rev := envOr("V010_REV", "")
	Expect(rev).NotTo(BeEmpty(), "V010_REV names the v0.1.0 commit: run the suite with `make test-e2e`")
	oldBin := buildManagerAt(t, rev)
	ns := newNamespace(t, "e2e-upgrade", nil)

	step("replacing the operator with the v0.1.0 manager")
	env.operator.stop()
	old := &operatorProcess{bin: oldBin, kubeconfig: env.operator.kubeconfig, logPath: env.operator.logPath}
	Expect(old.start()).To(Succeed())
	t.Cleanup(old.stop)

	kept := watchPods(t, ns, "kept")
	stale := watchPods(t, ns, "stale")
	for _, name := range []string{"kept", "stale"} {
		manifest := "apiVersion: app.example.com/v1alpha1\nkind: PodSet\nmetadata: {name: " + name + "}\nspec: {replicas: 4}\n"
		_, _, err := kubectlIn(t.Context(), strings.NewReader(manifest), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred())
	}
	for _, name := range []string{"kept", "stale"} {
		Eventually(func(g Gomega) {
			pods := livePods(g, t.Context(), ns, name)
			g.Expect(pods).To(HaveLen(4))
			for i := range pods {
				g.Expect(isRunningAndReady(&pods[i])).To(BeTrue())
				g.Expect(pods[i].Labels).NotTo(HaveKey(revisionLabel), "v0.1.0 labels no revision")
			}
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}
	// v0.1.0 ignores a changed image: the pods keep the old one.
	mustKubectl(t, "patch", "podset", "stale", "-n", ns, "--type=merge", "-p", `{"spec":{"image":"docker.io/library/busybox:1.36.1"}}`)
	keptPods := map[types.UID]bool{}
	Eventually(func(g Gomega) {
		for _, p := range livePods(g, t.Context(), ns, "kept") {
			keptPods[p.UID] = true
		}
		g.Expect(keptPods).To(HaveLen(4))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("upgrading: the v0.1.0 manager stops, this one starts")
	kept.reset()
	stale.reset()
	old.stop()
	Expect(env.operator.start()).To(Succeed())

	ps := expectRolledOut(t, ns, "kept", 4)
	Consistently(func(g Gomega) {
		_, created := kept.stats()
		g.Expect(created).To(BeZero(), "pods created for an unchanged PodSet")
		pods := livePods(g, t.Context(), ns, "kept")
		g.Expect(pods).To(HaveLen(4))
		for _, p := range pods {
			g.Expect(keptPods).To(HaveKey(p.UID), "pod %s is not one v0.1.0 made", p.Name)
		}
	}).WithContext(t.Context()).WithTimeout(poll * 12).WithPolling(poll).Should(Succeed())
	Expect(ps.Status.CurrentRevision).To(Equal(ps.Status.UpdateRevision))

	stalePS := expectRolledOut(t, ns, "stale", 4)
	maxLive, created := stale.stats()
	Expect(created).To(Equal(4), "every stale pod replaced once")
	Expect(maxLive).To(BeNumerically("<=", 5), "replicas + maxSurge (25% of 4, rounded up)")
	for _, p := range livePods(Default, t.Context(), ns, "stale") {
		Expect(p.Spec.Containers[0].Image).To(Equal("docker.io/library/busybox:1.36.1"))
	}
	Expect(stalePS.Status.UpdatedReplicas).To(BeEquivalentTo(4))
	mustKubectl(t, "delete", "podsets", "--all", "-n", ns)
}
