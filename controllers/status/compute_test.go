package status

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
)

// withoutRevisions is what the reconciler observes of ps before it knows any
// revision of it: no update hash, so that every live pod counts as the
// update revision's in the rollout's input, under the default update
// strategy these tests leave in place.
func withoutRevisions(ps *appv1alpha1.PodSet, pods []*slimpod.Pod, now time.Time) Observed {
	strategy, err := rollout.Resolve(int(ps.DesiredReplicas()), false, false, nil, nil, 0)
	if err != nil {
		panic(err)
	}
	var updated rollout.Group
	for _, pod := range pods {
		if operand.IsLive(pod) {
			updated.Live++
			if operand.IsAvailable(pod, operand.MinReady(ps), now) {
				updated.Available++
			}
		}
	}
	return Observed{Rollout: &rollout.Input{Replicas: int(ps.DesiredReplicas()), Strategy: strategy, Updated: updated}}
}

func TestComputeStatusCounts(t *testing.T) {
	tests := []struct {
		name          string
		minReady      int32
		pods          []*slimpod.Pod
		wantReplicas  int32
		wantReady     int32
		wantAvailable int32
		// wantTerminating: pods being deleted that have not stopped.
		wantTerminating int32
		wantNames       []string
	}{
		{
			name: "no pods",
		},
		{
			name:     "only live pods count, ready and available told apart by minReadySeconds",
			minReady: 10,
			pods: []*slimpod.Pod{
				operandtest.Pod("c-not-ready", operandtest.NotReadySince(operandtest.Now.Add(-time.Hour))),
				operandtest.Pod("f-failed", operandtest.InPhase(corev1.PodFailed)),
				operandtest.Pod("a-available", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
				operandtest.Pod("e-succeeded", operandtest.InPhase(corev1.PodSucceeded), operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
				operandtest.Pod("d-terminating", operandtest.TerminatingSince(operandtest.Now), operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
				operandtest.Pod("b-ready-not-available", operandtest.ReadySince(operandtest.Now.Add(-5*time.Second))),
				operandtest.Pod("g-pending", operandtest.InPhase(corev1.PodPending), operandtest.Unscheduled()),
			},
			wantReplicas:    4,
			wantReady:       2,
			wantAvailable:   1,
			wantTerminating: 1,
			wantNames:       []string{"a-available", "b-ready-not-available", "c-not-ready", "g-pending"},
		},
		{
			// A pod that stopped while being deleted (its phase Failed or
			// Succeeded) waits only for its API object to go: as a
			// ReplicaSet counts them, it is no longer terminating.
			name: "terminating pods counted until they stop, never as replicas",
			pods: []*slimpod.Pod{
				operandtest.Pod("a-live", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
				operandtest.Pod("b-terminating", operandtest.TerminatingSince(operandtest.Now.Add(-10*time.Second)), operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
				operandtest.Pod("c-terminating-not-ready", operandtest.TerminatingSince(operandtest.Now), operandtest.NotReadySince(operandtest.Now)),
				operandtest.Pod("d-terminating-pending", operandtest.TerminatingSince(operandtest.Now), operandtest.InPhase(corev1.PodPending), operandtest.Unscheduled()),
				operandtest.Pod("e-deleted-after-failing", operandtest.TerminatingSince(operandtest.Now), operandtest.InPhase(corev1.PodFailed)),
				operandtest.Pod("f-deleted-after-succeeding", operandtest.TerminatingSince(operandtest.Now), operandtest.InPhase(corev1.PodSucceeded)),
			},
			wantReplicas:    1,
			wantReady:       1,
			wantAvailable:   1,
			wantTerminating: 3,
			wantNames:       []string{"a-live"},
		},
		{
			name:          "without minReadySeconds every ready pod is available",
			minReady:      0,
			pods:          []*slimpod.Pod{operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-time.Second))), operandtest.Pod("a", operandtest.ReadySince(operandtest.Now))},
			wantReplicas:  2,
			wantReady:     2,
			wantAvailable: 2,
			wantNames:     []string{"a", "b"},
		},
		{
			name:          "ready exactly minReadySeconds ago is available",
			minReady:      10,
			pods:          []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-10*time.Second)))},
			wantReplicas:  1,
			wantReady:     1,
			wantAvailable: 1,
			wantNames:     []string{"a"},
		},
		{
			name:          "ready one second short of minReadySeconds is not",
			minReady:      10,
			pods:          []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-9*time.Second)))},
			wantReplicas:  1,
			wantReady:     1,
			wantAvailable: 0,
			wantNames:     []string{"a"},
		},
		{
			// As the ReplicaSet controller judges it: nobody knows
			// how long it has been ready.
			name:          "ready with no transition time is not available under minReadySeconds",
			minReady:      10,
			pods:          []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(time.Time{}))},
			wantReplicas:  1,
			wantReady:     1,
			wantAvailable: 0,
			wantNames:     []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(3)
			ps.Spec.MinReadySeconds = tt.minReady
			// Left over from an earlier status: must be recomputed, not kept.
			ps.Status.PodNames = []string{"gone"}
			ps.Status.Replicas, ps.Status.ReadyReplicas, ps.Status.AvailableReplicas, ps.Status.TerminatingReplicas = 9, 9, 9, 9

			st := Compute(ps, tt.pods, withoutRevisions(ps, tt.pods, operandtest.Now), Outcome{}, operandtest.Now)

			g.Expect(st.Replicas).To(Equal(tt.wantReplicas), "replicas")
			g.Expect(st.ReadyReplicas).To(Equal(tt.wantReady), "readyReplicas")
			g.Expect(st.AvailableReplicas).To(Equal(tt.wantAvailable), "availableReplicas")
			g.Expect(st.TerminatingReplicas).To(Equal(tt.wantTerminating), "terminatingReplicas")
			if tt.wantNames == nil {
				g.Expect(st.PodNames).To(BeEmpty())
			} else {
				g.Expect(st.PodNames).To(Equal(tt.wantNames))
			}
		})
	}
}

