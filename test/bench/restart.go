package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// restartResult is one takeover at the end of the memory scenario
// (-rss-restart; see restartAtScale). Times are from the new operator's
// start (restart, after the old one stopped by SIGTERM and released its
// lease) or from the old operator's kill (failover: SIGKILL, so the standby
// waits for the lease to expire).
type restartResult struct {
	// Kind is "restart" or "failover".
	Kind        string `json:"kind"`
	PodsDeleted int    `json:"podsDeletedWhileDown"`
	// FirstPodCreatedS is when the new operator's first replacement pod
	// was seen: its first reconcile that changed a pod.
	FirstPodCreatedS float64 `json:"firstPodCreatedSeconds"`
	// WorkersS is when the new operator's PodSet workers started (its
	// log, read every 50 ms): it leads, and every pod and PodSet is listed
	// into its caches.
	WorkersS float64 `json:"workersStartedSeconds"`
	// CaughtUpS is when the last PodSet that lost a pod showed all its
	// replicas Ready again, in a status written after its replacement.
	// The other PodSets' statuses were current throughout.
	CaughtUpS float64 `json:"statusesCaughtUpSeconds"`
	// PeakRSSMiB is the new operator's peak (VmHWM) from its start to 10 s
	// after CaughtUpS: the re-list of every pod, against the settled RSS
	// before (rssResult.FinalRSSMiB).
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	CPUS       float64 `json:"operatorCPUSeconds"`
	Error      string  `json:"error,omitempty"`
}

// restartPodSets is how many PodSets lose a pod while the operator is down.
const restartPodSets = 10

// restartWatch follows the PodSets that lost a pod: when each one's
// replacement was first seen, and when a status written after it first
// showed every replica Ready.
type restartWatch struct {
	mu          sync.Mutex
	start       time.Time
	replacedAt  map[string]time.Time // PodSet name -> replacement first seen
	caughtUpAt  map[string]time.Time
	deletedUIDs map[string]bool
	replicas    int64
}

// setStart starts the clock: at the old leader's kill (failover) or the new
// operator's start (restart). Pods created before it are not replacements.
func (w *restartWatch) setStart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start = time.Now()
}

func (w *restartWatch) podAdded(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.start.IsZero() || w.deletedUIDs[string(p.UID)] || p.CreationTimestamp.Time.Before(w.start.Truncate(time.Second)) {
		return // a pod from before the restart
	}
	name := p.Labels[appv1alpha1.LabelPodSet]
	if _, seen := w.replacedAt[name]; !seen {
		w.replacedAt[name] = now
	}
}

func (w *restartWatch) podSetChanged(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	name := u.GetName()
	if _, replaced := w.replacedAt[name]; !replaced {
		return
	}
	if _, done := w.caughtUpAt[name]; !done && caughtUp(u, w.replicas) {
		w.caughtUpAt[name] = now
	}
}

// firstAndLast are the first replacement seen and the last PodSet caught
// up, from start; ok once every PodSet that lost a pod has caught up.
func (w *restartWatch) firstAndLast(want int) (first, last time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.replacedAt {
		if d := t.Sub(w.start); first == 0 || d < first {
			first = d
		}
	}
	for _, t := range w.caughtUpAt {
		last = max(last, t.Sub(w.start))
	}
	return first, last, len(w.caughtUpAt) >= want
}

