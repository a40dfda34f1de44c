package podcache

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
		{&corev1.Pod{}, (*WatchGaps).PodFailures, (*WatchGaps).PodSetFailures},
		{&appv1alpha1.PodSet{}, (*WatchGaps).PodSetFailures, (*WatchGaps).PodFailures},
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
