package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestQuantile(t *testing.T) {
	g := NewWithT(t)
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	g.Expect(quantile(ds, 0.5)).To(Equal(time.Duration(5)))
	g.Expect(quantile(ds, 0.9)).To(Equal(time.Duration(9)))
	g.Expect(quantile(ds, 1)).To(Equal(time.Duration(10)))
	g.Expect(quantile(nil, 0.5)).To(Equal(time.Duration(0)))
	g.Expect(ds[0]).To(Equal(time.Duration(5)), "the input is not sorted in place")
}

func TestTraceOwners(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Unix(1000, 0)
	ow := &ownerWatcher{seen: map[types.UID]time.Time{"a": t0, "b": t0.Add(time.Second), "no-pods-yet": t0}}
	pw := &podWatcher{
		firstPod: map[types.UID]time.Time{"a": t0.Add(100 * time.Millisecond), "b": t0.Add(1300 * time.Millisecond), "foreign": t0},
		lastPod:  map[types.UID]time.Time{"a": t0.Add(900 * time.Millisecond), "b": t0.Add(1500 * time.Millisecond), "foreign": t0},
		// no-pods-yet has none Ready either; a foreign owner's pods are not counted.
		lastReady: map[types.UID]time.Time{"a": t0.Add(1200 * time.Millisecond), "b": t0.Add(1700 * time.Millisecond), "foreign": t0},
	}
	got := traceOwners(ow, pw)
	// a: 100 ms to its first pod, 800 ms to its last; b: 300 ms, 200 ms.
	g.Expect(got.ToFirstMedian).To(Equal(100 * time.Millisecond))
	g.Expect(got.ToFirstP90).To(Equal(300 * time.Millisecond))
	g.Expect(got.FirstToLastMedian).To(Equal(200 * time.Millisecond))
	g.Expect(got.FirstToLastP90).To(Equal(800 * time.Millisecond))
	// a: 1200 ms from its sight to its pods all Ready, b: 700 ms.
	g.Expect(got.ToReadyMedian).To(Equal(700 * time.Millisecond))
	g.Expect(got.ToReadyP90).To(Equal(1200 * time.Millisecond))
}

// TestPodWatcherBound: the scheduler's part of the way to Ready is recorded
// once as many live pods are bound to a node as must be Ready, and a bound
// pod that is deleted no longer counts.
func TestPodWatcherBound(t *testing.T) {
	g := NewWithT(t)
	pod := func(name, node string, ready bool) *corev1.Pod { return testPod(name, node, ready, "") }
	w := newPodWatcher()
	w.expectScaleUp(time.Now(), 2)

	w.observe(pod("a", "", false), false)
	w.observe(pod("b", "", false), false)
	w.observe(pod("a", "node-1", false), false)
	g.Expect(w.counts().allBound).To(BeZero(), "one live pod bound of two")
	w.observe(pod("a", "node-1", false), true)
	w.observe(pod("b", "node-2", false), false)
	g.Expect(w.counts().allBound).To(BeZero(), "the first bound pod was deleted")

	w.observe(pod("c", "node-1", false), false)
	c := w.counts()
	g.Expect(c.allBound).To(BeNumerically(">", 0))
	g.Expect(c.allReady).To(BeZero())

	w.observe(pod("b", "node-2", true), false)
	w.observe(pod("c", "node-1", true), false)
	g.Expect(w.counts().allReady).To(BeNumerically(">=", c.allBound))
}

// TestPodWatcherStartup: each pod's startup is counted once, from its first
// sight to its first sight Ready; a pod deleted before Ready, and a pod
// turning Ready again, count for nothing.
func TestPodWatcherStartup(t *testing.T) {
	g := NewWithT(t)
	pod := func(name string, ready bool) *corev1.Pod { return testPod(name, "node-1", ready, "") }
	w := newPodWatcher()
	w.expectScaleUp(time.Now(), 3)
	w.observe(pod("a", false), false)
	w.observe(pod("gone", false), false)
	time.Sleep(20 * time.Millisecond)
	w.observe(pod("gone", false), true)
	w.observe(pod("b", true), false) // Ready at first sight: 0
	time.Sleep(30 * time.Millisecond)
	w.observe(pod("a", true), false)
	w.observe(pod("a", false), false)
	w.observe(pod("a", true), false)
	g.Expect(w.startup).To(HaveLen(2))
	p50, p99 := w.startupQuantiles()
	g.Expect(p50).To(BeZero(), "b's")
	g.Expect(p99).To(BeNumerically(">=", 50*time.Millisecond), "a's, from its first sight")
}

// TestPodWatcherLastReady: an owner's last pod to turn Ready sets when all
// of its pods were Ready; a pod that turns Ready again later does not.
func TestPodWatcherLastReady(t *testing.T) {
	g := NewWithT(t)
	pod := func(name string, ready bool) *corev1.Pod { return testPod(name, "", ready, "owner") }
	w := newPodWatcher()
	w.expectScaleUp(time.Now(), 2)
	w.observe(pod("a", false), false)
	w.observe(pod("b", false), false)
	w.observe(pod("a", true), false)
	aReady := w.lastReady["owner"]
	time.Sleep(10 * time.Millisecond)
	w.observe(pod("b", true), false)
	bReady := w.lastReady["owner"]
	g.Expect(bReady).To(BeTemporally(">", aReady))
	time.Sleep(10 * time.Millisecond)
	w.observe(pod("a", false), false)
	w.observe(pod("a", true), false)
	g.Expect(w.lastReady["owner"]).To(Equal(bReady), "a turning Ready again")
	// A pod first seen already Ready (after the watch resumed) is Ready then.
	time.Sleep(10 * time.Millisecond)
	w.observe(pod("c", true), false)
	g.Expect(w.lastReady["owner"]).To(BeTemporally(">", bReady))
}

// testPod is a pod of UID name on node ("": not bound), Ready or not, whose
// controller is owner ("": none).
func testPod(name, node string, ready bool, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{NodeName: node}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{UID: owner, Controller: ptr.To(true)}}
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}
