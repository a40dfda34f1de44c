package status

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// WriteCanWait reports whether a status write can be left to the next
// reconcile: this one has just created or deleted pods, all successfully, so
// the counts it would write are already outdated, and the watch events of
// those very pods are bound to bring a reconcile that writes the real ones.
// A change of the ReplicaFailure condition is written at once, since only a
// reconcile that scales can set or clear it. On a large PodSet this saves one
// status write per scaling step, and a custom resource's status, with its
// list of pod names, is the API server's costliest write of the operator.
func WriteCanWait(current, computed appv1alpha1.PodSetStatus, outcome Outcome) bool {
	if outcome.Issued+outcome.Sent == 0 || outcome.Err != nil {
		return false
	}
	return !replicaFailureFlips(current, computed)
}

// WriteIsUrgent reports whether a computed status must be written at
// once rather than paced: it shows the PodSet settled (every wanted pod
// exists, runs the wanted revision and is available, and no other pod is
// live, or the rollout is paused there), which is what users and tools wait
// for, or the ReplicaFailure condition changes, the progress deadline has
// just passed, a new revision or collision count must be recorded, or this
// reconcile's scaling failed. A new PodSet's first revision is no news: it
// is written with its first progress, paced like any other (a PodSet of one
// pod would otherwise write its status twice, once before its pod exists).
// A failed reconcile returns its error, and
// controller-runtime then ignores RequeueAfter in favour of a backoff that
// grows to minutes: a write held back now could wait that long.
func WriteIsUrgent(current, computed appv1alpha1.PodSetStatus, desired int32, outcome Outcome) bool {
	progressing := meta.FindStatusCondition(computed.Conditions, appv1alpha1.ConditionProgressing)
	settled := computed.Replicas == desired && computed.AvailableReplicas == desired &&
		progressing != nil && (progressing.Reason == appv1alpha1.ReasonNewRevisionAvailable || progressing.Reason == appv1alpha1.ReasonPaused)
	return settled || outcome.Err != nil || replicaFailureFlips(current, computed) ||
		DeadlineJustExceeded(current, computed) ||
		(current.UpdateRevision != "" && computed.UpdateRevision != current.UpdateRevision) ||
		!equality.Semantic.DeepEqual(computed.CollisionCount, current.CollisionCount) ||
		// What auto-rollback decides and returns to: a later reconcile,
		// or another replica, must act on it.
		!equality.Semantic.DeepEqual(computed.AutoRollback, current.AutoRollback) ||
		computed.LastCompletedRevision != current.LastCompletedRevision ||
		// Where the canary stands, and its measurements: a new leader
		// resumes from what the status says. What a step waits for (its
		// message, which counts pods) is paced as the counts are.
		!equality.Semantic.DeepEqual(withoutMessage(computed.Canary), withoutMessage(current.Canary))
}

func withoutMessage(c *appv1alpha1.CanaryStatus) *appv1alpha1.CanaryStatus {
	if c == nil {
		return nil
	}
	c = c.DeepCopy()
	c.Message = ""
	return c
}

// DeadlineJustExceeded reports whether the computed status is the one that
// turns Progressing to ProgressDeadlineExceeded.
func DeadlineJustExceeded(current, computed appv1alpha1.PodSetStatus) bool {
	exceeded := func(st appv1alpha1.PodSetStatus) bool {
		c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
		return c != nil && c.Reason == appv1alpha1.ReasonProgressDeadlineExceeded
	}
	return !exceeded(current) && exceeded(computed)
}

func replicaFailureFlips(current, computed appv1alpha1.PodSetStatus) bool {
	failing := func(st appv1alpha1.PodSetStatus) bool {
		return meta.IsStatusConditionTrue(st.Conditions, appv1alpha1.ConditionReplicaFailure)
	}
	return failing(current) != failing(computed)
}

// Pacing spaces out the status writes of a PodSet that is still
// converging. While a thousand pods are created and turn Ready one by one,
// nearly every reconcile computes a new status, and writing each one (with
// its thousand pod names) cost the API server more than the pods themselves,
// slowing down everything else it serves, pod creation and binding included.
// Progress is therefore written at most once per interval; the status that
// shows the PodSet settled, and any change of ReplicaFailure, are written at
// once (see WriteIsUrgent), so the moment a PodSet is done is never
// reported late. A scaling step counts as a write for the spacing: its pods'
// events follow within the interval, usually with the status worth writing.
//
// The spacing is bounded by the first change that was not written: however
// often pods are replaced (each replacement a scaling step), a held-back
// status is written within one interval of the first change held back, so
// podNames, the counts and observedGeneration never freeze under churn.
//
// The reconciler keeps one in each PodSet's record; an interval of 0 writes
// every change.
type Pacing struct {
	// last is the last write or scaling step; zero before either.
	last time.Time
	// firstUnwritten is when the oldest change not yet written was held
	// back; zero when everything computed has been written.
	firstUnwritten time.Time
}

// Wait is how long the next progress write must still wait; 0 means now.
func (p *Pacing) Wait(interval time.Duration, now time.Time) time.Duration {
	if p.last.IsZero() {
		return 0
	}
	due := p.last.Add(interval)
	if !p.firstUnwritten.IsZero() {
		if bound := p.firstUnwritten.Add(interval); bound.Before(due) {
			due = bound
		}
	}
	return max(0, due.Sub(now))
}

// Overdue reports whether a change has been held back for a whole interval,
// so that the status must be written now, whatever else happened since.
func (p *Pacing) Overdue(interval time.Duration, now time.Time) bool {
	return interval > 0 && !p.firstUnwritten.IsZero() && now.Sub(p.firstUnwritten) >= interval
}

// Wrote records that the status was written at now.
func (p *Pacing) Wrote(interval time.Duration, now time.Time) {
	if interval > 0 {
		*p = Pacing{last: now}
	}
}

// Scaled records that the pods were scaled at now, and the changed status
// held back until their events come.
func (p *Pacing) Scaled(interval time.Duration, now time.Time) {
	if interval <= 0 {
		return
	}
	p.last = now
	if p.firstUnwritten.IsZero() {
		p.firstUnwritten = now
	}
}

// Held records that a changed status was held back at now.
func (p *Pacing) Held(interval time.Duration, now time.Time) {
	if interval > 0 && !p.last.IsZero() && p.firstUnwritten.IsZero() {
		p.firstUnwritten = now
	}
}