func TestComputeStatusSelectorAndObservedGeneration(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(1)
	ps.Generation = 7
	ps.Status.ObservedGeneration = 6

	st := Compute(ps, nil, withoutRevisions(ps, nil, operandtest.Now), Outcome{Attempted: true}, operandtest.Now)

	g.Expect(st.Selector).To(Equal("app.example.com/podset=web"))
	g.Expect(st.ObservedGeneration).To(Equal(int64(7)))
	g.Expect(st.Conditions).To(HaveLen(5))
	for _, c := range st.Conditions {
		g.Expect(c.ObservedGeneration).To(Equal(int64(7)), c.Type)
	}
}

func TestComputeStatusAvailableAndProgressing(t *testing.T) {
	ready := func(name string) *slimpod.Pod {
		return operandtest.Pod(name, operandtest.ReadySince(operandtest.Now.Add(-time.Hour)))
	}
	tests := []struct {
		name                string
		replicas            int32
		pods                []*slimpod.Pod
		wantAvailable       metav1.ConditionStatus
		wantAvailableReason string
		wantProgressing     metav1.ConditionStatus
		wantProgressReason  string
	}{
		{
			name:                "too few pods",
			replicas:            2,
			pods:                []*slimpod.Pod{ready("a")},
			wantAvailable:       metav1.ConditionFalse,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasUnavailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonScalingUp,
		},
		{
			name:                "too many pods, enough available",
			replicas:            1,
			pods:                []*slimpod.Pod{ready("a"), ready("b")},
			wantAvailable:       metav1.ConditionTrue,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasAvailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonScalingDown,
		},
		{
			name:                "enough pods, not all available",
			replicas:            2,
			pods:                []*slimpod.Pod{ready("a"), operandtest.Pod("b")},
			wantAvailable:       metav1.ConditionFalse,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasUnavailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonWaitingForAvailability,
		},
		{
			name:                "enough pods, a terminating one not counted",
			replicas:            2,
			pods:                []*slimpod.Pod{ready("a"), operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), operandtest.TerminatingSince(operandtest.Now))},
			wantAvailable:       metav1.ConditionFalse,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasUnavailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonScalingUp,
		},
		{
			name:                "all pods available",
			replicas:            2,
			pods:                []*slimpod.Pod{ready("a"), ready("b")},
			wantAvailable:       metav1.ConditionTrue,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasAvailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonNewRevisionAvailable,
		},
		{
			name:                "zero replicas, no pods",
			replicas:            0,
			wantAvailable:       metav1.ConditionTrue,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasAvailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonNewRevisionAvailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(tt.replicas)

			st := Compute(ps, tt.pods, withoutRevisions(ps, tt.pods, operandtest.Now), Outcome{Attempted: true}, operandtest.Now)

			available := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionAvailable)
			g.Expect(available).NotTo(BeNil())
			g.Expect(available.Status).To(Equal(tt.wantAvailable))
			g.Expect(available.Reason).To(Equal(tt.wantAvailableReason))
			g.Expect(available.Message).NotTo(BeEmpty())

			progressing := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
			g.Expect(progressing).NotTo(BeNil())
			g.Expect(progressing.Status).To(Equal(tt.wantProgressing))
			g.Expect(progressing.Reason).To(Equal(tt.wantProgressReason))
			g.Expect(progressing.Message).NotTo(BeEmpty())
		})
	}
}

