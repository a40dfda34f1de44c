package status

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
)

func TestStatusWriteCanWait(t *testing.T) {
	failing := appv1alpha1.PodSetStatus{Conditions: []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue}}}
	fine := appv1alpha1.PodSetStatus{Conditions: []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionFalse}}}
	none := appv1alpha1.PodSetStatus{}
	issued := Outcome{Attempted: true, Issued: 3}
	for _, tc := range []struct {
		name              string
		current, computed appv1alpha1.PodSetStatus
		outcome           Outcome
		want              bool
	}{
		{"pods just created: their events bring the real counts", fine, fine, issued, true},
		{"first reconcile of a new PodSet", none, fine, issued, true},
		{"nothing issued: write now", fine, fine, Outcome{Attempted: true}, false},
		{"not attempted: write now", fine, fine, Outcome{}, false},
		{"a failure: write now", fine, failing, Outcome{Attempted: true, Issued: 1, Err: errors.New("quota")}, false},
		{"a failure cleared: write now", failing, fine, issued, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(WriteCanWait(tc.current, tc.computed, tc.outcome)).To(Equal(tc.want))
		})
	}
}

func TestStatusWriteIsUrgent(t *testing.T) {
	failing := []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue}}
	counts := func(replicas, ready, available int32, conds ...metav1.Condition) appv1alpha1.PodSetStatus {
		return appv1alpha1.PodSetStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: available, Conditions: conds}
	}
	withRevision := func(st appv1alpha1.PodSetStatus, name string) appv1alpha1.PodSetStatus {
		st.UpdateRevision = name
		return st
	}
	withCollisions := func(st appv1alpha1.PodSetStatus, n int32) appv1alpha1.PodSetStatus {
		st.CollisionCount = &n
		return st
	}
	progressing := func(reason string) metav1.Condition {
		return metav1.Condition{Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason}
	}
	done, paused := progressing(appv1alpha1.ReasonNewRevisionAvailable), progressing(appv1alpha1.ReasonPaused)
	rolling := progressing(appv1alpha1.ReasonRollingUpdate)
	deadline := metav1.Condition{Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonProgressDeadlineExceeded}
	for _, tc := range []struct {
		name              string
		current, computed appv1alpha1.PodSetStatus
		desired           int32
		outcome           Outcome
		want              bool
	}{
		{"settled: every pod live, updated and available", counts(3, 2, 2), counts(3, 3, 3, done), 3, Outcome{}, true},
		{"settled at zero", counts(1, 1, 1), counts(0, 0, 0, done), 0, Outcome{}, true},
		{"settled where the rollout is paused", counts(3, 2, 2), counts(3, 3, 3, paused), 3, Outcome{}, true},
		{"all available but still rolling out", counts(3, 2, 2), counts(3, 3, 3, rolling), 3, Outcome{}, false},
		{"the progress deadline just passed", counts(3, 2, 2, rolling), counts(3, 2, 2, deadline), 3, Outcome{}, true},
		{"a new revision to record", withRevision(counts(3, 3, 3, done), "web-1"), withRevision(counts(3, 3, 3, rolling), "web-2"), 3, Outcome{}, true},
		{"a new PodSet's first revision: paced with its first progress", counts(0, 0, 0), withRevision(counts(1, 0, 0), "web-1"), 3, Outcome{}, false},
		{"a new collision count to record", counts(3, 3, 3, rolling), withCollisions(counts(3, 3, 3, rolling), 1), 3, Outcome{}, true},
		{"pods still turning ready", counts(3, 1, 1), counts(3, 2, 2), 3, Outcome{}, false},
		{"ready but not yet available", counts(3, 2, 2), counts(3, 3, 2), 3, Outcome{}, false},
		{"pods still being created", counts(1, 0, 0), counts(2, 0, 0), 3, Outcome{}, false},
		{"too many live pods, though all available", counts(5, 5, 5), counts(4, 4, 4), 3, Outcome{}, false},
		{"a failure starts", counts(1, 0, 0), counts(1, 0, 0, failing...), 3, Outcome{}, true},
		{"a failure ends", counts(1, 0, 0, failing...), counts(2, 0, 0), 3, Outcome{}, true},
		{"a failure goes on, in an earlier reconcile", counts(1, 0, 0, failing...), counts(2, 0, 0, failing...), 3, Outcome{}, false},
		{"a failure goes on, in this reconcile: its error overrides any requeue", counts(1, 0, 0, failing...), counts(2, 0, 0, failing...), 3,
			Outcome{Attempted: true, Err: errors.New("quota"), FailureReason: appv1alpha1.ReasonFailedCreate}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(WriteIsUrgent(tc.current, tc.computed, tc.desired, tc.outcome)).To(Equal(tc.want))
		})
	}
}

