package analysis

import (
	"strings"
	"testing"
	"time"
)

func tally(phases ...Phase) Tally {
	var t Tally
	for _, p := range phases {
		t = t.Add(p)
	}
	return t
}

func TestRunPhase(t *testing.T) {
	const S, F, I, E = Successful, Failed, Inconclusive, Error
	limits := Limits{Count: 3, FailureLimit: 0, InconclusiveLimit: 1, ConsecutiveErrorLimit: 2}
	for _, tc := range []struct {
		name    string
		limits  Limits
		phases  []Phase
		want    RunPhase
		message string
	}{
		{name: "nothing taken yet", limits: limits, want: Running, message: "0 of 3 measurements taken"},
		{name: "count reached, all successful", limits: limits, phases: []Phase{S, S, S}, want: RunSuccessful},
		{name: "one failure over a failureLimit of 0 fails at once", limits: limits, phases: []Phase{S, F}, want: RunFailed,
			message: "1 of 2 measurements failed, more than failureLimit 0"},
		{name: "failures within the limit are borne", limits: Limits{Count: 3, FailureLimit: 1, ConsecutiveErrorLimit: 2}, phases: []Phase{F, S, S}, want: RunSuccessful},
		{name: "errors do not count towards count", limits: limits, phases: []Phase{S, E, S, E}, want: Running, message: "2 of 3"},
		{name: "a value resets the consecutive errors", limits: limits, phases: []Phase{E, E, S, E, E, S, S}, want: RunSuccessful},
		{name: "errors in a row past the limit hold", limits: limits, phases: []Phase{S, E, E, E}, want: RunError,
			message: "3 measurements in a row had errors, more than consecutiveErrorLimit 2"},
		{name: "a run of errors only never succeeds", limits: Limits{Count: 1, ConsecutiveErrorLimit: 4}, phases: []Phase{E, E, E, E, E}, want: RunError},
		{name: "inconclusive past the limit holds", limits: limits, phases: []Phase{I, S, I}, want: RunInconclusive,
			message: "2 of 3 measurements were inconclusive, more than inconclusiveLimit 1"},
		{name: "no successful measurement at the count holds", limits: Limits{Count: 2, FailureLimit: 2, InconclusiveLimit: 2}, phases: []Phase{F, I}, want: RunInconclusive,
			message: "none of 2 measurements was successful"},
		{name: "a failure decides before a hold", limits: limits, phases: []Phase{I, I, F}, want: RunFailed},
		{name: "a background run never completes by count", limits: Limits{ConsecutiveErrorLimit: 2}, phases: []Phase{S, S, S, S, S, S}, want: Running,
			message: "6 of unbounded measurements taken"},
		{name: "an unknown phase counts nothing and resets nothing", limits: limits, phases: []Phase{S, E, E, "", "Pending", E}, want: RunError, message: "3 measurements in a row"},
		{name: "a background run fails like any", limits: Limits{ConsecutiveErrorLimit: 2}, phases: []Phase{S, S, F}, want: RunFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, message := tally(tc.phases...).Phase(tc.limits)
			if got != tc.want || !strings.Contains(message, tc.message) {
				t.Fatalf("Phase = %s, %q; want %s, %q", got, message, tc.want, tc.message)
			}
			if got.Done() != (got != Running) {
				t.Fatalf("%s.Done() = %v", got, got.Done())
			}
		})
	}
}

func TestNextMeasurement(t *testing.T) {
	start := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	if got := NextMeasurement(start, time.Time{}, 30*time.Second, time.Minute); !got.Equal(start.Add(90 * time.Second)) {
		t.Errorf("the first measurement is due at %v; want the initial delay and an interval after the start", got)
	}
	last := start.Add(95 * time.Second)
	if got := NextMeasurement(start, last, 30*time.Second, time.Minute); !got.Equal(last.Add(time.Minute)) {
		t.Errorf("the next measurement is due at %v; want an interval after the last", got)
	}
}
