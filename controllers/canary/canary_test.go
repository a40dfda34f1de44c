package canary

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func updated(v intstr.IntOrString) Step { return Step{UpdatedReplicas: &v} }
func pauseFor(d time.Duration) Step     { return Step{Pause: &Pause{Duration: &d}} }
func pauseUntilPromoted() Step          { return Step{Pause: &Pause{}} }
func analysisStep() Step                { return Step{Analysis: true} }

func TestAdvance(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	steps := []Step{
		updated(intstr.FromInt32(1)),      // 0
		analysisStep(),                    // 1
		updated(intstr.FromString("50%")), // 2
		pauseFor(10 * time.Minute),        // 3
		pauseUntilPromoted(),              // 4
	}
	at := func(step int, started time.Time) Progress {
		return Progress{Revision: "web-2", Step: step, StepStarted: started}
	}
	observed := func(edit func(*Observed)) Observed {
		o := Observed{Revision: "web-2", Replicas: 10, Now: t0.Add(time.Hour)}
		if edit != nil {
			edit(&o)
		}
		return o
	}
	for _, tc := range []struct {
		name       string
		steps      []Step
		progress   Progress
		observed   Observed
		step       int
		started    time.Time
		partition  int32
		done       bool
		paused     bool
		wakeAt     time.Time
		waiting    string
		notWaiting string
	}{
		{name: "a new revision starts at the first step", progress: Progress{Revision: "web-1", Step: 4, StepStarted: t0},
			observed: observed(nil), step: 0, started: t0.Add(time.Hour), partition: 9, waiting: "step 1 of 5: 0 of 1 updated pods available"},
		{name: "a count not yet available holds the step", progress: at(0, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 0 }), step: 0, started: t0, partition: 9},
		{name: "a count reached hands over to the analysis at once", progress: at(0, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 1 }), step: 1, started: t0.Add(time.Hour), partition: 9,
			waiting: "step 2 of 5: analysis not started"},
		{name: "an analysis running holds the partition", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 1; o.Analysis = "Running" }), step: 1, started: t0, partition: 9,
			waiting: "step 2 of 5: analysis Running"},
		{name: "a failed analysis is not this package's to act on: the step holds", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 1; o.Analysis = "Failed" }), step: 1, started: t0, partition: 9},
		{name: "a successful analysis moves to the percentage, rounded up", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.Replicas = 9; o.UpdatedAvailable = 1; o.Analysis = AnalysisSuccessful }),
			step:     2, started: t0.Add(time.Hour), partition: 4, waiting: "step 3 of 5: 1 of 5 updated pods available"},
		{name: "a timed pause keeps the last count and wakes at its end", progress: at(3, t0.Add(55*time.Minute)),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 5 }), step: 3, started: t0.Add(55 * time.Minute), partition: 5,
			paused: true, wakeAt: t0.Add(65 * time.Minute), waiting: "step 4 of 5: paused until 2026-12-06T11:05:00Z"},
		{name: "a timed pause over hands over to the pause until promoted", progress: at(3, t0.Add(50*time.Minute)),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 5 }), step: 4, started: t0.Add(time.Hour), partition: 5,
			paused: true, waiting: "step 5 of 5: paused until promoted"},
		{name: "a promotion of the current step completes it", progress: at(4, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 5; o.Promotion = &Promotion{Revision: "web-2", Step: 4} }),
			step:     5, started: t0.Add(time.Hour), partition: 0, done: true},
		{name: "a promotion of an earlier step does nothing", progress: at(4, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 5; o.Promotion = &Promotion{Revision: "web-2", Step: 3} }),
			step:     4, started: t0, partition: 5, paused: true},
		{name: "a promotion of another revision does nothing", progress: at(4, t0),
			observed: observed(func(o *Observed) { o.Promotion = &Promotion{Revision: "web-1", Step: 4} }),
			step:     4, started: t0, partition: 5, paused: true},
		{name: "a promotion of a step ahead does nothing", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 1; o.Promotion = &Promotion{Revision: "web-2", Step: 3} }),
			step:     1, started: t0, partition: 9},
		{name: "a full promotion skips every step, analyses included", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.Promotion = &Promotion{Revision: "web-2", Full: true} }),
			step:     5, started: t0.Add(time.Hour), partition: 0, done: true},
		{name: "a promoted analysis is done whatever its phase", progress: at(1, t0),
			observed: observed(func(o *Observed) {
				o.UpdatedAvailable = 1
				o.Analysis = "Inconclusive"
				o.Promotion = &Promotion{Revision: "web-2", Step: 1}
			}),
			step: 2, started: t0.Add(time.Hour), partition: 5},
		{name: "a hold keeps a step that is done", progress: at(0, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 1; o.Hold = true }), step: 0, started: t0, partition: 9},
		{name: "a hold keeps the step against a full promotion too", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.Hold = true; o.Promotion = &Promotion{Revision: "web-2", Full: true} }), step: 1, started: t0, partition: 9},
		{name: "after the last step the spec's partition applies", progress: at(5, t0),
			observed: observed(func(o *Observed) { o.Partition = 2 }), step: 5, started: t0, partition: 2, done: true},
		{name: "the spec's partition caps a step's count, which is then done", steps: []Step{updated(intstr.FromString("50%")), pauseUntilPromoted()},
			progress: at(0, t0), observed: observed(func(o *Observed) { o.Partition = 8; o.UpdatedAvailable = 2 }),
			step: 1, started: t0.Add(time.Hour), partition: 8, paused: true},
		{name: "a pause before any count moves no pod", steps: []Step{pauseUntilPromoted(), updated(intstr.FromInt32(3))},
			progress: at(0, t0), observed: observed(nil), step: 0, started: t0, partition: 10, paused: true},
		{name: "a smaller count than an earlier step's moves no pod back", steps: []Step{updated(intstr.FromInt32(5)), updated(intstr.FromInt32(2)), pauseUntilPromoted()},
			progress: at(1, t0), observed: observed(func(o *Observed) { o.UpdatedAvailable = 5 }), step: 2, started: t0.Add(time.Hour), partition: 5, paused: true},
		{name: "a count above replicas is replicas", steps: []Step{updated(intstr.FromInt32(50)), pauseUntilPromoted()},
			progress: at(0, t0), observed: observed(func(o *Observed) { o.UpdatedAvailable = 10 }), step: 1, started: t0.Add(time.Hour), partition: 0, paused: true},
		{name: "a percentage follows a scale-up", steps: []Step{updated(intstr.FromString("10%")), pauseUntilPromoted()},
			progress: at(0, t0), observed: observed(func(o *Observed) { o.Replicas = 30; o.UpdatedAvailable = 1 }), step: 0, started: t0, partition: 27,
			waiting: "1 of 3 updated pods available"},
		{name: "a successful analysis passes its own step only", steps: []Step{updated(intstr.FromInt32(1)), analysisStep(), pauseFor(0), analysisStep(), updated(intstr.FromString("100%"))},
			progress: at(1, t0), observed: observed(func(o *Observed) { o.UpdatedAvailable = 1; o.Analysis = AnalysisSuccessful }),
			step: 3, started: t0.Add(time.Hour), partition: 9, waiting: "step 4 of 5: analysis not started"},
		{name: "the last step done waits for the background analysis's first success, its pods as they are", progress: at(4, t0),
			observed: observed(func(o *Observed) {
				o.UpdatedAvailable = 5
				o.Promotion = &Promotion{Revision: "web-2", Step: 4}
				o.BackgroundPending = true
			}),
			step: 5, started: t0.Add(time.Hour), partition: 5, waiting: "steps done (5 of 5): the background analysis has no successful measurement yet"},
		{name: "a hold after the last step keeps the pods, the updated ones not moved back", progress: at(5, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable, o.UpdatedLive, o.Hold = 6, 7, true }),
			step:     5, started: t0, partition: 3, waiting: "steps done (5 of 5)", notWaiting: "background"},
		{name: "a hold after the last step keeps the pods against a full promotion too", progress: at(5, t0),
			observed: observed(func(o *Observed) {
				o.UpdatedLive, o.Hold = 5, true
				o.Promotion = &Promotion{Revision: "web-2", Full: true}
			}),
			step: 5, started: t0, partition: 5},
		{name: "a timed pause over but held wakes nothing", progress: at(3, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable, o.Hold = 5, true }), step: 3, started: t0, partition: 5,
			paused: true},
		{name: "the background analysis pending moves no updated pod back", progress: at(5, t0),
			observed: observed(func(o *Observed) { o.UpdatedLive, o.BackgroundPending = 8, true }),
			step:     5, started: t0, partition: 2, waiting: "the background analysis has no successful measurement yet"},
		{name: "the background analysis pending holds no step before the last", progress: at(0, t0),
			observed: observed(func(o *Observed) { o.UpdatedAvailable = 1; o.BackgroundPending = true }),
			step:     1, started: t0.Add(time.Hour), partition: 9, waiting: "step 2 of 5: analysis not started"},
		{name: "the spec's partition still caps the pods the background analysis waits on", steps: []Step{updated(intstr.FromString("50%"))},
			progress: at(1, t0), observed: observed(func(o *Observed) { o.Partition = 8; o.BackgroundPending = true }),
			step: 1, started: t0, partition: 8},
		{name: "a full promotion does not wait for the background analysis", progress: at(1, t0),
			observed: observed(func(o *Observed) { o.Promotion = &Promotion{Revision: "web-2", Full: true}; o.BackgroundPending = true }),
			step:     5, started: t0.Add(time.Hour), partition: 0, done: true},
		{name: "zero pauses chain in one call", steps: []Step{pauseFor(0), pauseFor(0), updated(intstr.FromInt32(1))},
			progress: at(0, t0), observed: observed(nil), step: 2, started: t0.Add(time.Hour), partition: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.steps
			if s == nil {
				s = steps
			}
			d, err := Advance(s, tc.progress, tc.observed)
			if err != nil {
				t.Fatal(err)
			}
			if d.Progress.Step != tc.step || !d.Progress.StepStarted.Equal(tc.started) || d.Progress.Revision != tc.observed.Revision {
				t.Errorf("progress %+v; want step %d started at %v, for %s", d.Progress, tc.step, tc.started, tc.observed.Revision)
			}
			if d.Partition != tc.partition || d.Done != tc.done || d.Paused != tc.paused || !d.WakeAt.Equal(tc.wakeAt) {
				t.Errorf("partition %d, done %v, paused %v, wake at %v; want %d, %v, %v, %v", d.Partition, d.Done, d.Paused, d.WakeAt, tc.partition, tc.done, tc.paused, tc.wakeAt)
			}
			if !strings.Contains(d.Waiting, tc.waiting) {
				t.Errorf("waiting %q; want %q in it", d.Waiting, tc.waiting)
			}
			if tc.notWaiting != "" && strings.Contains(d.Waiting, tc.notWaiting) {
				t.Errorf("waiting %q; want no %q in it", d.Waiting, tc.notWaiting)
			}
		})
	}
}

func TestAdvanceRefusesAStepWithNothingSet(t *testing.T) {
	_, err := Advance([]Step{{}}, Progress{}, Observed{Revision: "r", Replicas: 1, Now: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "steps[0] sets none of") {
		t.Fatalf("Advance = %v; want the error naming steps[0]", err)
	}
	_, err = Advance([]Step{{UpdatedReplicas: ptr.To(intstr.FromString("ten"))}}, Progress{}, Observed{Revision: "r", Replicas: 1, Now: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "steps[0]: updatedReplicas:") {
		t.Fatalf("Advance = %v; want the error naming steps[0].updatedReplicas", err)
	}
}
