package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func TestStatusChangedPredicate(t *testing.T) {
	base := unitPodSet(3)
	for _, tc := range []struct {
		name   string
		mutate func(*appv1alpha1.PodSet)
		want   bool
	}{
		{"nothing changed", func(*appv1alpha1.PodSet) {}, false},
		{"only a label changed", func(p *appv1alpha1.PodSet) { p.Labels = map[string]string{"team": "a"} }, false},
		{"status replicas changed", func(p *appv1alpha1.PodSet) { p.Status.Replicas = 2 }, true},
		{"status pod names changed", func(p *appv1alpha1.PodSet) { p.Status.PodNames = []string{"web-x"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.mutate(updated)
			got := statusChangedPredicate().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: updated})
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}
