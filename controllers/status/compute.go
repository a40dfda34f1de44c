package status

import (
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Outcome is what the scaling phase of one reconcile did.
type Outcome struct {
	// Attempted is false when the PodSet was left alone (writes of an
	// earlier reconcile not yet observed, or the PodSet is being deleted);
	// the previous ReplicaFailure condition then stands.
	Attempted bool
	// Issued is how many pod creations and deletions succeeded.
	Issued int
	// Sent is how many deletions were sent in the background, their
	// answers not awaited.
	Sent int
	// FailureReason and Err describe the first failed write, if any.
	FailureReason string
	Err           error
}

// Observed is what the reconciler knows of a PodSet besides its pods: its
// revisions, and what the rollout arithmetic is given for the pods.
type Observed struct {
	// UpdateRevision names the revision of the spec's pod template, and
	// CurrentRevision the one the pods ran before the rollout in progress.
	// Empty when no revision is known: the status keeps the revisions and
	// the collision count it reports.
	UpdateRevision, CurrentRevision string
	// UpdateHash is the revision hash label of the update revision's pods.
	UpdateHash string
	// CollisionCount is the count the update revision's hash was made with.
	CollisionCount *int32
	// Rollout is the rollout arithmetic's input for the pods; nil when the
	// update strategy does not resolve, and the Progressing condition then
	// tells neither a paused, a finished nor a rolling rollout.
	Rollout *rollout.Input
	// KeptInPlace, under InPlaceOnly, says why the first old pod that
	// cannot be updated in place cannot (the field that changed, say).
	KeptInPlace string
	// TargetRevision names the revision the pods are moved to: the update
	// revision, or while auto-rollback returns the pods from it, the last
	// completed one. Rollout counts the pods against it.
	TargetRevision string
	// Rollback is what auto-rollback decided.
	Rollback Rollback
	// Canary is where the canary steps stand; nil when the PodSet has
	// none (spec.updateStrategy.rollingUpdate.canary).
	Canary *Canary
}

// Canary is where a canary rollout stands (controllers/canary), as the
// status reports it.
type Canary struct {
	// Status is the status.canary to report.
	Status *appv1alpha1.CanaryStatus
	// Done: every step is done, and the rollout goes on as one without
	// steps.
	Done bool
	// Paused: the current step is a pause.
	Paused bool
	// Hold is ReasonAnalysisInconclusive or ReasonAnalysisError when an
	// analysis reached its limit and holds the rollout.
	Hold string
	// HoldByBackground says that the hold is the background analysis's,
	// which only a full promotion or an abort ends.
	HoldByBackground bool
	// Invalid says which analysis cannot run as written, and why.
	Invalid string
}

// Rollback is what auto-rollback decided, as the status reports it.
type Rollback struct {
	// Status is the status.autoRollback to report: nil when the rollout
	// to the spec's revision has not failed.
	Status *appv1alpha1.AutoRollbackStatus
}

// Compute derives a PodSet's status from the pods observed for it and what
// else was observed. It is a pure function of its arguments: the same pods at
// the same time always give the same status, so a status write happens only
// when something the user can see has changed.
func Compute(ps *appv1alpha1.PodSet, pods []*slimpod.Pod, observed Observed, outcome Outcome, now time.Time) appv1alpha1.PodSetStatus {
	prev := ps.Status
	status := *ps.Status.DeepCopy()
	desired := ps.DesiredReplicas()

	setReplicaCounts(&status, pods, observed.UpdateHash, operand.MinReady(ps), now)
	status.Selector = operand.Selector(ps).String()
	status.ObservedGeneration = ps.Generation
	if observed.UpdateRevision != "" {
		status.UpdateRevision = observed.UpdateRevision
		status.CurrentRevision = observed.CurrentRevision
		status.CollisionCount = observed.CollisionCount
		status.AutoRollback = observed.Rollback.Status
		status.Canary = nil
		if observed.Canary != nil {
			status.Canary = toTheSecond(observed.Canary.Status)
		}
	}

	// Conditions carry now as their transition time; SetStatusCondition
	// keeps the old one when the condition's status does not change.
	transition := metav1.NewTime(now)
	in := observed.Rollout
	paused := in != nil && !in.Strategy.OnDelete && in.Strategy.Paused
	// A canary rollout is complete only once its last step is done: before,
	// the partition of its step keeps pods on the old revision.
	complete := in != nil && rollout.Complete(*in) && (observed.Canary == nil || observed.Canary.Done)
	if progressed(ps, prev, status, paused, complete) {
		status.LastProgressTime = &transition
	}
	setAvailableCondition(&status, desired, ps.Generation, transition)
	facts := progressFacts{
		desired:  desired,
		paused:   paused,
		complete: complete,
		rolling:  in != nil && !in.Strategy.OnDelete && (in.Updated.Live < wantUpdated(*in) || in.UpdatedPending > 0),
		stuck:    stuckInPlace(pods),
		kept:     keptOld(in),
		keptWhy:  observed.KeptInPlace,
		noRoom:   in != nil && in.Strategy.InPlaceOnly && in.Strategy.MaxUnavailable == 0 && in.OldInPlace.Live > 0,
		deadline: progressDeadline(ps),
		now:      now,
	}
	if in != nil && in.Strategy.Recreate {
		facts.oldLeft, facts.oldTerminating = in.OldPodsLeft(), in.OldTerminating
	}
	if in != nil && in.Strategy.WaitForTermination {
		facts.terminatingWaited = in.Terminating
	}
	if in != nil {
		facts.named = in.NamedUpdated.Live + in.NamedOld.Live
	}
	if c := observed.Canary; c != nil && !c.Done {
		facts.canary = c
	}
	// Set once: a condition set twice in one computation would take now
	// as its transition time each time, and the status would never be
	// the same twice.
	if !setRollbackProgress(&status, observed, in, complete, ps.Generation, transition) {
		setProgressingCondition(&status, facts, ps.Generation, transition)
	}
	if complete && in.Replicas > 0 && in.Updated.Available == in.Replicas && observed.TargetRevision != "" {
		status.LastCompletedRevision = observed.TargetRevision
	}
	setReplicaFailureCondition(&status, outcome, ps.Generation, transition)
	setReconcilingAndStalled(&status, facts, ps.Generation, transition)
	return status
}

func wantUpdated(in rollout.Input) int {
	upd, _ := rollout.Targets(in)
	return upd
}

// setReplicaCounts sets replicas, readyReplicas, availableReplicas, the
// updated counts and podNames from the live pods, and terminatingReplicas
// from the terminating ones.
func setReplicaCounts(status *appv1alpha1.PodSetStatus, pods []*slimpod.Pod, updateHash string, minReady time.Duration, now time.Time) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	status.UpdatedReplicas, status.UpdatedReadyReplicas, status.UpdatedAvailableReplicas = 0, 0, 0
	status.TerminatingReplicas = 0
	status.PodNames = nil
	for _, pod := range pods {
		if operand.IsTerminating(pod) {
			status.TerminatingReplicas++
		}
		if !operand.IsLive(pod) {
			continue
		}
		// A pod updated in place runs the update revision once the
		// kubelet has made the change.
		updated := updateHash != "" && pod.Labels[appv1alpha1.LabelRevisionHash] == updateHash && !inplace.Pending(pod)
		status.Replicas++
		status.PodNames = append(status.PodNames, pod.Name)
		if updated {
			status.UpdatedReplicas++
		}
		if wait, ready := operand.AvailableIn(pod, minReady, now); ready {
			status.ReadyReplicas++
			if updated {
				status.UpdatedReadyReplicas++
			}
			if wait == 0 {
				status.AvailableReplicas++
				if updated {
					status.UpdatedAvailableReplicas++
				}
			}
		}
	}
	sort.Strings(status.PodNames)
}