func TestStatusPacing(t *testing.T) {
	t0 := operandtest.Now
	for _, tc := range []struct {
		name     string
		interval time.Duration
		steps    func(p *Pacing, interval time.Duration)
		at       time.Time
		want     time.Duration
	}{
		{"never written: now", time.Second, func(*Pacing, time.Duration) {}, t0, 0},
		{"written just now: a full interval", time.Second, func(p *Pacing, i time.Duration) { p.Wrote(i, t0) }, t0, time.Second},
		{"written 300ms ago: the rest", time.Second, func(p *Pacing, i time.Duration) { p.Wrote(i, t0) }, t0.Add(300 * time.Millisecond), 700 * time.Millisecond},
		{"written an interval ago: now", time.Second, func(p *Pacing, i time.Duration) { p.Wrote(i, t0) }, t0.Add(time.Second), 0},
		{"the last write counts", time.Second, func(p *Pacing, i time.Duration) { p.Wrote(i, t0); p.Wrote(i, t0.Add(800*time.Millisecond)) }, t0.Add(time.Second), 800 * time.Millisecond},
		{"held back before any write: now", time.Second, func(p *Pacing, i time.Duration) { p.Held(i, t0) }, t0, 0},
		{"interval 0: never waits", 0, func(p *Pacing, i time.Duration) { p.Wrote(i, t0) }, t0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Pacing
			tc.steps(&p, tc.interval)
			NewWithT(t).Expect(p.Wait(tc.interval, tc.at)).To(Equal(tc.want))
		})
	}
}

// Pods replaced more often than the interval (each replacement a scaling
// step) must not hold the status back for ever: the write is due one
// interval after the first change that was not written.
func TestStatusPacingIsBoundedUnderChurn(t *testing.T) {
	g := NewWithT(t)
	const interval = time.Second
	var p Pacing
	p.Wrote(interval, operandtest.Now)
	t0 := operandtest.Now.Add(5 * time.Second)
	var firstDue time.Time
	for i := range 20 {
		now := t0.Add(time.Duration(i) * 300 * time.Millisecond)
		if p.Overdue(interval, now) {
			firstDue = now
			break
		}
		p.Scaled(interval, now)
	}
	g.Expect(firstDue).NotTo(BeZero(), "a scaling step every 300ms starved the status write")
	g.Expect(firstDue.Sub(t0)).To(BeNumerically("<=", 1200*time.Millisecond))

	// A single scaling step still spaces the next write by a whole interval.
	p.Wrote(interval, operandtest.Now)
	p.Scaled(interval, t0)
	g.Expect(p.Overdue(interval, t0.Add(100*time.Millisecond))).To(BeFalse())
	g.Expect(p.Wait(interval, t0.Add(100*time.Millisecond))).To(Equal(900 * time.Millisecond))

	// A change held back by the pacer is bounded the same way.
	p.Wrote(interval, t0)
	p.Held(interval, t0.Add(500*time.Millisecond))
	g.Expect(p.Wait(interval, t0.Add(600*time.Millisecond))).To(Equal(400 * time.Millisecond))
	g.Expect(p.Overdue(interval, t0.Add(1500*time.Millisecond))).To(BeTrue())
}
