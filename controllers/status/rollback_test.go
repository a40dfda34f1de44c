package status

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
)

// TestComputeStatusUnderAutoRollback: what the status says of
// auto-rollback's decisions, and when a revision is recorded as the last
// completed one.
func TestComputeStatusUnderAutoRollback(t *testing.T) {
	now := operandtest.Now
	available := func(name string) *slimpod.Pod {
		return operandtest.Pod(name, operandtest.ReadySince(now.Add(-time.Minute)))
	}
	rolled := &appv1alpha1.AutoRollbackStatus{FailedRevision: "web-bad", Revision: "web-good", Trigger: "RestartLimit",
		Message: "container podset of pod web-x restarted 3 times since it took the revision (limit 3)", Time: metav1.NewTime(now)}
	stopped := rolled.DeepCopy()
	stopped.Stopped = true
	nowhere := &appv1alpha1.AutoRollbackStatus{FailedRevision: "web-bad", Trigger: "CrashLoopBackOff",
		Message: "container podset of pod web-x has waited in CrashLoopBackOff for 1m0s (grace 1m0s)", Time: metav1.NewTime(now)}
	input := func(replicas, updatedLive, updatedAvailable, oldLive int) *rollout.Input {
		s, err := rollout.Resolve(replicas, false, false, nil, nil, 0)
		if err != nil {
			panic(err)
		}
		return &rollout.Input{Replicas: replicas, Strategy: s, Updated: rollout.Group{Live: updatedLive, Available: updatedAvailable},
			Old: rollout.Group{Live: oldLive, Available: oldLive}}
	}
	tests := []struct {
		name       string
		replicas   int32
		pods       []*slimpod.Pod
		observed   Observed
		prevLast   string
		wantReason string
		wantStatus metav1.ConditionStatus
		wantMsg    string
		wantLast   string
		wantRolled *appv1alpha1.AutoRollbackStatus
	}{{
		name: "a completed rollout is recorded as the last completed revision", replicas: 2,
		pods:     []*slimpod.Pod{available("a"), available("b")},
		observed: Observed{UpdateRevision: "web-good", TargetRevision: "web-good", Rollout: input(2, 2, 2, 0)},
		prevLast: "web-older", wantReason: appv1alpha1.ReasonNewRevisionAvailable, wantStatus: metav1.ConditionTrue, wantLast: "web-good",
	}, {
		name: "a rollout under way records nothing", replicas: 2,
		pods:     []*slimpod.Pod{available("a"), available("b")},
		observed: Observed{UpdateRevision: "web-new", TargetRevision: "web-new", Rollout: input(2, 1, 1, 1)},
		prevLast: "web-good", wantReason: appv1alpha1.ReasonRollingUpdate, wantStatus: metav1.ConditionTrue, wantLast: "web-good",
	}, {
		name: "scaled to 0 proves nothing", replicas: 0,
		observed: Observed{UpdateRevision: "web-new", TargetRevision: "web-new", Rollout: input(0, 0, 0, 0)},
		prevLast: "web-good", wantReason: appv1alpha1.ReasonNewRevisionAvailable, wantStatus: metav1.ConditionTrue, wantLast: "web-good",
	}, {
		name: "rolling back", replicas: 2,
		pods: []*slimpod.Pod{available("a"), available("b")},
		observed: Observed{UpdateRevision: "web-bad", TargetRevision: "web-good", Rollout: input(2, 1, 1, 1),
			Rollback: Rollback{Status: rolled}},
		prevLast: "web-good", wantReason: appv1alpha1.ReasonRolledBack, wantStatus: metav1.ConditionFalse,
		wantMsg:  "revision web-bad failed (RestartLimit: container podset of pod web-x restarted 3 times since it took the revision (limit 3)); rolling the pods back to revision web-good: 1 of 2 run it",
		wantLast: "web-good", wantRolled: rolled,
	}, {
		name: "rolled back", replicas: 2,
		pods: []*slimpod.Pod{available("a"), available("b")},
		observed: Observed{UpdateRevision: "web-bad", TargetRevision: "web-good", Rollout: input(2, 2, 2, 0),
			Rollback: Rollback{Status: rolled}},
		prevLast: "web-good", wantReason: appv1alpha1.ReasonRolledBack, wantStatus: metav1.ConditionFalse,
		wantMsg: "all 2 pods are back on revision web-good", wantLast: "web-good", wantRolled: rolled,
	}, {
		name: "stopped", replicas: 2,
		pods: []*slimpod.Pod{available("a"), available("b")},
		observed: Observed{UpdateRevision: "web-bad", TargetRevision: "web-good", Rollout: input(2, 1, 1, 1),
			Rollback: Rollback{Status: stopped}},
		prevLast: "web-good", wantReason: appv1alpha1.ReasonRollbackStopped, wantStatus: metav1.ConditionFalse,
		wantMsg: "the pods are left as they are", wantLast: "web-good", wantRolled: stopped,
	}, {
		name: "failed with nothing to return to", replicas: 2,
		pods: []*slimpod.Pod{available("a"), available("b")},
		observed: Observed{UpdateRevision: "web-bad", TargetRevision: "web-bad", Rollout: input(2, 2, 0, 0),
			Rollback: Rollback{Status: nowhere}},
		wantReason: appv1alpha1.ReasonRolloutFailed, wantStatus: metav1.ConditionFalse,
		wantMsg:    "revision web-bad failed (CrashLoopBackOff: container podset of pod web-x has waited in CrashLoopBackOff for 1m0s (grace 1m0s)); no revision completed before it",
		wantRolled: nowhere,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}}
			ps.Spec.Replicas = ptr.To(tt.replicas)
			ps.Status.LastCompletedRevision = tt.prevLast
			st := Compute(ps, tt.pods, tt.observed, Outcome{}, now)
			// Stable: the same pods a moment later give the same status,
			// so that a PodSet in any of these states is not written
			// again and again.
			again := ps.DeepCopy()
			again.Status = st
			g.Expect(Compute(again, tt.pods, tt.observed, Outcome{}, now.Add(time.Second))).To(Equal(st))
			c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
			g.Expect(c.Reason).To(Equal(tt.wantReason), c.Message)
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
			g.Expect(st.LastCompletedRevision).To(Equal(tt.wantLast))
			g.Expect(st.AutoRollback).To(Equal(tt.wantRolled))
			stalled := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionStalled)
			reconciling := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionReconciling)
			if tt.wantStatus == metav1.ConditionFalse {
				// Failed to kstatus and Degraded to Argo CD, with the
				// same reason.
				g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(stalled.Reason).To(Equal(tt.wantReason))
				g.Expect(reconciling.Status).To(Equal(metav1.ConditionFalse))
			} else {
				g.Expect(stalled.Status).To(Equal(metav1.ConditionFalse))
			}
		})
	}
}

