package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Expectations keep a PodSet from acting on a cache that has not yet seen
// its own writes. Two situations break that guarantee, and in both a PodSet
// acting on its cache could create pods that already exist:
//
//   - Creations whose outcome is unknown (the connection broke after the
//     request was sent) are waited for only UncertainCreationTimeout: if the
//     pod was not made, no event will ever come. But the cache may also be
//     late: after an API server restart its relist waits out client-go's
//     reflector backoff, which grows to 30-60 s when restarts follow each
//     other.
//   - A replica that was paused (leaderfence.Fence) renews its lease and may act
//     again, but its cache missed what happened during the pause, possibly
//     pods created by the replica that led meanwhile.
//
//   - A pod watch that failed (an API server restart, 410 Gone) delivers
//     nothing until client-go's reflector, after its backoff, watches
//     again, and meanwhile the cache misses what happened: pods deleted by
//     others, or, on a replica that took the lease in that gap, pods the
//     previous leader created (podcache.WatchGaps).
//
// A fourth makes it wait for nothing, possibly for minutes: writes whose
// events do not come, because the pod watch broke as they were made; they
// come with the relist. It shows as events that lag the writes by a second
// or more (Expectations.Lagging, queueLagging below).
//
// In all four, before the PodSet acts, its cached pods are compared with the
// API server's (one uncached list of its pods). Once they match, nothing it
// waits for is still to come. If they differ, the cache is behind, and the
// list just read is the truth: this reconcile acts on it instead (see
// useLivePods), and the PodSet looks again in a second, until the cache has
// caught up. Waiting for the cache instead cost the relist's whole delay,
// client-go's reflector backoff of seconds to a minute, during which the
// PodSet knew exactly what to do: the fault matrix's broken watch converged
// 5-13 times slower than undisturbed that way.

// cacheDoubts returns what may have left the pod cache behind without any
// event to say so: the pauses the fence noticed (none without a fence), and
// the pod watches' failures while one is down. The PodSet's record keeps
// the last check of its pods against them (consistency.CacheCheck).
func (r *PodSetReconciler) cacheDoubts() consistency.Doubts {
	return consistency.Doubts{Pauses: r.Fence.Trips(), WatchFailures: r.WatchGaps.PodFailures()}
}

// cacheVerdict is what a pod cache check decided for the scaling phase.
type cacheVerdict struct {
	// hold keeps the pods as they are in this reconcile: the cache is
	// behind, and the reconcile cannot act on the API server's pods
	// instead (the PodSet's spec changed meanwhile, or its own deletes are
	// still on their way).
	hold bool
	// recheckIn is when to check the cache again, with no event to bring
	// the PodSet; 0 when it was found current, or not checked.
	recheckIn time.Duration
}

// checkPodCache compares the PodSet's cached pods with the API server's in
// the situations described above, and while its cache is known to be behind
// makes the reconcile act on the API server's pods, or decides that it holds
// them as they are; otherwise it costs nothing.
func (r *PodSetReconciler) checkPodCache(ctx context.Context, s *podSetScope) (cacheVerdict, error) {
	if s.podSet.DeletionTimestamp != nil {
		return cacheVerdict{}, nil
	}
	doubtful := r.Expectations.Doubtful(s.key)
	lagging := s.expectationsWait > 0 && r.Expectations.Lagging(s.key)
	doubts := r.cacheDoubts()
	inDoubt := !s.record.podCache.UpToDate(doubts)
	behind := s.record.podCache.IsBehind()
	// Expectations still running are waited for, except after a pause or
	// while a pod watch is down: what they wait for may have come and gone while
	// the replica was stopped or its watch down (a pod it created, deleted
	// by someone else before its relist), and then only their 5-minute
	// timeout would end the wait.
	// Nor while the cache is known to be behind: the writes a reconcile
	// made from the API server's pods are seen only once it catches up,
	// and a reconcile acting (or reporting) on it meanwhile would be wrong.
	// Nor when their events lag (queueLagging below): the watch that
	// should bring them is likely broken.
	if !inDoubt && !behind && !lagging && (s.expectationsWait > 0 || !doubtful) {
		return cacheVerdict{}, nil
	}
	if s.record.background.HoldWhileSending() {
		// The PodSet's own deletes are still on their way: the API
		// server's pods are no truer than the cache yet.
		return cacheVerdict{hold: true}, nil
	}
	// The comparison needs the pods' metadata only, and under load most
	// checks find the cache current (its events were late, not lost): a
	// full list of a PodSet of 1000 pods is about 10 MB decoded, and the
	// memory scenario's PodSets made some fifty of them within 25 s, the
	// operator's highest heap (docs/architecture.md, "Cache checks"). The pods
	// themselves are read only when the cache is behind and the reconcile
	// needs their status to act on.
	itsPods := []client.ListOption{client.InNamespace(s.podSet.Namespace), client.MatchingLabelsSelector{Selector: operand.Selector(s.podSet)}}
	onServer := &metav1.PartialObjectMetadataList{}
	onServer.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, onServer, itsPods...); err != nil {
		return cacheVerdict{}, fmt.Errorf("checking the pod cache against the API server: %w", err)
	}
	if missing, extra := podCacheDiff(s.podSet.UID, s.pods, onServer.Items); missing > 0 || extra > 0 {
		metrics.PodCacheBehind.Inc()
		live := &corev1.PodList{}
		if err := r.APIReader.List(ctx, live, itsPods...); err != nil {
			return cacheVerdict{}, fmt.Errorf("reading the pods from the API server: %w", err)
		}
		acting, err := r.useLivePods(ctx, s, slimpod.FromList(live.Items))
		v := cacheVerdict{hold: !acting}
		if acting && !s.rolloutComplete() {
			// Each look acts: a rollout's next step, a replacement.
			// Backing off would only stretch the convergence (the
			// relist after repeated API server restarts took 45 s in
			// the fault matrix).
			v.recheckIn = s.record.podCache.Converging(PodCacheRecheckInterval)
		} else {
			v.recheckIn = s.record.podCache.FoundBehind(PodCacheRecheckInterval, MaxPodCacheRecheckInterval)
		}
		logf.FromContext(ctx).Info("the pod cache is behind the API server",
			"missingFromCache", missing, "goneFromServer", extra, "actingOnTheAPIServersPods", acting, "nextCheck", v.recheckIn)
		return v, err
	}
	if doubtful || s.expectationsWait > 0 || behind {
		// The cache holds exactly what the API server has: nothing
		// waited for is still to come.
		r.Expectations.Resolve(s.key, operand.UIDs(s.pods)...)
		s.expectationsWait = 0
	}
	s.record.podCache.Done(doubts)
	return cacheVerdict{}, nil
}

