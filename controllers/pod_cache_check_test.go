package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// ownedPods are n pods of ps's update revision, controlled by it, Ready.
func ownedPods(ps *appv1alpha1.PodSet, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := newPodFromSpec(ps, "")
		p.GenerateName = ""
		p.Name = ps.Name + "-" + string(rune('a'+i))
		p.UID = types.UID(p.Name + "-uid")
		controlledByPodSet(ps.Name)(p)
		readySince(unitNow)(p)
		pods = append(pods, p)
	}
	return pods
}

func asObjects(ps *appv1alpha1.PodSet, pods []*corev1.Pod) []client.Object {
	objs := []client.Object{ps}
	for _, p := range pods {
		objs = append(objs, p)
	}
	return objs
}

// Creations whose connection broke are waited for only
// UncertainCreationTimeout. If the cache is still behind when that wait ends
// (its relist waits out client-go's backoff), the PodSet must not act on it:
// the fault matrix saw 62 pods for 50 that way.
func TestReconcileWaitsForACacheBehindUncertainCreations(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	// The API server made all three pods; the cache has seen one.
	r, c := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	clock := time.Now()
	r.Expectations.now = func() time.Time { return clock }
	key := expectationsKey(ps.Namespace, ps.Name, ps.UID)
	r.Expectations.ExpectCreations(key, 3)
	r.Expectations.CreationObserved(key)
	r.Expectations.CreationUncertain(key)
	clock = clock.Add(UncertainCreationTimeout)

	res, err := reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods were created from a cache that lacks two the API server has")
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))
	g.Expect(r.Expectations.Doubtful(key)).To(BeTrue(), "still in doubt")

	// The cache catches up: the doubt is resolved, nothing is created.
	r.Pods = podIndexWith(t, pods)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
	g.Expect(r.Expectations.Doubtful(key)).To(BeFalse())
	g.Expect(r.Expectations.Satisfied(key)).To(BeTrue())
}

// When the uncertain creations did not happen, the cache matches the API
// server, and the PodSet creates the missing pods after the short wait.
func TestReconcileCreatesWhatUncertainCreationsDidNotMake(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 1)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	clock := time.Now()
	r.Expectations.now = func() time.Time { return clock }
	key := expectationsKey(ps.Namespace, ps.Name, ps.UID)
	r.Expectations.ExpectCreations(key, 3)
	r.Expectations.CreationObserved(key)
	r.Expectations.CreationUncertain(key)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(1), "waits while the outcome is uncertain")

	clock = clock.Add(UncertainCreationTimeout)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}

// A replica resumed after a pause renews its lease, which says it still
// leads, not that its cache saw what happened meanwhile (pods another
// replica created while this one was paused). Its first reconcile of each
// PodSet compares the cache with the API server.
func TestReconcileAfterAPauseWaitsForACacheBehind(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	clock := unitNow
	f := NewLeaderFence(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	r.Fence = f

	clock = clock.Add(20 * time.Second) // paused
	g.Expect(f.Allow()).To(MatchError(ErrFenced))
	clock = clock.Add(time.Second)
	f.renewed()

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods were created from a cache that missed the pause")
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))

	// Caught up, and checked once per pause: a later reconcile lists
	// nothing from the API server.
	r.Pods = podIndexWith(t, pods)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	key := expectationsKey(ps.Namespace, ps.Name, ps.UID)
	g.Expect(r.cacheChecks.upToDate(key, f.Trips())).To(BeTrue())
	r.APIReader = nil // any uncached read would now panic
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}

// A replica paused right after creating a pod, which someone deleted before
// the replica's relist: the creation's event never comes. Once its cache
// matches the API server again, the PodSet acts at once instead of waiting
// out the expectation's 5-minute timeout.
func TestReconcileAfterAPauseDropsExpectationsTheCacheAnswers(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 2)
	// Cache and API server agree: two pods. The third was created before
	// the pause and deleted during it.
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	clock := unitNow
	f := NewLeaderFence(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	r.Fence = f
	key := expectationsKey(ps.Namespace, ps.Name, ps.UID)
	r.Expectations.ExpectCreations(key, 1)

	clock = clock.Add(20 * time.Second) // paused
	g.Expect(f.Allow()).To(MatchError(ErrFenced))
	clock = clock.Add(time.Second)
	f.renewed()

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "the PodSet waited for a creation whose pod is gone")
	g.Expect(r.cacheChecks.upToDate(key, f.Trips())).To(BeTrue())
}

func TestPodCacheDiff(t *testing.T) {
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	gone := pods[2].DeepCopy()
	terminatingSince(unitNow)(gone)
	foreign := unitPod("foreign", controlledBy("apps/v1", "ReplicaSet", "other"))
	server := func(ps ...*corev1.Pod) []corev1.Pod {
		var out []corev1.Pod
		for _, p := range ps {
			out = append(out, *p)
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		cached         []*corev1.Pod
		server         []corev1.Pod
		missing, extra int
	}{
		{"same", pods, server(pods...), 0, 0},
		{"cache lacks two", pods[:1], server(pods...), 2, 0},
		{"cache holds a deleted one", pods, server(pods[:2]...), 0, 1},
		{"terminating on the server counts as gone", pods, server(pods[0], pods[1], gone), 0, 1},
		{"another controller's pod is ignored", pods, server(append(pods, foreign)...), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			missing, extra := podCacheDiff(ps.UID, tc.cached, tc.server)
			g.Expect(missing).To(Equal(tc.missing), "missing")
			g.Expect(extra).To(Equal(tc.extra), "extra")
		})
	}
}

func TestPodCacheRecheckBacksOff(t *testing.T) {
	g := NewWithT(t)
	c := newPodCacheChecks()
	var waits []time.Duration
	for range 7 {
		waits = append(waits, c.foundBehind("ns/web/uid"))
	}
	g.Expect(waits).To(Equal([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second, 16 * time.Second}))
	c.done("ns/web/uid", 0)
	g.Expect(c.foundBehind("ns/web/uid")).To(Equal(time.Second), "a check that found the cache current starts over")
}
