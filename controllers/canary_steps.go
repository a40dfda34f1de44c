package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/analysis"
	"github.com/example/podset-operator/controllers/canary"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/status"
)

// Defaults of an analysis's fields, for objects that did not go through the
// API server's defaulting, and of count, which the schema leaves unset.
const (
	DefaultAnalysisIntervalSeconds       = 60
	DefaultAnalysisCount                 = 5
	DefaultAnalysisConsecutiveErrorLimit = 4
	// DefaultAnalysisNamespaceLabel is the label a series' namespace is in
	// (--analysis-namespace-label).
	DefaultAnalysisNamespaceLabel = "namespace"
	// maxMeasurementsKept is how many measurements status keeps per run.
	maxMeasurementsKept = 10
	// maxRunQuery bounds the query a run's status shows.
	maxRunQuery = 8192
)

// advanceCanary is the canary's phase (docs/canary-analysis.md). It moves
// the steps on as far as the pods, the step's analysis and a promotion
// allow (canary.Advance), and holds the pods that the current step does not
// move on the old revision, by raising the partition that the scaling
// phase reads. It takes the analysis's result from the runner, records it,
// and submits the next measurement when it is due. A failed analysis, or
// an abort, is a failure that decideRollback, next, retreats from.
//
// Where the steps stand is kept in status.canary, and in the record until
// a status write carries it, so that a new leader goes on from there.
func (r *PodSetReconciler) advanceCanary(_ context.Context, s *podSetScope) error {
	r.stepCanary(s, false)
	return nil
}

