package main

import (
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func benchPod(uid string, isNew bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		UID:    types.UID(uid),
		Labels: map[string]string{"app.example.com/podset": "o-0000"},
	}}
	if isNew {
		p.Annotations = map[string]string{rolloutAnnotation: "1"}
	}
	return p
}

// A new pod is counted once, however many events say it was deleted.
func TestRolloutWatcherCountsEachNewPodOnce(t *testing.T) {
	g := NewWithT(t)
	w := &rolloutWatcher{owners: map[string]*ownerPods{}, minReady: math.MaxInt}
	w.observe(benchPod("old", false), false)
	w.begin(time.Now(), 2)
	a, b := benchPod("a", true), benchPod("b", true)
	w.observe(a, false)
	w.observe(a, false)
	w.observe(a, true)
	w.observe(a, true) // a relist's tombstone after the deletion event
	w.observe(b, true) // first seen as deleted
	w.observe(benchPod("old", false), true)
	_, _, _, created := w.result()
	g.Expect(created).To(Equal(2))
	g.Expect(w.owners["o-0000"].live).To(Equal(0))
}

// Pods that ended, marked for deletion or gone, are counted once each, old
// and new alike.
func TestRolloutWatcherCountsEndedPods(t *testing.T) {
	g := NewWithT(t)
	w := &rolloutWatcher{owners: map[string]*ownerPods{}, minReady: math.MaxInt}
	w.observe(benchPod("old-1", false), false)
	w.observe(benchPod("old-2", false), false)
	w.begin(time.Now(), 2)
	terminating := benchPod("old-1", false)
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	w.observe(terminating, false)
	w.observe(terminating, true)
	w.observe(benchPod("old-2", false), true) // gone at once, never seen terminating
	w.observe(benchPod("new", true), false)
	g.Expect(w.endedSince()).To(Equal(2))
}

// A rollout passes when every new pod beyond one per replaced pod stands
// for one that something other than the operator ended; a pod the operator
// made too many and deleted itself is no such pod.
func TestRolloutViolationsExcuseOnlyPodsEndedByOthers(t *testing.T) {
	g := NewWithT(t)
	run := func(created, endedByOthers int) rolloutResult {
		return rolloutResult{Kind: "podset", Shape: "1x1000", Target: 1000, SurgeBound: 1250, ReadyBound: 750,
			MaxLivePerOwner: 1250, MinReadyPerOwner: 750, Created: created, EndedByOthers: endedByOthers}
	}
	g.Expect(rolloutViolations([]rolloutResult{run(1000, 0), run(1001, 1)})).To(BeEmpty())
	g.Expect(rolloutViolations([]rolloutResult{run(1001, 0)})).To(ConsistOf(ContainSubstring("1001 new pods for 1000 replaced and 0 ended by something else")))
	g.Expect(rolloutViolations([]rolloutResult{run(999, 0)})).To(HaveLen(1))
}
