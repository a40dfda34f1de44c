//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recreateManifest is the PodSet a user applies, deletes with
// --cascade=orphan and applies again.
const recreateManifest = `apiVersion: app.example.com/v1alpha1
kind: PodSet
metadata:
  name: cs
spec:
  replicas: 2
`

// testRecreateAfterOrphaningDelete: a PodSet deleted with
// `kubectl delete --cascade=orphan` and applied again adopts its pods and
// its revision, as a ReplicaSet or a Deployment would: no pod is created or
// deleted, and no revision is left behind or counted as a collision.
func testRecreateAfterOrphaningDelete(t *testing.T) {
	ns := newNamespace(t, "e2e-cascade", nil)
	apply := func() {
		_, _, err := kubectlIn(t.Context(), strings.NewReader(recreateManifest), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred())
	}
	apply()
	expectSettledNamed(t, ns, "cs", 2)
	first := getPodSet(Default, t.Context(), ns, "cs")
	before := podUIDs(livePods(Default, t.Context(), ns, "cs"))
	rev := first.Status.UpdateRevision
	Expect(rev).NotTo(BeEmpty())

	step("deleting the PodSet with --cascade=orphan: its pods and revision stay")
	mustKubectl(t, "delete", "podset", "cs", "-n", ns, "--cascade=orphan", "--wait=true")
	Expect(podUIDs(livePods(Default, t.Context(), ns, "cs"))).To(Equal(before), "an orphaning delete deleted pods")
	for _, cr := range revisions(Default, t.Context(), ns) {
		Expect(metav1.GetControllerOf(&cr)).To(BeNil(), "revision %s still has a controller", cr.Name)
	}

	step("applying the same manifest again: the pods and the revision are adopted")
	apply()
	expectSettledNamed(t, ns, "cs", 2)
	second := getPodSet(Default, t.Context(), ns, "cs")
	Expect(second.UID).NotTo(Equal(first.UID))
	Consistently(func(g Gomega) {
		g.Expect(podUIDs(livePods(g, t.Context(), ns, "cs"))).To(Equal(before), "pods were created or deleted")
	}).WithContext(t.Context()).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, "cs")
		g.Expect(ps.Status.UpdateRevision).To(Equal(rev))
		g.Expect(ps.Status.CurrentRevision).To(Equal(rev))
		g.Expect(ptr.Deref(ps.Status.CollisionCount, 0)).To(BeZero(), "status.collisionCount")
		crs := revisions(g, t.Context(), ns)
		g.Expect(crs).To(HaveLen(1), "revisions in the namespace")
		g.Expect(crs[0].Name).To(Equal(rev))
		g.Expect(metav1.GetControllerOf(&crs[0])).To(HaveField("UID", second.UID), "the revision's controller")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	mustKubectl(t, "podset", "rollout", "history", "cs", "-n", ns)
}

func podUIDs(pods []corev1.Pod) []types.UID {
	uids := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		uids = append(uids, p.UID)
	}
	slices.Sort(uids)
	return uids
}

func revisions(g Gomega, ctx context.Context, ns string) []appsv1.ControllerRevision {
	var list appsv1.ControllerRevisionList
	g.Expect(env.admin.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}