// stepCanary is advanceCanary's work. afresh starts the steps again from
// the first: auto-rollback has just resumed the rollout of the revision it
// retreated from (a retry), whose canary ended with the retreat.
func (r *PodSetReconciler) stepCanary(s *podSetScope, afresh bool) {
	ps, rs := s.podSet, &s.revisions
	s.canary, s.canaryPartition, s.canaryFailure, s.canaryCheckIn = nil, nil, nil, 0
	spec := canaryOf(ps)
	if spec == nil || rs.Update == nil || ps.DeletionTimestamp != nil {
		// Only a PodSet that had a canary can have runs to forget: every
		// other reconcile pays nothing here.
		if s.record.canary != nil || ps.Status.Canary != nil {
			r.forgetRuns(ps)
		}
		s.record.canary = nil
		return
	}
	prev := s.record.canary
	if prev == nil {
		prev = ps.Status.Canary
	}
	kept := prev
	if kept != nil && (kept.Revision != rs.Update.Name || afresh) {
		kept = nil
	}
	if s.rollout == nil {
		// The strategy does not resolve: no pod moves (the scaling phase
		// says why), and the steps stay where they are.
		s.canary = &status.Canary{Status: kept}
		return
	}
	// The times status keeps are to the second: a time kept finer in the
	// record would differ from the stored one on every reconcile.
	now := time.Now().Truncate(time.Second)
	retreating, target := r.retreatingFrom(s, rs.Update.Name)
	retreating = retreating && !afresh
	// Nothing to compare a canary with (no rollout completed yet), a
	// rollout that completed, or one that auto-rollback moves back to the
	// last completed revision: no step applies, and the status keeps what
	// it said.
	if lc := ps.Status.LastCompletedRevision; lc == "" || lc == rs.Update.Name || (retreating && target != "") {
		why := "the rollout is done"
		if retreating {
			why = "the rollout was rolled back"
		}
		kept = endBackgroundRun(kept, why)
		s.canary = &status.Canary{Status: kept, Done: true}
		s.record.canary = kept
		r.forgetRuns(ps)
		return
	}
	// A failure with no completed revision to return to (it was deleted):
	// the steps hold where they are, and no pod moves on.
	frozen := retreating
	// spec.updateStrategy.rollingUpdate.paused stops the steps where they
	// are: no step ends, and no measurement is taken (one in flight is
	// recorded on the resume). A timed pause's time counts on.
	paused := rolloutPaused(ps)

	cur := kept.DeepCopy()
	if cur == nil {
		r.forgetRuns(ps)
		cur = &appv1alpha1.CanaryStatus{Revision: rs.Update.Name, StepStartTime: metav1.NewTime(now)}
	}
	steps := canarySteps(spec)
	o := canary.Observed{
		Revision:         rs.Update.Name,
		Replicas:         ps.DesiredReplicas(),
		Partition:        ptr.Deref(spec.partition, 0),
		UpdatedAvailable: int32(s.rollout.Input.Updated.Available), //nolint:gosec // at most replicas + maxSurge
		UpdatedLive:      int32(s.rollout.Input.Updated.Live),      //nolint:gosec // at most replicas + maxSurge
		Promotion:        s.promotion(r),
		Now:              now,
	}
	promoted := func(i int) bool {
		pr := o.Promotion
		return pr != nil && pr.Revision == rs.Update.Name && (pr.Full || pr.Step == i)
	}
	// Every analysis is checked before the steps go on, so that a fault
	// holds the rollout before any pod moves for it.
	report := &status.Canary{Invalid: r.invalidAnalysis(ps, rs, spec)}
	var runWait time.Duration
	if i := int(cur.Step); i < len(steps) && steps[i].Analysis && report.Invalid == "" && !frozen && !paused {
		run := r.measureStep(s, cur, i, spec.Steps[i].Analysis, now)
		runWait = run.wait
		switch {
		case run.phase == analysis.RunSuccessful || (run.dryRun && run.phase.Done()):
			o.Analysis = canary.AnalysisSuccessful
		case run.dryRun:
		case run.phase == analysis.RunFailed:
			s.canaryFailure = &retreat.Failure{Trigger: retreat.AnalysisFailed, Detail: run.failure}
		case run.phase == analysis.RunInconclusive:
			report.Hold = appv1alpha1.ReasonAnalysisInconclusive
		case run.phase == analysis.RunError:
			report.Hold = appv1alpha1.ReasonAnalysisError
		}
		if report.Hold != "" && promoted(i) {
			// The person the hold waits for has promoted the step.
			report.Hold = ""
		}
		if o.Analysis == "" {
			o.Analysis = canary.AnalysisPhase(run.phase)
		}
	}
	if i := int(cur.Step); paused && i < len(steps) && steps[i].Analysis {
		if run := runNamed(cur, runName(i)); run != nil {
			o.Analysis = canary.AnalysisPhase(run.Phase)
		}
	}
	full := o.Promotion != nil && o.Promotion.Revision == rs.Update.Name && o.Promotion.Full
	if bg := spec.BackgroundAnalysis; !frozen && !paused {
		switch run := runNamed(cur, backgroundRun); {
		case bg == nil && run != nil:
			// Removed from the spec: its run goes, so that one added
			// again starts afresh.
			cur.Analyses = slices.DeleteFunc(cur.Analyses, func(a appv1alpha1.AnalysisRunStatus) bool { return a.Name == backgroundRun })
			r.forgetRunNamed(ps, backgroundRun)
		case bg == nil:
		case full:
			// --full ends the background run with the steps; a failure
			// not yet acted upon still retreats.
			if run != nil && run.Phase == string(analysis.RunFailed) && !run.DryRun && s.canaryFailure == nil {
				s.canaryFailure = &retreat.Failure{Trigger: retreat.AnalysisFailed, Detail: runFailure("background analysis", run)}
			}
			if ended := endBackgroundRun(cur, "the rollout was promoted in full"); ended != cur {
				*cur = *ended
				r.forgetRunNamed(ps, backgroundRun)
			}
		case report.Invalid == "":
			run := r.measureBackground(s, cur, bg, now)
			if run.wait > 0 && (runWait == 0 || run.wait < runWait) {
				runWait = run.wait
			}
			switch {
			case run.dryRun:
			case run.phase == analysis.RunFailed:
				if s.canaryFailure == nil {
					s.canaryFailure = &retreat.Failure{Trigger: retreat.AnalysisFailed, Detail: run.failure}
				}
			case run.phase == analysis.RunInconclusive && report.Hold == "":
				report.Hold, report.HoldByBackground = appv1alpha1.ReasonAnalysisInconclusive, true
			case run.phase == analysis.RunError && report.Hold == "":
				report.Hold, report.HoldByBackground = appv1alpha1.ReasonAnalysisError, true
			case run.phase == analysis.Running && run.successful == 0:
				o.BackgroundPending = true
			}
		}
	}
	if report.Invalid != "" && full {
		// --full skips every remaining analysis, the invalid ones too.
		report.Invalid = ""
	}
	if s.aborted(rs.Update.Name) {
		s.canaryFailure = &retreat.Failure{Trigger: retreat.Aborted,
			Detail: fmt.Sprintf("the rollout was aborted (%s) at step %d of %d", appv1alpha1.AnnotationRolloutAbort, cur.Step+1, len(steps))}
	}
	progress := canary.Progress{Revision: cur.Revision, Step: int(cur.Step), StepStarted: cur.StepStartTime.Time}
	// A failure keeps the pods where they are until auto-rollback takes
	// them back: after the last step too, where the rollout would
	// otherwise complete on the failed revision. A failure with no
	// revision to return to (frozen) holds the steps, but once they are
	// all done lets the rollout complete, as auto-rollback reports it
	// until then.
	o.Hold = report.Hold != "" || report.Invalid != "" || paused ||
		(s.canaryFailure != nil || frozen) && (!frozen || int(cur.Step) < len(steps))
	d, err := canary.Advance(steps, progress, o)
	if err != nil {
		report.Invalid = fmt.Sprintf("spec.updateStrategy.rollingUpdate.canary.%v", err)
		d = canary.Decision{Progress: progress, Partition: o.Replicas}
	}
	if report.Invalid != "" || frozen {
		// No pod moves, forwards or back, until the spec is mended or
		// the rollout promoted.
		d.Partition = max(d.Partition, o.Replicas-int32(s.rollout.Input.Updated.Live)) //nolint:gosec // at most replicas + maxSurge
	}
	if d.Progress.Step != int(cur.Step) {
		if i := int(cur.Step); i < len(steps) && steps[i].Analysis {
			r.forgetRun(ps, i)
		}
		cur.Step, cur.StepStartTime = int32(d.Progress.Step), metav1.NewTime(d.Progress.StepStarted) //nolint:gosec // at most 32 steps
		if i := d.Progress.Step; i < len(steps) && steps[i].Analysis {
			// A new analysis step's run begins with the step; the
			// measurement is due an interval later (wakes below).
			runWait = r.measureStep(s, cur, i, spec.Steps[i].Analysis, now).wait
		}
	}
	cur.Message = d.Waiting
	if report.HoldByBackground {
		cur.Message += "; held by the background analysis"
	}
	if paused {
		cur.Message += "; stopped while spec.updateStrategy.rollingUpdate.paused is set"
	}
	if report.Invalid != "" {
		cur.Message = "cannot run: " + report.Invalid
	}
	report.Status, report.Done, report.Paused = cur, d.Done, d.Paused
	s.canary, s.record.canary = report, cur
	if !d.Done {
		// The step's partition: the pods it does not move stay where they
		// are.
		s.canaryPartition = ptr.To(int(d.Partition))
		s.holdCanaryPartition()
	}
	s.canaryCheckIn = runWait
	if !d.WakeAt.IsZero() {
		if w := max(time.Until(d.WakeAt), time.Millisecond); s.canaryCheckIn == 0 || w < s.canaryCheckIn {
			s.canaryCheckIn = w
		}
	}
}

