package v1alpha1

import (
	"fmt"
	"strings"
	"time"
)

// Labels every pod of a PodSet carries. The selector is the whole set: a pod
// belongs to a PodSet only while it carries all of them (and its controller
// ownerReference), so editing one of them by hand releases the pod. The
// managed-by label is special: the operator caches only pods carrying it, so
// a pod stripped of it leaves the operator's view; it is released all the
// same. They live with the API because tools that read PodSets (the kubectl
// plugin, dashboards, alerts) select pods and revisions by them.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelPodSet names the PodSet a pod or a ControllerRevision belongs
	// to. It is also what orphaned pods and revisions are matched on to find
	// the PodSet that may adopt them.
	LabelPodSet = "app.example.com/podset"
	// LabelRevisionHash carries the hash of the pod template revision a pod
	// was made from, as the StatefulSet and DaemonSet controllers label
	// theirs. It is not part of the selector: pods of every revision are the
	// PodSet's.
	LabelRevisionHash = "controller-revision-hash"

	// NameValue is the value of app.kubernetes.io/name on every operand pod.
	NameValue = "podset"
	// ManagedByValue is the value of app.kubernetes.io/managed-by on every
	// operand pod and revision.
	ManagedByValue = "podset-operator"
)

// AnnotationChangeCause is the annotation kubectl users record a change's
// reason in. The operator copies it from the PodSet to the revision it
// makes, where `kubectl podset rollout history` shows it.
const AnnotationChangeCause = "kubernetes.io/change-cause"

// Reasons of the conditions a PodSet reports, as the Deployment and
// ReplicaSet controllers name theirs where the meaning is the same.
const (
	// Available.
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// Progressing.
	ReasonScalingUp     = "ScalingUp"
	ReasonScalingDown   = "ScalingDown"
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonWaitingForOldPods: a Recreate rollout waits for the pods of
	// older revisions to be gone before it creates any.
	ReasonWaitingForOldPods = "WaitingForOldPods"
	// ReasonDeletingNamedPods: pods that spec.scaleStrategy.podsToDelete
	// names are still live, to be deleted (and replaced, unless replicas
	// was lowered).
	ReasonDeletingNamedPods        = "DeletingNamedPods"
	ReasonWaitingForAvailability   = "WaitingForAvailability"
	ReasonNewRevisionAvailable     = "NewRevisionAvailable"
	ReasonPaused                   = "Paused"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReplicaFailure.
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
	// ReasonFailedUpdate: an in-place update of a pod was refused.
	ReasonFailedUpdate = "FailedUpdate"
	ReasonNoFailure    = "NoFailure"
	// Reconciling, False: the pods match the spec (ReasonReconciled), or
	// cannot get there without someone acting (ReasonStalled). True: the
	// reasons of Progressing.
	ReasonReconciled = "Reconciled"
	ReasonStalled    = "Stalled"
	// Stalled, True: ReasonProgressDeadlineExceeded, or
	// ReasonInPlaceOnlyKeepsPods: InPlaceOnly keeps old pods whose change
	// needs new pods. False: ReasonNotStalled.
	ReasonInPlaceOnlyKeepsPods = "InPlaceOnlyKeepsPods"
	// Progressing and Stalled under auto-rollback: the update revision
	// failed and the pods are returned to the last completed one
	// (ReasonRolledBack), that one failed too and the pods are left as
	// they are (ReasonRollbackStopped), or it failed with no completed
	// revision to return to (ReasonRolloutFailed).
	ReasonRolledBack      = "RolledBack"
	ReasonRollbackStopped = "RollbackStopped"
	ReasonRolloutFailed   = "RolloutFailed"
	ReasonNotStalled      = "NotStalled"
	// Progressing under spec.updateStrategy.rollingUpdate.canary: a step
	// moves pods or runs an analysis (ReasonCanaryStep, True), a pause
	// step holds the rollout (ReasonCanaryPaused, Unknown), an analysis
	// reached its inconclusive or consecutive-error limit and holds it
	// until it is promoted or aborted (ReasonAnalysisInconclusive,
	// ReasonAnalysisError, Unknown), or the analyses cannot run as written
	// (ReasonInvalidAnalysis, False).
	ReasonCanaryStep           = "CanaryStep"
	ReasonCanaryPaused         = "CanaryPaused"
	ReasonAnalysisInconclusive = "AnalysisInconclusive"
	ReasonAnalysisError        = "AnalysisError"
	ReasonInvalidAnalysis      = "InvalidAnalysis"
)

