package controllers

import (
	"context"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
)

// PodWatchDoubtWindow is how long after a pod watch broke the pod cache is
// in doubt: a PodSet reconciled within it compares its cached pods with the
// API server's once (pod_cache_check.go) before it acts.
//
// A broken watch (an API server restart, 410 Gone) relists on client-go's
// reflector backoff, up to 30 s doubled by jitter, and until then the cache
// misses whatever happened: pods deleted by others (the PodSet reports pods
// that are gone and replaces nothing), and, on a replica that takes the
// lease in that gap, pods the previous leader created (it would create them
// again: an overshoot kube-controller-manager is exposed to as well). The
// reflector calls the watch error handler at each failed attempt, so a
// reflector still failing keeps the doubt fresh; three minutes after its
// last failure it has relisted, and its cache is what its events say.
// Bounding the doubt keeps a replica that saw a break once from listing
// every PodSet's pods at a takeover hours later.
const PodWatchDoubtWindow = 3 * time.Minute

// podWatchBreaks counts the errors that ended a pod informer's list and
// watch, and remembers when the last one came.
type podWatchBreaks struct {
	mu    sync.Mutex
	count uint64
	last  time.Time
	now   func() time.Time
}

// broke is the pod informers' watch error handler: it records the break and
// logs it as client-go's default handler does.
func (b *podWatchBreaks) broke(ctx context.Context, r *toolscache.Reflector, err error) {
	b.record()
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}

func (b *podWatchBreaks) record() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.count++
	b.last = b.clock()
}

// recent returns the number of breaks so far if the last one is within
// PodWatchDoubtWindow, and 0 otherwise. The count only grows, so a PodSet
// that remembers the count it was checked at knows whether a break came
// since.
func (b *podWatchBreaks) recent() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.count == 0 || b.clock().Sub(b.last) > PodWatchDoubtWindow {
		return 0
	}
	return b.count
}

func (b *podWatchBreaks) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}