// progressed reports whether the pods moved towards the spec since the
// stored status, which restarts the progress deadline: a new spec or
// revision, a rollout resumed, more pods updated, ready or available, fewer
// old pods, or the live count closer to replicas. Work that appears after
// the pods had reached the spec (a pod lost or no longer ready) starts the
// deadline afresh too: the time spent complete is not time without
// progress. (A Deployment's controller stops checking the deadline once a
// rollout completes; a PodSet that cannot get back to strength is reported
// stuck once the deadline passes, see docs/reference.md.)
func progressed(ps *appv1alpha1.PodSet, prev, cur appv1alpha1.PodSetStatus, paused, complete bool) bool {
	desired := ps.DesiredReplicas()
	distance := func(n int32) int32 { return max(n-desired, desired-n) }
	prevReason := func(reason string) bool {
		c := meta.FindStatusCondition(prev.Conditions, appv1alpha1.ConditionProgressing)
		return c != nil && c.Reason == reason
	}
	return prev.LastProgressTime == nil ||
		prev.ObservedGeneration != ps.Generation ||
		prev.UpdateRevision != cur.UpdateRevision ||
		// A rollback forgotten (a retry of the failed revision, or
		// auto-rollback turned off) starts a rollout afresh.
		(prev.AutoRollback != nil && cur.AutoRollback == nil) ||
		(prevReason(appv1alpha1.ReasonPaused) && !paused) ||
		(prevReason(appv1alpha1.ReasonNewRevisionAvailable) && !complete) ||
		cur.UpdatedReplicas > prev.UpdatedReplicas ||
		cur.UpdatedAvailableReplicas > prev.UpdatedAvailableReplicas ||
		cur.ReadyReplicas > prev.ReadyReplicas ||
		cur.AvailableReplicas > prev.AvailableReplicas ||
		cur.Replicas-cur.UpdatedReplicas < prev.Replicas-prev.UpdatedReplicas ||
		distance(cur.Replicas) < distance(prev.Replicas) ||
		// A pod that ended its grace period, where the operator waits
		// for that before it creates a pod (Recreate,
		// TerminationComplete); elsewhere terminating pods hold nothing
		// back, and their end is no progress of the rollout.
		(waitsForTermination(ps) && cur.TerminatingReplicas < prev.TerminatingReplicas) ||
		// A canary step begun, or a measurement taken, is progress: an
		// analysis moves no pod for as long as it measures.
		canaryMoved(prev.Canary, cur.Canary)
}

