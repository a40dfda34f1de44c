package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// brokenPodWatch makes r's pod index record a watch break at unitNow, and
// returns a function that moves its clock on.
func brokenPodWatch(r *PodSetReconciler) (advance func(time.Duration)) {
	clock := unitNow
	r.Pods.watchBreaks.now = func() time.Time { return clock }
	r.Pods.watchBreaks.record()
	return func(d time.Duration) { clock = clock.Add(d) }
}

func TestPodWatchBreaksAreInDoubtForAWindow(t *testing.T) {
	g := NewWithT(t)
	clock := unitNow
	b := &podWatchBreaks{now: func() time.Time { return clock }}
	g.Expect(b.recent()).To(BeZero(), "no break, no doubt")

	b.record()
	g.Expect(b.recent()).To(Equal(uint64(1)))
	clock = clock.Add(PodWatchDoubtWindow)
	g.Expect(b.recent()).To(Equal(uint64(1)), "a reflector still failing may not have relisted yet")
	clock = clock.Add(time.Second)
	g.Expect(b.recent()).To(BeZero(), "long after its last failure the reflector has relisted")

	b.record()
	g.Expect(b.recent()).To(Equal(uint64(2)), "a later break is counted after the earlier ones")
}

func TestPodCacheChecksKeepTheHighestBreakCountChecked(t *testing.T) {
	g := NewWithT(t)
	c := newPodCacheChecks()
	key := "ns/web/uid"
	g.Expect(c.upToDate(key, cacheDoubts{})).To(BeTrue())
	g.Expect(c.upToDate(key, cacheDoubts{watchBreaks: 1})).To(BeFalse())
	c.done(key, cacheDoubts{watchBreaks: 1})
	g.Expect(c.upToDate(key, cacheDoubts{watchBreaks: 1})).To(BeTrue())
	// The window passed: the doubt reads 0, and a check then must not
	// forget the break it was made after.
	c.done(key, cacheDoubts{pauses: 1})
	g.Expect(c.upToDate(key, cacheDoubts{pauses: 1, watchBreaks: 1})).To(BeTrue())
	g.Expect(c.upToDate(key, cacheDoubts{pauses: 1, watchBreaks: 2})).To(BeFalse())
	g.Expect(c.upToDate(key, cacheDoubts{pauses: 2, watchBreaks: 1})).To(BeFalse())
}

// A replica whose pod watch broke (an API server restart) and that took the
// lease before its relist has a cache without the pods the previous leader
// created in the meantime. Acting on it would create them again.
func TestReconcileAfterAPodWatchBreakDoesNotActOnACacheBehind(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	brokenPodWatch(r)

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods were created from a cache the broken watch left behind")
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))
	g.Expect(statusOf(g, c, ps).Replicas).To(Equal(int32(3)), "the status reports the cache, not the API server")
}

// Pods deleted by someone else while the watch was down: the cache still
// holds them. The PodSet replaces them at once instead of at the relist.
func TestReconcileAfterAPodWatchBreakReplacesPodsItsCacheStillHolds(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods[:1])...)
	r.statusPacer = newStatusPacer(0)
	brokenPodWatch(r)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "the pods deleted while the watch was down were not replaced")
	g.Expect(statusOf(g, c, ps).PodNames).NotTo(ContainElement(pods[1].Name), "a pod deleted while the watch was down is reported")
}

// Each break is checked once per PodSet, and only within the doubt window:
// a replica that saw a break long ago does not list every PodSet's pods at
// a takeover.
func TestReconcileChecksThePodCacheOncePerRecentWatchBreak(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	advance := brokenPodWatch(r)
	key := expectationsKey(ps.Namespace, ps.Name, ps.UID)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.cacheChecks.upToDate(key, r.cacheDoubts())).To(BeTrue())
	reader := r.APIReader
	r.APIReader = nil // any uncached read would now panic
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())

	// Long after the break, a PodSet never checked (a standby's) does
	// not check either.
	advance(PodWatchDoubtWindow + time.Second)
	r.cacheChecks = newPodCacheChecks()
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())

	// A new break is checked after, once.
	r.APIReader = reader
	r.Pods.watchBreaks.record()
	g.Expect(r.cacheChecks.upToDate(key, r.cacheDoubts())).To(BeFalse())
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.cacheChecks.upToDate(key, r.cacheDoubts())).To(BeTrue())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}

// The pod informers the manager builds through the index report their
// list-and-watch errors to it.
func TestPodInformersRecordTheirWatchBreaks(t *testing.T) {
	g := NewWithT(t)
	x := NewPodIndex()
	failing := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return nil, apierrors.NewServiceUnavailable("restarting")
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, apierrors.NewServiceUnavailable("restarting")
		},
	}
	informer := x.newInformer(failing, &corev1.Pod{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.RunWithContext(ctx)
	g.Eventually(x.watchBreaks.recent, 5*time.Second, 10*time.Millisecond).ShouldNot(BeZero())
}
