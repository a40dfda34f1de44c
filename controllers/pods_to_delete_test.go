package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/example/podset-operator/controllers/slimpod"
)

func TestSortPodsToDelete(t *testing.T) {
	now := metav1.Now()
	pod := func(name string, terminating bool) *slimpod.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if terminating {
			p.DeletionTimestamp = &now
		}
		return slimpod.From(p)
	}
	for _, tc := range []struct {
		name          string
		names         []string
		pods          []*slimpod.Pod
		seen          sets.Set[string]
		listed        []string
		keep, unknown []string
		seenAfter     []string
	}{
		{
			name:  "a live pod's name stays; one of a terminating pod leaves quietly",
			names: []string{"web-a", "web-b"}, pods: []*slimpod.Pod{pod("web-a", false), pod("web-b", true), pod("web-c", false)},
			keep: []string{"web-a"}, seenAfter: []string{"web-a", "web-b"},
		},
		{
			name:  "a pod gone since an earlier look leaves quietly",
			names: []string{"web-a"}, seen: sets.New("web-a", "web-x"),
			seenAfter: []string{"web-a"},
		},
		{
			name:  "a pod gone before any look, but in the last status (a new leader), leaves quietly",
			names: []string{"web-a"}, listed: []string{"web-a", "web-b"},
			seenAfter: []string{},
		},
		{
			name:  "a name no pod ever had is unknown",
			names: []string{"web-a", "nosuch"}, pods: []*slimpod.Pod{pod("web-a", false)}, listed: []string{"web-a"},
			keep: []string{"web-a"}, unknown: []string{"nosuch"}, seenAfter: []string{"web-a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			keep, unknown, seen := sortPodsToDelete(tc.names, tc.pods, tc.seen, tc.listed)
			g.Expect(keep).To(Equal(tc.keep))
			g.Expect(unknown).To(Equal(tc.unknown))
			g.Expect(sets.List(seen)).To(ConsistOf(tc.seenAfter))
		})
	}
}
