// Package canary is the arithmetic of a rollout's canary steps
// (docs/canary-analysis.md): which step a rollout is at, what it waits for,
// and how many pods the partition keeps on the old revision meanwhile. It
// is pure: the reconciler hands it the steps, the progress recorded in the
// PodSet's status, and what it observed, and writes what Advance returns.
//
// A step is one of three:
//   - updatedReplicas: move pods until that many run the new revision
//     (a count, or a percentage of replicas rounded up), available;
//   - a pause, for a duration or until promoted;
//   - an analysis, until its run is Successful (the analysis package
//     judges it; a failure is auto-rollback's to act on, not this
//     package's).
//
// Between its updatedReplicas steps, the rollout holds the partition at the
// last step's count: a pause or an analysis never moves a pod. Before the
// first, no pod moves. After the last step, the spec's own partition
// applies, and the rollout goes on to every pod, unless a hold, or a
// background analysis without a successful measurement yet, keeps the pods
// as the steps left them. A step never moves pods back: a smaller count
// than an earlier step's keeps the earlier one.
package canary

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Step is one canary step; exactly one of its fields is set.
type Step struct {
	// UpdatedReplicas is how many pods run the new revision once the step
	// is done: a count, or a percentage of replicas, rounded up.
	UpdatedReplicas *intstr.IntOrString
	// Pause pauses the rollout.
	Pause *Pause
	// Analysis waits for an analysis run to succeed.
	Analysis bool
}

// Pause is a pause step.
type Pause struct {
	// Duration is how long the pause lasts; nil waits for a promotion.
	Duration *time.Duration
}

// Progress is where the steps stand, as status.canary records it.
type Progress struct {
	// Revision is the update revision the steps are for: a new one starts
	// them again.
	Revision string
	// Step is the index of the current step; len(steps) once all are
	// done.
	Step int
	// StepStarted is when the current step began.
	StepStarted time.Time
}

// AnalysisPhase is where the current step's analysis run stands, in the
// words of the analysis package's RunPhase.
type AnalysisPhase string

// The phases that move a step on. Any other (Running, Failed, a hold)
// keeps the step where it is.
const (
	// AnalysisSuccessful: the run succeeded, or a dry run ended.
	AnalysisSuccessful AnalysisPhase = "Successful"
)

// Promotion is a request to complete a step of a revision's rollout:
// `kubectl podset rollout promote` (Step), or every remaining step
// (`--full`).
type Promotion struct {
	Revision string
	Step     int
	Full     bool
}

// Observed is what the reconciler saw, for Advance.
type Observed struct {
	// Revision is the update revision.
	Revision string
	// Replicas is spec.replicas, Partition the spec's own partition.
	Replicas, Partition int32
	// UpdatedAvailable counts the available live pods of Revision.
	UpdatedAvailable int32
	// Analysis is the phase of the current step's analysis run, when the
	// current step is an analysis.
	Analysis AnalysisPhase
	// Promotion is the pending promotion, if any.
	Promotion *Promotion
	// Hold keeps the current step, whether it is done or not: a
	// background analysis holds the rollout where it is.
	Hold bool
	// BackgroundPending says that the background analysis has no
	// successful measurement yet: the steps, once all are done, keep the
	// last step's pods until it has one.
	BackgroundPending bool
	// UpdatedLive counts the live pods of Revision, available or not.
	UpdatedLive int32
	// Now is the time to judge pauses by, and to start steps at.
	Now time.Time
}

// Decision is the outcome of Advance.
type Decision struct {
	// Progress is where the steps stand now, for status.canary.
	Progress Progress
	// Partition is how many pods the rollout keeps on the old revision.
	Partition int32
	// Done says that every step is done: the rollout goes on as one
	// without steps.
	Done bool
	// Paused says that the current step is a pause.
	Paused bool
	// Waiting says what the current step waits for.
	Waiting string
	// WakeAt is when the current step ends by itself (a timed pause);
	// zero when it ends by an event (pods, a measurement, a promotion).
	WakeAt time.Time
}

