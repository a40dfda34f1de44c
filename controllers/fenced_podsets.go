package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// fencedPodSets are the PodSets whose reconcile the leader fence refused.
// They are queued again the moment this replica renews its lease.
//
// A refused reconcile used to fail, and so went to the controller's
// exponential backoff: the many events that reach a replica resumed after a
// pause (a relist delivers every change it missed) failed a PodSet's
// reconcile again and again while the fence held, and once the lease was
// renewed the PodSet waited out a backoff grown to seconds, with no event
// left to wake it.
type fencedPodSets struct {
	mu      sync.Mutex
	waiting sets.Set[types.NamespacedName]
	wakeUps *wakeUps
}

func newFencedPodSets(w *wakeUps) *fencedPodSets {
	return &fencedPodSets{waiting: sets.New[types.NamespacedName](), wakeUps: w}
}

// add records a PodSet the fence refused.
func (f *fencedPodSets) add(nn types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting.Insert(nn)
}

// release queues every PodSet the fence refused. It never blocks its
// caller (the lease renewal).
func (f *fencedPodSets) release() {
	f.mu.Lock()
	waiting := f.waiting.UnsortedList()
	f.waiting = sets.New[types.NamespacedName]()
	f.mu.Unlock()
	f.wakeUps.wakeAll(waiting)
}

// waitForRenewal is the result of a reconcile the fence refused: the PodSet
// is queued again when the lease is renewed, with no backoff.
func (r *PodSetReconciler) waitForRenewal(nn types.NamespacedName) time.Duration {
	r.fenced.add(nn)
	// The renewal may have come between the refusal and add, and found
	// nothing to release: look again now that the PodSet is recorded.
	if r.fenceAllows() == nil {
		r.fenced.release()
	}
	return FencedRecheckInterval
}
