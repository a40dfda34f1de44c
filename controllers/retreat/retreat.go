// Package retreat decides whether the revision a PodSet rolls its pods to
// has failed, and what auto-rollback does about it: retreat to the last
// revision that completed, hold there while the spec still asks for the
// failed one, or stop when the last good revision fails too. It is pure: it
// reads what the reconciler observed and a time it is given, and writes
// nothing.
//
// The rules are those of the progressive-delivery tools users otherwise add
// for this (Argo Rollouts' progressDeadlineAbort, Flagger, krane), with what
// their issue trackers show going wrong ruled out:
//   - only a rollout in progress can fail: a completed one, a paused one and
//     a scale change never do;
//   - a failure is the new pods' own: a container that restarts too often
//     since its pod took the revision (which catches pods that flap Ready
//     between crashes), or one that waits in a reason that only a change of
//     template cures for longer than a grace period; pods deleted, evicted
//     or not scheduled are not failures (the progress deadline covers them);
//   - the retreat goes to the last revision that completed, never "the
//     previous one", and happens at most once per failed revision: the
//     spec, which the operator never writes, still asks for the failed
//     template, so a re-apply of it holds the retreat; a new template or an
//     explicit retry starts a fresh rollout;
//   - if the last good revision fails too, it stops and does nothing more.
//
// The reconciler's phase decideRollback (controllers/auto_rollback.go)
// hands it what it observed and acts on the decision.
package retreat

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Trigger is what made the update revision count as failed.
type Trigger string

const (
	// ProgressDeadlineExceeded: spec.progressDeadlineSeconds passed with no
	// progress (the Progressing condition's reason of the same name).
	ProgressDeadlineExceeded Trigger = "ProgressDeadlineExceeded"
	// RestartLimit: a container restarted at least Thresholds.RestartLimit
	// times since its pod took the revision.
	RestartLimit Trigger = "RestartLimit"
	// CrashLoopBackOff: a container waited in CrashLoopBackOff longer than
	// the grace period.
	CrashLoopBackOff Trigger = "CrashLoopBackOff"
	// ImagePullFailure: a container waited in ErrImagePull or
	// ImagePullBackOff longer than the grace period.
	ImagePullFailure Trigger = "ImagePullFailure"
	// InvalidImageName: a container's image reference does not parse,
	// for longer than the grace period.
	InvalidImageName Trigger = "InvalidImageName"
	// CreateContainerFailure: a container waited in
	// CreateContainerConfigError or CreateContainerError (a missing
	// ConfigMap or Secret key, a bad command) longer than the grace period.
	CreateContainerFailure Trigger = "CreateContainerFailure"
	// AnalysisFailed: a canary analysis failed more measurements than its
	// failureLimit.
	AnalysisFailed Trigger = "AnalysisFailed"
	// Aborted: the user aborted the rollout
	// (app.example.com/rollout-abort).
	Aborted Trigger = "Aborted"
)

// waitingTriggers maps the kubelet's waiting reasons that only a change of
// template cures to their trigger. Other reasons (ContainerCreating,
// PodInitializing) are a start that is still under way.
var waitingTriggers = map[string]Trigger{
	"CrashLoopBackOff":           CrashLoopBackOff,
	"ErrImagePull":               ImagePullFailure,
	"ImagePullBackOff":           ImagePullFailure,
	"InvalidImageName":           InvalidImageName,
	"CreateContainerConfigError": CreateContainerFailure,
	"CreateContainerError":       CreateContainerFailure,
}

// WaitingReasons are the waiting reasons that count for a trigger, the
// ones WaitingTrigger knows.
func WaitingReasons() []string {
	return slices.Sorted(maps.Keys(waitingTriggers))
}

// WaitingTrigger is the trigger a container's waiting reason counts
// for, if it counts for one.
func WaitingTrigger(reason string) (Trigger, bool) {
	t, ok := waitingTriggers[reason]
	return t, ok
}

