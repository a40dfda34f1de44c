package status

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
	"github.com/example/podset-operator/internal/argocd"
)

// The Reconciling and Stalled conditions, and the verdict kstatus (the
// library of Flux, Helm 4 and kpt) draws from them, in the situations that
// need arithmetic rather than a cluster to reach: a settled PodSet that
// loses a pod long after its last progress, InPlaceOnly keeping pods, and
// the progress deadline with a failing pod write. The situations a
// reconciler reaches on a cluster are in controllers/kstatus_integration_test.go.
func TestComputeReconcilingAndStalled(t *testing.T) {
	ready := func(name string) *slimpod.Pod {
		return operandtest.Pod(name, operandtest.ReadySince(operandtest.Now.Add(-2*time.Hour)))
	}
	settledLongAgo := func(ps *appv1alpha1.PodSet) {
		ps.Status.LastProgressTime = ptr.To(metav1.NewTime(operandtest.Now.Add(-time.Hour)))
		ps.Status.ObservedGeneration = ps.Generation
		ps.Status.Replicas, ps.Status.ReadyReplicas, ps.Status.AvailableReplicas = 2, 2, 2
		ps.Status.UpdatedReplicas, ps.Status.UpdatedReadyReplicas, ps.Status.UpdatedAvailableReplicas = 2, 2, 2
		ps.Status.Conditions = []metav1.Condition{{
			Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: appv1alpha1.ReasonNewRevisionAvailable, LastTransitionTime: metav1.NewTime(operandtest.Now.Add(-time.Hour)),
		}}
	}
	stuckSince := func(ps *appv1alpha1.PodSet) {
		ps.Status.LastProgressTime = ptr.To(metav1.NewTime(operandtest.Now.Add(-time.Hour)))
		ps.Status.ObservedGeneration = ps.Generation
		ps.Status.Replicas, ps.Status.ReadyReplicas, ps.Status.AvailableReplicas = 1, 1, 1
		ps.Status.Conditions = []metav1.Condition{{
			Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: appv1alpha1.ReasonScalingUp, LastTransitionTime: metav1.NewTime(operandtest.Now.Add(-time.Hour)),
		}}
	}
	tests := []struct {
		name     string
		replicas int32
		prepare  func(*appv1alpha1.PodSet)
		pods     []*slimpod.Pod
		observed func(ps *appv1alpha1.PodSet, pods []*slimpod.Pod) Observed
		outcome  Outcome
		// want is kstatus' verdict; for a Deployment in the same situation
		// it is the same (none for InPlaceOnly).
		want                         kstatus.Status
		wantReconciling, wantStalled metav1.ConditionStatus
		wantReason                   string // of the condition that is True, or Reconciling's
		wantInMessage                string
		// wantArgo is the health Argo CD's check reports.
		wantArgo string
	}{
		{
			// Work after completion starts the deadline afresh: InProgress
			// ("Ready: 1/2" for a Deployment), not Failed at once.
			name:     "a pod lost an hour after the last progress",
			replicas: 2,
			prepare:  settledLongAgo,
			pods:     []*slimpod.Pod{ready("a")},
			want:     kstatus.InProgressStatus, wantReconciling: metav1.ConditionTrue, wantStalled: metav1.ConditionFalse, wantArgo: argocd.Progressing,
			wantReason: appv1alpha1.ReasonScalingUp,
		},
		{
			name:     "a pod no longer ready an hour after the last progress",
			replicas: 2,
			prepare:  settledLongAgo,
			pods:     []*slimpod.Pod{ready("a"), operandtest.Pod("b")},
			want:     kstatus.InProgressStatus, wantReconciling: metav1.ConditionTrue, wantStalled: metav1.ConditionFalse, wantArgo: argocd.Progressing,
			wantReason: appv1alpha1.ReasonWaitingForAvailability,
		},
		{
			name:     "no progress past the deadline, pod creations refused",
			replicas: 2,
			prepare:  stuckSince,
			pods:     []*slimpod.Pod{ready("a")},
			outcome:  Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedCreate, Err: errors.New(`pods "web-x" is forbidden: exceeded quota: pods`)},
			want:     kstatus.FailedStatus, wantReconciling: metav1.ConditionFalse, wantStalled: metav1.ConditionTrue, wantArgo: argocd.Degraded,
			wantReason: appv1alpha1.ReasonProgressDeadlineExceeded, wantInMessage: "exceeded quota",
		},
		{
			name:     "scaling up within the deadline, pod creations refused",
			replicas: 2,
			pods:     []*slimpod.Pod{ready("a")},
			outcome:  Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedCreate, Err: errors.New(`pods "web-x" is forbidden: exceeded quota: pods`)},
			want:     kstatus.InProgressStatus, wantReconciling: metav1.ConditionTrue, wantStalled: metav1.ConditionFalse, wantArgo: argocd.Progressing,
			wantReason: appv1alpha1.ReasonScalingUp, wantInMessage: "exceeded quota",
		},
		{
			// No Deployment equivalent: no waiting resolves it, so it is
			// Stalled at once rather than at the deadline.
			name:     "InPlaceOnly keeps pods whose change needs new pods",
			replicas: 2,
			pods:     []*slimpod.Pod{ready("a"), ready("b")},
			observed: inPlaceOnly(resolve(false, nil, 0), false, 0, "spec.env changed"),
			want:     kstatus.FailedStatus, wantReconciling: metav1.ConditionFalse, wantStalled: metav1.ConditionTrue, wantArgo: argocd.Degraded,
			wantReason: appv1alpha1.ReasonInPlaceOnlyKeepsPods, wantInMessage: "spec.env changed",
		},
		{
			// maxUnavailable 0 under InPlaceOnly moves no pod, but the
			// partition keeps every pod on the old revision anyway: done.
			name:     "InPlaceOnly with maxUnavailable 0, the partition holding every pod",
			replicas: 2,
			pods:     []*slimpod.Pod{ready("a"), ready("b")},
			observed: inPlaceOnly(resolve(false, ptr.To(intstr.FromInt32(0)), 2), true, 2, ""),
			want:     kstatus.CurrentStatus, wantReconciling: metav1.ConditionFalse, wantStalled: metav1.ConditionFalse,
			wantReason: appv1alpha1.ReasonReconciled, wantArgo: argocd.Healthy,
		},
		{
			// Paused, a PodSet is InProgress (Argo CD: Suspended) as a
			// paused Deployment is, whatever the pods it would keep.
			name:     "InPlaceOnly keeps pods, paused",
			replicas: 2,
			pods:     []*slimpod.Pod{ready("a"), ready("b")},
			observed: inPlaceOnly(resolve(true, nil, 0), false, 0, "spec.env changed"),
			want:     kstatus.InProgressStatus, wantReconciling: metav1.ConditionTrue, wantStalled: metav1.ConditionFalse,
			wantReason: appv1alpha1.ReasonPaused, wantArgo: argocd.Suspended,
		},
		{
			name:     "converged",
			replicas: 2,
			pods:     []*slimpod.Pod{ready("a"), ready("b")},
			want:     kstatus.CurrentStatus, wantReconciling: metav1.ConditionFalse, wantStalled: metav1.ConditionFalse, wantArgo: argocd.Healthy,
			wantReason: appv1alpha1.ReasonReconciled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(tt.replicas)
			ps.Spec.ProgressDeadlineSeconds = ptr.To(int32(600))
			if tt.prepare != nil {
				tt.prepare(ps)
			}
			observed := withoutRevisions(ps, tt.pods, operandtest.Now)
			if tt.observed != nil {
				observed = tt.observed(ps, tt.pods)
			}

			ps.Status = Compute(ps, tt.pods, observed, tt.outcome, operandtest.Now)

			rec := meta.FindStatusCondition(ps.Status.Conditions, appv1alpha1.ConditionReconciling)
			stalled := meta.FindStatusCondition(ps.Status.Conditions, appv1alpha1.ConditionStalled)
			g.Expect(rec).NotTo(BeNil())
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(rec.Status).To(Equal(tt.wantReconciling), rec.Message)
			g.Expect(stalled.Status).To(Equal(tt.wantStalled), stalled.Message)
			on := rec
			if stalled.Status == metav1.ConditionTrue {
				on = stalled
			}
			g.Expect(on.Reason).To(Equal(tt.wantReason))
			g.Expect(on.Message).To(ContainSubstring(tt.wantInMessage))
			g.Expect(rec.ObservedGeneration).To(Equal(ps.Generation))
			g.Expect(stalled.ObservedGeneration).To(Equal(ps.Generation))

			u, err := operandtest.Unstructured(ps)
			g.Expect(err).NotTo(HaveOccurred())
			res, err := kstatus.Compute(u)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status).To(Equal(tt.want), res.Message)

			health, err := argocd.Evaluate(argocd.HealthLua, u.Object)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(health.Status).To(Equal(tt.wantArgo), health.Message)
		})
	}
}

