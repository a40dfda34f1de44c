package controllers

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/rollout"
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
func (r *PodSetReconciler) decideRollback(_ context.Context, s *podSetScope) error {
	ps, rs := s.podSet, &s.revisions
	rs.spec, rs.specHash = rs.update, rs.updateHash
	if rs.update == nil || ps.DeletionTimestamp != nil {
		return nil
	}
	cfg := autoRollbackOf(ps)
	if cfg == nil {
		s.record.failureWatch, s.record.rollback = failureWatch{}, nil
		return nil
	}
	now := time.Now()
	prev := ps.Status.AutoRollback
	if prev == nil && s.record.rollback != nil && s.record.rollback.FailedRevision == rs.update.Name {
		// Decided by an earlier reconcile whose status write failed: its
		// scaling step may have replaced the failed pods already, and
		// judging afresh would roll forward to them again.
		prev = s.record.rollback
	}
	o := retreat.Observed{
		Enabled:               true,
		Paused:                ps.Spec.UpdateStrategy.RollingUpdate.Paused,
		UpdateRevision:        rs.update.Name,
		LastCompletedRevision: ps.Status.LastCompletedRevision,
		DeadlineExceeded:      deadlineExceeded(ps, rs.update.Name),
	}
	// The revision under test: the spec's, or while rolled back the one
	// returned to, whose pods can fail too.
	tested, testedHash, since := rs.update, rs.updateHash, time.Time{}
	if prev != nil && prev.FailedRevision == rs.update.Name {
		o.RetreatedFrom, o.RetreatedAt, o.Stopped = prev.FailedRevision, prev.Time.Time, prev.Stopped
		o.LastCompletedRevision = prev.Revision
		if target := revisionNamed(rs.all, prev.Revision); target != nil {
			tested, testedHash = target, revisionHash(target)
			// Pods of that revision older than the rollback ran it
			// before: only those it made are on trial.
			since = prev.Time.Time
		}
		// The deadline is the failed revision's, already acted upon.
		o.DeadlineExceeded = false
	}
	th := retreat.Thresholds{
		RestartLimit: ptr.Deref(cfg.RestartLimit, DefaultRollbackRestartLimit),
		WaitingGrace: time.Duration(ptr.Deref(cfg.FailureGracePeriodSeconds, DefaultRollbackFailureGracePeriodSeconds)) * time.Second,
	}
	if f, failed := retreat.Classify(s.record.failureWatch.observe(testedHash, s.pods, since, now), th, now); failed {
		o.Failure = &f
	}
	if o.RetreatedFrom != "" && tested != rs.update {
		// Whether every pod already runs the revision returned to.
		o.RetreatComplete = retreatComplete(ps, rs, tested, s.pods, now)
	}
	d := retreat.Decide(o)
	s.rollback = rollbackReport(d, prev, now)
	s.record.rollback = s.rollback.Status
	switch d.Action {
	case retreat.Retreat, retreat.Hold, retreat.Stop:
		target := revisionNamed(rs.all, o.LastCompletedRevision)
		tmpl, ok := revision.Template{}, target != nil
		if ok {
			tmpl, ok = rs.template(revisionHash(target))
		}
		if !ok {
			// The revision to return to is gone (deleted by hand): the
			// failure is all there is to say.
			s.rollback = status.Rollback{Failed: d.Failure.Detail, Trigger: string(d.Failure.Trigger), Revision: rs.update.Name}
			return nil
		}
		rs.update, rs.updateTemplate, rs.updateHash = target, tmpl, revisionHash(target)
		rs.current, rs.currentTemplate, rs.currentHash = target, tmpl, revisionHash(target)
		rs.rollingBack, rs.rollbackStopped = true, d.Action == retreat.Stop
	}
	return nil
}

