package controllers

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// noCanaryScope is the scope of a reconcile of a PodSet with a rollout under
// way and neither canary steps nor auto-rollback, as the canary and
// auto-rollback phases see it.
func noCanaryScope() (*PodSetReconciler, *podSetScope) {
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	ps.Spec.Replicas = ptr.To[int32](10)
	ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Partition: ptr.To[int32](2)}
	ps.Status.LastCompletedRevision = "web-1"
	s := &podSetScope{podSet: ps, record: newPodSetRecords().of(ps)}
	s.revisions.Update = &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}}
	return &PodSetReconciler{}, s
}

// A PodSet without canary steps pays nothing for them: the canary phase and
// auto-rollback's decision, which canary analysis added to every
// reconcile, allocate nothing for it.
func TestCanaryPhasesWithoutStepsAllocateNothing(t *testing.T) {
	r, s := noCanaryScope()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_ = r.advanceCanary(ctx, s)
		_ = r.decideRollback(ctx, s)
	})
	if allocs != 0 {
		t.Errorf("the canary and auto-rollback phases allocate %v times per reconcile of a PodSet without steps, want 0", allocs)
	}
	if s.canary != nil || s.canaryPartition != nil || s.record.canary != nil {
		t.Errorf("a PodSet without steps got canary state: %+v %v %+v", s.canary, s.canaryPartition, s.record.canary)
	}
}

// BenchmarkCanaryPhasesWithoutSteps prints what the canary phase and
// auto-rollback's decision cost a reconcile of a PodSet without steps.
func BenchmarkCanaryPhasesWithoutSteps(b *testing.B) {
	r, s := noCanaryScope()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.advanceCanary(ctx, s)
		_ = r.decideRollback(ctx, s)
	}
}
