package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// sortClaims: an object is the PodSet's only while both its controller
// reference and its labels say so.
func TestSortClaims(t *testing.T) {
	ps := unitPodSet(1)
	mine := controlledByPodSet(ps.Name)
	matching := withPodLabels(operand.Labels(ps))
	other := withPodLabels(map[string]string{"app": "other"})
	for _, tc := range []struct {
		name string
		pod  *slimpod.Pod
		want string
	}{
		{"controlled and matching", unitPod("p", mine, matching), "owned"},
		{"controlled, matching, terminating", unitPod("p", mine, matching, terminatingSince(unitNow)), "owned"},
		{"controlled, no longer matching", unitPod("p", mine, other), "unmatched"},
		{"controlled, not matching, terminating", unitPod("p", mine, other, terminatingSince(unitNow)), "none"},
		{"orphan, matching", unitPod("p", matching), "orphan"},
		{"orphan, matching, terminating", unitPod("p", matching, terminatingSince(unitNow)), "none"},
		{"orphan, not matching", unitPod("p", other), "none"},
		{"another controller's, matching", unitPod("p", matching, controlledBy("apps/v1", "ReplicaSet", "rs")), "none"},
		{"another PodSet's, matching", unitPod("p", matching, controlledByPodSet("other")), "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sortClaims([]*slimpod.Pod{tc.pod}, ps.UID, labels.SelectorFromSet(operand.Labels(ps)))
			got := map[string]int{"owned": len(c.owned), "unmatched": len(c.unmatched), "orphan": len(c.orphans)}
			want := map[string]int{"owned": 0, "unmatched": 0, "orphan": 0}
			if tc.want != "none" {
				want[tc.want] = 1
			}
			NewWithT(t).Expect(got).To(Equal(want))
		})
	}
}