// waitsForTermination reports whether the operator waits for terminating
// pods to be gone before it creates pods: under Recreate (old ones) or
// podReplacementPolicy TerminationComplete.
func waitsForTermination(ps *appv1alpha1.PodSet) bool {
	return ps.Spec.UpdateStrategy.Type == appv1alpha1.RecreateStrategyType ||
		ps.Spec.PodReplacementPolicy == appv1alpha1.TerminationCompletePodReplacementPolicy
}

// toTheSecond is c with its times to the second, as the API server stores
// them: a finer time would make every computed status differ from the
// stored one, and be written again on every reconcile.
func toTheSecond(c *appv1alpha1.CanaryStatus) *appv1alpha1.CanaryStatus {
	if c == nil {
		return nil
	}
	c = c.DeepCopy()
	c.StepStartTime = c.StepStartTime.Rfc3339Copy()
	for i := range c.Analyses {
		run := &c.Analyses[i]
		run.StartTime = run.StartTime.Rfc3339Copy()
		for j := range run.Measurements {
			run.Measurements[j].Time = run.Measurements[j].Time.Rfc3339Copy()
		}
	}
	return c
}

// canaryMoved reports whether the canary moved on from prev to cur: a step
// begun, or a measurement taken.
func canaryMoved(prev, cur *appv1alpha1.CanaryStatus) bool {
	if cur == nil {
		return false
	}
	if prev == nil || prev.Revision != cur.Revision || prev.Step != cur.Step {
		return true
	}
	taken := func(c *appv1alpha1.CanaryStatus) int32 {
		var n int32
		for _, a := range c.Analyses {
			n += a.Successful + a.Failed + a.Inconclusive + a.Errors
		}
		return n
	}
	return taken(cur) > taken(prev)
}