func TestComputeStatusReplicaFailure(t *testing.T) {
	earlier := metav1.NewTime(operandtest.Now.Add(-time.Hour))
	previousFailure := metav1.Condition{
		Type:               appv1alpha1.ConditionReplicaFailure,
		Status:             metav1.ConditionTrue,
		Reason:             appv1alpha1.ReasonFailedCreate,
		Message:            "pods \"web-x\" is forbidden: exceeded quota",
		ObservedGeneration: 1,
		LastTransitionTime: earlier,
	}
	// Kept as it was, but for the generation it now speaks of.
	keptFailure := previousFailure
	keptFailure.ObservedGeneration = 2
	tests := []struct {
		name     string
		existing []metav1.Condition
		outcome  Outcome
		want     metav1.Condition
		// unchanged: the condition must equal want in every field.
		unchanged bool
	}{
		{
			name:    "create failed",
			outcome: Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedCreate, Err: errors.New("creating pods: quota exceeded")},
			want:    metav1.Condition{Status: metav1.ConditionTrue, Reason: appv1alpha1.ReasonFailedCreate, Message: "creating pods: quota exceeded"},
		},
		{
			name:     "delete failed, replacing an earlier failure",
			existing: []metav1.Condition{previousFailure},
			outcome:  Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedDelete, Err: errors.New("deleting pods: forbidden")},
			want:     metav1.Condition{Status: metav1.ConditionTrue, Reason: appv1alpha1.ReasonFailedDelete, Message: "deleting pods: forbidden"},
		},
		{
			name:    "attempted without error",
			outcome: Outcome{Attempted: true},
			want:    metav1.Condition{Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonNoFailure},
		},
		{
			name:     "attempted without error clears an earlier failure",
			existing: []metav1.Condition{previousFailure},
			outcome:  Outcome{Attempted: true},
			want:     metav1.Condition{Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonNoFailure},
		},
		{
			name:      "not attempted keeps the earlier condition, for the current generation",
			existing:  []metav1.Condition{previousFailure},
			outcome:   Outcome{Attempted: false},
			want:      keptFailure,
			unchanged: true,
		},
		{
			name:    "not attempted, none yet: no failure",
			outcome: Outcome{Attempted: false},
			want:    metav1.Condition{Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonNoFailure},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(1)
			ps.Generation = 2
			ps.Status.Conditions = tt.existing

			st := Compute(ps, nil, withoutRevisions(ps, nil, operandtest.Now), tt.outcome, operandtest.Now)

			got := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionReplicaFailure)
			g.Expect(got).NotTo(BeNil())
			if tt.unchanged {
				g.Expect(*got).To(Equal(tt.want))
				return
			}
			g.Expect(got.Status).To(Equal(tt.want.Status))
			g.Expect(got.Reason).To(Equal(tt.want.Reason))
			if tt.want.Message != "" {
				g.Expect(got.Message).To(Equal(tt.want.Message))
			} else {
				g.Expect(got.Message).NotTo(BeEmpty())
			}
			g.Expect(got.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}

