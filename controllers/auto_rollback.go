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
	"github.com/example/podset-operator/controllers/slimpod"
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
	if prev == nil && s.record.rollback != nil {
		// Decided by an earlier reconcile whose status write failed.
		prev = s.record.rollback
	}
	if prev != nil && prev.FailedRevision != rs.update.Name && prev.Revision == "" {
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
		if !rolloutComplete(ps, rs, rs.update, s.pods, now) {
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
		Paused:                ps.Spec.UpdateStrategy.RollingUpdate.Paused,
		UpdateRevision:        rs.update.Name,
		LastCompletedRevision: ps.Status.LastCompletedRevision,
		DeadlineExceeded:      deadlineExceeded(ps, rs.update.Name),
	}
	// The revision on trial: the spec's, or while rolled back the one
	// returned to, whose pods can fail too.
	tested, since := rs.update, time.Time{}
	if prev != nil {
		o.RetreatedFrom, o.RetreatedAt, o.Stopped = prev.FailedRevision, prev.Time.Time, prev.Stopped
		o.LastCompletedRevision = prev.Revision
		if target := revisionNamed(rs.all, prev.Revision); target != nil && prev.FailedRevision == rs.update.Name {
			tested = target
			// Pods of that revision older than the rollback ran it
			// before: only those it made are on trial.
			since = prev.Time.Time
		}
		// The deadline is the failed revision's, already acted upon.
		o.DeadlineExceeded = false
		o.RetreatComplete = prev.Complete || (tested != rs.update && rolloutComplete(ps, rs, tested, s.pods, now))
	} else {
		o.Complete = rolloutComplete(ps, rs, rs.update, s.pods, now)
	}
	if !o.Complete && !o.RetreatComplete {
		pods, graceEndsIn := s.record.failureWatch.observe(revisionHash(tested), s.pods, since, th.WaitingGrace, now)
		if f, failed := retreat.Classify(pods, th, now); failed {
			o.Failure = &f
		}
		s.rollbackCheckIn = graceEndsIn
	}
	d := retreat.Decide(o)
	s.rollback = rollbackReport(d, prev, o.RetreatComplete, now)
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
		target := revisionNamed(rs.all, o.LastCompletedRevision)
		tmpl, ok := revision.Template{}, target != nil
		if ok {
			tmpl, ok = rs.template(revisionHash(target))
		}
		if !ok {
			// The revision to return to is gone (deleted by hand): the
			// failure is all there is to say.
			s.rollback.Status.Revision = ""
			return nil
		}
		rs.update, rs.updateTemplate, rs.updateHash = target, tmpl, revisionHash(target)
		rs.current, rs.currentTemplate, rs.currentHash = target, tmpl, revisionHash(target)
		rs.rollingBack, rs.rollbackStopped = true, d.Action == retreat.Stop
	}
	return nil
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

// rolloutComplete reports whether the rollout to target has nothing left
// to do: every pod it wants runs target, available (rollout.Complete).
// For a revision other than the spec's (the one a rollback returns to),
// partition does not apply.
func rolloutComplete(ps *appv1alpha1.PodSet, rs *revisionState, target *appsv1.ControllerRevision, pods []*slimpod.Pod, now time.Time) bool {
	tmpl, ok := rs.template(revisionHash(target))
	if target == rs.update {
		tmpl, ok = rs.updateTemplate, true
	}
	if !ok {
		return false
	}
	to := *rs
	to.rollingBack = target != rs.update
	to.update, to.updateTemplate, to.updateHash = target, tmpl, revisionHash(target)
	if to.rollingBack {
		to.current, to.currentTemplate, to.currentHash = target, tmpl, revisionHash(target)
	}
	in, _, err := rolloutInput(ps, &to, pods, now)
	return err == nil && rollout.Complete(in)
}

// failureWatch is, in a PodSet's record, what the pod cache cannot tell of
// the containers of the revision on trial: since when each has waited in a
// reason of each trigger (first seen; the kubelet alternates ErrImagePull
// and ImagePullBackOff, and a crash loop runs between its back-offs), and,
// for a pod updated in place, how many of its restarts are not the
// revision's. It starts afresh when the revision on trial changes.
type failureWatch struct {
	hash string
	pods map[types.UID]map[string]watchedContainer
}

type watchedContainer struct {
	since       map[retreat.Trigger]time.Time
	restartBase int32
}

// observe returns the classifier's view at now of the live pods of
// revision hash made at or after since (or updated to it in place), and
// how long until the first of their waits reaches grace (0 when none
// will); it forgets the pods no longer among them.
func (w *failureWatch) observe(hash string, pods []*slimpod.Pod, since time.Time, grace time.Duration, now time.Time) ([]retreat.Pod, time.Duration) {
	if w.hash != hash {
		*w = failureWatch{hash: hash}
	}
	seen := make(map[types.UID]map[string]watchedContainer, len(w.pods))
	var out []retreat.Pod
	var next time.Duration
	for _, pod := range pods {
		if !operand.IsLive(pod) || pod.Labels[appv1alpha1.LabelRevisionHash] != hash {
			continue
		}
		st, inPlace := inplace.StateOf(pod)
		inPlace = inPlace && st.Revision == hash
		if !inPlace && pod.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			continue
		}
		before := w.pods[pod.UID]
		// Init containers and sidecars, whose statuses slimpod keeps
		// with the others, fail as the others do: a crash loop in one
		// keeps the pod from ever turning Ready.
		statuses := pod.Status.ContainerStatuses
		containers := make(map[string]watchedContainer, len(statuses))
		p := retreat.Pod{Name: pod.Name}
		for i := range statuses {
			cs := &statuses[i]
			c, known := before[cs.Name]
			if !known {
				c.since = map[retreat.Trigger]time.Time{}
				if inPlace {
					c.restartBase = st.RestartsBefore(cs)
					if !since.IsZero() {
						// On trial since a rollback: the pod may have
						// been updated to the revision long before, and
						// restarted since; count from now at the least.
						c.restartBase = max(c.restartBase, cs.RestartCount)
					}
				}
			}
			rc := retreat.Container{Name: cs.Name, RestartsSinceRevision: max(0, cs.RestartCount-c.restartBase)}
			if cs.State.Waiting != nil {
				if trigger, ok := retreat.WaitingTrigger(cs.State.Waiting.Reason); ok {
					first, ok := c.since[trigger]
					if !ok {
						first = now
						c.since[trigger] = now
					}
					rc.WaitingReason, rc.WaitingSince = cs.State.Waiting.Reason, first
					if left := first.Add(grace).Sub(now); left > 0 && (next == 0 || left < next) {
						next = left
					}
				}
			}
			containers[cs.Name] = c
			p.Containers = append(p.Containers, rc)
		}
		seen[pod.UID] = containers
		out = append(out, p)
	}
	w.pods = seen
	return out, next
}
