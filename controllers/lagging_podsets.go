package controllers

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/metrics"
)

// LagCheckInterval is how often the expectations are scanned for PodSets
// whose awaited pod events lag (Expectations.TakeLagging).
const LagCheckInterval = 250 * time.Millisecond

// A PodSet that made writes waits for their events before it acts again, up
// to DefaultExpectationsTimeout. When the pod watch breaks right as the
// writes are made, their events come only with client-go's relist, which
// its reflector backoff may put off for a minute after API server restarts:
// the fault matrix's broken-watch rollout waited about 10 s for it at every
// run, doing nothing while the API server already had all it needed.
//
// Waking each PodSet a second after each of its steps would cost a
// reconcile per step for the many PodSets whose events came in time (a
// thousand per scale of the benchmark's 1000x1 shape). So one loop looks at
// the expectations instead, and queues only the PodSets whose events lag:
// their reconcile compares the cache with the API server
// (pod_cache_check.go), and acts on the API server's pods if the cache is
// behind.

var lagLog = logf.Log.WithName("lagging-podsets")

// lagQueue queues the PodSets whose expectations lag.
type lagQueue struct {
	expectations *Expectations
	// wake is the channel source that queues a PodSet (SetupWithManager).
	wake chan event.GenericEvent
}

func newLagQueue(e *Expectations) *lagQueue {
	return &lagQueue{expectations: e, wake: make(chan event.GenericEvent, 1024)}
}

// Start scans the expectations every LagCheckInterval until ctx ends. It
// runs on the leader only, the one replica that writes.
func (q *lagQueue) Start(ctx context.Context) error {
	tick := time.NewTicker(LagCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if !q.queueLagging(ctx) {
				return nil
			}
		}
	}
}

// queueLagging queues each PodSet that has become lagging; it reports false
// when ctx ended first.
func (q *lagQueue) queueLagging(ctx context.Context) bool {
	for _, key := range q.expectations.TakeLagging() {
		ev, ok := podSetEvent(key)
		if !ok {
			continue
		}
		metrics.PodEventsLagging.Inc()
		lagLog.V(1).Info("the pod events a PodSet waits for lag its writes; checking its cache against the API server",
			"namespace", ev.Object.GetNamespace(), "name", ev.Object.GetName(), "lag", ExpectationsLagThreshold)
		select {
		case q.wake <- ev:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// podSetEvent is the event that queues the PodSet of an expectations key
// (namespace/name/uid, see expectationsKey; names hold no '/').
func podSetEvent(key string) (event.GenericEvent, bool) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return event.GenericEvent{}, false
	}
	return event.GenericEvent{Object: &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: parts[0], Name: parts[1]}}}, true
}