// invalidAnalysis says which of the spec's analyses cannot run as written,
// and why, naming its field; "" when all can.
func (r *PodSetReconciler) invalidAnalysis(ps *appv1alpha1.PodSet, rs *revision.State, spec *canarySpec) string {
	for i, st := range spec.Steps {
		if st.Analysis == nil {
			continue
		}
		if _, _, _, err := r.prepareQuery(ps, rs, st.Analysis); err != nil {
			return fmt.Sprintf("spec.updateStrategy.rollingUpdate.canary.steps[%d].analysis.%v", i, err)
		}
	}
	if bg := spec.BackgroundAnalysis; bg != nil {
		if _, _, _, err := r.prepareQuery(ps, rs, bg); err != nil {
			return fmt.Sprintf("spec.updateStrategy.rollingUpdate.canary.backgroundAnalysis.%v", err)
		}
	}
	return ""
}

// prepareQuery renders a's query for the PodSet, confines it to its
// namespace, and compiles its conditions; the error names the field at
// fault.
func (r *PodSetReconciler) prepareQuery(ps *appv1alpha1.PodSet, rs *revision.State, a *appv1alpha1.Analysis) (query, confined string, conditions analysis.Conditions, err error) {
	interval := time.Duration(ptr.Deref(a.IntervalSeconds, DefaultAnalysisIntervalSeconds)) * time.Second
	query, err = analysis.Render(a.Query, analysis.Vars{
		Namespace: ps.Namespace, Name: ps.Name, CanaryHash: rs.UpdateHash, StableHash: rs.CurrentHash,
		Interval: fmt.Sprintf("%ds", int(interval.Seconds())),
	})
	if err != nil {
		return "", "", conditions, fmt.Errorf("query: %w", err)
	}
	if confined, err = analysis.Confine(query, r.namespaceLabel(), ps.Namespace); err != nil {
		return "", "", conditions, fmt.Errorf("query: %w", err)
	}
	if conditions, err = analysis.CompileConditions(a.SuccessCondition, a.FailureCondition); err != nil {
		return "", "", conditions, err
	}
	return query, confined, conditions, nil
}

