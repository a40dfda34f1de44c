//go:build e2e

package e2e

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
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
}

// watchPods starts watching the pods of PodSet name in ns until the test
// ends, and returns once the initial list has been observed.
func watchPods(t *testing.T, ns, name string) *podWatch {
	w := &podWatch{live: map[types.UID]bool{}, ready: map[types.UID]bool{}, seen: map[types.UID]int{}}
	factory := informers.NewSharedInformerFactoryWithOptions(env.clientset, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = podSetLabel + "=" + name }))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false) },
		DeleteFunc: func(obj any) { w.observe(obj, true) },
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	Expect(cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)).To(BeTrue())
	return w
}

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
	if _, ok := w.seen[pod.UID]; !ok {
		w.seen[pod.UID] = w.phase
	}
	if deleted {
		delete(w.live, pod.UID)
		delete(w.ready, pod.UID)
	} else {
		w.live[pod.UID] = isLive(pod)
		w.ready[pod.UID] = isLive(pod) && isRunningAndReady(pod)
	}
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