// In-place updates (spec.updateStrategy.rollingUpdate.podUpdatePolicy
// InPlaceIfPossible or InPlaceOnly).
const (
	// PodConditionInPlaceUpdateReady is the readiness gate that pods of an
	// in-place PodSet carry from their creation (gates cannot be added
	// later). The operator sets the pod condition of this type False
	// before it restarts the pod's container with a new image, so that
	// the pod is not Ready and takes no traffic meanwhile, and True once
	// the new container is Ready.
	PodConditionInPlaceUpdateReady = "app.example.com/InPlaceUpdateReady"
	// AnnotationInPlaceUpdate records on a pod the in-place update it is
	// going through: the revision it moves to and what its container was
	// before (JSON, see controllers/inplace.State). The update is done once
	// the kubelet reports what the state asks for.
	AnnotationInPlaceUpdate = "app.example.com/in-place-update"
	// AnnotationRestartedAt is the annotation `kubectl rollout restart`
	// sets on a pod template. A change of it asks for new pods, so it is
	// never made in place.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
)

// Reasons of the pod condition PodConditionInPlaceUpdateReady.
const (
	ReasonInPlaceUpdating    = "InPlaceUpdating"
	ReasonInPlaceUpdateReady = "InPlaceUpdateReady"
)

// AnnotationRolloutRetry on a PodSet asks auto-rollback to try the revision
// it rolled back from again (`kubectl podset rollout retry` sets it). Its
// value names the rollback it answers, as status.autoRollback records it:
// "<failedRevision>@<time>" (RolloutRetryValue), so that a request stays
// answered once: when the revision fails again, the new rollback has a
// new time and the old request no longer matches it.
const AnnotationRolloutRetry = "app.example.com/rollout-retry"

// AnnotationRolloutPromote on a PodSet completes a step of its canary
// rollout (`kubectl podset rollout promote` sets it): a pause, an analysis
// (whatever its phase), or the wait for pods. Its value names what it
// promotes, "<updateRevision>/<step>" or "<updateRevision>/full" (every
// remaining step), so that it does nothing once done, or for a later
// rollout.
const AnnotationRolloutPromote = "app.example.com/rollout-promote"

// AnnotationRolloutAbort on a PodSet retreats its rollout to the last
// completed revision, as a failed analysis does, with trigger Aborted
// (`kubectl podset rollout abort` sets it). Its value is the update
// revision it aborts, so that it does nothing for a later rollout.
const AnnotationRolloutAbort = "app.example.com/rollout-abort"

// RolloutPromoteValue is the value of AnnotationRolloutPromote that
// completes step of revision's rollout; a step below 0 asks for every
// remaining step.
func RolloutPromoteValue(revision string, step int32) string {
	if step < 0 {
		return revision + "/full"
	}
	return fmt.Sprintf("%s/%d", revision, step)
}

// ParseRolloutPromote reads a value of AnnotationRolloutPromote: the
// revision, and the step it completes, or full for every remaining one.
func ParseRolloutPromote(v string) (revision string, step int32, full bool, err error) {
	i := strings.LastIndexByte(v, '/')
	if i <= 0 {
		return "", 0, false, fmt.Errorf("%s: %q is not <updateRevision>/<step> or <updateRevision>/full", AnnotationRolloutPromote, v)
	}
	revision, rest := v[:i], v[i+1:]
	if rest == "full" {
		return revision, 0, true, nil
	}
	var n int32
	if _, err := fmt.Sscanf(rest, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != rest {
		return "", 0, false, fmt.Errorf("%s: %q: the step is not a step number or full", AnnotationRolloutPromote, v)
	}
	return revision, n, false, nil
}

// ReasonRolloutRetried is the event's reason when a PodSet rolls to the
// revision it had rolled back from again, as AnnotationRolloutRetry asked.
const ReasonRolloutRetried = "RolloutRetried"

// RolloutRetryValue is the value of AnnotationRolloutRetry that asks to
// retry the rollback rb reports.
func RolloutRetryValue(rb *AutoRollbackStatus) string {
	return rb.FailedRevision + "@" + rb.Time.UTC().Format(time.RFC3339)
}

// ParseRolloutRetry reads a value of AnnotationRolloutRetry: the revision
// rolled back from and the time of that rollback, to the second.
func ParseRolloutRetry(v string) (revision string, at time.Time, err error) {
	i := strings.LastIndexByte(v, '@')
	if i <= 0 {
		return "", time.Time{}, fmt.Errorf("%s: %q is not <failedRevision>@<time> (status.autoRollback's failedRevision and time)", AnnotationRolloutRetry, v)
	}
	at, err = time.Parse(time.RFC3339, v[i+1:])
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %q: the time is not RFC 3339: %w", AnnotationRolloutRetry, v, err)
	}
	return v[:i], at, nil
}