func TestComputeStatusKeepsLastTransitionTimeWhileStatusHolds(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(2)
	pods := []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)))}

	first := Compute(ps, pods, withoutRevisions(ps, pods, operandtest.Now), Outcome{Attempted: true}, operandtest.Now)
	ps.Status = first
	ps.Generation = 2
	second := Compute(ps, pods, withoutRevisions(ps, pods, operandtest.Now.Add(time.Hour)), Outcome{Attempted: true}, operandtest.Now.Add(time.Hour))

	g.Expect(second.Conditions).To(HaveLen(len(first.Conditions)))
	for _, c := range first.Conditions {
		again := meta.FindStatusCondition(second.Conditions, c.Type)
		g.Expect(again).NotTo(BeNil(), c.Type)
		g.Expect(again.Status).To(Equal(c.Status), c.Type)
		g.Expect(again.LastTransitionTime).To(Equal(c.LastTransitionTime), c.Type)
		g.Expect(again.ObservedGeneration).To(Equal(int64(2)), c.Type)
	}
}

// Compute is documented as a pure function of its arguments, now
// included: a condition that appears or changes status must carry now as its
// transition time, not the wall clock's.
func TestComputeStatusTransitionTimeIsNow(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(1)
	ps.Status.Conditions = []metav1.Condition{{
		Type:               appv1alpha1.ConditionAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             appv1alpha1.ReasonMinimumReplicasAvailable,
		LastTransitionTime: metav1.NewTime(operandtest.Now.Add(-time.Hour)),
	}}

	st := Compute(ps, nil, withoutRevisions(ps, nil, operandtest.Now), Outcome{Attempted: true}, operandtest.Now)

	g.Expect(st.Conditions).To(HaveLen(5))
	for _, c := range st.Conditions {
		g.Expect(c.LastTransitionTime.Time).To(BeTemporally("==", operandtest.Now),
			"%s (changed or new) should have transitioned at now", c.Type)
	}
}

func TestComputeStatusIsPure(t *testing.T) {
	g := NewWithT(t)
	ps := pureStatusInput()
	pods := []*slimpod.Pod{
		operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-time.Second))),
		operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
		operandtest.Pod("c", operandtest.TerminatingSince(operandtest.Now)),
	}
	outcome := Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedCreate, Err: errors.New("quota")}

	first := Compute(ps, pods, withoutRevisions(ps, pods, operandtest.Now), outcome, operandtest.Now)
	second := Compute(ps, pods, withoutRevisions(ps, pods, operandtest.Now), outcome, operandtest.Now)

	g.Expect(equality.Semantic.DeepEqual(first, second)).To(BeTrue(),
		"same input, different output:\n%#v\n%#v", first, second)
}

func TestComputeStatusDoesNotMutateItsInput(t *testing.T) {
	g := NewWithT(t)
	ps := pureStatusInput()
	pods := []*slimpod.Pod{
		operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-time.Second))),
		operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-time.Hour))),
	}
	psBefore := ps.DeepCopy()
	podsBefore := []*slimpod.Pod{pods[0].DeepCopy(), pods[1].DeepCopy()}

	st := Compute(ps, pods, withoutRevisions(ps, pods, operandtest.Now), Outcome{Attempted: true}, operandtest.Now)

	g.Expect(st.Conditions).NotTo(Equal(psBefore.Status.Conditions), "the input should have called for changes")
	g.Expect(equality.Semantic.DeepEqual(ps, psBefore)).To(BeTrue(), "the PodSet was mutated")
	g.Expect(equality.Semantic.DeepEqual(pods, podsBefore)).To(BeTrue(), "the pods were mutated")
}

