//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// podWatch observes every change to a PodSet's pods through a watch, so it
// sees states that polling would miss: a pod created and deleted again
// between two polls still counts.
type podWatch struct {
	mu sync.Mutex
	// live is the liveness of each pod currently known, ready its
	// readiness (Running and Ready).
	live, ready map[types.UID]bool
	// seen holds every pod UID ever observed, with the phase it first
	// appeared in.
	seen map[types.UID]int
	// phase counts calls to reset; maxLive is the largest number of live
	// pods observed at once since the last reset.
	phase   int
	maxLive int
	// minReady is the fewest live and ready pods observed at once since the
	// last reset.
	minReady int
	// synced is closed once the first list has been observed.
	synced chan struct{}
	// running is the revision hash of each pod that has not stopped
	// (live or terminating), and twoRevisions each moment at which pods
	// of two revisions ran at once.
	running      map[types.UID]string
	twoRevisions []string
}

// watchPods starts watching the pods of PodSet name in ns until the test
// ends, and returns once the initial list has been observed.
//
// It runs a reflector into its own store rather than an informer: when a
// watch breaks and the reflector relists, an informer hands its handlers the
// listed pods first and the deletions of the vanished ones after, so for a
// moment an observer counts both. The store takes a relist as one step.
func watchPods(t *testing.T, ns, name string) *podWatch {
	w := &podWatch{live: map[types.UID]bool{}, ready: map[types.UID]bool{}, seen: map[types.UID]int{}, running: map[types.UID]string{}, synced: make(chan struct{})}
	lw := cache.NewFilteredListWatchFromClient(env.clientset.CoreV1().RESTClient(), "pods", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = podSetLabel + "=" + name })
	r := cache.NewReflector(lw, &corev1.Pod{}, &podWatchStore{w: w}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.RunWithContext(ctx)
	select {
	case <-w.synced:
	case <-time.After(time.Minute):
		t.Fatal("the pod watch did not list the pods within a minute")
	}
	return w
}

// podWatchStore is the reflector's store: it records what the reflector
// sees in the podWatch, and keeps nothing else.
type podWatchStore struct {
	w    *podWatch
	once sync.Once
}

func (s *podWatchStore) Add(obj any) error    { s.w.observe(obj, false); return nil }
func (s *podWatchStore) Update(obj any) error { s.w.observe(obj, false); return nil }
func (s *podWatchStore) Delete(obj any) error { s.w.observe(obj, true); return nil }

// Replace is a relist: the listed pods replace the known ones at once.
func (s *podWatchStore) Replace(list []any, _ string) error {
	w := s.w
	w.mu.Lock()
	w.live, w.ready, w.running = map[types.UID]bool{}, map[types.UID]bool{}, map[types.UID]string{}
	for _, obj := range list {
		if pod, ok := obj.(*corev1.Pod); ok {
			w.recordLocked(pod, false)
		}
	}
	w.updateExtremesLocked()
	w.checkRevisionsLocked("relist")
	w.mu.Unlock()
	s.once.Do(func() { close(w.synced) })
	return nil
}

func (s *podWatchStore) Resync() error                        { return nil }
func (s *podWatchStore) List() []any                          { return nil }
func (s *podWatchStore) ListKeys() []string                   { return nil }
func (s *podWatchStore) Get(any) (any, bool, error)           { return nil, false, nil }
func (s *podWatchStore) GetByKey(string) (any, bool, error)   { return nil, false, nil }
func (s *podWatchStore) Bookmark(string)                      {}
func (s *podWatchStore) LastStoreSyncResourceVersion() string { return "" }

func (w *podWatch) observe(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recordLocked(pod, deleted)
	w.updateExtremesLocked()
	w.checkRevisionsLocked(pod.Name)
}

// checkRevisionsLocked records the moment, after a change to the pod named
// what, if pods of two revisions run at once.
func (w *podWatch) checkRevisionsLocked(what string) {
	revs := map[string]bool{}
	for _, rev := range w.running {
		revs[rev] = true
	}
	if len(revs) > 1 {
		w.twoRevisions = append(w.twoRevisions, fmt.Sprintf("after %s: pods of revisions %v", what, slices.Sorted(maps.Keys(revs))))
	}
}

// revisionsAtOnce is every moment at which pods of two revisions ran at
// once (live or terminating), since the watch began.
func (w *podWatch) revisionsAtOnce() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.twoRevisions)
}

func (w *podWatch) recordLocked(pod *corev1.Pod, deleted bool) {
	if _, ok := w.seen[pod.UID]; !ok {
		w.seen[pod.UID] = w.phase
	}
	if deleted || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		delete(w.running, pod.UID)
	} else {
		w.running[pod.UID] = pod.Labels[revisionLabel]
	}
	if deleted {
		delete(w.live, pod.UID)
		delete(w.ready, pod.UID)
	} else {
		w.live[pod.UID] = isLive(pod)
		w.ready[pod.UID] = isLive(pod) && isRunningAndReady(pod)
	}
}

func (w *podWatch) updateExtremesLocked() {
	if n := w.liveLocked(); n > w.maxLive {
		w.maxLive = n
	}
	if n := w.readyLocked(); n < w.minReady {
		w.minReady = n
	}
}

func (w *podWatch) readyLocked() int {
	n := 0
	for _, r := range w.ready {
		if r {
			n++
		}
	}
	return n
}

// fewestReady is the fewest live, Running and Ready pods seen at once in
// this phase.
func (w *podWatch) fewestReady() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minReady
}

func (w *podWatch) liveLocked() int {
	n := 0
	for _, l := range w.live {
		if l {
			n++
		}
	}
	return n
}

// reset starts a new phase of the scenario: maxLive restarts from the
// current number of live pods and created() counts from zero.
func (w *podWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase++
	w.maxLive = w.liveLocked()
	w.minReady = w.readyLocked()
}

// stats returns the largest number of live pods seen at once in this phase
// and the number of distinct pods first seen (created) in this phase.
func (w *podWatch) stats() (maxLive, created int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, phase := range w.seen {
		if phase == w.phase {
			created++
		}
	}
	return w.maxLive, created
}
