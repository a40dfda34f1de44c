package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// PodCacheRecheckInterval is how soon a PodSet whose cache was found behind
// the API server looks again; each further look that finds it still behind
// waits twice as long, up to MaxPodCacheRecheckInterval. A cache behind is
// one whose watch is broken, and client-go's reflector may take up to a
// minute to relist: a thousand PodSets listing their pods every second
// meanwhile would load the API server for nothing.
const (
	PodCacheRecheckInterval    = time.Second
	MaxPodCacheRecheckInterval = 16 * time.Second
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
//   - A replica that was paused (LeaderFence) renews its lease and may act
//     again, but its cache missed what happened during the pause, possibly
//     pods created by the replica that led meanwhile.
//
// In both, before the PodSet acts, its cached pods are compared with the
// API server's (one uncached list of its pods). If they differ, the cache is
// behind: the PodSet waits for it and looks again in a second. Once they
// match, nothing it waits for is still to come.

// podCacheChecks remembers, per PodSet, the number of fence trips its cache
// was last checked after, and how many checks in a row found it behind.
type podCacheChecks struct {
	mu      sync.Mutex
	checked map[string]uint64
	behind  map[string]int
}

func newPodCacheChecks() *podCacheChecks {
	return &podCacheChecks{checked: map[string]uint64{}, behind: map[string]int{}}
}

// foundBehind records a check that found key's cache behind, and returns
// when to check again.
func (c *podCacheChecks) foundBehind(key string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.behind[key]
	c.behind[key] = n + 1
	return min(PodCacheRecheckInterval<<min(n, 8), MaxPodCacheRecheckInterval)
}

func (c *podCacheChecks) upToDate(key string, trips uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked[key] >= trips
}

func (c *podCacheChecks) done(key string, trips uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked[key] = trips
	delete(c.behind, key)
}

func (c *podCacheChecks) forget(namespacedName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	deletePodSetKeys(c.checked, namespacedName)
	deletePodSetKeys(c.behind, namespacedName)
}

// fenceTrips is the number of pauses the fence noticed, 0 without a fence.
func (r *PodSetReconciler) fenceTrips() uint64 {
	if r.Fence == nil {
		return 0
	}
	return r.Fence.Trips()
}

// checkPodCache holds the PodSet back while its cache is known to be behind
// the API server, in the two situations described above; otherwise it
// costs nothing.
func (r *PodSetReconciler) checkPodCache(ctx context.Context, s *podSetScope) error {
	if s.podSetGone || s.podSet.DeletionTimestamp != nil {
		return nil
	}
	doubtful := r.Expectations.Doubtful(s.key)
	trips := r.fenceTrips()
	paused := !r.cacheChecks.upToDate(s.key, trips)
	// Expectations still running are waited for, except after a pause:
	// what they wait for may have come and gone while the replica was
	// stopped (a pod it created, deleted by someone else before its
	// relist), and then only their 5-minute timeout would end the wait.
	if !paused && (s.expectationsWait > 0 || !doubtful) {
		return nil
	}
	live := &corev1.PodList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(s.podSet.Namespace), client.MatchingLabelsSelector{Selector: podSelector(s.podSet)}); err != nil {
		return fmt.Errorf("checking the pod cache against the API server: %w", err)
	}
	if missing, extra := podCacheDiff(s.podSet.UID, s.pods, live.Items); missing > 0 || extra > 0 {
		podCacheBehind.Inc()
		s.cacheRecheck = r.cacheChecks.foundBehind(s.key)
		logf.FromContext(ctx).Info("the pod cache is behind the API server; waiting for it",
			"missingFromCache", missing, "goneFromServer", extra, "nextCheck", s.cacheRecheck)
		return nil
	}
	if doubtful || s.expectationsWait > 0 {
		// The cache holds exactly what the API server has: nothing
		// waited for is still to come.
		r.Expectations.Resolve(s.key)
		s.expectationsWait = 0
	}
	r.cacheChecks.done(s.key, trips)
	return nil
}

// podCacheDiff compares the live pods the PodSet controls in its cache with
// those the API server has: missing are on the server only, extra in the
// cache only. Terminating pods are left out on both sides: they count for
// nothing, and the cache learns of their end late.
func podCacheDiff(owner types.UID, cached []*corev1.Pod, server []corev1.Pod) (missing, extra int) {
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

func isControlledBy(p *corev1.Pod, owner types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(p)
	return ref != nil && ref.UID == owner
}
