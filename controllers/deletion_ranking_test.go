package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// Each row differs in one attribute only, so the row fails if its rule is
// missing, inverted, or shadowed by a rule that should come later.
func TestLessValuableRules(t *testing.T) {
	tests := []struct {
		name   string
		victim *corev1.Pod
		keeper *corev1.Pod
	}{
		{
			name:   "unscheduled before scheduled",
			victim: unitPod("x", unscheduled(), inPhase(corev1.PodPending)),
			keeper: unitPod("y", inPhase(corev1.PodPending)),
		},
		{
			name:   "unscheduled before scheduled, even when it is older",
			victim: unitPod("x", unscheduled(), inPhase(corev1.PodPending), createdAt(unitNow.Add(-2*time.Hour))),
			keeper: unitPod("y", inPhase(corev1.PodPending), createdAt(unitNow.Add(-time.Hour))),
		},
		{
			name:   "Pending before Unknown",
			victim: unitPod("x", inPhase(corev1.PodPending)),
			keeper: unitPod("y", inPhase(corev1.PodUnknown)),
		},
		{
			name:   "Unknown before Running",
			victim: unitPod("x", inPhase(corev1.PodUnknown)),
			keeper: unitPod("y", inPhase(corev1.PodRunning)),
		},
		{
			name:   "lower pod-deletion-cost before higher, among ready pods",
			victim: unitPod("x", readySince(unitNow.Add(-time.Hour)), withDeletionCost("-5")),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Minute)), withDeletionCost("10")),
		},
		{
			name:   "pod-deletion-cost: absent is 0",
			victim: unitPod("x", readySince(unitNow.Add(-time.Hour)), withDeletionCost("-1")),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Minute))),
		},
		{
			name:   "pod-deletion-cost: an invalid value is 0, so the next rule decides",
			victim: unitPod("x", readySince(unitNow.Add(-time.Minute)), withDeletionCost("lots")),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Hour)), withDeletionCost("0")),
		},
		{
			name:   "readiness comes before pod-deletion-cost",
			victim: unitPod("x", withDeletionCost("100")),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Minute)), withDeletionCost("-100")),
		},
		{
			name:   "not ready before ready",
			victim: unitPod("x", notReadySince(unitNow.Add(-time.Minute))),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Minute))),
		},
		{
			name:   "no Ready condition before ready",
			victim: unitPod("x"),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Minute))),
		},
		{
			name:   "ready more recently before ready longer",
			victim: unitPod("x", readySince(unitNow.Add(-time.Minute))),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Hour))),
		},
		{
			name:   "more restarts first",
			victim: unitPod("x", readySince(unitNow.Add(-time.Minute)), withRestarts(3)),
			keeper: unitPod("y", readySince(unitNow.Add(-time.Minute)), withRestarts(2)),
		},
		{
			name:   "restarts are summed over containers",
			victim: unitPod("x", withRestarts(2)),
			keeper: unitPod("y", withRestarts(1)),
		},
		{
			name:   "newer before older",
			victim: unitPod("x", createdAt(unitNow.Add(-time.Minute))),
			keeper: unitPod("y", createdAt(unitNow.Add(-time.Hour))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(lessValuable(tt.victim, tt.keeper)).To(BeTrue())
			g.Expect(lessValuable(tt.keeper, tt.victim)).To(BeFalse())
			g.Expect(podsToDelete([]*corev1.Pod{tt.keeper, tt.victim}, 1)).To(HaveExactElements(tt.victim))
			g.Expect(podsToDelete([]*corev1.Pod{tt.victim, tt.keeper}, 1)).To(HaveExactElements(tt.victim))
		})
	}
}

func TestLessValuableFullTieIsBrokenByName(t *testing.T) {
	g := NewWithT(t)
	a := unitPod("a", readySince(unitNow.Add(-time.Minute)))
	b := unitPod("b", readySince(unitNow.Add(-time.Minute)))

	g.Expect(lessValuable(a, b)).NotTo(Equal(lessValuable(b, a)), "exactly one of two tied pods must go first")
	g.Expect(podsToDelete([]*corev1.Pod{a, b}, 1)).To(Equal(podsToDelete([]*corev1.Pod{b, a}, 1)),
		"the choice must not depend on the input order")
	g.Expect(lessValuable(a, a)).To(BeFalse(), "a pod is not less valuable than itself")
}

func TestPodsToDelete(t *testing.T) {
	// From least to most valuable.
	ranked := []*corev1.Pod{
		unitPod("unscheduled", unscheduled(), inPhase(corev1.PodPending)),
		unitPod("pending", inPhase(corev1.PodPending)),
		unitPod("unknown", inPhase(corev1.PodUnknown)),
		unitPod("not-ready"),
		unitPod("ready-recently", readySince(unitNow.Add(-time.Minute))),
		unitPod("ready-long-restarted", readySince(unitNow.Add(-time.Hour)), withRestarts(1)),
		unitPod("ready-long", readySince(unitNow.Add(-time.Hour))),
	}
	tests := []struct {
		name string
		n    int
		want []*corev1.Pod
	}{
		{name: "n is zero", n: 0, want: nil},
		{name: "n is negative", n: -1, want: nil},
		{name: "one", n: 1, want: ranked[:1]},
		{name: "some", n: 4, want: ranked[:4]},
		{name: "all", n: len(ranked), want: ranked},
		{name: "n larger than the pods", n: len(ranked) + 5, want: ranked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			input := []*corev1.Pod{ranked[6], ranked[2], ranked[4], ranked[0], ranked[5], ranked[3], ranked[1]}
			before := append([]*corev1.Pod(nil), input...)

			got := podsToDelete(input, tt.n)

			if tt.want == nil {
				g.Expect(got).To(BeNil())
			} else {
				g.Expect(got).To(HaveExactElements(toElements(tt.want)...))
			}
			g.Expect(input).To(HaveExactElements(toElements(before)...), "the input slice must not be reordered")
		})
	}
}

func TestPodsToDeleteOfNoPods(t *testing.T) {
	g := NewWithT(t)
	g.Expect(podsToDelete(nil, 3)).To(BeEmpty())
}

func toElements(pods []*corev1.Pod) []any {
	out := make([]any, len(pods))
	for i, p := range pods {
		out[i] = BeIdenticalTo(p)
	}
	return out
}

func withDeletionCost(v string) podOption {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{AnnotationPodDeletionCost: v}
	}
}
