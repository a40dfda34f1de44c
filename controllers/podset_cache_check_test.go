package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/podcache"
)

// The user scaled the PodSet down while the operator's PodSet watch was
// down: its cache still has the old replicas. A reconcile brought by a pod
// event acts on the API server's spec, not on the stale one.
func TestReconcileWhileThePodSetWatchIsDownActsOnTheAPIServersSpec(t *testing.T) {
	g := NewWithT(t)
	cached := unitPodSet(3)
	cached.ResourceVersion = "10"
	pods := ownedPods(cached, 3)
	onServer := cached.DeepCopy()
	onServer.Spec.Replicas = ptr.To[int32](1)
	onServer.Generation = 2
	onServer.ResourceVersion = "20"
	r, c := unitReconciler(t, pods, unitClientBuilder(onServer).Build(), asObjects(cached, pods)...)
	r.StatusWriteInterval = 0
	brokenPodSetWatch(r)

	_, err := reconcileOnce(r, cached)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(1), "the PodSet went on with the replicas its stale copy had")

	// The deletions were seen; the PodSet cache is still stale. The read is
	// not repeated (once per failure), and what it read still rules: the
	// stale copy's 3 replicas would create 2 pods again.
	r.Pods = podIndexWith(t, pods[:1])
	r.Expectations = newExpectations()
	r.APIReader = nil // any uncached read would now panic
	_, err = reconcileOnce(r, cached)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(1), "the PodSet went back to its stale copy")
	g.Expect(statusOf(g, c, cached).ObservedGeneration).To(Equal(int64(2)))
}

// Deleted, or replaced by a namesake, while the watch was down: nothing is
// created for the stale copy, and no status is written (it would land on
// the namesake).
func TestReconcileWhileThePodSetWatchIsDownFindsItGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		onServer []*appv1alpha1.PodSet
	}{
		{"deleted", nil},
		{"replaced by a namesake", []*appv1alpha1.PodSet{func() *appv1alpha1.PodSet {
			p := unitPodSet(1)
			p.UID = "another-uid"
			return p
		}()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(3)
			builder := unitClientBuilder()
			for _, p := range tc.onServer {
				builder = builder.WithObjects(p)
			}
			r, c := unitReconciler(t, nil, builder.Build(), ps)
			brokenPodSetWatch(r)

			_, err := reconcileOnce(r, ps)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podsIn(g, c)).To(BeEmpty(), "pods were created for a PodSet the API server no longer has")
			g.Expect(statusOf(g, c, ps)).To(Equal(appv1alpha1.PodSetStatus{}))
		})
	}
}

// Without a PodSet watch failure, or once its watches deliver again, the
// cached PodSet is what the reconcile acts on, with no read.
func TestReconcileReadsThePodSetOnlyWhileItsWatchIsDown(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	r, c := unitReconciler(t, nil, nil, ps)
	r.APIReader = nil // any uncached read would panic
	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(2))

	gaps := podcache.NewWatchGaps()
	brokenWatch(gaps, &appv1alpha1.PodSet{})()
	r.WatchGaps = gaps
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(2))
}