// rollbackReport is what the status says of decision d, given the
// rollback the status reported before (prev).
func rollbackReport(d retreat.Decision, prev *appv1alpha1.AutoRollbackStatus, now time.Time) status.Rollback {
	switch d.Action {
	case retreat.Report:
		return status.Rollback{Failed: d.Failure.Detail, Trigger: string(d.Failure.Trigger), Revision: d.Failed}
	case retreat.Retreat:
		return status.Rollback{Status: &appv1alpha1.AutoRollbackStatus{
			FailedRevision: d.Failed, Revision: d.Target, Trigger: string(d.Failure.Trigger),
			Message: status.Truncate(d.Failure.Detail, maxEventNote), Time: metav1.NewTime(now),
		}}
	case retreat.Hold:
		return status.Rollback{Status: prev.DeepCopy()}
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

// autoRollbackOf is the PodSet's auto-rollback settings, nil when it is off
// (or the strategy is OnDelete, where the operator replaces no pod for its
// template).
func autoRollbackOf(ps *appv1alpha1.PodSet) *appv1alpha1.AutoRollback {
	us := ps.Spec.UpdateStrategy
	if us.Type == appv1alpha1.OnDeleteStrategyType || us.RollingUpdate == nil {
		return nil
	}
	return us.RollingUpdate.AutoRollback
}

// deadlineExceeded reports whether the status says that the rollout to the
// update revision made no progress for spec.progressDeadlineSeconds.
func deadlineExceeded(ps *appv1alpha1.PodSet, update string) bool {
	c := meta.FindStatusCondition(ps.Status.Conditions, appv1alpha1.ConditionProgressing)
	return c != nil && c.Reason == appv1alpha1.ReasonProgressDeadlineExceeded &&
		ps.Status.ObservedGeneration == ps.Generation && ps.Status.UpdateRevision == update
}

// revisionNamed is the revision of that name among all, or nil.
func revisionNamed(all []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, cr := range all {
		if name != "" && cr.Name == name {
			return cr
		}
	}
	return nil
}

// retreatComplete reports whether the rollout to target (the revision
// returned to) has nothing left to do.
func retreatComplete(ps *appv1alpha1.PodSet, rs *revisionState, target *appsv1.ControllerRevision, pods []*corev1.Pod, now time.Time) bool {
	tmpl, ok := rs.template(revisionHash(target))
	if !ok {
		return false
	}
	back := *rs
	back.rollingBack = true
	back.update, back.updateTemplate, back.updateHash = target, tmpl, revisionHash(target)
	back.current, back.currentTemplate, back.currentHash = target, tmpl, revisionHash(target)
	in, _, err := rolloutInput(ps, &back, pods, now)
	return err == nil && rollout.Complete(in)
}

// failureWatch is, in a PodSet's record, what the pod cache cannot tell of
// the containers of the revision on trial: since when each has waited in
// its current reason, and, for a pod updated in place, how many restarts
// it had once it ran the revision (those before are not the revision's).
// It starts afresh when the revision on trial changes.
type failureWatch struct {
	hash string
	pods map[types.UID]map[string]watchedContainer
}

type watchedContainer struct {
	reason      string
	since       time.Time
	restartBase int32
}

// observe returns the classifier's view at now of the live pods of
// revision hash made at or after since, and forgets the pods no longer
// among them.
func (w *failureWatch) observe(hash string, pods []*corev1.Pod, since, now time.Time) []retreat.Pod {
	if w.hash != hash {
		*w = failureWatch{hash: hash}
	}
	seen := make(map[types.UID]map[string]watchedContainer, len(w.pods))
	var out []retreat.Pod
	for _, pod := range pods {
		if !operand.IsLive(pod) || pod.Labels[appv1alpha1.LabelRevisionHash] != hash {
			continue
		}
		st, updatedInPlace := inplace.StateOf(pod)
		updatedInPlace = updatedInPlace && st.Revision == hash
		if updatedInPlace && inplace.Pending(pod) {
			// Not running the revision yet.
			continue
		}
		if !updatedInPlace && pod.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			continue
		}
		before := w.pods[pod.UID]
		now := now
		containers := make(map[string]watchedContainer, len(pod.Status.ContainerStatuses))
		p := retreat.Pod{Name: pod.Name}
		for _, cs := range pod.Status.ContainerStatuses {
			c, known := before[cs.Name]
			if !known && updatedInPlace {
				c.restartBase = cs.RestartCount
			}
			reason := ""
			if cs.State.Waiting != nil {
				reason = cs.State.Waiting.Reason
			}
			if reason != c.reason || c.since.IsZero() {
				c.reason, c.since = reason, now
			}
			containers[cs.Name] = c
			rc := retreat.Container{Name: cs.Name, RestartsSinceRevision: cs.RestartCount - c.restartBase}
			if reason != "" {
				rc.WaitingReason, rc.WaitingSince = reason, c.since
			}
			p.Containers = append(p.Containers, rc)
		}
		seen[pod.UID] = containers
		out = append(out, p)
	}
	w.pods = seen
	return out
}