// inPlaceOnly is what the reconciler observes of two pods on revision web-1
// when the template asks for web-2 under InPlaceOnly: strategy resolves
// replicas 2, old says how many pods (all available) each group has, and
// kept why the first pod kept cannot take the change in place.
func inPlaceOnly(strategy rollout.Strategy, zeroAsked bool, oldInPlace int, kept string) func(*appv1alpha1.PodSet, []*slimpod.Pod) Observed {
	return func(*appv1alpha1.PodSet, []*slimpod.Pod) Observed {
		return Observed{
			UpdateRevision: "web-2", CurrentRevision: "web-1", UpdateHash: "2",
			Rollout: &rollout.Input{
				Replicas: 2, Strategy: strategy.InPlace(true, zeroAsked, 2),
				Old: rollout.Group{Live: 2, Available: 2}, OldInPlace: rollout.Group{Live: oldInPlace, Available: oldInPlace}, CanCreateOld: true,
			},
			KeptInPlace: kept,
		}
	}
}

// resolve is rollout.Resolve for two pods, which the cases give valid input.
func resolve(paused bool, maxUnavailable *intstr.IntOrString, partition int) rollout.Strategy {
	s, err := rollout.Resolve(2, false, paused, nil, maxUnavailable, partition)
	if err != nil {
		panic(err)
	}
	return s
}
