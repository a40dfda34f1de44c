package controllers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/podwrites"
)

// rollingPodSet is ps with a new image and a rolling update of no surge and
// maxUnavailable pods: each step deletes old pods and creates as many.
func rollingPodSet(replicas int32, maxUnavailable int32) (*appv1alpha1.PodSet, []*corev1.Pod) {
	ps := unitPodSet(replicas)
	pods := ownedPods(ps, int(replicas))
	ps.Spec.Image = "quay.io/example/app:2"
	ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
		MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
	}
	return ps, pods
}

// countCreates counts the pods r creates.
func countCreates(r *PodSetReconciler) *atomic.Int32 {
	var n atomic.Int32
	interceptPodWrites(r, podControlFuncs{create: func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error {
		err := next.CreatePod(ctx, pod)
		if err == nil {
			n.Add(1)
		}
		return err
	}})
	return &n
}

// A rolling step sends each creation as soon as one of its deletions is
// answered, not once all of them are, and never more creations than
// answered deletions make room for.
func TestARollingStepCreatesAsItsDeletesAreAnswered(t *testing.T) {
	g := NewWithT(t)
	ps, pods := rollingPodSet(4, 2)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	startBackground(t, r)
	held := holdDeletes(t, r)
	creates := countCreates(r)
	done := make(chan struct{})
	go func() {
		_, _ = reconcileOnce(r, ps)
		close(done)
	}()

	g.Eventually(held.sent.Load).Should(BeEquivalentTo(2))
	g.Consistently(creates.Load, 100*time.Millisecond).Should(BeZero(), "a creation went before any deletion was answered")
	held.release <- struct{}{}
	g.Eventually(creates.Load).Should(BeEquivalentTo(1), "the answered deletion's replacement waits for the other deletion")
	g.Consistently(creates.Load, 100*time.Millisecond).Should(BeEquivalentTo(1), "more creations than answered deletions")
	g.Expect(done).NotTo(BeClosed())
	held.release <- struct{}{}
	g.Eventually(done).Should(BeClosed())
	g.Expect(creates.Load()).To(BeEquivalentTo(2))
	g.Expect(podsIn(g, c)).To(HaveLen(4), "two old pods deleted, two replacements created")
}

// A deletion that fails frees no room: the creation that waited for it is
// not sent, the others are, and the step reports the failed deletion.
func TestARollingStepSkipsTheCreationsOfFailedDeletes(t *testing.T) {
	g := NewWithT(t)
	ps, pods := rollingPodSet(4, 2)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	startBackground(t, r)
	// The first delete to arrive is refused, the other goes through.
	var deletes atomic.Int32
	interceptPodWrites(r, podControlFuncs{delete: func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error {
		if deletes.Add(1) == 1 {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("denied by a webhook"))
		}
		return next.DeletePod(ctx, pod)
	}})
	creates := countCreates(r)

	err := reconcileReturns(g, r, ps)
	g.Expect(err).To(MatchError(ContainSubstring("denied by a webhook")))
	g.Expect(deletes.Load()).To(BeEquivalentTo(2))
	g.Expect(creates.Load()).To(BeEquivalentTo(1), "one creation for the one pod deleted")
	g.Expect(podsIn(g, c)).To(HaveLen(4))
	failure := meta.FindStatusCondition(statusOf(g, c, ps).Conditions, appv1alpha1.ConditionReplicaFailure)
	g.Expect(failure).NotTo(BeNil())
	g.Expect(failure.Reason).To(Equal(appv1alpha1.ReasonFailedDelete))
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	g.Expect(r.Expectations.Satisfied(key)).To(BeFalse(), "the creation and deletion made are awaited")
}
