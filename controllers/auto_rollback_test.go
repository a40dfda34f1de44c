package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/retreat"
)

// container sets the pod's one container status: its restarts, and the
// reason it waits in ("" for running).
func container(restarts int32, waiting string) operandtest.Option {
	return func(p *corev1.Pod) {
		cs := corev1.ContainerStatus{Name: "podset", RestartCount: restarts}
		if waiting != "" {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	}
}

func ofRevision(hash string) operandtest.Option {
	return operandtest.WithLabels(map[string]string{appv1alpha1.LabelRevisionHash: hash})
}

// updatedInPlace marks the pod as updated in place to revision hash, the
// kubelet done with it (no restart awaited).
func updatedInPlace(hash string) operandtest.Option {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{appv1alpha1.AnnotationInPlaceUpdate: inplace.State{Revision: hash}.Encode()}
	}
}

// TestFailureWatch: what the classifier is shown of the revision on trial
// over successive reconciles.
func TestFailureWatch(t *testing.T) {
	g := NewWithT(t)
	now := operandtest.Now
	var w failureWatch

	pods := []*corev1.Pod{
		operandtest.Pod("new", ofRevision("b"), container(2, "")),
		operandtest.Pod("waiting", ofRevision("b"), container(0, "ImagePullBackOff")),
		operandtest.Pod("in-place", ofRevision("b"), updatedInPlace("b"), container(5, "")),
		operandtest.Pod("other", ofRevision("a"), container(9, "CrashLoopBackOff")),
		operandtest.Pod("gone", ofRevision("b"), container(9, ""), operandtest.TerminatingSince(now)),
	}
	g.Expect(w.observe("b", pods, time.Time{}, now)).To(ConsistOf(
		// Made at the revision: all its restarts are the revision's.
		retreat.Pod{Name: "new", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 2}}},
		retreat.Pod{Name: "waiting", Containers: []retreat.Container{{Name: "podset", WaitingReason: "ImagePullBackOff", WaitingSince: now}}},
		// Updated in place: the restarts before are not the revision's.
		retreat.Pod{Name: "in-place", Containers: []retreat.Container{{Name: "podset"}}},
	))

	// A minute later: the wait goes on from when it was first seen, the
	// in-place pod's new restarts count.
	later := now.Add(time.Minute)
	pods[2] = operandtest.Pod("in-place", ofRevision("b"), updatedInPlace("b"), container(7, ""))
	got := w.observe("b", pods, time.Time{}, later)
	g.Expect(got).To(ContainElement(retreat.Pod{Name: "waiting", Containers: []retreat.Container{{Name: "podset", WaitingReason: "ImagePullBackOff", WaitingSince: now}}}))
	g.Expect(got).To(ContainElement(retreat.Pod{Name: "in-place", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 2}}}))

	// Another reason starts the clock again; running stops it.
	pods[1] = operandtest.Pod("waiting", ofRevision("b"), container(0, "ErrImagePull"))
	g.Expect(w.observe("b", pods, time.Time{}, later.Add(time.Second))).To(ContainElement(
		retreat.Pod{Name: "waiting", Containers: []retreat.Container{{Name: "podset", WaitingReason: "ErrImagePull", WaitingSince: later.Add(time.Second)}}}))
	pods[1] = operandtest.Pod("waiting", ofRevision("b"), container(0, ""))
	pods[1].Status.ContainerStatuses[0].Ready = true
	g.Expect(w.observe("b", pods, time.Time{}, later.Add(2*time.Second))).To(ContainElement(
		retreat.Pod{Name: "waiting", Containers: []retreat.Container{{Name: "podset"}}}))

	// Pods made before since are not on trial (the pods a rollback
	// returns to that ran the revision before it).
	g.Expect(w.observe("b", pods, now.Add(-30*time.Minute), later)).To(ConsistOf(
		retreat.Pod{Name: "in-place", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 2}}}))

	// Another revision on trial starts afresh.
	g.Expect(w.observe("a", pods, time.Time{}, later)).To(ConsistOf(
		retreat.Pod{Name: "other", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 9, WaitingReason: "CrashLoopBackOff", WaitingSince: later}}}))
	g.Expect(w.pods).To(HaveLen(1), "pods no longer on trial are forgotten")
}
