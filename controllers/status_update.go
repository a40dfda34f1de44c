package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/analysis"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/status"
)

// updateStatus writes the status computed from the observed pods, when it
// differs from what the PodSet already reports and is worth a write now (see
// status.WriteIsUrgent, status.WriteCanWait and status.Pacing). When the
// pacer holds a write back, it returns how long until that write is due.
func (r *PodSetReconciler) updateStatus(ctx context.Context, s *podSetScope) (time.Duration, error) {
	now := time.Now()
	pacing, interval := &s.record.statusPacing, r.StatusWriteInterval
	computed := status.Compute(s.podSet, s.pods, observed(s), s.outcome, now)
	switch {
	case equality.Semantic.DeepEqual(computed, s.podSet.Status):
		return 0, nil
	case status.WriteIsUrgent(s.podSet.Status, computed, s.podSet.DesiredReplicas(), s.outcome):
	case pacing.Overdue(interval, now):
		// Held back for a whole interval already: churn must not starve it.
	case status.WriteCanWait(s.podSet.Status, computed, s.outcome):
		pacing.Scaled(interval, now)
		metrics.StatusWritesSkipped.WithLabelValues("scaling").Inc()
		return 0, nil
	default:
		if due := pacing.Wait(interval, now); due > 0 {
			pacing.Held(interval, now)
			metrics.StatusWritesSkipped.WithLabelValues("paced").Inc()
			return due, nil
		}
	}
	if err := r.Fence.Allow(); err != nil {
		return 0, err
	}
	orig := s.podSet.DeepCopy()
	s.podSet.Status = computed
	patch, err := status.Patch(orig, s.podSet)
	if err != nil {
		return 0, err
	}
	if err := r.Status().Patch(ctx, s.podSet, patch); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	pacing.Wrote(interval, now)
	s.record.statusWritten(s.podSet)
	if status.DeadlineJustExceeded(orig.Status, computed) {
		r.Recorder.Eventf(s.podSet, nil, corev1.EventTypeWarning, appv1alpha1.ReasonProgressDeadlineExceeded, "Rollout", "%s",
			eventNote(meta.FindStatusCondition(computed.Conditions, appv1alpha1.ConditionProgressing).Message))
	}
	r.reportRollback(s.podSet, orig.Status, computed, s.retried)
	r.reportCanary(s.podSet, orig.Status.Canary, computed.Canary)
	return 0, nil
}

// Reasons of the canary's events.
const (
	eventCanaryStep         = "CanaryStep"
	eventAnalysisSucceeded  = "AnalysisSucceeded"
	eventAnalysisFailed     = "AnalysisFailed"
	eventAnalysisHeld       = "AnalysisHeld"
	eventAnalysisDryRunDone = "AnalysisDryRunDone"
	eventAnalysisEnded      = "AnalysisEnded"
)

// reportCanary sends the events of a canary's progress, once per change of
// the status that records it: a step begun, and an analysis run ended.
func (r *PodSetReconciler) reportCanary(ps *appv1alpha1.PodSet, before, after *appv1alpha1.CanaryStatus) {
	if after == nil {
		return
	}
	if before == nil || before.Revision != after.Revision || before.Step != after.Step {
		r.Recorder.Eventf(ps, nil, corev1.EventTypeNormal, eventCanaryStep, "Rollout", "revision %s: %s", after.Revision, eventNote(after.Message))
	}
	for _, run := range after.Analyses {
		phase := analysis.RunPhase(run.Phase)
		if !phase.Done() {
			continue
		}
		if before != nil && before.Revision == after.Revision {
			if prev := runNamed(before, run.Name); prev != nil && prev.Phase == run.Phase {
				continue
			}
		}
		kind, reason := corev1.EventTypeWarning, eventAnalysisHeld
		switch {
		case run.DryRun:
			kind, reason = corev1.EventTypeNormal, eventAnalysisDryRunDone
		case run.Name == backgroundRun && strings.HasPrefix(run.Message, backgroundEnded+":"):
			// Stopped with its rollout: no verdict of its own to act on.
			kind, reason = corev1.EventTypeNormal, eventAnalysisEnded
		case phase == analysis.RunSuccessful:
			kind, reason = corev1.EventTypeNormal, eventAnalysisSucceeded
		case phase == analysis.RunFailed:
			reason = eventAnalysisFailed
		}
		r.Recorder.Eventf(ps, nil, kind, reason, "Analysis", "%s", eventNote(fmt.Sprintf("revision %s, %s: %s: %s (query: %s)", after.Revision, run.Name, run.Phase, run.Message, run.Query)))
	}
}

// reportRollback sends the event of what auto-rollback just did, once per
// change of the status that records it, and counts the rollbacks. retried
// is the rollback that the user's retry ended in this reconcile, if any.
func (r *PodSetReconciler) reportRollback(ps *appv1alpha1.PodSet, before, after appv1alpha1.PodSetStatus, retried *appv1alpha1.AutoRollbackStatus) {
	if b := retried; b != nil && before.AutoRollback != nil && after.AutoRollback == nil {
		r.Recorder.Eventf(ps, nil, corev1.EventTypeNormal, appv1alpha1.ReasonRolloutRetried, "Rollout",
			"rolling to revision %s again, as %s asks (it was rolled back to %s at %s)",
			b.FailedRevision, appv1alpha1.AnnotationRolloutRetry, b.Revision, b.Time.UTC().Format(time.RFC3339))
	}
	progressing := meta.FindStatusCondition(after.Conditions, appv1alpha1.ConditionProgressing)
	was := meta.FindStatusCondition(before.Conditions, appv1alpha1.ConditionProgressing)
	if progressing == nil || (was != nil && was.Reason == progressing.Reason) {
		return
	}
	switch progressing.Reason {
	case appv1alpha1.ReasonRolledBack:
		if before.AutoRollback == nil || before.AutoRollback.FailedRevision != after.AutoRollback.FailedRevision {
			metrics.Rollbacks.WithLabelValues(after.AutoRollback.Trigger).Inc()
		}
	case appv1alpha1.ReasonRollbackStopped, appv1alpha1.ReasonRolloutFailed:
	default:
		return
	}
	r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, progressing.Reason, "Rollout", "%s", eventNote(progressing.Message))
}

// observed is what the status is computed from besides the pods: the
// PodSet's revisions, once syncRevisions found them, and where the rollout
// stands for the pods, as the scaling phase saw it.
func observed(s *podSetScope) status.Observed {
	rs := &s.revisions
	spec, specHash := rs.Spec, rs.SpecHash
	if spec == nil {
		spec, specHash = rs.Update, rs.UpdateHash
	}
	o := status.Observed{UpdateHash: specHash, Rollback: s.rollback, Canary: s.canary}
	if rs.Update != nil {
		o.UpdateRevision, o.CurrentRevision, o.CollisionCount = spec.Name, rs.Current.Name, rs.CollisionCount
		o.TargetRevision = rs.Update.Name
	}
	if s.rollout != nil {
		o.Rollout = &s.rollout.Input
		if s.rollout.Input.Strategy.InPlaceOnly {
			o.KeptInPlace = s.rollout.FirstKeptInPlace()
		}
	}
	return o
}
