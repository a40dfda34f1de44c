package controllers

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
)

func TestComputeStatusCounts(t *testing.T) {
	tests := []struct {
		name          string
		minReady      int32
		pods          []*corev1.Pod
		wantReplicas  int32
		wantReady     int32
		wantAvailable int32
		wantNames     []string
	}{
		{
			name: "no pods",
		},
		{
			name:     "only live pods count, ready and available told apart by minReadySeconds",
			minReady: 10,
			pods: []*corev1.Pod{
				unitPod("c-not-ready", notReadySince(unitNow.Add(-time.Hour))),
				unitPod("f-failed", inPhase(corev1.PodFailed)),
				unitPod("a-available", readySince(unitNow.Add(-time.Minute))),
				unitPod("e-succeeded", inPhase(corev1.PodSucceeded), readySince(unitNow.Add(-time.Hour))),
				unitPod("d-terminating", terminatingSince(unitNow), readySince(unitNow.Add(-time.Hour))),
				unitPod("b-ready-not-available", readySince(unitNow.Add(-5*time.Second))),
				unitPod("g-pending", inPhase(corev1.PodPending), unscheduled()),
			},
			wantReplicas:  4,
			wantReady:     2,
			wantAvailable: 1,
			wantNames:     []string{"a-available", "b-ready-not-available", "c-not-ready", "g-pending"},
		},
		{
			name:          "without minReadySeconds every ready pod is available",
			minReady:      0,
			pods:          []*corev1.Pod{unitPod("b", readySince(unitNow.Add(-time.Second))), unitPod("a", readySince(unitNow))},
			wantReplicas:  2,
			wantReady:     2,
			wantAvailable: 2,
			wantNames:     []string{"a", "b"},
		},
		{
			name:          "ready exactly minReadySeconds ago is available",
			minReady:      10,
			pods:          []*corev1.Pod{unitPod("a", readySince(unitNow.Add(-10*time.Second)))},
			wantReplicas:  1,
			wantReady:     1,
			wantAvailable: 1,
			wantNames:     []string{"a"},
		},
		{
			name:          "ready one second short of minReadySeconds is not",
			minReady:      10,
			pods:          []*corev1.Pod{unitPod("a", readySince(unitNow.Add(-9*time.Second)))},
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
			pods:          []*corev1.Pod{unitPod("a", readySince(time.Time{}))},
			wantReplicas:  1,
			wantReady:     1,
			wantAvailable: 0,
			wantNames:     []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(3)
			ps.Spec.MinReadySeconds = tt.minReady
			// Left over from an earlier status: must be recomputed, not kept.
			ps.Status.PodNames = []string{"gone"}
			ps.Status.Replicas, ps.Status.ReadyReplicas, ps.Status.AvailableReplicas = 9, 9, 9

			st := computeStatus(ps, tt.pods, &revisionState{}, scaleOutcome{}, unitNow)

			g.Expect(st.Replicas).To(Equal(tt.wantReplicas), "replicas")
			g.Expect(st.ReadyReplicas).To(Equal(tt.wantReady), "readyReplicas")
			g.Expect(st.AvailableReplicas).To(Equal(tt.wantAvailable), "availableReplicas")
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
	ps := unitPodSet(1)
	ps.Generation = 7
	ps.Status.ObservedGeneration = 6

	st := computeStatus(ps, nil, &revisionState{}, scaleOutcome{attempted: true}, unitNow)

	g.Expect(st.Selector).To(Equal("app.example.com/podset=web,app.kubernetes.io/instance=web," +
		"app.kubernetes.io/managed-by=podset-operator,app.kubernetes.io/name=podset"))
	g.Expect(st.ObservedGeneration).To(Equal(int64(7)))
	g.Expect(st.Conditions).To(HaveLen(3))
	for _, c := range st.Conditions {
		g.Expect(c.ObservedGeneration).To(Equal(int64(7)), c.Type)
	}
}

func TestComputeStatusAvailableAndProgressing(t *testing.T) {
	ready := func(name string) *corev1.Pod { return unitPod(name, readySince(unitNow.Add(-time.Hour))) }
	tests := []struct {
		name                string
		replicas            int32
		pods                []*corev1.Pod
		wantAvailable       metav1.ConditionStatus
		wantAvailableReason string
		wantProgressing     metav1.ConditionStatus
		wantProgressReason  string
	}{
		{
			name:                "too few pods",
			replicas:            2,
			pods:                []*corev1.Pod{ready("a")},
			wantAvailable:       metav1.ConditionFalse,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasUnavailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonScalingUp,
		},
		{
			name:                "too many pods, enough available",
			replicas:            1,
			pods:                []*corev1.Pod{ready("a"), ready("b")},
			wantAvailable:       metav1.ConditionTrue,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasAvailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonScalingDown,
		},
		{
			name:                "enough pods, not all available",
			replicas:            2,
			pods:                []*corev1.Pod{ready("a"), unitPod("b")},
			wantAvailable:       metav1.ConditionFalse,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasUnavailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonWaitingForAvailability,
		},
		{
			name:                "enough pods, a terminating one not counted",
			replicas:            2,
			pods:                []*corev1.Pod{ready("a"), unitPod("b", readySince(unitNow.Add(-time.Hour)), terminatingSince(unitNow))},
			wantAvailable:       metav1.ConditionFalse,
			wantAvailableReason: appv1alpha1.ReasonMinimumReplicasUnavailable,
			wantProgressing:     metav1.ConditionTrue,
			wantProgressReason:  appv1alpha1.ReasonScalingUp,
		},
		{
			name:                "all pods available",
			replicas:            2,
			pods:                []*corev1.Pod{ready("a"), ready("b")},
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
			ps := unitPodSet(tt.replicas)

			st := computeStatus(ps, tt.pods, &revisionState{}, scaleOutcome{attempted: true}, unitNow)

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
	earlier := metav1.NewTime(unitNow.Add(-time.Hour))
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
		outcome  scaleOutcome
		want     metav1.Condition
		// unchanged: the condition must equal want in every field.
		unchanged bool
	}{
		{
			name:    "create failed",
			outcome: scaleOutcome{attempted: true, failureReason: appv1alpha1.ReasonFailedCreate, err: errors.New("creating pods: quota exceeded")},
			want:    metav1.Condition{Status: metav1.ConditionTrue, Reason: appv1alpha1.ReasonFailedCreate, Message: "creating pods: quota exceeded"},
		},
		{
			name:     "delete failed, replacing an earlier failure",
			existing: []metav1.Condition{previousFailure},
			outcome:  scaleOutcome{attempted: true, failureReason: appv1alpha1.ReasonFailedDelete, err: errors.New("deleting pods: forbidden")},
			want:     metav1.Condition{Status: metav1.ConditionTrue, Reason: appv1alpha1.ReasonFailedDelete, Message: "deleting pods: forbidden"},
		},
		{
			name:    "attempted without error",
			outcome: scaleOutcome{attempted: true},
			want:    metav1.Condition{Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonNoFailure},
		},
		{
			name:     "attempted without error clears an earlier failure",
			existing: []metav1.Condition{previousFailure},
			outcome:  scaleOutcome{attempted: true},
			want:     metav1.Condition{Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonNoFailure},
		},
		{
			name:      "not attempted keeps the earlier condition, for the current generation",
			existing:  []metav1.Condition{previousFailure},
			outcome:   scaleOutcome{attempted: false},
			want:      keptFailure,
			unchanged: true,
		},
		{
			name:    "not attempted, none yet: no failure",
			outcome: scaleOutcome{attempted: false},
			want:    metav1.Condition{Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonNoFailure},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(1)
			ps.Generation = 2
			ps.Status.Conditions = tt.existing

			st := computeStatus(ps, nil, &revisionState{}, tt.outcome, unitNow)

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
	ps := unitPodSet(2)
	pods := []*corev1.Pod{unitPod("a", readySince(unitNow.Add(-time.Hour)))}

	first := computeStatus(ps, pods, &revisionState{}, scaleOutcome{attempted: true}, unitNow)
	ps.Status = first
	ps.Generation = 2
	second := computeStatus(ps, pods, &revisionState{}, scaleOutcome{attempted: true}, unitNow.Add(time.Hour))

	g.Expect(second.Conditions).To(HaveLen(len(first.Conditions)))
	for _, c := range first.Conditions {
		again := meta.FindStatusCondition(second.Conditions, c.Type)
		g.Expect(again).NotTo(BeNil(), c.Type)
		g.Expect(again.Status).To(Equal(c.Status), c.Type)
		g.Expect(again.LastTransitionTime).To(Equal(c.LastTransitionTime), c.Type)
		g.Expect(again.ObservedGeneration).To(Equal(int64(2)), c.Type)
	}
}

// computeStatus is documented as a pure function of its arguments, now
// included: a condition that appears or changes status must carry now as its
// transition time, not the wall clock's.
func TestComputeStatusTransitionTimeIsNow(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(1)
	ps.Status.Conditions = []metav1.Condition{{
		Type:               appv1alpha1.ConditionAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             appv1alpha1.ReasonMinimumReplicasAvailable,
		LastTransitionTime: metav1.NewTime(unitNow.Add(-time.Hour)),
	}}

	st := computeStatus(ps, nil, &revisionState{}, scaleOutcome{attempted: true}, unitNow)

	g.Expect(st.Conditions).To(HaveLen(3))
	for _, c := range st.Conditions {
		g.Expect(c.LastTransitionTime.Time).To(BeTemporally("==", unitNow),
			"%s (changed or new) should have transitioned at now", c.Type)
	}
}

func TestComputeStatusIsPure(t *testing.T) {
	g := NewWithT(t)
	ps := pureStatusInput()
	pods := []*corev1.Pod{
		unitPod("b", readySince(unitNow.Add(-time.Second))),
		unitPod("a", readySince(unitNow.Add(-time.Hour))),
		unitPod("c", terminatingSince(unitNow)),
	}
	outcome := scaleOutcome{attempted: true, failureReason: appv1alpha1.ReasonFailedCreate, err: errors.New("quota")}

	first := computeStatus(ps, pods, &revisionState{}, outcome, unitNow)
	second := computeStatus(ps, pods, &revisionState{}, outcome, unitNow)

	g.Expect(equality.Semantic.DeepEqual(first, second)).To(BeTrue(),
		"same input, different output:\n%#v\n%#v", first, second)
}

func TestComputeStatusDoesNotMutateItsInput(t *testing.T) {
	g := NewWithT(t)
	ps := pureStatusInput()
	pods := []*corev1.Pod{
		unitPod("b", readySince(unitNow.Add(-time.Second))),
		unitPod("a", readySince(unitNow.Add(-time.Hour))),
	}
	psBefore := ps.DeepCopy()
	podsBefore := []*corev1.Pod{pods[0].DeepCopy(), pods[1].DeepCopy()}

	st := computeStatus(ps, pods, &revisionState{}, scaleOutcome{attempted: true}, unitNow)

	g.Expect(st.Conditions).NotTo(Equal(psBefore.Status.Conditions), "the input should have called for changes")
	g.Expect(equality.Semantic.DeepEqual(ps, psBefore)).To(BeTrue(), "the PodSet was mutated")
	g.Expect(equality.Semantic.DeepEqual(pods, podsBefore)).To(BeTrue(), "the pods were mutated")
}

func TestNextAvailabilityCheck(t *testing.T) {
	const minReady = 10 * time.Second
	tests := []struct {
		name     string
		minReady time.Duration
		pods     []*corev1.Pod
		want     time.Duration
	}{
		{name: "no pods", minReady: minReady, want: 0},
		{
			name:     "all available",
			minReady: minReady,
			pods:     []*corev1.Pod{unitPod("a", readySince(unitNow.Add(-time.Minute)))},
			want:     0,
		},
		{
			name:     "none ready",
			minReady: minReady,
			pods:     []*corev1.Pod{unitPod("a"), unitPod("b", notReadySince(unitNow))},
			want:     0,
		},
		{
			name:     "no minReadySeconds",
			minReady: 0,
			pods:     []*corev1.Pod{unitPod("a", readySince(unitNow))},
			want:     0,
		},
		{
			name:     "one pending",
			minReady: minReady,
			pods:     []*corev1.Pod{unitPod("a", readySince(unitNow.Add(-3*time.Second)))},
			want:     7 * time.Second,
		},
		{
			name:     "the smallest remaining wait",
			minReady: minReady,
			pods: []*corev1.Pod{
				unitPod("a", readySince(unitNow.Add(-2*time.Second))),
				unitPod("b", readySince(unitNow.Add(-6*time.Second))),
				unitPod("c", readySince(unitNow.Add(-time.Minute))),
				unitPod("d", readySince(unitNow.Add(-4*time.Second))),
			},
			want: 4 * time.Second,
		},
		{
			name:     "pods that are not live are not waited for",
			minReady: minReady,
			pods: []*corev1.Pod{
				unitPod("a", readySince(unitNow.Add(-2*time.Second))),
				unitPod("b", readySince(unitNow.Add(-9*time.Second)), terminatingSince(unitNow)),
				unitPod("c", readySince(unitNow.Add(-9*time.Second)), inPhase(corev1.PodSucceeded)),
			},
			want: 8 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(nextAvailabilityCheck(tt.pods, tt.minReady, unitNow)).To(Equal(tt.want))
		})
	}
}

// pureStatusInput is a PodSet whose status is stale in every field, so that
// computing its status changes all of them.
func pureStatusInput() *appv1alpha1.PodSet {
	ps := unitPodSet(2)
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
				LastTransitionTime: metav1.NewTime(unitNow.Add(-time.Hour)),
			},
			{
				Type:               appv1alpha1.ConditionReplicaFailure,
				Status:             metav1.ConditionTrue,
				Reason:             appv1alpha1.ReasonFailedDelete,
				Message:            "old",
				ObservedGeneration: 2,
				LastTransitionTime: metav1.NewTime(unitNow.Add(-time.Hour)),
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
	ps := unitPodSet(3)
	first := scaleOutcome{attempted: true, failureReason: appv1alpha1.ReasonFailedCreate, err: errors.New(`pods "web-abcde" is forbidden: exceeded quota`)}
	ps.Status = computeStatus(ps, nil, &revisionState{}, first, unitNow)

	again := scaleOutcome{attempted: true, failureReason: appv1alpha1.ReasonFailedCreate, err: errors.New(`pods "web-fghij" is forbidden: exceeded quota`)}
	next := computeStatus(ps, nil, &revisionState{}, again, unitNow.Add(time.Minute))
	g.Expect(next).To(Equal(ps.Status), "an ongoing failure must not change the status")

	other := scaleOutcome{attempted: true, failureReason: appv1alpha1.ReasonFailedDelete, err: errors.New("delete refused")}
	c := meta.FindStatusCondition(computeStatus(ps, nil, &revisionState{}, other, unitNow).Conditions, appv1alpha1.ConditionReplicaFailure)
	g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonFailedDelete))
	g.Expect(c.Message).To(Equal("delete refused"))
}