// useLivePods makes this reconcile act on the pods just listed from the API
// server rather than on the cache, which is behind. They are only half of
// what it acts on: the PodSet's spec comes from the cache too, and its cache
// may be as far behind as the pods'. So the PodSet is read from the API
// server as well, and the reconcile goes on only when its spec is the one
// cached (same UID, same generation, not being deleted); its fresh status
// replaces the cached one, so that the status patch is computed against
// what the API server holds. When the spec changed, the revisions computed
// from the cached one would be wrong: the PodSet waits for its cache, as
// it did before; so does a PodSet being deleted, whose pods are the garbage
// collector's. It reports whether the reconcile acts on the live pods.
//
// What the PodSet expected is dropped: the live list shows the outcome of
// every write it waited for. The writes this reconcile makes are expected
// as usual; their events come with the relist, and until the cache has
// caught up each reconcile lists again.
func (r *PodSetReconciler) useLivePods(ctx context.Context, s *podSetScope, live []*slimpod.Pod) (bool, error) {
	fresh, err := r.readPodSet(ctx, s)
	if err != nil {
		return false, err
	}
	if fresh.DeletionTimestamp != nil || fresh.Generation != s.podSet.Generation {
		return false, nil
	}
	s.podSet = fresh
	s.pods = s.pods[:0:0]
	for i := range live {
		// The list selected the PodSet's labels; of those pods, the
		// PodSet's are the ones it controls.
		if isControlledBy(live[i], fresh.UID) {
			s.pods = append(s.pods, live[i])
		}
	}
	r.Expectations.Resolve(s.key, operand.UIDs(s.pods)...)
	s.expectationsWait = 0
	// The rollout stands where these pods say.
	return true, r.observeRollout(ctx, s)
}

// podCacheDiff compares the live pods the PodSet controls in its cache with
// those the API server has: missing are on the server only, extra in the
// cache only. Terminating pods are left out on both sides: they count for
// nothing, and the cache learns of their end late.
func podCacheDiff(owner types.UID, cached []*slimpod.Pod, server []metav1.PartialObjectMetadata) (missing, extra int) {
	inCache := sets.New[types.UID]()
	for _, p := range cached {
		if p.DeletionTimestamp == nil && isControlledBy(p, owner) {
			inCache.Insert(p.UID)
		}
	}
	onServer := sets.New[types.UID]()
	for i := range server {
		if p := &server[i]; p.DeletionTimestamp == nil && isControlledBy(p, owner) {
			onServer.Insert(p.UID)
		}
	}
	return onServer.Difference(inCache).Len(), inCache.Difference(onServer).Len()
}

func isControlledBy(obj metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == owner
}

// A PodSet that made writes waits for their events before it acts again, up
// to DefaultExpectationsTimeout. When the pod watch breaks right as the
// writes are made, their events come only with client-go's relist, which
// its reflector backoff may put off for a minute after API server restarts:
// the fault matrix's broken-watch rollout waited about 10 s for it at every
// run, doing nothing while the API server already had all it needed.
//
// Waking each PodSet a second after each of its steps would cost a
// reconcile per step for the many PodSets whose events came in time (a
// thousand per scale of the benchmark's 1000x1 shape). So one loop
// (consistency.LagScan) looks at the expectations instead, and queues only
// the PodSets whose events lag: their reconcile compares the cache with the
// API server (pod_cache_check.go), and acts on the API server's pods if the
// cache is behind.

var lagLog = logf.Log.WithName("lagging-podsets")

// newLagScan is the loop that queues the PodSets whose awaited events lag.
func (r *PodSetReconciler) newLagScan() *consistency.LagScan {
	return &consistency.LagScan{Expectations: r.Expectations, Interval: LagCheckInterval, Queue: r.queueLagging}
}

// queueLagging wakes the PodSet of a lagging expectations key; it reports
// false when ctx ended first.
func (r *PodSetReconciler) queueLagging(ctx context.Context, key string) bool {
	nn, ok := consistency.PodSetOfKey(key)
	if !ok {
		return true
	}
	metrics.PodEventsLagging.Inc()
	lagLog.V(1).Info("the pod events a PodSet waits for lag its writes; checking its cache against the API server",
		"namespace", nn.Namespace, "name", nn.Name, "lag", ExpectationsLagThreshold)
	return r.wakeUps.Wake(ctx, nn)
}
