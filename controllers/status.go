package controllers

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Condition reasons.
const (
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	ReasonScalingUp                  = "ScalingUp"
	ReasonScalingDown                = "ScalingDown"
	ReasonWaitingForAvailability     = "WaitingForAvailability"
	ReasonReplicasAvailable          = "ReplicasAvailable"
	ReasonFailedCreate               = "FailedCreate"
	ReasonFailedDelete               = "FailedDelete"
	ReasonNoFailure                  = "NoFailure"
)

// scaleOutcome is what the scaling phase of one reconcile did.
type scaleOutcome struct {
	// attempted is false when the PodSet was left alone (writes of an
	// earlier reconcile not yet observed, or the PodSet is being deleted);
	// the previous ReplicaFailure condition then stands.
	attempted bool
	// issued is how many pod creations and deletions succeeded.
	issued int
	// failureReason and err describe the first failed write, if any.
	failureReason string
	err           error
}

// computeStatus derives a PodSet's status from the pods observed for it. It
// is a pure function of its arguments: the same pods at the same time always
// give the same status, so a status write happens only when something the
// user can see has changed.
func computeStatus(ps *appv1alpha1.PodSet, pods []*corev1.Pod, outcome scaleOutcome, now time.Time) appv1alpha1.PodSetStatus {
	status := *ps.Status.DeepCopy()
	desired := ps.DesiredReplicas()

	setReplicaCounts(&status, pods, minReady(ps), now)
	status.Selector = podSelector(ps).String()
	status.ObservedGeneration = ps.Generation

	// Conditions carry now as their transition time; SetStatusCondition
	// keeps the old one when the condition's status does not change.
	transition := metav1.NewTime(now)
	setAvailableCondition(&status, desired, ps.Generation, transition)
	setProgressingCondition(&status, desired, ps.Generation, transition)
	setReplicaFailureCondition(&status, outcome, ps.Generation, transition)
	return status
}

// setReplicaCounts sets replicas, readyReplicas, availableReplicas and
// podNames from the live pods.
func setReplicaCounts(status *appv1alpha1.PodSetStatus, pods []*corev1.Pod, minReady time.Duration, now time.Time) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	status.PodNames = nil
	for _, pod := range pods {
		if !isPodLive(pod) {
			continue
		}
		status.Replicas++
		status.PodNames = append(status.PodNames, pod.Name)
		if wait, ready := availableIn(pod, minReady, now); ready {
			status.ReadyReplicas++
			if wait == 0 {
				status.AvailableReplicas++
			}
		}
	}
	sort.Strings(status.PodNames)
}

func setAvailableCondition(status *appv1alpha1.PodSetStatus, desired int32, generation int64, transition metav1.Time) {
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonMinimumReplicasAvailable,
		Message:            fmt.Sprintf("%d of %d pods available", status.AvailableReplicas, desired),
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	if status.AvailableReplicas < desired {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMinimumReplicasUnavailable
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

func setProgressingCondition(status *appv1alpha1.PodSetStatus, desired int32, generation int64, transition metav1.Time) {
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionProgressing,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	switch {
	case status.Replicas < desired:
		c.Reason = ReasonScalingUp
		c.Message = fmt.Sprintf("%d of %d pods exist", status.Replicas, desired)
	case status.Replicas > desired:
		c.Reason = ReasonScalingDown
		c.Message = fmt.Sprintf("%d pods exist, %d wanted", status.Replicas, desired)
	case status.AvailableReplicas < desired:
		c.Reason = ReasonWaitingForAvailability
		c.Message = fmt.Sprintf("%d of %d pods available", status.AvailableReplicas, desired)
	default:
		c.Status = metav1.ConditionFalse
		c.Reason = ReasonReplicasAvailable
		c.Message = fmt.Sprintf("all %d pods available", desired)
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

func setReplicaFailureCondition(status *appv1alpha1.PodSetStatus, outcome scaleOutcome, generation int64, transition metav1.Time) {
	if !outcome.attempted && meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionReplicaFailure) != nil {
		return
	}
	c := metav1.Condition{
		Type:               appv1alpha1.ConditionReplicaFailure,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonNoFailure,
		Message:            "the last pod creations and deletions succeeded",
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
	if outcome.err != nil {
		// While the same kind of failure goes on, the condition keeps the
		// message of its first occurrence, as the ReplicaSet controller
		// does. The API server's error names a new generated pod on every
		// attempt; a message that changed each time would write the status
		// on every retry, and each status write would wake the PodSet again
		// at once, bypassing the backoff between retries.
		prev := meta.FindStatusCondition(status.Conditions, appv1alpha1.ConditionReplicaFailure)
		if prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == outcome.failureReason {
			return
		}
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, outcome.failureReason, outcome.err.Error()
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

// nextAvailabilityCheck is how long until the first pod that is ready but not
// yet available becomes available; 0 when there is none. No pod event marks
// that moment, so the reconciler requeues itself for it.
func nextAvailabilityCheck(pods []*corev1.Pod, minReady time.Duration, now time.Time) time.Duration {
	var next time.Duration
	for _, pod := range pods {
		if !isPodLive(pod) {
			continue
		}
		if wait, ready := availableIn(pod, minReady, now); ready && wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next
}

// minReady is how long a pod must be Ready before it counts as available.
func minReady(ps *appv1alpha1.PodSet) time.Duration {
	return time.Duration(ps.Spec.MinReadySeconds) * time.Second
}
