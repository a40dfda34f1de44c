package controllers

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestStatusWriteCanWait(t *testing.T) {
	failing := appv1alpha1.PodSetStatus{Conditions: []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue}}}
	fine := appv1alpha1.PodSetStatus{Conditions: []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionFalse}}}
	none := appv1alpha1.PodSetStatus{}
	issued := scaleOutcome{attempted: true, issued: 3}
	for _, tc := range []struct {
		name              string
		current, computed appv1alpha1.PodSetStatus
		outcome           scaleOutcome
		want              bool
	}{
		{"pods just created: their events bring the real counts", fine, fine, issued, true},
		{"first reconcile of a new PodSet", none, fine, issued, true},
		{"nothing issued: write now", fine, fine, scaleOutcome{attempted: true}, false},
		{"not attempted: write now", fine, fine, scaleOutcome{}, false},
		{"a failure: write now", fine, failing, scaleOutcome{attempted: true, issued: 1, err: errors.New("quota")}, false},
		{"a failure cleared: write now", failing, fine, issued, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(statusWriteCanWait(tc.current, tc.computed, tc.outcome)).To(Equal(tc.want))
		})
	}
}
