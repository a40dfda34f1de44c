package operand

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/slimpod"
)

// IsLive reports whether a pod counts towards spec.replicas: it is not
// being deleted and has not terminated. Terminated pods are replaced, as a
// ReplicaSet does, rather than restarted.
func IsLive(pod *slimpod.Pod) bool {
	return pod.DeletionTimestamp == nil && !hasStopped(pod)
}

// IsTerminating reports whether a pod is being deleted and still runs out
// its grace period: it no longer counts towards spec.replicas, but has not
// stopped (KEP-3973's terminating pod, as a ReplicaSet counts it).
func IsTerminating(pod *slimpod.Pod) bool {
	return pod.DeletionTimestamp != nil && !hasStopped(pod)
}

// hasStopped reports whether the pod's containers have all terminated for
// good: its phase is Succeeded or Failed.
func hasStopped(pod *slimpod.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// ReadyCondition returns the pod's Ready condition, or nil.
func ReadyCondition(pod *slimpod.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True, and the
// operator is not holding it out of service for an in-place update: the
// kubelet turns Ready False only once it has seen the gate's condition
// turn False, and a decision in between must not count the pod twice.
func IsReady(pod *slimpod.Pod) bool {
	c := ReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue && !heldOutOfService(pod)
}

// heldOutOfService reports whether the in-place gate's condition is False.
func heldOutOfService(pod *slimpod.Pod) bool {
	g := InPlaceGateCondition(pod)
	return g != nil && g.Status == corev1.ConditionFalse
}

// AvailableIn is how long until a ready pod becomes available: 0 if it
// already is, and false if it is not ready at all. A pod is available once
// it has been Ready for minReady.
func AvailableIn(pod *slimpod.Pod, minReady time.Duration, now time.Time) (time.Duration, bool) {
	if !IsReady(pod) {
		return 0, false
	}
	c := ReadyCondition(pod)
	if minReady <= 0 {
		return 0, true
	}
	if c.LastTransitionTime.IsZero() {
		// Nobody knows since when it is ready: not available, as the
		// ReplicaSet controller judges it, and looked at again later.
		return minReady, true
	}
	if wait := c.LastTransitionTime.Add(minReady).Sub(now); wait > 0 {
		return wait, true
	}
	return 0, true
}

// MinReady is how long a PodSet's pods must be Ready before they count as
// available (spec.minReadySeconds).
func MinReady(ps *appv1alpha1.PodSet) time.Duration {
	return time.Duration(ps.Spec.MinReadySeconds) * time.Second
}

// IsAvailable reports whether the pod has been Ready for minReady.
func IsAvailable(pod *slimpod.Pod, minReady time.Duration, now time.Time) bool {
	wait, ready := AvailableIn(pod, minReady, now)
	return ready && wait == 0
}

// RestartCount is the sum of the restart counts of the pod's containers,
// init containers and sidecars included (slimpod keeps their statuses
// together).
func RestartCount(pod *slimpod.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// IsFailing reports whether a pod's containers show it failing rather than
// starting: one of them has restarted, or waits for a reason other than its
// start (ContainerCreating, PodInitializing), such as CrashLoopBackOff or
// ImagePullBackOff.
func IsFailing(pod *slimpod.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			return true
		}
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return true
		}
	}
	return false
}

// UIDs are the pods' UIDs, in order.
func UIDs(pods []*slimpod.Pod) []types.UID {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	return uids
}
