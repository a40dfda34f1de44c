package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// A phase whose watches see nothing for the stall bound is given up as
// stalled, long before its timeout: the run of a controller that stopped
// partway is reported and left out instead of counted as a slow run.
func TestWaitUntilGivesUpWhenNothingMoves(t *testing.T) {
	g := NewWithT(t)
	var still eventCount
	err := waitUntil(context.Background(), time.Minute, 300*time.Millisecond, "every pod Ready", func() bool { return false }, &still)
	g.Expect(errors.Is(err, errStalled)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("every pod Ready"))
}

// While any watched watcher sees events, the phase goes on past the stall
// bound until its condition holds: the bound runs from the last event, and
// events that come less often than it (every 200 ms against 1 s here) keep
// the phase going.
func TestWaitUntilWaitsWhileEventsFlow(t *testing.T) {
	g := NewWithT(t)
	var quiet, busy eventCount
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				busy.saw()
			}
		}
	}()
	var polls atomic.Int32
	deadline := time.Now().Add(2500 * time.Millisecond)
	err := waitUntil(context.Background(), time.Minute, time.Second, "scale-down", func() bool {
		polls.Add(1)
		return time.Now().After(deadline)
	}, &quiet, &busy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(polls.Load()).To(BeNumerically(">", 1))
}

// Without a stall bound (the memory scenario's waits), only the timeout
// ends a wait.
func TestWaitUntilWithoutAStallBoundOnlyTimesOut(t *testing.T) {
	g := NewWithT(t)
	var still eventCount
	err := waitUntil(context.Background(), 400*time.Millisecond, 0, "owned PodSets caught up", func() bool { return false }, &still)
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "got %v", err)
	g.Expect(errors.Is(err, errStalled)).To(BeFalse())
}

// Every watcher a phase waits on counts the events it observes.
func TestWatchersCountTheirEvents(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: types.UID("a")}}
	pw := newPodWatcher()
	pw.observe(pod, false)
	pw.observe(pod, true)
	g.Expect(pw.events()).To(Equal(uint64(2)))

	ow := &ownerWatcher{owners: map[string]bool{}, seen: map[types.UID]time.Time{}}
	ow.observe(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a", "uid": "a"}}})
	g.Expect(ow.events()).To(Equal(uint64(1)))
}

// The runs left out of the medians are listed whatever their kind, and the
// medians do not include them.
func TestFailedRunsOfEveryKindAreListedAndLeftOut(t *testing.T) {
	g := NewWithT(t)
	r := report{
		Phases: []phaseResult{
			{Kind: "replicaset", Shape: "1x1000", Run: 1, Owners: 1, Replicas: 1000, Target: 1000, AllCreatedS: 4},
			{Kind: "replicaset", Shape: "1x1000", Run: 2, Owners: 1, Replicas: 1000, Target: 1000, AllCreatedS: 190, Error: "waiting for every pod Ready and every status caught up: stalled, no event for 1m0s (created 328, live 328, ready 328 of 1000)"},
			{Kind: "podset", Shape: "1x1000", Run: 1, Owners: 1, Replicas: 1000, Target: 1000, AllCreatedS: 5},
		},
		Rollouts: []rolloutResult{{Kind: "deployment", Shape: "100x10", Run: 3, Error: "waiting for every pod rolled and every status caught up: stalled"}},
	}
	g.Expect(leftOut(r)).To(ConsistOf(
		ContainSubstring("replicaset 1x1000 run 2: waiting for every pod Ready"),
		ContainSubstring("rollout deployment 100x10 run 3: waiting for every pod rolled"),
	))
	for _, row := range summarise(r.Phases, []shape{{owners: 1, replicas: 1000}}) {
		if row.Figure == "all pods created (s)" {
			g.Expect(row.ReplicaSet).To(Equal(4.0), "the stalled run's 190 s is not in the median")
		}
	}
}