// Thresholds are the PodSet's limits for the failure of one pod.
type Thresholds struct {
	// RestartLimit is how many restarts of one container since its pod
	// took the revision make the revision failed; 0 turns the check off.
	RestartLimit int32
	// WaitingGrace is how long a container may wait in a reason of
	// waitingTriggers before the revision counts as failed.
	WaitingGrace time.Duration
}

// Container is what the classifier reads of one container of a pod that
// runs the revision under test.
type Container struct {
	Name string
	// RestartsSinceRevision is the container's restarts since its pod took
	// the revision (for a pod updated in place, the restarts before the
	// update are not the revision's).
	RestartsSinceRevision int32
	// WaitingReason is the kubelet's reason for a waiting container, empty
	// when it is not waiting.
	WaitingReason string
	// WaitingSince is when the reconciler first saw the container waiting
	// in a reason of the same trigger as WaitingReason (ErrImagePull and
	// ImagePullBackOff, which the kubelet alternates, are one).
	WaitingSince time.Time
}

// Pod is one pod that runs the revision under test.
type Pod struct {
	Name       string
	Containers []Container
}

// Failure says why a revision failed: the trigger, and the pod and
// container that showed it (empty for the progress deadline).
type Failure struct {
	Trigger   Trigger
	Pod       string
	Container string
	// Detail is a sentence for the condition and the event.
	Detail string
}

