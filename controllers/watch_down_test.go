package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The reconciles while a pod watch is down (see podcache.WatchGaps).

// A replica whose pod watch is down (an API server restart) and that took
// the lease before its relist has a cache without the pods the previous
// leader created in the meantime. Acting on it would create them again.
func TestReconcileWhileThePodWatchIsDownDoesNotActOnACacheBehind(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	brokenPodWatch(r)

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods were created from a cache the failed watch left behind")
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))
	g.Expect(statusOf(g, c, ps).Replicas).To(Equal(int32(3)), "the status reports the cache, not the API server")
}

// Pods deleted by someone else while the watch is down: the cache still
// holds them. The PodSet replaces them at once instead of after the relist.
func TestReconcileWhileThePodWatchIsDownReplacesPodsItsCacheStillHolds(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods[:1])...)
	r.StatusWriteInterval = 0
	brokenPodWatch(r)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "the pods deleted while the watch was down were not replaced")
	g.Expect(statusOf(g, c, ps).PodNames).NotTo(ContainElement(pods[1].Name), "a pod deleted while the watch was down is reported")
}

// Each failure is checked once per PodSet, and only while a watch is down:
// once the watches deliver again, their events keep the cache current.
func TestReconcileChecksThePodCacheOncePerWatchFailure(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	recovered := brokenPodWatch(r)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podCacheOf(r, ps).UpToDate(r.cacheDoubts())).To(BeTrue())
	reader := r.APIReader
	r.APIReader = nil // any uncached read would now panic
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())

	// Delivering again: a PodSet never checked (a standby's) does not
	// check either.
	recovered()
	r.records.forget(client.ObjectKeyFromObject(ps))
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())

	// A new failure is checked after, once.
	r.APIReader = reader
	brokenPodWatch(r)
	g.Expect(podCacheOf(r, ps).UpToDate(r.cacheDoubts())).To(BeFalse())
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podCacheOf(r, ps).UpToDate(r.cacheDoubts())).To(BeTrue())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}
