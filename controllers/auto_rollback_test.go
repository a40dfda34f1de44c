package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/slimpod"
)

// container sets the pod's one container status: its restarts, and the
// reason it waits in ("" for running).
func container(restarts int32, waiting string) operandtest.Option {
	return func(p *slimpod.Pod) {
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

// updatedInPlace marks the pod as updated in place to revision hash at
// the given restart count, with a restart (a new image) that the kubelet
// has made: the pod is no longer pending.
func updatedInPlace(hash string, restarts int32) operandtest.Option {
	return func(p *slimpod.Pod) {
		st := inplace.State{Revision: hash, Restart: true, ContainerID: "containerd://old", Restarts: ptr.To(restarts)}
		p.Annotations = map[string]string{appv1alpha1.AnnotationInPlaceUpdate: st.Encode()}
	}
}

// TestFailureWatch: what the classifier is shown of the revision on trial
// over successive reconciles.
func TestFailureWatch(t *testing.T) {
	g := NewWithT(t)
	now := operandtest.Now
	const grace = time.Minute
	var w failureWatch

	pods := []*slimpod.Pod{
		operandtest.Pod("new", ofRevision("b"), container(2, "")),
		operandtest.Pod("waiting", ofRevision("b"), container(0, "ImagePullBackOff")),
		operandtest.Pod("in-place", ofRevision("b"), updatedInPlace("b", 5), container(6, "")),
		operandtest.Pod("other", ofRevision("a"), container(9, "CrashLoopBackOff")),
		operandtest.Pod("gone", ofRevision("b"), container(9, ""), operandtest.TerminatingSince(now)),
	}
	got, next := w.observe("b", pods, time.Time{}, grace, now)
	g.Expect(got).To(ConsistOf(
		// Made at the revision: all its restarts are the revision's.
		retreat.Pod{Name: "new", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 2}}},
		retreat.Pod{Name: "waiting", Containers: []retreat.Container{{Name: "podset", WaitingReason: "ImagePullBackOff", WaitingSince: now}}},
		// Updated in place at 5 restarts, with a restart: the one since
		// is the update's own.
		retreat.Pod{Name: "in-place", Containers: []retreat.Container{{Name: "podset"}}},
	))
	g.Expect(next).To(Equal(grace), "the wait reaches its grace period in a minute")

	// Half a minute later: the kubelet alternates ErrImagePull and
	// ImagePullBackOff, one wait; the in-place pod's new restarts count.
	later := now.Add(30 * time.Second)
	pods[1] = operandtest.Pod("waiting", ofRevision("b"), container(0, "ErrImagePull"))
	pods[2] = operandtest.Pod("in-place", ofRevision("b"), updatedInPlace("b", 5), container(8, ""))
	got, next = w.observe("b", pods, time.Time{}, grace, later)
	g.Expect(got).To(ContainElement(retreat.Pod{Name: "waiting", Containers: []retreat.Container{{Name: "podset", WaitingReason: "ErrImagePull", WaitingSince: now}}}))
	g.Expect(got).To(ContainElement(retreat.Pod{Name: "in-place", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 2}}}))
	g.Expect(next).To(Equal(30 * time.Second))

	// A crash loop runs between its back-offs: the wait goes on from
	// when it was first seen.
	pods[0] = operandtest.Pod("new", ofRevision("b"), container(3, "CrashLoopBackOff"))
	w.observe("b", pods, time.Time{}, grace, later)
	pods[0] = operandtest.Pod("new", ofRevision("b"), container(3, ""))
	w.observe("b", pods, time.Time{}, grace, later.Add(5*time.Second))
	pods[0] = operandtest.Pod("new", ofRevision("b"), container(4, "CrashLoopBackOff"))
	got, _ = w.observe("b", pods, time.Time{}, grace, later.Add(20*time.Second))
	g.Expect(got).To(ContainElement(retreat.Pod{Name: "new", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 4, WaitingReason: "CrashLoopBackOff", WaitingSince: later}}}))

	// Pods made before since are not on trial (the pods a rollback
	// returns to that ran the revision before it); those updated in
	// place to it are.
	got, _ = w.observe("b", pods, now.Add(-30*time.Minute), grace, later)
	g.Expect(got).To(ConsistOf(retreat.Pod{Name: "in-place", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 2}}}))

	// Another revision on trial starts afresh.
	got, _ = w.observe("a", pods, time.Time{}, grace, later)
	g.Expect(got).To(ConsistOf(
		retreat.Pod{Name: "other", Containers: []retreat.Container{{Name: "podset", RestartsSinceRevision: 9, WaitingReason: "CrashLoopBackOff", WaitingSince: later}}}))
	g.Expect(w.pods).To(HaveLen(1), "pods no longer on trial are forgotten")
}

// TestInPlaceRestartsBefore: the restarts of a pod updated in place that
// are not its new revision's.
func TestInPlaceRestartsBefore(t *testing.T) {
	g := NewWithT(t)
	cs := func(restarts int32, id string) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{Name: "podset", RestartCount: restarts, ContainerID: id}
	}
	five := ptr.To[int32](5)
	// Recorded at the update: those, plus the update's own restart.
	g.Expect(inplace.State{Restart: true, Restarts: five}.RestartsBefore(cs(9, "new"))).To(BeEquivalentTo(6))
	g.Expect(inplace.State{Restarts: five}.RestartsBefore(cs(9, "same"))).To(BeEquivalentTo(5), "a resize restarts nothing")
	// A state an earlier release wrote: taken from the first look.
	g.Expect(inplace.State{Restart: true, ContainerID: "old"}.RestartsBefore(cs(2, "old"))).To(BeEquivalentTo(3), "the update's restart is still to come")
	g.Expect(inplace.State{Restart: true, ContainerID: "old"}.RestartsBefore(cs(3, "new"))).To(BeEquivalentTo(3), "the new container runs")
}

// A malformed app.example.com/rollout-retry is said in one event per
// value, not in one per reconcile that reads it.
func TestInvalidRolloutRetryIsSaidOncePerValue(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	r := &PodSetReconciler{Recorder: recorder}
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1",
		Annotations: map[string]string{appv1alpha1.AnnotationRolloutRetry: "web-1"}}}
	s := &podSetScope{podSet: ps, record: newPodSetRecords().of(ps)}
	said := func() int {
		n := 0
		for {
			select {
			case e := <-recorder.Events:
				g.Expect(e).To(HavePrefix("Warning InvalidRolloutRetry"))
				n++
			default:
				return n
			}
		}
	}
	for range 3 {
		g.Expect(s.retryRequest(r)).To(BeZero())
	}
	g.Expect(said()).To(Equal(1))

	ps.Annotations[appv1alpha1.AnnotationRolloutRetry] = "web-1@yesterday"
	g.Expect(s.retryRequest(r)).To(BeZero())
	g.Expect(s.retryRequest(r)).To(BeZero())
	g.Expect(said()).To(Equal(1), "a new value is said again")

	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	ps.Annotations[appv1alpha1.AnnotationRolloutRetry] = "web-1@" + at.Format(time.RFC3339)
	g.Expect(s.retryRequest(r)).To(Equal(retreat.Retry{From: "web-1", At: at}))
	g.Expect(said()).To(BeZero())
}
