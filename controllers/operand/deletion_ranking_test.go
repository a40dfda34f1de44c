package operand

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Each row differs in one attribute only, so the row fails if its rule is
// missing, inverted, or shadowed by a rule that should come later.
func TestLessValuableRules(t *testing.T) {
	tests := []struct {
		name   string
		victim *slimpod.Pod
		keeper *slimpod.Pod
	}{
		{
			name:   "unscheduled before scheduled",
			victim: operandtest.Pod("x", operandtest.Unscheduled(), operandtest.InPhase(corev1.PodPending)),
			keeper: operandtest.Pod("y", operandtest.InPhase(corev1.PodPending)),
		},
		{
			name:   "unscheduled before scheduled, even when it is older",
			victim: operandtest.Pod("x", operandtest.Unscheduled(), operandtest.InPhase(corev1.PodPending), operandtest.CreatedAt(operandtest.Now.Add(-2*time.Hour))),
			keeper: operandtest.Pod("y", operandtest.InPhase(corev1.PodPending), operandtest.CreatedAt(operandtest.Now.Add(-time.Hour))),
		},
		{
			name:   "Pending before Unknown",
			victim: operandtest.Pod("x", operandtest.InPhase(corev1.PodPending)),
			keeper: operandtest.Pod("y", operandtest.InPhase(corev1.PodUnknown)),
		},
		{
			name:   "Unknown before Running",
			victim: operandtest.Pod("x", operandtest.InPhase(corev1.PodUnknown)),
			keeper: operandtest.Pod("y", operandtest.InPhase(corev1.PodRunning)),
		},
		{
			name:   "lower pod-deletion-cost before higher, among ready pods",
			victim: operandtest.Pod("x", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), withDeletionCost("-5")),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)), withDeletionCost("10")),
		},
		{
			name:   "pod-deletion-cost: absent is 0",
			victim: operandtest.Pod("x", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), withDeletionCost("-1")),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
		},
		{
			name:   "pod-deletion-cost: an invalid value is 0, so the next rule decides",
			victim: operandtest.Pod("x", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)), withDeletionCost("lots")),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), withDeletionCost("0")),
		},
		{
			name:   "readiness comes before pod-deletion-cost",
			victim: operandtest.Pod("x", withDeletionCost("100")),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)), withDeletionCost("-100")),
		},
		{
			name:   "not ready before ready",
			victim: operandtest.Pod("x", operandtest.NotReadySince(operandtest.Now.Add(-time.Minute))),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
		},
		{
			name:   "no Ready condition before ready",
			victim: operandtest.Pod("x"),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
		},
		{
			name:   "ready more recently before ready longer",
			victim: operandtest.Pod("x", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
		},
		{
			name:   "more restarts first",
			victim: operandtest.Pod("x", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)), operandtest.WithRestarts(3)),
			keeper: operandtest.Pod("y", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)), operandtest.WithRestarts(2)),
		},
		{
			name:   "restarts are summed over containers",
			victim: operandtest.Pod("x", operandtest.WithRestarts(2)),
			keeper: operandtest.Pod("y", operandtest.WithRestarts(1)),
		},
		{
			name:   "newer before older",
			victim: operandtest.Pod("x", operandtest.CreatedAt(operandtest.Now.Add(-time.Minute))),
			keeper: operandtest.Pod("y", operandtest.CreatedAt(operandtest.Now.Add(-time.Hour))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(lessValuable(tt.victim, tt.keeper)).To(BeTrue())
			g.Expect(lessValuable(tt.keeper, tt.victim)).To(BeFalse())
			g.Expect(ToDelete([]*slimpod.Pod{tt.keeper, tt.victim}, 1)).To(HaveExactElements(tt.victim))
			g.Expect(ToDelete([]*slimpod.Pod{tt.victim, tt.keeper}, 1)).To(HaveExactElements(tt.victim))
		})
	}
}

func TestLessValuableFullTieIsBrokenByName(t *testing.T) {
	g := NewWithT(t)
	a := operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)))
	b := operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)))

	g.Expect(lessValuable(a, b)).NotTo(Equal(lessValuable(b, a)), "exactly one of two tied pods must go first")
	g.Expect(ToDelete([]*slimpod.Pod{a, b}, 1)).To(Equal(ToDelete([]*slimpod.Pod{b, a}, 1)),
		"the choice must not depend on the input order")
	g.Expect(lessValuable(a, a)).To(BeFalse(), "a pod is not less valuable than itself")
}

func TestPodsToDelete(t *testing.T) {
	// From least to most valuable.
	ranked := []*slimpod.Pod{
		operandtest.Pod("unscheduled", operandtest.Unscheduled(), operandtest.InPhase(corev1.PodPending)),
		operandtest.Pod("pending", operandtest.InPhase(corev1.PodPending)),
		operandtest.Pod("unknown", operandtest.InPhase(corev1.PodUnknown)),
		operandtest.Pod("not-ready"),
		operandtest.Pod("ready-recently", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
		operandtest.Pod("ready-long-restarted", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), operandtest.WithRestarts(1)),
		operandtest.Pod("ready-long", operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
	}
	tests := []struct {
		name string
		n    int
		want []*slimpod.Pod
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
			input := []*slimpod.Pod{ranked[6], ranked[2], ranked[4], ranked[0], ranked[5], ranked[3], ranked[1]}
			before := append([]*slimpod.Pod(nil), input...)

			got := ToDelete(input, tt.n)

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
	g.Expect(ToDelete(nil, 3)).To(BeEmpty())
}

func toElements(pods []*slimpod.Pod) []any {
	out := make([]any, len(pods))
	for i, p := range pods {
		out[i] = BeIdenticalTo(p)
	}
	return out
}

func withDeletionCost(v string) operandtest.Option {
	return func(p *slimpod.Pod) {
		p.Annotations = map[string]string{AnnotationPodDeletionCost: v}
	}
}