// runOutcome is what one reconcile made of an analysis run.
type runOutcome struct {
	phase   analysis.RunPhase
	dryRun  bool
	failure string
	// successful counts the run's successful measurements.
	successful int32
	// wait is how long until the next measurement is due; 0 when none is.
	wait time.Duration
}

// backgroundRun is the name of the background analysis's run.
const backgroundRun = "background"

// measureStep looks after the run of step i's analysis a in cur (measure).
// A new step's run replaces the last step's; the background run stays.
func (r *PodSetReconciler) measureStep(s *podSetScope, cur *appv1alpha1.CanaryStatus, i int, a *appv1alpha1.Analysis, now time.Time) runOutcome {
	name := runName(i)
	if runNamed(cur, name) == nil {
		kept := cur.Analyses[:0:0]
		for _, run := range cur.Analyses {
			if run.Name == backgroundRun {
				kept = append(kept, run)
			} else {
				r.forgetRunNamed(s.podSet, run.Name)
			}
		}
		cur.Analyses = append([]appv1alpha1.AnalysisRunStatus{newRun(name, a, now)}, kept...)
	}
	return r.measure(s, runNamed(cur, name), a, DefaultAnalysisCount, fmt.Sprintf("analysis of step %d", i+1), now)
}

// measureBackground looks after the background analysis's run in cur
// (measure), begun with the first reconcile of the canary that has it.
// Unset, its count is unbounded: it measures until the rollout is done.
func (r *PodSetReconciler) measureBackground(s *podSetScope, cur *appv1alpha1.CanaryStatus, a *appv1alpha1.Analysis, now time.Time) runOutcome {
	if runNamed(cur, backgroundRun) == nil {
		cur.Analyses = append(cur.Analyses, newRun(backgroundRun, a, now))
	}
	return r.measure(s, runNamed(cur, backgroundRun), a, 0, "background analysis", now)
}