// TestARetryStartsTheDeadlineAfresh: once a rollback is forgotten (a retry of
// the failed revision, whose name the status keeps as the update revision
// all along), the rollout to it gets a whole progress deadline, however long
// the PodSet stayed rolled back.
func TestARetryStartsTheDeadlineAfresh(t *testing.T) {
	g := NewWithT(t)
	now := operandtest.Now
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}}
	ps.Spec.Replicas = ptr.To(int32(2))
	ps.Spec.ProgressDeadlineSeconds = ptr.To(int32(60))
	long := metav1.NewTime(now.Add(-time.Hour))
	ps.Status = appv1alpha1.PodSetStatus{
		ObservedGeneration: 1, UpdateRevision: "web-bad", LastCompletedRevision: "web-good", LastProgressTime: &long,
		AutoRollback: &appv1alpha1.AutoRollbackStatus{FailedRevision: "web-bad", Revision: "web-good", Trigger: "RestartLimit",
			Time: long, Complete: true},
		Conditions: []metav1.Condition{{Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: appv1alpha1.ReasonRolledBack, LastTransitionTime: long}},
	}
	s, err := rollout.Resolve(2, false, false, nil, nil, 0)
	g.Expect(err).NotTo(HaveOccurred())
	pods := []*slimpod.Pod{
		operandtest.Pod("a", operandtest.ReadySince(now.Add(-time.Hour))),
		operandtest.Pod("b", operandtest.ReadySince(now.Add(-time.Hour))),
	}
	// The pods still run web-good (old to the update revision web-bad).
	in := &rollout.Input{Replicas: 2, Strategy: s, Old: rollout.Group{Live: 2, Available: 2}}
	st := Compute(ps, pods, Observed{UpdateRevision: "web-bad", TargetRevision: "web-bad", Rollout: in}, Outcome{}, now)
	g.Expect(st.AutoRollback).To(BeNil())
	g.Expect(st.LastProgressTime.Time).To(Equal(now))
	c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonRollingUpdate))
}
