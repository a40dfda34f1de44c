package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// scriptedLW answers each watch with the next of watches (an error or a fake
// watch; errRefused once they are used up), and each list with listErr.
type scriptedLW struct {
	listErr error
	watches []any
}

func (s *scriptedLW) lw() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			if s.listErr != nil {
				return nil, s.listErr
			}
			return &corev1.PodList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if len(s.watches) == 0 {
				return nil, errRefused
			}
			next := s.watches[0]
			s.watches = s.watches[1:]
			if err, ok := next.(error); ok {
				return nil, err
			}
			return next.(watch.Interface), nil
		},
	}
}

var errRefused = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

func TestPodWatchGaps(t *testing.T) {
	ctx := context.Background()
	resumed := metav1.ListOptions{ResourceVersion: "42"}
	streamed := metav1.ListOptions{SendInitialEvents: ptr.To(true)}
	endOfInitialEvents := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}

	t.Run("a refused watch opens a gap, a watch resumed closes it", func(t *testing.T) {
		g := NewWithT(t)
		gaps := &watchGaps{}
		s := &scriptedLW{watches: []any{errRefused, errRefused, watch.NewFake()}}
		lw := gaps.wrap(s.lw())
		g.Expect(gaps.open()).To(BeZero())
		_, err := lw.WatchWithContext(ctx, resumed)
		g.Expect(err).To(HaveOccurred())
		g.Expect(gaps.open()).To(Equal(uint64(1)))
		_, _ = lw.WatchWithContext(ctx, resumed)
		g.Expect(gaps.open()).To(Equal(uint64(2)), "each failure counts: a PodSet checked during the gap checks again")
		w, err := lw.WatchWithContext(ctx, resumed)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gaps.open()).To(BeZero())
		w.Stop()
	})

	t.Run("an error event opens a gap that lasts until the relist", func(t *testing.T) {
		g := NewWithT(t)
		gaps := &watchGaps{}
		fake := watch.NewFake()
		s := &scriptedLW{watches: []any{fake, watch.NewFake()}}
		lw := gaps.wrap(s.lw())
		w, err := lw.WatchWithContext(ctx, resumed)
		g.Expect(err).NotTo(HaveOccurred())
		go fake.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		g.Expect((<-w.ResultChan()).Type).To(Equal(watch.Error))
		g.Expect(gaps.open()).To(Equal(uint64(1)))
		w.Stop()

		s.listErr = errRefused
		_, err = lw.ListWithContext(ctx, metav1.ListOptions{})
		g.Expect(err).To(HaveOccurred())
		g.Expect(gaps.open()).To(Equal(uint64(2)))
		s.listErr = nil
		_, err = lw.ListWithContext(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gaps.open()).To(Equal(uint64(2)), "a listed relist is in the cache only once the reflector watches again")
		w, err = lw.WatchWithContext(ctx, resumed)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gaps.open()).To(BeZero())
		w.Stop()
	})

	t.Run("a streamed relist closes the gap at the end of its initial events", func(t *testing.T) {
		g := NewWithT(t)
		gaps := &watchGaps{}
		fake := watch.NewFake()
		s := &scriptedLW{watches: []any{errRefused, fake}}
		lw := gaps.wrap(s.lw())
		_, _ = lw.WatchWithContext(ctx, streamed)
		w, err := lw.WatchWithContext(ctx, streamed)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gaps.open()).To(Equal(uint64(1)), "the initial events are not in the cache yet")
		go func() {
			fake.Add(&corev1.Pod{})
			fake.Action(watch.Bookmark, endOfInitialEvents)
		}()
		g.Expect((<-w.ResultChan()).Type).To(Equal(watch.Added))
		g.Expect(gaps.open()).To(Equal(uint64(1)))
		g.Expect((<-w.ResultChan()).Type).To(Equal(watch.Bookmark))
		g.Eventually(gaps.open).Should(BeZero())
		w.Stop()
	})

	t.Run("neither a 429 nor a cancelled watch is a gap", func(t *testing.T) {
		g := NewWithT(t)
		gaps := &watchGaps{}
		s := &scriptedLW{watches: []any{apierrors.NewTooManyRequests("slow down", 1), context.Canceled}}
		lw := gaps.wrap(s.lw())
		_, _ = lw.WatchWithContext(ctx, resumed)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, _ = lw.WatchWithContext(cancelled, resumed)
		g.Expect(gaps.open()).To(BeZero())
	})

	t.Run("one watch down is enough", func(t *testing.T) {
		g := NewWithT(t)
		gaps := &watchGaps{}
		a := gaps.wrap((&scriptedLW{watches: []any{errRefused}}).lw())
		b := gaps.wrap((&scriptedLW{watches: []any{errRefused, watch.NewFake()}}).lw())
		_, _ = a.WatchWithContext(ctx, resumed)
		_, _ = b.WatchWithContext(ctx, resumed)
		w, _ := b.WatchWithContext(ctx, resumed)
		g.Expect(gaps.open()).To(Equal(uint64(2)), "another namespace's pod watch is still down")
		w.Stop()
	})
}

