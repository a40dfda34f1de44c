package controllers

import (
	"context"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/metrics"
)

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
	return r.wakeUps.wake(ctx, nn)
}