func newRun(name string, a *appv1alpha1.Analysis, now time.Time) appv1alpha1.AnalysisRunStatus {
	return appv1alpha1.AnalysisRunStatus{Name: name, Phase: string(analysis.Running), DryRun: a.DryRun, StartTime: metav1.NewTime(now)}
}

// endBackgroundRun is c with its background run ended, when it is still
// running, because of why: Successful on the evidence of its successful
// measurements, Inconclusive without any. c itself when there is nothing
// to end.
func endBackgroundRun(c *appv1alpha1.CanaryStatus, why string) *appv1alpha1.CanaryStatus {
	if c == nil {
		return nil
	}
	run := runNamed(c, backgroundRun)
	if run == nil || analysis.RunPhase(run.Phase).Done() {
		return c
	}
	c = c.DeepCopy()
	run = runNamed(c, backgroundRun)
	if run.Successful > 0 {
		run.Phase = string(analysis.RunSuccessful)
		run.Message = fmt.Sprintf("%s: %s, %d of %d measurements successful", backgroundEnded, why, run.Successful, tallyOf(run).Taken())
	} else {
		run.Phase = string(analysis.RunInconclusive)
		run.Message = fmt.Sprintf("%s: %s before any measurement was successful", backgroundEnded, why)
	}
	return c
}

// backgroundEnded begins the message of a background run that ended with
// its rollout, not by its own measurements.
const backgroundEnded = "ended"

// measure looks after run, of analysis a: it takes in the runner's last
// measurement, judges the run, and submits the next measurement when it
// is due. what names the run in a failure's message. The analysis is one
// invalidAnalysis found valid.
func (r *PodSetReconciler) measure(s *podSetScope, run *appv1alpha1.AnalysisRunStatus, a *appv1alpha1.Analysis, defaultCount int32, what string, now time.Time) (out runOutcome) {
	ps := s.podSet
	out = runOutcome{phase: analysis.RunPhase(run.Phase), dryRun: run.DryRun}
	// Said whenever the run is found failed, not only by the reconcile
	// that judged it: the retreat may be decided by a later one.
	defer func() {
		out.successful = run.Successful
		if out.phase == analysis.RunFailed {
			out.failure = runFailure(what, run)
		}
	}()
	if out.phase.Done() {
		return out
	}
	query, confined, conditions, err := r.prepareQuery(ps, &s.revisions, a)
	if err != nil {
		return out
	}
	run.Query = status.Truncate(confined, maxRunQuery)
	limits := analysis.Limits{
		Count:                 ptr.Deref(a.Count, defaultCount),
		FailureLimit:          ptr.Deref(a.FailureLimit, 0),
		InconclusiveLimit:     ptr.Deref(a.InconclusiveLimit, 0),
		ConsecutiveErrorLimit: ptr.Deref(a.ConsecutiveErrorLimit, DefaultAnalysisConsecutiveErrorLimit),
	}
	key := runKey(ps, run.Name)
	if r.analysisRunner == nil {
		run.Phase, run.Message = string(analysis.RunError), "no Prometheus to query: the cluster admin sets the manager's --analysis-prometheus-url"
		out.phase = analysis.RunError
		return out
	}
	if res, ok := r.analysisRunner.Collect(key); ok {
		last := lastMeasurement(run)
		if last == nil || res.Due.After(last.Time.Time) {
			recordMeasurement(run, res)
		}
	}
	phase, message := tallyOf(run).Phase(limits)
	run.Phase, run.Message, out.phase = string(phase), message, phase
	if phase.Done() {
		r.analysisRunner.Forget(key)
		return out
	}
	var lastAt time.Time
	if m := lastMeasurement(run); m != nil {
		lastAt = m.Time.Time
	}
	interval := time.Duration(ptr.Deref(a.IntervalSeconds, DefaultAnalysisIntervalSeconds)) * time.Second
	due := analysis.NextMeasurement(run.StartTime.Time, lastAt, time.Duration(ptr.Deref(a.InitialDelaySeconds, 0))*time.Second, interval)
	if now.Before(due) {
		out.wait = time.Until(due)
		return out
	}
	r.analysisRunner.Submit(analysis.Request{Key: key, Due: now, Namespace: ps.Namespace, Query: query, Conditions: conditions})
	// The result wakes the PodSet; this is the wake-up should it not come
	// (the run forgotten meanwhile).
	out.wait = interval
	return out
}

