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
	ReasonScalingUp                = "ScalingUp"
	ReasonScalingDown              = "ScalingDown"
	ReasonRollingUpdate            = "RollingUpdate"
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
