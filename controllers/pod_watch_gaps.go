package controllers

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// A pod watch that fails (the API server restarted or refuses it, a 410 Gone
// that forces a relist) delivers nothing until client-go's reflector has
// watched again, after a backoff of up to 30 s doubled by jitter. Meanwhile
// the pod cache misses whatever happens: pods deleted by others (the PodSet
// would report pods that are gone and replace nothing), and, on a replica
// that takes the lease in that gap, the pods the previous leader created (it
// would create them again: an overshoot kube-controller-manager is exposed
// to). Expectations cover only the PodSet's own writes.
//
// So the pod informers' lister-watchers are wrapped to see each failure, and
// while any pod watch is down each PodSet reconciled checks its cached pods
// against the API server once per failure before it acts
// (pod_cache_check.go). The gap ends when a watch is open again: at once
// for a watch resumed from a resourceVersion (the API server replays what
// was missed from its watch cache), at the end of the initial events for a
// relist streamed as a watch, after the list for a classic relist (the
// reflector watches only once the list is in the cache).
//
// Not counted as failures: a watch the API server ends normally (its timeout,
// or a consumer it found too slow) is resumed from its resourceVersion and
// misses nothing; nor a 429, the API server's way to ask for fewer requests,
// which a list per PodSet would not help. Awaited events that are late for
// those reasons are what lagging_podsets.go looks for.

// podWatchGaps counts the pod watches' failures and knows which are down.
type podWatchGaps struct {
	mu       sync.Mutex
	failures uint64
	down     map[*gapWatchingLW]bool
}

// failed records a failure of lw's list or watch.
func (g *podWatchGaps) failed(lw *gapWatchingLW) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down == nil {
		g.down = map[*gapWatchingLW]bool{}
	}
	g.failures++
	g.down[lw] = true
}

// delivering records that lw's watch is open and its cache current again.
func (g *podWatchGaps) delivering(lw *gapWatchingLW) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.down, lw)
}

// open returns the number of failures so far while a pod watch is down, and
// 0 when every one delivers. The count only grows, so a PodSet that
// remembers the count it was checked at knows whether a failure came since.
func (g *podWatchGaps) open() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.down) == 0 {
		return 0
	}
	return g.failures
}

// wrap returns lw watched for gaps.
func (g *podWatchGaps) wrap(lw toolscache.ListerWatcher) *gapWatchingLW {
	return &gapWatchingLW{inner: toolscache.ToListerWatcherWithContext(lw), unwrapped: lw, gaps: g}
}

// gapWatchingLW is a pod informer's lister-watcher that reports its failures
// and recoveries to gaps.
type gapWatchingLW struct {
	inner     toolscache.ListerWatcherWithContext
	unwrapped toolscache.ListerWatcher
	gaps      *podWatchGaps
}

var (
	_ toolscache.ListerWatcher            = &gapWatchingLW{}
	_ toolscache.ListerWatcherWithContext = &gapWatchingLW{}
)

// fails reports whether err means that the pod cache stops being updated.
func fails(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !apierrors.IsTooManyRequests(err)
}

func (lw *gapWatchingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := lw.inner.ListWithContext(ctx, opts)
	if fails(ctx, err) {
		lw.gaps.failed(lw)
	}
	return list, err
}

func (lw *gapWatchingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.inner.WatchWithContext(ctx, opts)
	if err != nil {
		if fails(ctx, err) {
			lw.gaps.failed(lw)
		}
		return nil, err
	}
	streamsList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if !streamsList {
		lw.gaps.delivering(lw)
	}
	return newGapWatch(w, lw, streamsList), nil
}

// List and Watch are the ListerWatcher's older methods; the reflector calls
// the ones with a context.
func (lw *gapWatchingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *gapWatchingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported keeps what the wrapped lister-watcher says
// about streamed lists (client-go's util/watchlist).
func (lw *gapWatchingLW) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(lw.unwrapped)
}

// gapWatch passes a watch's events on, and reports an error event as a
// failure and the end of a streamed list as the watch delivering.
type gapWatch struct {
	inner       watch.Interface
	lw          *gapWatchingLW
	streamsList bool
	result      chan watch.Event
	stopped     chan struct{}
	stopOnce    sync.Once
	// passed is closed when pass returns.
	passed chan struct{}
}

func newGapWatch(inner watch.Interface, lw *gapWatchingLW, streamsList bool) *gapWatch {
	w := &gapWatch{inner: inner, lw: lw, streamsList: streamsList, result: make(chan watch.Event), stopped: make(chan struct{}), passed: make(chan struct{})}
	go w.pass()
	return w
}

func (w *gapWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *gapWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	w.inner.Stop()
}

// pass hands each event on. A failure is reported before the reflector
// sees it, the end of a streamed list after it has it, so that the gap
// errs on the side of a check.
func (w *gapWatch) pass() {
	defer close(w.passed)
	defer close(w.result)
	for ev := range w.inner.ResultChan() {
		if ev.Type == watch.Error {
			w.lw.gaps.failed(w.lw)
		}
		select {
		case w.result <- ev:
		case <-w.stopped:
			return
		}
		if w.streamsList && ev.Type == watch.Bookmark && endsInitialEvents(ev.Object) {
			w.lw.gaps.delivering(w.lw)
		}
	}
}

func endsInitialEvents(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
