package controllers

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/status"
)

// Defaults of spec.updateStrategy.rollingUpdate.autoRollback's fields, for
// objects that did not go through the API server's defaulting.
const (
	DefaultRollbackRestartLimit              = 3
	DefaultRollbackFailureGracePeriodSeconds = 60
)

// decideRollback is auto-rollback's phase (retreat.Decide): it judges the
// pods of the revision the rollout moves to, and while the PodSet is rolled
// back from a failed revision it points the rollout at the last completed
// one instead of the spec's. The scaling phase then moves the pods there
// with the usual arithmetic, within maxSurge and maxUnavailable, and the
// status still names the spec's revision as the update revision: the spec,
// which the operator never writes, asks for it.
//
// What it decided is kept in status.autoRollback, and read back from there
// rather than judged again: the pods that showed the failure are gone once
// the rollback replaced them, and a judgment made afresh would roll
// forward to the failed revision again.
func (r *PodSetReconciler) decideRollback(ctx context.Context, s *podSetScope) error {
	ps, rs := s.podSet, &s.revisions
	rs.Spec, rs.SpecHash = rs.Update, rs.UpdateHash
	if rs.Update == nil || ps.DeletionTimestamp != nil {
		return nil
	}
	cfg := autoRollbackOf(ps)
	if cfg == nil && canaryOf(ps) == nil {
		s.record.failureWatch, s.record.rollback = failureWatch{}, nil
		return nil
	}
	// A canary's failed analysis or abort retreats whether or not
	// autoRollback is set; the pods' own failures and the progress
	// deadline only when it is.
	if cfg == nil {
		s.record.failureWatch = failureWatch{}
		cfg = &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](0)}
	}
	podFailures := autoRollbackOf(ps) != nil
	now := time.Now()
	prev := ps.Status.AutoRollback
	if prev == nil && s.record.rollback != nil {
		// Decided by an earlier reconcile whose status write failed.
		prev = s.record.rollback
	}
	if prev != nil && prev.FailedRevision != rs.Update.Name && prev.Revision == "" {
		// A failure with nothing to return to belongs to its revision.
		prev = nil
	}
	defer func() { s.record.rollback = s.rollback.Status }()
	th := retreat.Thresholds{
		RestartLimit: ptr.Deref(cfg.RestartLimit, DefaultRollbackRestartLimit),
		WaitingGrace: time.Duration(ptr.Deref(cfg.FailureGracePeriodSeconds, DefaultRollbackFailureGracePeriodSeconds)) * time.Second,
	}
	if prev != nil && prev.Revision == "" {
		// The update revision failed with no completed revision to
		// return to: reported until it completes after all (what it
		// waited for appeared) or the spec asks for another.
		if !s.rolloutComplete() {
			s.rollback.Status = prev.DeepCopy()
		}
		return nil
	}
	// Read even with no rollback recorded: a rollback decided now, within
	// the second that a retry names, takes the next second (below).
	retry := s.retryRequest(r)
	o := retreat.Observed{
		Enabled:               true,
		Retry:                 retry,
		Paused:                rolloutPaused(ps),
		UpdateRevision:        rs.Update.Name,
		LastCompletedRevision: ps.Status.LastCompletedRevision,
		DeadlineExceeded:      podFailures && deadlineExceeded(ps, rs.Update.Name),
	}
	// The revision on trial: the spec's, or while rolled back the one
	// returned to, whose pods can fail too.
	tested, since := rs.Update, time.Time{}
	if prev != nil {
		o.RetreatedFrom, o.RetreatedAt, o.Stopped = prev.FailedRevision, prev.Time.Time, prev.Stopped
		o.LastCompletedRevision = prev.Revision
		if target := revision.Named(rs.All, prev.Revision); target != nil && prev.FailedRevision == rs.Update.Name {
			tested = target
			// Pods of that revision older than the rollback ran it
			// before: only those it made are on trial.
			since = prev.Time.Time
		}
		// The deadline is the failed revision's, already acted upon.
		o.DeadlineExceeded = false
		o.RetreatComplete = prev.Complete || (tested != rs.Update && r.rollbackComplete(s, tested, now))
	} else {
		o.Complete = s.rolloutComplete()
	}
	switch {
	case o.Complete || o.RetreatComplete:
	case prev == nil && s.canaryFailure != nil:
		o.Failure = s.canaryFailure
	case podFailures:
		pods, graceEndsIn := s.record.failureWatch.observe(revision.HashOf(tested), s.pods, since, th.WaitingGrace, now)
		if f, failed := retreat.Classify(pods, th, now); failed {
			o.Failure = &f
		}
		s.rollbackCheckIn = graceEndsIn
	}
	d := retreat.Decide(o)
	s.rollback = rollbackReport(d, prev, o.RetreatComplete, now)
	if d.Action == retreat.Resume && prev != nil && prev.FailedRevision == rs.Update.Name {
		// A retry of the revision retreated from: its canary, which the
		// retreat ended, starts again from the first step, before any
		// pod moves.
		r.stepCanary(s, true)
	}
	if d.Retried {
		s.retried = prev
	}
	if d.Action == retreat.Retreat && retry.From == d.Failed && !now.Truncate(time.Second).After(retry.At) {
		// A retry names the rollback it answers by its time, to the
		// second: a new rollback of the same revision within that second
		// takes the next one, or the same request would answer it too.
		s.rollback.Status.Time = metav1.NewTime(retry.At.Add(time.Second))
	}
	switch d.Action {
	case retreat.Retreat, retreat.Hold, retreat.Stop:
		target := revision.Named(rs.All, o.LastCompletedRevision)
		if target == nil || !rs.RollBackTo(target, d.Action == retreat.Stop) {
			// The revision to return to is gone (deleted by hand): the
			// failure is all there is to say.
			s.rollback.Status.Revision = ""
			return nil
		}
		// The rollout now moves the pods elsewhere, and no canary step
		// applies to it.
		if s.canary != nil {
			s.canary.Done = true
		}
		return r.observeRollout(ctx, s)
	}
	return nil
}