// restartAtScale ends the memory scenario's settled operator old and has
// another take over: a new process started after old stopped (restart),
// or a standby of leader election already running when old is killed
// (failover). One pod of each of the first restartPodSets PodSets is
// deleted while none acts. It returns the figures (see restartResult) and
// the operator that took over, for the caller to stop. Operators it starts
// get args.
func (b *bench) restartAtScale(ctx context.Context, old *operator, ns string, failover bool, args []string) (restartResult, *operator) {
	res := restartResult{Kind: "restart"}
	o := b.opts
	w := &restartWatch{replacedAt: map[string]time.Time{}, caughtUpAt: map[string]time.Time{}, deletedUIDs: map[string]bool{}, replicas: int64(o.rssShape.replicas)}
	var next *operator
	err := func() error {
		n := min(restartPodSets, o.rssShape.owners)
		names := make([]string, n)
		for i := range names {
			names[i] = ownerName(i)
		}
		selector := fmt.Sprintf("%s in (%s)", appv1alpha1.LabelPodSet, strings.Join(names, ","))
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pods := informers.NewSharedInformerFactoryWithOptions(b.cs, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = selector })).Core().V1().Pods().Informer()
		podSets := dynamicinformer.NewFilteredDynamicSharedInformerFactory(b.dc, 0, ns, nil).ForResource(podSetGVR).Informer()
		for _, h := range []struct {
			inf cache.SharedIndexInformer
			fn  func(any)
		}{{pods, w.podAdded}, {podSets, w.podSetChanged}} {
			if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h.fn, UpdateFunc: func(_, obj any) { h.fn(obj) }}); err != nil {
				return err
			}
			go h.inf.Run(wctx.Done())
			if !cache.WaitForCacheSync(wctx.Done(), h.inf.HasSynced) {
				return fmt.Errorf("the restart's watch of %s did not sync", ns)
			}
		}
		if failover {
			res.Kind = "failover"
			standby, err := startServing(ctx, o.manager, b.opKubeconfig, b.logDir, "operator-rss-standby", args...)
			if err != nil {
				return err
			}
			next = standby
			if err := old.kill(); err != nil {
				return err
			}
			w.setStart()
		} else {
			old.stop()
		}
		// One pod of each of the first PodSets, gone while no operator
		// acts.
		victims := map[string]bool{}
		for _, obj := range pods.GetStore().List() {
			p := obj.(*corev1.Pod)
			if name := p.Labels[appv1alpha1.LabelPodSet]; !victims[name] {
				victims[name] = true
				w.mu.Lock()
				w.deletedUIDs[string(p.UID)] = true
				w.mu.Unlock()
				if err := b.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
			}
		}
		res.PodsDeleted = len(victims)
		// kwok, not an operator, removes a deleted pod, and at 100,000 pods
		// on 2 cores its watch falls behind and is closed and re-listed, so
		// this can take minutes; it is the cluster's time, not a figure.
		deleted := time.Now()
		if err := waitUntil(ctx, o.phaseTimeout, 0, "deleted pods gone", func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, obj := range pods.GetStore().List() {
				if w.deletedUIDs[string(obj.(*corev1.Pod).UID)] {
					return false
				}
			}
			return true
		}); err != nil {
			return err
		}
		logf("memory: %s: %d pods of %d PodSets deleted, gone after %.1fs", res.Kind, res.PodsDeleted, len(victims), time.Since(deleted).Seconds())
		if !failover {
			w.setStart()
			op, err := startServing(ctx, o.manager, b.opKubeconfig, b.logDir, "operator-rss-restart", args...)
			if err != nil {
				return err
			}
			next = op
		}
		if err := waitUntil(ctx, b.opts.phaseTimeout, 0, "PodSets that lost a pod caught up", func() bool {
			if res.WorkersS == 0 && next.workersStarted() {
				res.WorkersS = secs(time.Since(w.start))
			}
			_, _, ok := w.firstAndLast(len(victims))
			return ok
		}); err != nil {
			return err
		}
		first, last, _ := w.firstAndLast(len(victims))
		res.FirstPodCreatedS, res.CaughtUpS = secs(first), secs(last)
		time.Sleep(10 * time.Second)
		if st, err := readProc(next.pid()); err == nil {
			res.PeakRSSMiB = float64(st.HWM) / (1 << 20)
			res.CPUS = st.CPU.Seconds()
		}
		return nil
	}()
	if err != nil {
		res.Error = err.Error()
	}
	logf("memory: %s: workers after %.1fs, first replacement pod after %.1fs, statuses caught up after %.1fs, peak RSS %.1f MiB, CPU %.1fs",
		res.Kind, res.WorkersS, res.FirstPodCreatedS, res.CaughtUpS, res.PeakRSSMiB, res.CPUS)
	return res, next
}
