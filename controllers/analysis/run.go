package analysis

import (
	"fmt"
	"time"
)

// Limits are how many measurements a run takes and how many of each bad
// verdict it bears.
type Limits struct {
	// Count is how many measurements with a value (Successful, Failed or
	// Inconclusive) the run takes; errors are retried and do not count. 0
	// takes measurements until the run is stopped: a background analysis,
	// over the whole rollout.
	Count int32
	// FailureLimit is how many Failed measurements the run bears; one more
	// fails it.
	FailureLimit int32
	// InconclusiveLimit is how many Inconclusive measurements the run
	// bears; one more holds it for a person to decide.
	InconclusiveLimit int32
	// ConsecutiveErrorLimit is how many Error measurements in a row the run
	// bears; one more holds it for a person to decide.
	ConsecutiveErrorLimit int32
}

// Tally counts a run's measurements by verdict.
type Tally struct {
	Successful, Failed, Inconclusive, Errors int32
	// ConsecutiveErrors counts the Error measurements since the last one
	// that had a value.
	ConsecutiveErrors int32
}

// Add counts one more measurement; a phase that is none of the four
// counts nothing.
func (t Tally) Add(p Phase) Tally {
	switch p {
	case Successful:
		t.Successful++
	case Failed:
		t.Failed++
	case Inconclusive:
		t.Inconclusive++
	case Error:
		t.Errors++
		t.ConsecutiveErrors++
		return t
	default:
		return t
	}
	t.ConsecutiveErrors = 0
	return t
}

// Taken counts the measurements that had a value.
func (t Tally) Taken() int32 { return t.Successful + t.Failed + t.Inconclusive }

// RunPhase is where a run of measurements stands.
type RunPhase string

const (
	// Running: more measurements are due.
	Running RunPhase = "Running"
	// RunSuccessful: Count measurements were taken, at least one of them
	// Successful, and none of the limits was passed. The step is done.
	RunSuccessful RunPhase = "Successful"
	// RunFailed: more measurements failed than FailureLimit. The rollout
	// retreats.
	RunFailed RunPhase = "Failed"
	// RunInconclusive: more measurements were inconclusive than
	// InconclusiveLimit, or the run ended without a single Successful one.
	// The rollout holds, neither promoted nor retreated, until a person
	// promotes or aborts it.
	RunInconclusive RunPhase = "Inconclusive"
	// RunError: more errors in a row than ConsecutiveErrorLimit. The
	// rollout holds as for RunInconclusive.
	RunError RunPhase = "Error"
)

// Phase is where a run with this tally stands under l, and why. A failure
// decides before a hold, and a hold before a success: a run can only
// succeed with the evidence of at least one Successful measurement.
func (t Tally) Phase(l Limits) (RunPhase, string) {
	switch {
	case t.Failed > l.FailureLimit:
		return RunFailed, fmt.Sprintf("%d of %d measurements failed, more than failureLimit %d", t.Failed, t.Taken(), l.FailureLimit)
	case t.ConsecutiveErrors > l.ConsecutiveErrorLimit:
		return RunError, fmt.Sprintf("%d measurements in a row had errors, more than consecutiveErrorLimit %d", t.ConsecutiveErrors, l.ConsecutiveErrorLimit)
	case t.Inconclusive > l.InconclusiveLimit:
		return RunInconclusive, fmt.Sprintf("%d of %d measurements were inconclusive, more than inconclusiveLimit %d", t.Inconclusive, t.Taken(), l.InconclusiveLimit)
	case l.Count == 0 || t.Taken() < l.Count:
		return Running, fmt.Sprintf("%d of %s measurements taken", t.Taken(), countString(l.Count))
	case t.Successful == 0:
		return RunInconclusive, fmt.Sprintf("none of %d measurements was successful", t.Taken())
	}
	return RunSuccessful, fmt.Sprintf("%d of %d measurements successful", t.Successful, t.Taken())
}

func countString(n int32) string {
	if n == 0 {
		return "unbounded"
	}
	return fmt.Sprint(n)
}

// Done says whether p ends the run.
func (p RunPhase) Done() bool { return p != Running }

// NextMeasurement is when a run that started at started, and took its last
// measurement (of any verdict) at last, takes the next one: an interval
// after the last. The first is due initialDelay and one interval after the
// start, not at it: a rate over the last interval then covers the new pods'
// own traffic, where at the start it would find too few samples, return no
// series, and hold the rollout as inconclusive. A zero last means none was
// taken yet. The times are those the PodSet's status records, so a new
// leader picks up the schedule where the old one left it, and never
// measures twice in one interval.
func NextMeasurement(started, last time.Time, initialDelay, interval time.Duration) time.Time {
	if last.IsZero() {
		return started.Add(initialDelay + interval)
	}
	return last.Add(interval)
}