// rollbackComplete reports whether every pod the PodSet wants runs target,
// the revision a rollback returns to, available; partition does not apply.
func (r *PodSetReconciler) rollbackComplete(s *podSetScope, target *appsv1.ControllerRevision, now time.Time) bool {
	st, ok := rolloutstate.Toward(s.podSet, &s.revisions, target, r.cluster(), s.pods, now)
	return ok && st.Complete()
}

// retryRequest is the rollback that the PodSet's
// app.example.com/rollout-retry annotation asks to try again. A value
// that does not parse asks for nothing, and is said in a Warning event
// once per value: the reconciles that read it again until the user mends
// it have nothing new to say.
func (s *podSetScope) retryRequest(r *PodSetReconciler) retreat.Retry {
	v, ok := s.podSet.Annotations[appv1alpha1.AnnotationRolloutRetry]
	if !ok {
		return retreat.Retry{}
	}
	from, at, err := appv1alpha1.ParseRolloutRetry(v)
	if err != nil {
		if s.record.invalidRetry != v {
			s.record.invalidRetry = v
			r.Recorder.Eventf(s.podSet, nil, corev1.EventTypeWarning, "InvalidRolloutRetry", "Rollout", "%s", eventNote(err.Error()))
		}
		return retreat.Retry{}
	}
	return retreat.Retry{From: from, At: at}
}

// rollbackReport is status.autoRollback after decision d, given what it
// was before (prev) and whether the pods are all back on the revision
// returned to (complete).
func rollbackReport(d retreat.Decision, prev *appv1alpha1.AutoRollbackStatus, complete bool, now time.Time) status.Rollback {
	switch d.Action {
	case retreat.Report, retreat.Retreat:
		return status.Rollback{Status: &appv1alpha1.AutoRollbackStatus{
			FailedRevision: d.Failed, Revision: d.Target, Trigger: string(d.Failure.Trigger),
			Message: status.Truncate(d.Failure.Detail, maxEventNote), Time: metav1.NewTime(now),
		}}
	case retreat.Hold:
		st := prev.DeepCopy()
		st.Complete = st.Complete || complete
		return status.Rollback{Status: st}
	case retreat.Stop:
		st := prev.DeepCopy()
		if !st.Stopped {
			st.Stopped = true
			st.Message = status.Truncate(st.Message+"; then revision "+st.Revision+" failed too: "+d.Failure.Detail, maxEventNote)
		}
		return status.Rollback{Status: st}
	}
	return status.Rollback{}
}

// autoRollbackOf is the PodSet's auto-rollback settings, those of its
// strategy (rollingUpdate's or recreate's); nil when it is off, or the
// strategy is OnDelete, where the operator replaces no pod for its template.
func autoRollbackOf(ps *appv1alpha1.PodSet) *appv1alpha1.AutoRollback {
	us := ps.Spec.UpdateStrategy
	if us.Type == appv1alpha1.RecreateStrategyType {
		if us.Recreate == nil {
			return nil
		}
		return us.Recreate.AutoRollback
	}
	if ru := us.RollingUpdateSettings(); ru != nil {
		return ru.AutoRollback
	}
	return nil
}

// rolloutPaused reports whether a RollingUpdate is paused (no other
// strategy pauses).
func rolloutPaused(ps *appv1alpha1.PodSet) bool {
	ru := ps.Spec.UpdateStrategy.RollingUpdateSettings()
	return ru != nil && ru.Paused
}

// deadlineExceeded reports whether the status says that the rollout to the
// update revision made no progress for spec.progressDeadlineSeconds.
func deadlineExceeded(ps *appv1alpha1.PodSet, update string) bool {
	c := meta.FindStatusCondition(ps.Status.Conditions, appv1alpha1.ConditionProgressing)
	return c != nil && c.Reason == appv1alpha1.ReasonProgressDeadlineExceeded &&
		ps.Status.ObservedGeneration == ps.Generation && ps.Status.UpdateRevision == update
}