// runFailure is the failure a failed run reports: which analysis, why the
// run failed, its last measurement and the query as sent.
func runFailure(what string, run *appv1alpha1.AnalysisRunStatus) string {
	last := ""
	if m := lastMeasurement(run); m != nil {
		last = "; last measurement: " + m.Message
	}
	return fmt.Sprintf("%s failed: %s%s; query: %s", what, run.Message, last, run.Query)
}

func runName(step int) string { return fmt.Sprintf("steps[%d]", step) }

// recordMeasurement adds a measurement to run: its tally, and the last
// measurements kept.
func recordMeasurement(run *appv1alpha1.AnalysisRunStatus, res analysis.Result) {
	m := res.Measurement
	run.Measurements = append(run.Measurements, appv1alpha1.Measurement{
		Phase: string(m.Phase), Value: m.Value, Time: metav1.NewTime(res.Due), Message: m.Message,
	})
	if n := len(run.Measurements); n > maxMeasurementsKept {
		run.Measurements = append([]appv1alpha1.Measurement(nil), run.Measurements[n-maxMeasurementsKept:]...)
	}
	t := tallyOf(run).Add(m.Phase)
	run.Successful, run.Failed, run.Inconclusive, run.Errors, run.ConsecutiveErrors = t.Successful, t.Failed, t.Inconclusive, t.Errors, t.ConsecutiveErrors
}

// tallyOf is the tally run's status records.
func tallyOf(run *appv1alpha1.AnalysisRunStatus) analysis.Tally {
	return analysis.Tally{Successful: run.Successful, Failed: run.Failed, Inconclusive: run.Inconclusive, Errors: run.Errors, ConsecutiveErrors: run.ConsecutiveErrors}
}

func lastMeasurement(run *appv1alpha1.AnalysisRunStatus) *appv1alpha1.Measurement {
	if len(run.Measurements) == 0 {
		return nil
	}
	return &run.Measurements[len(run.Measurements)-1]
}

func runNamed(c *appv1alpha1.CanaryStatus, name string) *appv1alpha1.AnalysisRunStatus {
	for i := range c.Analyses {
		if c.Analyses[i].Name == name {
			return &c.Analyses[i]
		}
	}
	return nil
}

// runKey names a PodSet's run for the runner: by UID, so that a PodSet made
// again under the same name does not take its namesake's result.
func runKey(ps *appv1alpha1.PodSet, run string) string {
	return ps.Namespace + "/" + ps.Name + "/" + string(ps.UID) + "/" + run
}

// podSetOfRun is the PodSet a run key names.
func podSetOfRun(key string) types.NamespacedName {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) < 2 {
		return types.NamespacedName{}
	}
	return types.NamespacedName{Namespace: parts[0], Name: parts[1]}
}

// forgetRuns drops the runner's results of every run of ps.
func (r *PodSetReconciler) forgetRuns(ps *appv1alpha1.PodSet) {
	r.forgetRunsOf(types.NamespacedName{Namespace: ps.Namespace, Name: ps.Name})
}

// forgetRunsOf drops the runner's results of every run of the PodSet nn
// (also of a namesake's, which a deleted PodSet may have been).
func (r *PodSetReconciler) forgetRunsOf(nn types.NamespacedName) {
	if r.analysisRunner != nil {
		r.analysisRunner.ForgetPrefix(nn.Namespace + "/" + nn.Name + "/")
	}
}