// DefaultProgressDeadlineSeconds is the default of
// spec.progressDeadlineSeconds.
const DefaultProgressDeadlineSeconds = 600

func progressDeadline(ps *appv1alpha1.PodSet) time.Duration {
	return time.Duration(ptr.Deref(ps.Spec.ProgressDeadlineSeconds, DefaultProgressDeadlineSeconds)) * time.Second
}

// ProgressDeadlineIn is how long until the PodSet's progress deadline passes
// without progress; 0 when it has passed, or does not apply (no progress
// recorded, or nothing left to do).
func ProgressDeadlineIn(ps *appv1alpha1.PodSet, status appv1alpha1.PodSetStatus, now time.Time) time.Duration {
	c := meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionProgressing)
	if status.LastProgressTime == nil || c == nil || c.Status != metav1.ConditionTrue || c.Reason == appv1alpha1.ReasonNewRevisionAvailable {
		return 0
	}
	return max(0, status.LastProgressTime.Add(progressDeadline(ps)).Sub(now))
}

func setAvailableCondition(status *appv1alpha1.PodSetStatus, desired int32, generation int64, transition metav1.Time) {
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             appv1alpha1.ReasonMinimumReplicasAvailable,
		Message:            fmt.Sprintf("%d of %d pods available", status.AvailableReplicas, desired),
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	if status.AvailableReplicas < desired {
		c.Status, c.Reason = metav1.ConditionFalse, appv1alpha1.ReasonMinimumReplicasUnavailable
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

// progressFacts is what the Progressing condition is decided from.
type progressFacts struct {
	desired int32
	// paused: a RollingUpdate with rollingUpdate.paused set.
	paused bool
	// complete: nothing is left to do (rollout.Complete).
	complete bool
	// rolling: fewer pods run the update revision than wanted.
	rolling bool
	// stuck says why an in-place update does not come to an end, if one
	// does not.
	stuck string
	// kept is how many old pods InPlaceOnly keeps because they cannot be
	// updated in place, and keptWhy why the first of them cannot.
	kept    int
	keptWhy string
	// noRoom: InPlaceOnly with maxUnavailable 0 can take no pod out of
	// service to update it.
	noRoom bool
	// oldLeft and oldTerminating: under Recreate, how many pods of older
	// revisions are left, live or terminating, and how many of them are
	// terminating; no pod is created until none is left.
	oldLeft, oldTerminating int
	// terminatingWaited: under podReplacementPolicy TerminationComplete,
	// the terminating pods, which count against the bound until they are
	// gone.
	terminatingWaited int
	// named is how many live pods spec.scaleStrategy.podsToDelete names.
	named int
	// canary is where the canary steps stand, while some are left.
	canary   *Canary
	deadline time.Duration
	now      time.Time
}

// setProgressingCondition says what a Deployment's does: True while pods are
// moving towards the spec and once they got there (NewRevisionAvailable),
// Unknown while paused, and False when no progress was made for
// progressDeadlineSeconds (ProgressDeadlineExceeded; the operator keeps
// trying, and the next progress makes it True again).
func setProgressingCondition(status *appv1alpha1.PodSetStatus, f progressFacts, generation int64, transition metav1.Time) {
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionProgressing,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	desired := f.desired
	var step string
	if f.canary != nil && f.canary.Status != nil {
		step = f.canary.Status.Message
	}
	switch {
	case f.paused:
		c.Status, c.Reason = metav1.ConditionUnknown, appv1alpha1.ReasonPaused
		c.Message = fmt.Sprintf("rollout paused: %d of %d pods run revision %s", status.UpdatedReplicas, desired, status.UpdateRevision)
	case f.canary != nil && f.canary.Invalid != "":
		c.Status, c.Reason = metav1.ConditionFalse, appv1alpha1.ReasonInvalidAnalysis
		c.Message = "the canary's analysis cannot run as written: " + f.canary.Invalid
	case f.canary != nil && f.canary.Hold != "":
		c.Status, c.Reason = metav1.ConditionUnknown, f.canary.Hold
		c.Message = step + "; held until `kubectl podset rollout promote` or `abort`"
		if f.canary.HoldByBackground {
			c.Message = step + "; held until `kubectl podset rollout promote --full` or `abort`"
		}
	case f.canary != nil && f.canary.Paused:
		c.Status, c.Reason = metav1.ConditionUnknown, appv1alpha1.ReasonCanaryPaused
		c.Message = step
	case f.complete:
		c.Reason = appv1alpha1.ReasonNewRevisionAvailable
		c.Message = fmt.Sprintf("all %d pods run revision %s and are available", desired, status.UpdateRevision)
		if status.UpdatedReplicas < desired {
			c.Message = fmt.Sprintf("all %d pods available, %d of them run revision %s", desired, status.UpdatedReplicas, status.UpdateRevision)
		}
	case status.LastProgressTime != nil && !f.now.Before(status.LastProgressTime.Add(f.deadline)):
		c.Status, c.Reason = metav1.ConditionFalse, appv1alpha1.ReasonProgressDeadlineExceeded
		c.Message = fmt.Sprintf("no progress for %s: %d of %d pods exist, %d updated, %d available",
			f.deadline, status.Replicas, desired, status.UpdatedReplicas, status.AvailableReplicas) + f.stuckNote()
	case f.canary != nil:
		c.Reason = appv1alpha1.ReasonCanaryStep
		c.Message = step + fmt.Sprintf(" (%d of %d pods run revision %s)", status.UpdatedReplicas, desired, status.UpdateRevision) + f.stuckNote()
	case f.oldLeft > 0:
		c.Reason = appv1alpha1.ReasonWaitingForOldPods
		c.Message = fmt.Sprintf("Recreate: %d pods of older revisions are left (%d of them terminating); the pods of revision %s are created once they are gone",
			f.oldLeft, f.oldTerminating, status.UpdateRevision)
	case f.named > 0:
		c.Reason = appv1alpha1.ReasonDeletingNamedPods
		c.Message = fmt.Sprintf("%d pods named in spec.scaleStrategy.podsToDelete are left to delete; %d pods exist, %d wanted, %d available",
			f.named, status.Replicas, desired, status.AvailableReplicas) + f.terminatingNote()
	case status.Replicas < desired:
		c.Reason = appv1alpha1.ReasonScalingUp
		c.Message = fmt.Sprintf("%d of %d pods exist", status.Replicas, desired) + f.terminatingNote()
	case f.rolling:
		c.Reason = appv1alpha1.ReasonRollingUpdate
		c.Message = fmt.Sprintf("%d of %d pods run revision %s", status.UpdatedReplicas, desired, status.UpdateRevision) + f.terminatingNote() + f.stuckNote()
	case status.Replicas > desired:
		c.Reason = appv1alpha1.ReasonScalingDown
		c.Message = fmt.Sprintf("%d pods exist, %d wanted", status.Replicas, desired)
	default:
		c.Reason = appv1alpha1.ReasonWaitingForAvailability
		c.Message = fmt.Sprintf("%d of %d pods available", status.AvailableReplicas, desired)
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

// terminatingNote says, under podReplacementPolicy TerminationComplete,
// that terminating pods hold the room of their replacements.
func (f progressFacts) terminatingNote() string {
	if f.terminatingWaited == 0 {
		return ""
	}
	return fmt.Sprintf("; %d terminating pods are waited for (podReplacementPolicy TerminationComplete)", f.terminatingWaited)
}

// setRollbackProgress makes the Progressing condition say what
// auto-rollback did, and reports whether it did: False, since the spec's
// revision failed, while the pods are returned to the last completed
// revision and after (RolledBack), once that one failed too
// (RollbackStopped), or when there was none to return to (RolloutFailed).
func setRollbackProgress(status *appv1alpha1.PodSetStatus, o Observed, in *rollout.Input, complete bool, generation int64, transition metav1.Time) bool {
	rb := o.Rollback.Status
	if rb == nil {
		return false
	}
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionProgressing,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	failed := fmt.Sprintf("revision %s failed (%s: %s)", rb.FailedRevision, rb.Trigger, rb.Message)
	switch {
	case rb.Revision == "":
		c.Reason = appv1alpha1.ReasonRolloutFailed
		c.Message = failed + "; no revision completed before it, so there is none to roll back to"
	case rb.Stopped:
		c.Reason = appv1alpha1.ReasonRollbackStopped
		c.Message = failed + "; the pods are left as they are until the spec asks for another revision or a retry"
	case complete || in == nil:
		c.Reason = appv1alpha1.ReasonRolledBack
		c.Message = failed + fmt.Sprintf("; all %d pods are back on revision %s", status.Replicas, rb.Revision)
	default:
		c.Reason = appv1alpha1.ReasonRolledBack
		c.Message = failed + fmt.Sprintf("; rolling the pods back to revision %s: %d of %d run it", rb.Revision, in.Updated.Live, in.Replicas)
	}
	c.Message = Truncate(c.Message, maxConditionMessage)
	meta.SetStatusCondition(&status.Conditions, c)
	return true
}

// setReconcilingAndStalled sets the conditions kstatus reads (see
// appv1alpha1.ConditionReconciling) from the Progressing and ReplicaFailure
// conditions just computed, so that they never disagree with them:
//
//   - Stalled is True when Progressing is False (ProgressDeadlineExceeded,
//     where kstatus fails a Deployment, or auto-rollback's reasons), and when InPlaceOnly keeps old pods
//     that only new pods could update (or can take none out of service),
//     which no waiting resolves, unless the rollout is paused or done;
//   - otherwise Reconciling is True until Progressing says
//     NewRevisionAvailable, with Progressing's reason (Paused included: a
//     paused Deployment is InProgress to kstatus too);
//   - a failing pod write (ReplicaFailure) is named in both messages, since
//     it is the usual reason why no progress is made.
func setReconcilingAndStalled(status *appv1alpha1.PodSetStatus, f progressFacts, generation int64, transition metav1.Time) {
	progressing := meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionProgressing)
	reconciling := metav1.Condition{
		Type:               appv1alpha1.ConditionReconciling,
		Status:             metav1.ConditionTrue,
		Reason:             progressing.Reason,
		Message:            progressing.Message + failureNote(status),
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	stalled := metav1.Condition{
		Type:               appv1alpha1.ConditionStalled,
		Status:             metav1.ConditionFalse,
		Reason:             appv1alpha1.ReasonNotStalled,
		Message:            "the pods are moving towards the spec within spec.progressDeadlineSeconds",
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	switch {
	case progressing.Reason == appv1alpha1.ReasonProgressDeadlineExceeded:
		stalled.Status, stalled.Reason = metav1.ConditionTrue, appv1alpha1.ReasonProgressDeadlineExceeded
		stalled.Message = progressing.Message + failureNote(status)
	case progressing.Status == metav1.ConditionFalse:
		// Auto-rollback: the spec asks for a revision that failed, which
		// no waiting cures (setRollbackProgress).
		stalled.Status, stalled.Reason = metav1.ConditionTrue, progressing.Reason
		stalled.Message = progressing.Message
	case !f.paused && !f.complete && (f.kept > 0 || f.noRoom):
		stalled.Status, stalled.Reason = metav1.ConditionTrue, appv1alpha1.ReasonInPlaceOnlyKeepsPods
		stalled.Message = progressing.Message
	case progressing.Status == metav1.ConditionTrue && progressing.Reason == appv1alpha1.ReasonNewRevisionAvailable:
		reconciling.Status, reconciling.Reason = metav1.ConditionFalse, appv1alpha1.ReasonReconciled
		stalled.Message = "the pods match the spec"
	}
	if stalled.Status == metav1.ConditionTrue {
		reconciling.Status, reconciling.Reason = metav1.ConditionFalse, appv1alpha1.ReasonStalled
		reconciling.Message = "stalled (see the Stalled condition): " + stalled.Message
	}
	reconciling.Message = Truncate(reconciling.Message, maxConditionMessage)
	stalled.Message = Truncate(stalled.Message, maxConditionMessage)
	meta.SetStatusCondition(&status.Conditions, reconciling)
	meta.SetStatusCondition(&status.Conditions, stalled)
}

// failureNote names the failing pod write, if the last one failed.
func failureNote(status *appv1alpha1.PodSetStatus) string {
	c := meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionReplicaFailure)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	return fmt.Sprintf("; pod writes are failing (%s): %s", c.Reason, c.Message)
}

func (f progressFacts) stuckNote() string {
	var note string
	if f.stuck != "" {
		note = "; in-place update stuck: " + f.stuck
	}
	if f.kept > 0 {
		note += fmt.Sprintf("; %d pods cannot be updated in place and are kept under InPlaceOnly (%s): revert the change, or delete the pods to replace them", f.kept, f.keptWhy)
	}
	if f.noRoom {
		note += "; maxUnavailable is 0 under InPlaceOnly: no pod may be taken out of service to be updated in place"
	}
	return note
}

// keptOld is how many old pods above the partition InPlaceOnly keeps
// because they cannot be updated in place.
func keptOld(in *rollout.Input) int {
	if in == nil || !in.Strategy.InPlaceOnly || in.Strategy.OnDelete {
		return 0
	}
	_, wantOld := rollout.Targets(*in)
	return max(min(in.Old.Live-in.OldInPlace.Live, in.Old.Live-wantOld), 0)
}

// stuckInPlace is why the first pod (by name) whose in-place update does not
// come to an end is stuck, or "".
func stuckInPlace(pods []*slimpod.Pod) string {
	var first *slimpod.Pod
	for _, pod := range pods {
		if operand.IsLive(pod) && inplace.Pending(pod) && inplace.Stuck(pod) != "" && (first == nil || pod.Name < first.Name) {
			first = pod
		}
	}
	if first == nil {
		return ""
	}
	return inplace.Stuck(first)
}

func setReplicaFailureCondition(status *appv1alpha1.PodSetStatus, outcome Outcome, generation int64, transition metav1.Time) {
	if prev := meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionReplicaFailure); prev != nil && !outcome.Attempted {
		// Nothing was tried: the last verdict stands, for this spec too.
		prev.ObservedGeneration = generation
		return
	}
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionReplicaFailure,
		Status:             metav1.ConditionFalse,
		Reason:             appv1alpha1.ReasonNoFailure,
		Message:            "the last pod creations and deletions succeeded",
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	if outcome.Err != nil {
		// While the same kind of failure goes on, the condition keeps the
		// message of its first occurrence, as the ReplicaSet controller
		// does. The API server's error names a new generated pod on every
		// attempt; a message that changed each time would write the status
		// on every retry, and each status write would wake the PodSet again
		// at once, bypassing the backoff between retries.
		prev := meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionReplicaFailure)
		if prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == outcome.FailureReason {
			prev.ObservedGeneration = generation
			return
		}
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, outcome.FailureReason, Truncate(outcome.Err.Error(), maxConditionMessage)
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

// maxConditionMessage is the longest condition message the CRD accepts
// (metav1.Condition's own limit): a longer admission webhook denial would
// make every status write fail.
const maxConditionMessage = 32768

// NextAvailabilityCheck is how long until the first pod that is ready but not
// yet available becomes available; 0 when there is none. No pod event marks
// that moment, so the reconciler requeues itself for it.
func NextAvailabilityCheck(pods []*slimpod.Pod, minReady time.Duration, now time.Time) time.Duration {
	var next time.Duration
	for _, pod := range pods {
		if !operand.IsLive(pod) {
			continue
		}
		if wait, ready := operand.AvailableIn(pod, minReady, now); ready && wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next
}

// Truncate cuts note to at most limit bytes, on a rune boundary, ending in
// "..." when it was cut: condition messages are cut to what the CRD
// accepts, and the reconciler cuts its event notes the same way.
func Truncate(note string, limit int) string {
	if len(note) <= limit {
		return note
	}
	const ellipsis = "..."
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}
