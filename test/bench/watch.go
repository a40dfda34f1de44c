package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podWatcher follows every pod of one namespace from before the first owner
// is created, and records when counts first reach the phase's targets. All
// times are offsets from start.
type podWatcher struct {
	eventCount
	mu    sync.Mutex
	start time.Time
	pods  map[types.UID]podState
	// created counts distinct pod UIDs ever seen: pods created, including
	// any created in excess and deleted again before we looked twice.
	created int
	// live counts pods that exist, are not being deleted and have not
	// terminated: what a controller counts towards its replicas.
	live, maxLive int
	// readyLive counts live pods with the Ready condition; boundLive live
	// pods bound to a node (by the scheduler; Ready comes after, from kwok).
	readyLive, boundLive int

	// The targets being waited for and when each was first reached.
	wantCreated, wantReady, wantLiveAtMost      int
	allCreated, allBound, allReady, liveReached time.Duration
	changed                                     chan struct{}

	// firstPod and lastPod are when the first and the last pod of each
	// controller (by its UID) were first seen: with the owner watcher's
	// first sight of the owner, the per-owner trace of ownerLatencies.
	firstPod, lastPod map[types.UID]time.Time
	// lastReady is when the last pod of each controller to turn Ready was
	// first seen Ready: with the owner's first sight, how long a user who
	// applies an owner waits for all of its pods (`kubectl wait`).
	lastReady map[types.UID]time.Time

	// notReadyYet holds when each pod not yet Ready was first seen, and
	// startup each pod's time from then to its first sight Ready: pod
	// startup latency as a watch observes it (the figure of the Kubernetes
	// pod startup SLO, without image pulls, which kwok does not make).
	notReadyYet map[types.UID]time.Time
	startup     []time.Duration
}

type podState struct{ live, bound, ready bool }

func isLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func newPodWatcher() *podWatcher {
	return &podWatcher{pods: map[types.UID]podState{}, changed: make(chan struct{}, 1), wantLiveAtMost: -1,
		firstPod: map[types.UID]time.Time{}, lastPod: map[types.UID]time.Time{}, lastReady: map[types.UID]time.Time{}, notReadyYet: map[types.UID]time.Time{}}
}

// watchPods starts an informer on the namespace's pods and returns once it
// has synced. The informer, not a bare watch, so that a watch the API server
// closes under load is resumed without losing events.
func watchPods(ctx context.Context, cs kubernetes.Interface, ns string) (*podWatcher, error) {
	w := newPodWatcher()
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			w.observe(obj, true)
		},
	})
	if err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("pod informer of %s did not sync", ns)
	}
	return w, nil
}

func (w *podWatcher) observe(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.saw()
	w.mu.Lock()
	defer w.mu.Unlock()
	old, seen := w.pods[p.UID]
	if !seen {
		w.created++
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && !deleted {
			if _, ok := w.firstPod[ref.UID]; !ok {
				w.firstPod[ref.UID] = now
			}
			w.lastPod[ref.UID] = now
		}
	}
	cur := podState{live: !deleted && isLive(p)}
	cur.bound = cur.live && p.Spec.NodeName != ""
	cur.ready = cur.live && isReady(p)
	if !seen && !deleted {
		w.notReadyYet[p.UID] = now
	}
	if since, ok := w.notReadyYet[p.UID]; ok && (cur.ready || deleted) {
		if cur.ready {
			w.startup = append(w.startup, now.Sub(since))
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
				w.lastReady[ref.UID] = now
			}
		}
		delete(w.notReadyYet, p.UID)
	}
	if deleted {
		delete(w.pods, p.UID)
	} else {
		w.pods[p.UID] = cur
	}
	w.live += b2i(cur.live) - b2i(old.live)
	w.boundLive += b2i(cur.bound) - b2i(old.bound)
	w.readyLive += b2i(cur.ready) - b2i(old.ready)
	w.maxLive = max(w.maxLive, w.live)
	w.check(now)
}

