package podcache

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// A watch that fails (the API server restarted or refuses it, a 410 Gone
// that forces a relist) delivers nothing until client-go's reflector has
// watched again, after a backoff of up to 30 s doubled by jitter. Meanwhile
// the cache misses whatever happens:
//
//   - to pods: pods deleted by others (the PodSet would report pods that are
//     gone and replace nothing), and, on a replica that takes the lease in
//     that gap, the pods the previous leader created (it would create them
//     again: an overshoot kube-controller-manager is exposed to).
//     Expectations cover only the PodSet's own writes.
//   - to PodSets: a new spec (the PodSet would go on scaling to the replicas
//     it had, or rolling to the template it had), or its deletion.
//
// So the pod and PodSet informers' lister-watchers are wrapped to see each
// failure. While a pod watch is down, each PodSet reconciled checks its
// cached pods against the API server once per failure before it acts
// (pod_cache_check.go); while a PodSet watch is down, each reads itself from
// the API server once per failure (podset_cache_check.go). The gap ends when
// a watch is open again: at once for a watch resumed from a resourceVersion
// (the API server replays what was missed from its watch cache), at the end
// of the initial events for a relist streamed as a watch, after the list for
// a classic relist (the reflector watches only once the list is in the
// cache).
//
// Not counted as failures: a watch the API server ends normally (its timeout,
// or a consumer it found too slow) is resumed from its resourceVersion and
// misses nothing; nor a 429, the API server's way to ask for fewer requests,
// which a read per PodSet would not help. Awaited events that are late for
// those reasons are what pod_cache_check.go looks for.

// WatchGaps knows whether the pod and PodSet informers' watches deliver.
// CacheOptions wires it to the informers; a nil WatchGaps sees no gap.
type WatchGaps struct {
	pods    watchGaps
	podSets watchGaps
}

// NewWatchGaps returns a WatchGaps that has seen no failure.
func NewWatchGaps() *WatchGaps {
	return &WatchGaps{pods: watchGaps{kind: "pod"}, podSets: watchGaps{kind: "PodSet"}}
}

var gapLog = logf.Log.WithName("watch-gaps")

// Wrap returns lw watched for gaps when obj is a pod or a PodSet, lw itself
// otherwise.
func (g *WatchGaps) Wrap(obj runtime.Object, lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	if g == nil {
		return lw
	}
	switch obj.(type) {
	case *corev1.Pod:
		return g.pods.wrap(lw)
	case *appv1alpha1.PodSet:
		return g.podSets.wrap(lw)
	}
	return lw
}

// PodFailures and PodSetFailures count the failures of each kind's
// watches while one of them is down, and are 0 once every one delivers
// again (watchGaps.open).
func (g *WatchGaps) PodFailures() uint64 {
	if g == nil {
		return 0
	}
	return g.pods.open()
}

func (g *WatchGaps) PodSetFailures() uint64 {
	if g == nil {
		return 0
	}
	return g.podSets.open()
}

// watchGaps counts the failures of one kind's watches (one per namespace
// when the cache watches a list of namespaces) and knows which are down.
type watchGaps struct {
	kind     string
	mu       sync.Mutex
	failures uint64
	down     map[*gapWatchingLW]bool
}

// failed records a failure of lw's list or watch.
func (g *watchGaps) failed(lw *gapWatchingLW) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down == nil {
		g.down = map[*gapWatchingLW]bool{}
	}
	g.failures++
	if len(g.down) == 0 {
		gapLog.Info("a watch is down: each PodSet reconciled checks its cache against the API server before it acts", "kind", g.kind)
	}
	g.down[lw] = true
}

// delivering records that lw's watch is open and its cache current again.
func (g *watchGaps) delivering(lw *gapWatchingLW) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down[lw] {
		return
	}
	delete(g.down, lw)
	if len(g.down) == 0 {
		gapLog.Info("the watches deliver again", "kind", g.kind, "failures", g.failures)
	}
}

// open returns the number of failures so far while a watch is down, and
// 0 when every one delivers. The count only grows, so a PodSet that
// remembers the count it was checked at knows whether a failure came since.
func (g *watchGaps) open() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.down) == 0 {
		return 0
	}
	return g.failures
}

// wrap returns lw watched for gaps.
func (g *watchGaps) wrap(lw toolscache.ListerWatcher) *gapWatchingLW {
	return &gapWatchingLW{inner: toolscache.ToListerWatcherWithContext(lw), unwrapped: lw, gaps: g}
}

// gapWatchingLW is an informer's lister-watcher that reports its failures
// and recoveries to gaps.
type gapWatchingLW struct {
	inner     toolscache.ListerWatcherWithContext
	unwrapped toolscache.ListerWatcher
	gaps      *watchGaps
}

var (
	_ toolscache.ListerWatcher            = &gapWatchingLW{}
	_ toolscache.ListerWatcherWithContext = &gapWatchingLW{}
)

// fails reports whether err means that the cache stops being updated.
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