// forgetRun drops the runner's result of step i's run, which ended
// without it (the step was promoted).
func (r *PodSetReconciler) forgetRun(ps *appv1alpha1.PodSet, i int) {
	r.forgetRunNamed(ps, runName(i))
}

// forgetRunNamed drops the runner's result of the run named name.
func (r *PodSetReconciler) forgetRunNamed(ps *appv1alpha1.PodSet, name string) {
	if r.analysisRunner != nil {
		r.analysisRunner.Forget(runKey(ps, name))
	}
}

func (r *PodSetReconciler) namespaceLabel() string {
	if r.AnalysisNamespaceLabel == "" {
		return DefaultAnalysisNamespaceLabel
	}
	return r.AnalysisNamespaceLabel
}

// retreatingFrom reports whether auto-rollback found revision failed, and
// the revision it returns the pods to ("" when there was none to return
// to): the canary of a failed revision is over.
func (r *PodSetReconciler) retreatingFrom(s *podSetScope, revision string) (bool, string) {
	rb := s.podSet.Status.AutoRollback
	if rb == nil {
		rb = s.record.rollback
	}
	if rb == nil || rb.FailedRevision != revision {
		return false, ""
	}
	return true, rb.Revision
}

// canarySpec is the PodSet's canary, with what the steps read of the
// rolling update beside it.
type canarySpec struct {
	*appv1alpha1.Canary
	partition *int32
}

// canaryOf is the PodSet's canary, nil when it has none (or the strategy
// is not RollingUpdate: a canary moves a share of the pods).
func canaryOf(ps *appv1alpha1.PodSet) *canarySpec {
	ru := ps.Spec.UpdateStrategy.RollingUpdateSettings()
	if ru == nil || ru.Canary == nil {
		return nil
	}
	return &canarySpec{Canary: ru.Canary, partition: ru.Partition}
}

// canarySteps are the spec's steps, as the canary package counts them.
func canarySteps(c *canarySpec) []canary.Step {
	steps := make([]canary.Step, 0, len(c.Steps))
	for _, st := range c.Steps {
		var step canary.Step
		switch {
		case st.UpdatedReplicas != nil:
			step.UpdatedReplicas = ptr.To(intstr.FromInt32(*st.UpdatedReplicas))
		case st.UpdatedPercent != nil:
			step.UpdatedReplicas = ptr.To(intstr.FromString(fmt.Sprintf("%d%%", *st.UpdatedPercent)))
		case st.Pause != nil:
			step.Pause = &canary.Pause{}
			if d := st.Pause.DurationSeconds; d != nil {
				step.Pause.Duration = ptr.To(time.Duration(*d) * time.Second)
			}
		case st.Analysis != nil:
			step.Analysis = true
		}
		steps = append(steps, step)
	}
	return steps
}

// promotion is the promotion the PodSet's app.example.com/rollout-promote
// annotation asks for, if any. A value that does not parse asks for
// nothing, and is said in a Warning event once per value.
func (s *podSetScope) promotion(r *PodSetReconciler) *canary.Promotion {
	v, ok := s.podSet.Annotations[appv1alpha1.AnnotationRolloutPromote]
	if !ok {
		return nil
	}
	revision, step, full, err := appv1alpha1.ParseRolloutPromote(v)
	if err != nil {
		if s.record.invalidPromote != v {
			s.record.invalidPromote = v
			r.Recorder.Eventf(s.podSet, nil, corev1.EventTypeWarning, "InvalidRolloutPromote", "Rollout", "%s", eventNote(err.Error()))
		}
		return nil
	}
	return &canary.Promotion{Revision: revision, Step: int(step), Full: full}
}

// aborted reports whether the PodSet's app.example.com/rollout-abort
// annotation aborts the rollout to revision.
func (s *podSetScope) aborted(revision string) bool {
	return s.podSet.Annotations[appv1alpha1.AnnotationRolloutAbort] == revision
}