// Classify returns the first failure among pods (in name order, so that the
// same pods give the same answer) at time now, and false when none of
// them has failed yet.
func Classify(pods []Pod, th Thresholds, now time.Time) (Failure, bool) {
	pods = slices.SortedFunc(slices.Values(pods), func(a, b Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range pods {
		for _, c := range p.Containers {
			if th.RestartLimit > 0 && c.RestartsSinceRevision >= th.RestartLimit {
				return Failure{Trigger: RestartLimit, Pod: p.Name, Container: c.Name,
					Detail: fmt.Sprintf("container %s of pod %s restarted %d times since it took the revision (limit %d)", c.Name, p.Name, c.RestartsSinceRevision, th.RestartLimit)}, true
			}
			trigger, ok := waitingTriggers[c.WaitingReason]
			if !ok || c.WaitingSince.IsZero() {
				continue
			}
			if waited := now.Sub(c.WaitingSince); waited >= th.WaitingGrace {
				return Failure{Trigger: trigger, Pod: p.Name, Container: c.Name,
					Detail: fmt.Sprintf("container %s of pod %s has waited in %s for %s (grace %s)", c.Name, p.Name, c.WaitingReason, waited.Round(time.Second), th.WaitingGrace)}, true
			}
		}
	}
	return Failure{}, false
}

// Observed is what the reconciler knows of a PodSet when it decides.
type Observed struct {
	// Enabled: the PodSet asks for auto-rollback.
	Enabled bool
	// Paused: spec.updateStrategy.rollingUpdate.paused. The clock stops:
	// a paused rollout never fails.
	Paused bool
	// UpdateRevision is the revision of the spec's template.
	UpdateRevision string
	// LastCompletedRevision is the last revision that every pod ran,
	// available (status); empty before the first rollout completed.
	LastCompletedRevision string
	// RetreatedFrom is the failed revision the PodSet retreated from
	// (status); empty when it has not retreated.
	RetreatedFrom string
	// RetreatedAt is when the retreat from RetreatedFrom was recorded.
	RetreatedAt time.Time
	// RetreatComplete: every pod runs the revision retreated to, available.
	// From then on the retreat is a completed rollout: its pods failing
	// later, or a scale change, are no failure of the retreat.
	RetreatComplete bool
	// Stopped: the PodSet stopped, its last good revision having failed
	// during the retreat from RetreatedFrom (status).
	Stopped bool
	// Retry is the retreat the user asked to try again; zero when none.
	Retry Retry
	// DeadlineExceeded: the rollout to the revision under test (the update
	// revision, or while retreated the last good one) made no progress for
	// spec.progressDeadlineSeconds.
	DeadlineExceeded bool
	// Complete: the rollout to the update revision has nothing left to
	// do (every pod it wants runs the revision, available; under a
	// partition, the partition's share). A rollout that completed has not
	// failed: its pods failing later are not its failure.
	Complete bool
	// Failure is Classify's answer for the pods of the revision under
	// test, nil when none failed.
	Failure *Failure
}

// Action is what auto-rollback does.
type Action string

const (
	// None: roll to the update revision as usual.
	None Action = "None"
	// Report: the update revision failed and there is no completed
	// revision to return to; say so, do not retreat.
	Report Action = "Report"
	// Retreat: return the pods to Decision.Target, the last revision that
	// completed, within maxSurge and maxUnavailable.
	Retreat Action = "Retreat"
	// Hold: stay retreated (or keep retreating) to Decision.Target: the
	// spec still asks for the revision that failed.
	Hold Action = "Hold"
	// Stop: the last good revision failed too; touch no pod until the
	// spec changes or the user retries.
	Stop Action = "Stop"
	// Resume: a new template, or a retry of the failed one: forget the
	// retreat and roll to the update revision as usual.
	Resume Action = "Resume"
)

// Decision is what auto-rollback does and why.
type Decision struct {
	Action Action
	// Target is the revision the pods go to under Retreat and Hold.
	Target string
	// Failed is the revision that failed (Report, Retreat, Stop).
	Failed string
	// Failure is why, for Report, Retreat and Stop.
	Failure Failure
	// Retried, under Resume: the user's retry ended the retreat, not a
	// spec that asks for another revision.
	Retried bool
}

// Retry names a retreat to try again by the revision retreated from and the
// time of the retreat, to the second (as the status carries it). A request
// answers that retreat only: when the revision fails again, the new retreat
// has a new time, so a request that nobody clears cannot start a loop of
// retreats.
type Retry struct {
	From string
	At   time.Time
}

// asks reports whether the retry asks to try the retreat o reports again.
// It counts once the retreat completed or stopped: a retreat under way
// still has pods of the failed revision, whose failures would only end
// the retry at once.
func (r Retry) asks(o Observed) bool {
	return r.From != "" && r.From == o.RetreatedFrom &&
		r.At.Truncate(time.Second).Equal(o.RetreatedAt.Truncate(time.Second)) &&
		(o.RetreatComplete || o.Stopped)
}

// Decide returns what auto-rollback does for what the reconciler observed.
func Decide(o Observed) Decision {
	if !o.Enabled {
		return Decision{Action: None}
	}
	failure, failed := o.failure()
	if o.RetreatedFrom != "" {
		// The retreat belongs to one failed revision: a spec that asks
		// for another, or a retry of that one, starts afresh.
		if o.RetreatedFrom != o.UpdateRevision {
			return Decision{Action: Resume}
		}
		if o.Retry.asks(o) {
			return Decision{Action: Resume, Retried: true}
		}
		switch {
		case o.Stopped:
			return Decision{Action: Stop, Failed: o.LastCompletedRevision}
		case failed && !o.Paused && !o.RetreatComplete:
			// The revision retreated to fails as well: no third try.
			return Decision{Action: Stop, Failed: o.LastCompletedRevision, Failure: failure}
		default:
			return Decision{Action: Hold, Target: o.LastCompletedRevision, Failed: o.RetreatedFrom}
		}
	}
	// Only a rollout in progress can fail: not a paused one, and not a
	// PodSet whose pods already run the completed revision (a scale
	// change, or pods that fail long after their rollout completed).
	if o.Paused || !failed || o.Complete || o.UpdateRevision == o.LastCompletedRevision {
		return Decision{Action: None}
	}
	if o.LastCompletedRevision == "" {
		return Decision{Action: Report, Failed: o.UpdateRevision, Failure: failure}
	}
	return Decision{Action: Retreat, Target: o.LastCompletedRevision, Failed: o.UpdateRevision, Failure: failure}
}

// failure is the failure of the revision under test: its pods' own first,
// then the progress deadline.
func (o Observed) failure() (Failure, bool) {
	if o.Failure != nil {
		return *o.Failure, true
	}
	if o.DeadlineExceeded {
		return Failure{Trigger: ProgressDeadlineExceeded, Detail: "the rollout made no progress for spec.progressDeadlineSeconds"}, true
	}
	return Failure{}, false
}