// A watch the reflector stops while an event waits to be handed over ends
// its goroutine: the reflector no longer reads it.
func TestGapWatchStopsWithoutAReader(t *testing.T) {
	g := NewWithT(t)
	fake := watch.NewRaceFreeFake()
	lw := (&watchGaps{}).wrap((&scriptedLW{watches: []any{fake}}).lw())
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	fake.Add(&corev1.Pod{}) // never read
	w.Stop()
	g.Eventually(w.(*gapWatch).passed).Should(BeClosed(), "the goroutine waits forever for a reader")
}

// The pod and PodSet informers the manager builds through CacheOptions
// report their watches' failures, each kind apart.
func TestInformersReportTheirWatchGaps(t *testing.T) {
	for _, tc := range []struct {
		obj      runtime.Object
		failures func(*WatchGaps) uint64
		other    func(*WatchGaps) uint64
	}{
		{&corev1.Pod{}, (*WatchGaps).podFailures, (*WatchGaps).podSetFailures},
		{&appv1alpha1.PodSet{}, (*WatchGaps).podSetFailures, (*WatchGaps).podFailures},
	} {
		t.Run(fmt.Sprintf("%T", tc.obj), func(t *testing.T) {
			g := NewWithT(t)
			gaps := NewWatchGaps()
			opts := CacheOptions(nil, NewPodIndex(), nil, gaps)
			informer := opts.NewInformer((&scriptedLW{listErr: errRefused}).lw(), tc.obj, 0, toolscache.Indexers{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go informer.RunWithContext(ctx)
			g.Eventually(func() uint64 { return tc.failures(gaps) }, 5*time.Second, 10*time.Millisecond).ShouldNot(BeZero())
			g.Expect(tc.other(gaps)).To(BeZero())
		})
	}
}

// brokenPodWatch makes r's pod index see its pod watch fail, and returns a
// function that makes it deliver again.
func brokenPodWatch(r *PodSetReconciler) (recovered func()) {
	if r.WatchGaps == nil {
		r.WatchGaps = NewWatchGaps()
	}
	lw := r.WatchGaps.pods.wrap(&toolscache.ListWatch{})
	r.WatchGaps.pods.failed(lw)
	return func() { r.WatchGaps.pods.delivering(lw) }
}

func TestPodCacheChecksKeepTheHighestFailureCountChecked(t *testing.T) {
	g := NewWithT(t)
	var c podCacheCheck
	g.Expect(c.upToDate(cacheDoubts{})).To(BeTrue())
	g.Expect(c.upToDate(cacheDoubts{watchFailures: 1})).To(BeFalse())
	c.done(cacheDoubts{watchFailures: 1})
	g.Expect(c.upToDate(cacheDoubts{watchFailures: 1})).To(BeTrue())
	// The watches deliver again: the failures read 0, and a check then
	// must not forget the failure it was made after.
	c.done(cacheDoubts{pauses: 1})
	g.Expect(c.upToDate(cacheDoubts{pauses: 1, watchFailures: 1})).To(BeTrue())
	g.Expect(c.upToDate(cacheDoubts{pauses: 1, watchFailures: 2})).To(BeFalse())
	g.Expect(c.upToDate(cacheDoubts{pauses: 2, watchFailures: 1})).To(BeFalse())
}

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
	g.Expect(podCacheOf(r, ps).upToDate(r.cacheDoubts())).To(BeTrue())
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
	g.Expect(podCacheOf(r, ps).upToDate(r.cacheDoubts())).To(BeFalse())
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podCacheOf(r, ps).upToDate(r.cacheDoubts())).To(BeTrue())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}
