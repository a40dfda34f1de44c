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

// A new pod is counted once, however many events say it was deleted: a
// 1x1000 rollout that reported 1001 new pods for 1000 could have been one
// deletion reported twice, which the count per owner took for a new pod.
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
