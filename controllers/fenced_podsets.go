package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The PodSets whose reconcile the leader fence refused are marked in their
// records and queued again the moment this replica renews its lease.
//
// A refused reconcile used to fail, and so went to the controller's
// exponential backoff: the many events that reach a replica resumed after a
// pause (a relist delivers every change it missed) failed a PodSet's
// reconcile again and again while the fence held, and once the lease was
// renewed the PodSet waited out a backoff grown to seconds, with no event
// left to wake it.

// releaseFenced queues every PodSet the fence refused. It never blocks its
// caller (the lease renewal).
func (r *PodSetReconciler) releaseFenced() {
	r.wakeUps.wakeAll(r.records.takeFenced())
}

// takeFenced returns the PodSets marked as refused by the fence, and
// unmarks them.
func (rs *podSetRecords) takeFenced() []types.NamespacedName {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var fenced []types.NamespacedName
	for nn, rec := range rs.byName {
		if rec.fenced.CompareAndSwap(true, false) {
			fenced = append(fenced, nn)
		}
	}
	return fenced
}

// waitForRenewal is the result of a reconcile the fence refused: the PodSet
// is queued again when the lease is renewed, with no backoff.
func (r *PodSetReconciler) waitForRenewal(rec *podSetRecord) time.Duration {
	rec.fenced.Store(true)
	// The renewal may have come between the refusal and the mark, and
	// found nothing to release: look again now that the PodSet is marked.
	if r.Fence.Allow() == nil {
		r.releaseFenced()
	}
	return FencedRecheckInterval
}