// Advance moves the steps on from p as far as what was observed allows:
// each step that is done hands over to the next in the same call, so that
// a pause of 0 seconds, or a count already reached, costs no reconcile.
// Steps for another revision than o.Revision start again from the first.
func Advance(steps []Step, p Progress, o Observed) (Decision, error) {
	if p.Revision != o.Revision || p.StepStarted.IsZero() {
		p = Progress{Revision: o.Revision, StepStarted: o.Now}
	}
	p.Step = min(max(p.Step, 0), len(steps))
	full := o.Promotion != nil && o.Promotion.Revision == o.Revision && o.Promotion.Full
	if full && !o.Hold {
		p.Step, p.StepStarted = len(steps), o.Now
	}
	for p.Step < len(steps) {
		d, err := judge(steps, p, o)
		if err != nil || !d.stepDone || o.Hold {
			return d.Decision, err
		}
		p.Step, p.StepStarted = p.Step+1, o.Now
		// What was observed of the step's analysis was that step's: the
		// next analysis step has a run of its own, not yet begun.
		o.Analysis = ""
	}
	if (o.Hold || o.BackgroundPending && !full) && len(steps) > 0 {
		// Every step is done, but the rollout may not go on yet: the
		// pods stay as the steps left them (up to the last step's count,
		// and none moved back) until the hold ends, or the background
		// analysis has judged them once.
		target, err := updatedTarget(steps, o.Replicas)
		if err != nil {
			return Decision{}, err
		}
		target = max(min(target, max(o.Replicas-o.Partition, 0)), min(o.UpdatedLive, o.Replicas))
		d := Decision{Progress: p, Partition: o.Replicas - target, Waiting: fmt.Sprintf("steps done (%d of %d)", len(steps), len(steps))}
		if !o.Hold {
			d.Waiting += ": the background analysis has no successful measurement yet"
		}
		return d, nil
	}
	return Decision{Progress: p, Partition: o.Partition, Done: true}, nil
}

type judgement struct {
	Decision
	stepDone bool
}

// judge says whether the current step of p is done, and what the rollout
// does while it is not.
func judge(steps []Step, p Progress, o Observed) (judgement, error) {
	target, err := updatedTarget(steps[:p.Step+1], o.Replicas)
	if err != nil {
		return judgement{}, fmt.Errorf("steps[%d]: %w", p.Step, err)
	}
	// The spec's partition keeps pods on the old revision whatever the
	// steps say; a step counts as done at the most it allows.
	target = min(target, max(o.Replicas-o.Partition, 0))
	j := judgement{Decision: Decision{Progress: p, Partition: o.Replicas - target}}
	promoted := o.Promotion != nil && o.Promotion.Revision == o.Revision && !o.Promotion.Full && o.Promotion.Step == p.Step
	step := steps[p.Step]
	prefix := fmt.Sprintf("step %d of %d: ", p.Step+1, len(steps))
	switch {
	case step.UpdatedReplicas != nil:
		j.stepDone = o.UpdatedAvailable >= target || promoted
		j.Waiting = prefix + fmt.Sprintf("%d of %d updated pods available", min(o.UpdatedAvailable, target), target)
	case step.Pause != nil && step.Pause.Duration != nil:
		end := p.StepStarted.Add(*step.Pause.Duration)
		j.stepDone = !o.Now.Before(end) || promoted
		j.Paused = true
		if o.Now.Before(end) {
			// A pause over, but held, has nothing to wake for.
			j.WakeAt = end
		}
		j.Waiting = prefix + "paused until " + end.UTC().Format(time.RFC3339)
	case step.Pause != nil:
		j.stepDone = promoted
		j.Paused = true
		j.Waiting = prefix + "paused until promoted"
	case step.Analysis:
		j.stepDone = o.Analysis == AnalysisSuccessful || promoted
		phase := o.Analysis
		if phase == "" {
			phase = "not started"
		}
		j.Waiting = prefix + "analysis " + string(phase)
	default:
		return judgement{}, fmt.Errorf("steps[%d] sets none of updatedReplicas, pause and analysis", p.Step)
	}
	return j, nil
}

// updatedTarget is the most pods that any of steps (the steps so far) asks
// to run the new revision, for replicas; 0 before the first updatedReplicas
// step.
func updatedTarget(steps []Step, replicas int32) (int32, error) {
	var target int32
	for _, s := range steps {
		if s.UpdatedReplicas == nil {
			continue
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(s.UpdatedReplicas, int(replicas), true)
		if err != nil {
			return 0, fmt.Errorf("updatedReplicas: %w", err)
		}
		target = max(target, min(int32(n), replicas))
	}
	return target, nil
}