// check records the targets reached; the caller holds mu.
func (w *podWatcher) check(now time.Time) {
	if w.start.IsZero() {
		return
	}
	at := now.Sub(w.start)
	if w.wantCreated > 0 && w.allCreated == 0 && w.created >= w.wantCreated {
		w.allCreated = at
	}
	// As many bound as must be Ready.
	if w.wantReady > 0 && w.allBound == 0 && w.boundLive >= w.wantReady {
		w.allBound = at
	}
	if w.wantReady > 0 && w.allReady == 0 && w.readyLive >= w.wantReady {
		w.allReady = at
	}
	if w.wantLiveAtMost >= 0 && w.liveReached == 0 && w.live <= w.wantLiveAtMost {
		w.liveReached = at
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// expectScaleUp sets the clock's zero and the scale-up targets.
func (w *podWatcher) expectScaleUp(start time.Time, pods int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start, w.wantCreated, w.wantReady = start, pods, pods
	w.check(time.Now())
}

// expectScaleDown resets the clock and waits for at most pods live.
func (w *podWatcher) expectScaleDown(start time.Time, pods int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start, w.wantCreated, w.wantReady, w.wantLiveAtMost, w.liveReached = start, 0, 0, pods, 0
	w.check(time.Now())
}

// startupQuantiles returns the median and 99th percentile of the pods'
// startup latencies so far.
func (w *podWatcher) startupQuantiles() (p50, p99 time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return quantile(w.startup, 0.5), quantile(w.startup, 0.99)
}

type podCounts struct {
	created, live, maxLive, readyLive           int
	allCreated, allBound, allReady, liveReached time.Duration
}

func (w *podWatcher) counts() podCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return podCounts{w.created, w.live, w.maxLive, w.readyLive, w.allCreated, w.allBound, w.allReady, w.liveReached}
}

// ownerWatcher follows the PodSets or ReplicaSets of one namespace and
// records when every one of them first reports, for its current spec, the
// wanted number of ready replicas.
type ownerWatcher struct {
	eventCount
	mu     sync.Mutex
	start  time.Time
	owners map[string]bool // name -> status caught up with the spec
	// seen is when each owner (by UID) was first seen.
	seen map[types.UID]time.Time
	// want is how many owners must be caught up with want replicas each.
	wantOwners   int
	wantReplicas int64
	caughtUp     time.Duration
}

var (
	podSetGVR     = schema.GroupVersionResource{Group: "app.example.com", Version: "v1alpha1", Resource: "podsets"}
	replicaSetGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

// watchOwners starts an informer on the owners of the namespace (unstructured:
// PodSets and ReplicaSets report the same fields under the same names).
func watchOwners(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, ns string) (*ownerWatcher, error) {
	w := &ownerWatcher{owners: map[string]bool{}, seen: map[types.UID]time.Time{}}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, nil)
	inf := f.ForResource(gvr).Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj) },
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	})
	if err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("%s informer of %s did not sync", gvr.Resource, ns)
	}
	return w, nil
}

// caughtUp is the benchmark's definition of "the status reports it": the
// controller has seen the current spec (observedGeneration) and counts
// exactly spec.replicas pods, all of them ready.
func caughtUp(u *unstructured.Unstructured, wantReplicas int64) bool {
	spec, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	replicas, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	return spec == wantReplicas && observed >= u.GetGeneration() && replicas == wantReplicas && ready == wantReplicas
}

func (w *ownerWatcher) observe(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := time.Now()
	w.saw()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owners[u.GetName()] = caughtUp(u, w.wantReplicas)
	if _, ok := w.seen[u.GetUID()]; !ok {
		w.seen[u.GetUID()] = now
	}
	w.check(now)
}

func (w *ownerWatcher) check(now time.Time) {
	if w.start.IsZero() || w.caughtUp != 0 || len(w.owners) < w.wantOwners {
		return
	}
	n := 0
	for _, ok := range w.owners {
		n += b2i(ok)
	}
	if n >= w.wantOwners {
		w.caughtUp = now.Sub(w.start)
	}
}

// expect sets the clock's zero and the target. Owners already recorded are
// marked not caught up: their next event re-evaluates them, and a spec
// change always brings one (the generation changes).
func (w *ownerWatcher) expect(start time.Time, owners int, replicas int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start, w.wantOwners, w.wantReplicas, w.caughtUp = start, owners, replicas, 0
	for name := range w.owners {
		w.owners[name] = false
	}
}

func (w *ownerWatcher) caughtUpAfter() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.caughtUp
}

// ownerLatencies traces where a scale-up's time goes per owner, as a
// watcher sees it (the same watch delay for both kinds): from the owner's
// first sight to its first pod's (the controller's informer event, queue
// wait, reconcile and first create), and from its first pod to its last
// (the slow-start batches, each waiting for the previous one's watch
// events), and from the owner's first sight to its last pod's first sight
// Ready (what a user who applies one owner and waits for it feels).
// Medians and 90th percentiles over the owners.
type ownerLatencies struct {
	ToFirstMedian, ToFirstP90, FirstToLastMedian, FirstToLastP90 time.Duration
	ToReadyMedian, ToReadyP90                                    time.Duration
}

func traceOwners(ow *ownerWatcher, pw *podWatcher) ownerLatencies {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var toFirst, firstToLast, toReady []time.Duration
	for uid, seen := range ow.seen {
		first, ok := pw.firstPod[uid]
		if !ok {
			continue
		}
		toFirst = append(toFirst, first.Sub(seen))
		firstToLast = append(firstToLast, pw.lastPod[uid].Sub(first))
		if ready, ok := pw.lastReady[uid]; ok {
			toReady = append(toReady, ready.Sub(seen))
		}
	}
	return ownerLatencies{
		ToFirstMedian: quantile(toFirst, 0.5), ToFirstP90: quantile(toFirst, 0.9),
		FirstToLastMedian: quantile(firstToLast, 0.5), FirstToLastP90: quantile(firstToLast, 0.9),
		ToReadyMedian: quantile(toReady, 0.5), ToReadyP90: quantile(toReady, 0.9),
	}
}

// quantile is the q-quantile of ds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