func TestNextAvailabilityCheck(t *testing.T) {
	const minReady = 10 * time.Second
	tests := []struct {
		name     string
		minReady time.Duration
		pods     []*slimpod.Pod
		want     time.Duration
	}{
		{name: "no pods", minReady: minReady, want: 0},
		{
			name:     "all available",
			minReady: minReady,
			pods:     []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-time.Minute)))},
			want:     0,
		},
		{
			name:     "none ready",
			minReady: minReady,
			pods:     []*slimpod.Pod{operandtest.Pod("a"), operandtest.Pod("b", operandtest.NotReadySince(operandtest.Now))},
			want:     0,
		},
		{
			name:     "no minReadySeconds",
			minReady: 0,
			pods:     []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(operandtest.Now))},
			want:     0,
		},
		{
			name:     "one pending",
			minReady: minReady,
			pods:     []*slimpod.Pod{operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-3*time.Second)))},
			want:     7 * time.Second,
		},
		{
			name:     "the smallest remaining wait",
			minReady: minReady,
			pods: []*slimpod.Pod{
				operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-2*time.Second))),
				operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-6*time.Second))),
				operandtest.Pod("c", operandtest.ReadySince(operandtest.Now.Add(-time.Minute))),
				operandtest.Pod("d", operandtest.ReadySince(operandtest.Now.Add(-4*time.Second))),
			},
			want: 4 * time.Second,
		},
		{
			name:     "pods that are not live are not waited for",
			minReady: minReady,
			pods: []*slimpod.Pod{
				operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-2*time.Second))),
				operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-9*time.Second)), operandtest.TerminatingSince(operandtest.Now)),
				operandtest.Pod("c", operandtest.ReadySince(operandtest.Now.Add(-9*time.Second)), operandtest.InPhase(corev1.PodSucceeded)),
			},
			want: 8 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(NextAvailabilityCheck(tt.pods, tt.minReady, operandtest.Now)).To(Equal(tt.want))
		})
	}
}

// pureStatusInput is a PodSet whose status is stale in every field, so that
// computing its status changes all of them.
func pureStatusInput() *appv1alpha1.PodSet {
	ps := operandtest.PodSet(2)
	ps.Generation = 3
	ps.Spec.MinReadySeconds = 10
	ps.Status = appv1alpha1.PodSetStatus{
		Replicas:           5,
		PodNames:           []string{"x", "y", "z", "v", "w"},
		ObservedGeneration: 2,
		Conditions: []metav1.Condition{
			{
				Type:               appv1alpha1.ConditionAvailable,
				Status:             metav1.ConditionTrue,
				Reason:             appv1alpha1.ReasonMinimumReplicasAvailable,
				ObservedGeneration: 2,
				LastTransitionTime: metav1.NewTime(operandtest.Now.Add(-time.Hour)),
			},
			{
				Type:               appv1alpha1.ConditionReplicaFailure,
				Status:             metav1.ConditionTrue,
				Reason:             appv1alpha1.ReasonFailedDelete,
				Message:            "old",
				ObservedGeneration: 2,
				LastTransitionTime: metav1.NewTime(operandtest.Now.Add(-time.Hour)),
			},
		},
	}
	return ps
}

// A failure that goes on keeps its first message: the API server's error
// names a new pod each time, and rewriting it would write the status (and
// wake the PodSet) on every retry.
func TestReplicaFailureKeepsItsMessageWhileTheFailureGoesOn(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(3)
	first := Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedCreate, Err: errors.New(`pods "web-abcde" is forbidden: exceeded quota`)}
	ps.Status = Compute(ps, nil, withoutRevisions(ps, nil, operandtest.Now), first, operandtest.Now)

	again := Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedCreate, Err: errors.New(`pods "web-fghij" is forbidden: exceeded quota`)}
	next := Compute(ps, nil, withoutRevisions(ps, nil, operandtest.Now.Add(time.Minute)), again, operandtest.Now.Add(time.Minute))
	g.Expect(next).To(Equal(ps.Status), "an ongoing failure must not change the status")

	other := Outcome{Attempted: true, FailureReason: appv1alpha1.ReasonFailedDelete, Err: errors.New("delete refused")}
	c := meta.FindStatusCondition(Compute(ps, nil, withoutRevisions(ps, nil, operandtest.Now), other, operandtest.Now).Conditions, appv1alpha1.ConditionReplicaFailure)
	g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonFailedDelete))
	g.Expect(c.Message).To(Equal("delete refused"))
}

