package ownership

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Sort: an object is the PodSet's only while both its controller
// reference and its labels say so.
func TestSort(t *testing.T) {
	ps := operandtest.PodSet(1)
	mine := operandtest.ControlledByPodSet(ps.Name)
	matching := operandtest.WithLabels(operand.Labels(ps))
	other := operandtest.WithLabels(map[string]string{"app": "other"})
	for _, tc := range []struct {
		name string
		pod  *slimpod.Pod
		want string
	}{
		{"controlled and matching", operandtest.Pod("p", mine, matching), "owned"},
		{"controlled, matching, terminating", operandtest.Pod("p", mine, matching, operandtest.TerminatingSince(operandtest.Now)), "owned"},
		{"controlled, no longer matching", operandtest.Pod("p", mine, other), "unmatched"},
		{"controlled, not matching, terminating", operandtest.Pod("p", mine, other, operandtest.TerminatingSince(operandtest.Now)), "none"},
		{"orphan, matching", operandtest.Pod("p", matching), "orphan"},
		{"orphan, matching, terminating", operandtest.Pod("p", matching, operandtest.TerminatingSince(operandtest.Now)), "none"},
		{"orphan, not matching", operandtest.Pod("p", other), "none"},
		{"another controller's, matching", operandtest.Pod("p", matching, operandtest.ControlledBy("apps/v1", "ReplicaSet", "rs")), "none"},
		{"another PodSet's, matching", operandtest.Pod("p", matching, operandtest.ControlledByPodSet("other")), "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Sort([]*slimpod.Pod{tc.pod}, ps.UID, labels.SelectorFromSet(operand.Labels(ps)))
			got := map[string]int{"owned": len(c.Owned), "unmatched": len(c.Unmatched), "orphan": len(c.Orphans)}
			want := map[string]int{"owned": 0, "unmatched": 0, "orphan": 0}
			if tc.want != "none" {
				want[tc.want] = 1
			}
			NewWithT(t).Expect(got).To(Equal(want))
		})
	}
}

// Up to 0.4.0 a pod stripped of app.kubernetes.io/name, instance or
// managed-by was released; it still carries the PodSet's label, and is not
// taken back.
func TestOrphansReleasedByAnEarlierReleaseAreNotAdopted(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(1)
	full := operandtest.Pod("full")
	full.Labels = operand.Labels(ps)
	g.Expect(releasedByAnEarlierRelease(full)).To(BeFalse())
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"} {
		stripped := operandtest.Pod("stripped")
		stripped.Labels = operand.Labels(ps)
		delete(stripped.Labels, k)
		g.Expect(releasedByAnEarlierRelease(stripped)).To(BeTrue(), k)
	}
	// A template's own values count.
	charted := operandtest.Pod("charted")
	charted.Labels = operand.Labels(ps)
	charted.Labels["app.kubernetes.io/managed-by"] = "Helm"
	g.Expect(releasedByAnEarlierRelease(charted)).To(BeFalse())
}