// A canary's times are kept to the second, as the API server stores them:
// a status computed from times finer than that would never equal the stored
// one, and be written on every reconcile.
func TestComputeStatusKeepsCanaryTimesToTheSecond(t *testing.T) {
	g := NewWithT(t)
	ps := pureStatusInput()
	fine := metav1.NewTime(time.Date(2026, 12, 6, 6, 20, 39, 123456789, time.UTC))
	observed := withoutRevisions(ps, nil, operandtest.Now)
	observed.UpdateRevision = "web-2"
	observed.Canary = &Canary{Status: &appv1alpha1.CanaryStatus{
		Revision: "web-2", Step: 1, StepStartTime: fine,
		Analyses: []appv1alpha1.AnalysisRunStatus{{Name: "steps[1]", StartTime: fine, Measurements: []appv1alpha1.Measurement{{Phase: "Successful", Time: fine}}}},
	}}
	st := Compute(ps, nil, observed, Outcome{}, operandtest.Now)
	whole := metav1.NewTime(fine.Truncate(time.Second))
	g.Expect(st.Canary.StepStartTime).To(Equal(whole))
	g.Expect(st.Canary.Analyses[0].StartTime).To(Equal(whole))
	g.Expect(st.Canary.Analyses[0].Measurements[0].Time).To(Equal(whole))
	g.Expect(observed.Canary.Status.StepStartTime).To(Equal(fine), "the input was changed")
}

func TestComputeStatusRecreateSaysWhatItWaitsFor(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(3)
	terminating := operandtest.Pod("old-a", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), operandtest.TerminatingSince(operandtest.Now))
	observed := Observed{UpdateRevision: "ps-new", Rollout: &rollout.Input{Replicas: 3, Strategy: rollout.Recreate(3), Old: rollout.Group{Live: 1, Available: 1}, OldTerminating: 1}}

	st := Compute(ps, []*slimpod.Pod{terminating}, observed, Outcome{Attempted: true}, operandtest.Now)

	progressing := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
	g.Expect(progressing).NotTo(BeNil())
	g.Expect(progressing.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(progressing.Reason).To(Equal(appv1alpha1.ReasonWaitingForOldPods))
	g.Expect(progressing.Message).To(Equal("Recreate: 2 pods of older revisions are left (1 of them terminating); the pods of revision ps-new are created once they are gone"))

	observed.Rollout.Old, observed.Rollout.OldTerminating = rollout.Group{}, 0
	st = Compute(ps, nil, observed, Outcome{Attempted: true}, operandtest.Now)
	g.Expect(meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing).Reason).To(Equal(appv1alpha1.ReasonScalingUp), "once they are gone")
}

func TestComputeStatusSaysTerminatingPodsAreWaitedFor(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(3)
	ready := operandtest.Pod("a", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)))
	terminating := operandtest.Pod("b", operandtest.ReadySince(operandtest.Now.Add(-time.Hour)), operandtest.TerminatingSince(operandtest.Now))
	s := rollout.Strategy{MaxUnavailable: 1, WaitForTermination: true}
	observed := Observed{UpdateRevision: "ps-1", Rollout: &rollout.Input{Replicas: 3, Strategy: s, Updated: rollout.Group{Live: 1, Available: 1}, Terminating: 1}}

	st := Compute(ps, []*slimpod.Pod{ready, terminating}, observed, Outcome{Attempted: true}, operandtest.Now)
	progressing := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
	g.Expect(progressing.Reason).To(Equal(appv1alpha1.ReasonScalingUp))
	g.Expect(progressing.Message).To(Equal("1 of 3 pods exist; 1 terminating pods are waited for (podReplacementPolicy TerminationComplete)"))
}
