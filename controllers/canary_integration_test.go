package controllers

// Integration tests of canary steps (spec.updateStrategy.rollingUpdate.canary):
// the partition each step holds, pauses timed and until promoted, an
// analysis with no Prometheus to query, an analysis that cannot run as
// written, and an abort.

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func TestIntegrationCanaryStepsHoldThePartitionUntilPromoted(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "steps", 4, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		canaryWith(
			appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](1)},
			appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{}},
			appv1alpha1.CanaryStep{UpdatedPercent: ptr.To[int32](50)},
			appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{DurationSeconds: ptr.To[int32](2)}},
		)(ps)
		ru := ps.Spec.UpdateStrategy.RollingUpdate
		ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	})
	startFakeKubelet(ctx, t, ns)
	// The first revision has nothing to compare with: no step applies.
	waitForRolledOut(g, ps, 4)
	g.Expect(getPodSet(g, ps).Status.Canary).To(BeNil())
	old := getPodSet(g, ps).Status.UpdateRevision

	setImage(g, ps, "registry.example.com/web:2")
	var update string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		update = st.UpdateRevision
		g.Expect(update).NotTo(Equal(old))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
		g.Expect(st.Canary).NotTo(BeNil())
		g.Expect(st.Canary.Revision).To(Equal(update))
		g.Expect(st.Canary.Step).To(BeEquivalentTo(1))
		g.Expect(st.Canary.Message).To(Equal("step 2 of 4: paused until promoted"))
		g.Expect(st.Replicas).To(BeEquivalentTo(4), "the surge pod's old one gone")
		g.Expect(condition(st, appv1alpha1.ConditionProgressing)).To(HaveField("Status", metav1.ConditionUnknown))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonCanaryPaused))
		// kstatus: in progress, not stalled.
		g.Expect(condition(st, appv1alpha1.ConditionReconciling)).To(HaveField("Status", metav1.ConditionTrue))
		g.Expect(condition(st, appv1alpha1.ConditionStalled)).To(HaveField("Status", metav1.ConditionFalse))
	}, eventually, poll).Should(Succeed())
	written := getPodSet(g, ps).ResourceVersion
	g.Consistently(func(g Gomega) {
		p := getPodSet(g, ps)
		g.Expect(p.Status.UpdatedReplicas).To(BeEquivalentTo(1), "a pause moves no pod")
		g.Expect(p.Status.LastCompletedRevision).To(Equal(old))
		g.Expect(p.ResourceVersion).To(Equal(written), "a status write with nothing new to say")
		g.Expect(listLivePods(g, ps)).To(HaveLen(4))
	}, 2*time.Second, poll).Should(Succeed())

	// A promotion of another step, or of another revision, does nothing.
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, old+"/1")
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, update+"/0")
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.Canary.Step).To(BeEquivalentTo(1))
	}, time.Second, poll).Should(Succeed())

	// Promoted: half the pods, a pause of 2 s, then every pod.
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.RolloutPromoteValue(update, 1))
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.Canary.Step).To(BeNumerically(">=", 3))
		g.Expect(st.UpdatedAvailableReplicas).To(BeNumerically(">=", 2))
	}, eventually, poll).Should(Succeed())
	waitForRolledOut(g, ps, 4)
	st := getPodSet(g, ps).Status
	g.Expect(st.Canary.Step).To(BeEquivalentTo(4), "every step done")
	g.Expect(st.LastCompletedRevision).To(Equal(update))
	g.Expect(st.CurrentRevision).To(Equal(update))
}

func TestIntegrationCanaryStopsWhileTheRolloutIsPaused(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "stopped", 3, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		canaryWith(
			appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](1)},
			appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{}},
			appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{DurationSeconds: ptr.To[int32](0)}},
		)(ps)
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 3)

	setImage(g, ps, "registry.example.com/web:2")
	var update string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		update = st.UpdateRevision
		g.Expect(st.Canary).NotTo(BeNil())
		g.Expect(st.Canary.Step).To(BeEquivalentTo(1))
	}, eventually, poll).Should(Succeed())

	// Paused, a promotion of the step waits for the resume.
	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`)
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.RolloutPromoteValue(update, 1))
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonPaused))
		g.Expect(st.Canary.Message).To(ContainSubstring("stopped while spec.updateStrategy.rollingUpdate.paused is set"))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.Canary.Step).To(BeEquivalentTo(1), "a step ended while paused")
		g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(1))
	}, 2*time.Second, poll).Should(Succeed())

	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`)
	waitForRolledOut(g, ps, 3)
	g.Expect(getPodSet(g, ps).Status.Canary.Step).To(BeEquivalentTo(3))
}

func TestIntegrationCanaryAnalysisWithNoPrometheusHoldsUntilPromoted(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	// The suite's manager has no Prometheus configured.
	ps := createPodSet(t, ns, "unmeasured", 3, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		canaryWith(
			appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](1)},
			appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{
				Query:            `sum(rate(http_requests_total{code=~"5..",controller_revision_hash="{{canaryHash}}"}[{{interval}}]))`,
				SuccessCondition: "result < 0.01",
			}},
		)(ps)
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 3)

	setImage(g, ps, "registry.example.com/web:2")
	var update string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		update = st.UpdateRevision
		g.Expect(st.Canary).NotTo(BeNil())
		g.Expect(st.Canary.Step).To(BeEquivalentTo(1))
		g.Expect(st.Canary.Analyses).To(HaveLen(1))
		run := st.Canary.Analyses[0]
		g.Expect(run.Name).To(Equal("steps[1]"))
		g.Expect(run.Phase).To(Equal("Error"))
		g.Expect(run.Message).To(ContainSubstring("--analysis-prometheus-url"))
		g.Expect(run.Query).To(ContainSubstring(fmt.Sprintf(`namespace=%q`, ns)), "the query as it would be sent, confined")
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonAnalysisError))
		g.Expect(condition(st, appv1alpha1.ConditionProgressing)).To(HaveField("Status", metav1.ConditionUnknown))
		g.Expect(condition(st, appv1alpha1.ConditionStalled)).To(HaveField("Status", metav1.ConditionFalse))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeEquivalentTo(1), "a held analysis never promotes")
	}, 2*time.Second, poll).Should(Succeed())

	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.RolloutPromoteValue(update, 1))
	waitForRolledOut(g, ps, 3)
	g.Expect(getPodSet(g, ps).Status.Canary.Step).To(BeEquivalentTo(2))
}

func TestIntegrationCanaryAnalysisThatCannotRunStallsNamingTheField(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "nosy", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		canaryWith(
			appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](1)},
			appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{
				Query:            `sum(rate(http_requests_total{namespace="kube-system"}[1m]))`,
				SuccessCondition: "result < 0.01",
			}},
		)(ps)
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)

	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonInvalidAnalysis))
		c := condition(st, appv1alpha1.ConditionProgressing)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("spec.updateStrategy.rollingUpdate.canary.steps[1].analysis.query: the query selects series outside its PodSet's namespace"))
		g.Expect(condition(st, appv1alpha1.ConditionStalled)).To(HaveField("Status", metav1.ConditionTrue))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeZero(), "every analysis is checked before any pod moves")
	}, time.Second, poll).Should(Succeed())

	// Mended, the first step moves its pod and the analysis runs (and
	// holds, with no Prometheus here).
	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"canary":{"steps":[{"updatedReplicas":1},{"analysis":{"query":"sum(rate(http_requests_total[1m]))","successCondition":"result < 0.01"}}]}}}}}`)
	var update string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		update = st.UpdateRevision
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonAnalysisError))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
	}, eventually, poll).Should(Succeed())

	// A full promotion ends the hold, and every step.
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.RolloutPromoteValue(update, -1))
	waitForRolledOut(g, ps, 2)
}

func TestIntegrationCanaryBackgroundAnalysisHoldsUntilPromotedInFull(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "watched", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		withBackground(appv1alpha1.Analysis{Query: `sum(up{namespace="kube-system"})`, FailureCondition: "result < 1.0"})(ps)
		ps.Spec.UpdateStrategy.RollingUpdate.Canary.Steps = []appv1alpha1.CanaryStep{{UpdatedReplicas: ptr.To[int32](1)}, {Pause: &appv1alpha1.CanaryPause{}}}
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)

	// A background analysis that cannot run stalls the rollout before any
	// pod moves, naming its field.
	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonInvalidAnalysis))
		g.Expect(condition(st, appv1alpha1.ConditionProgressing).Message).To(ContainSubstring("spec.updateStrategy.rollingUpdate.canary.backgroundAnalysis.query: the query selects series outside its PodSet's namespace"))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeZero())
	}, time.Second, poll).Should(Succeed())

	// Mended, it runs from the first step; with no Prometheus here it holds
	// on its error, and the first step's pod moves but the step does not
	// end.
	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"canary":{"backgroundAnalysis":{"query":"sum(up)","failureCondition":"result < 1.0"}}}}}}`)
	var update string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		update = st.UpdateRevision
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonAnalysisError))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
		g.Expect(st.Canary.Analyses).To(HaveLen(1))
		g.Expect(st.Canary.Analyses[0].Name).To(Equal("background"))
		g.Expect(st.Canary.Message).To(ContainSubstring("held by the background analysis"))
	}, eventually, poll).Should(Succeed())

	// A step's promotion does not end a hold of the background run.
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.RolloutPromoteValue(update, 0))
	g.Consistently(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.Canary.Step).To(BeZero())
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonAnalysisError))
	}, 2*time.Second, poll).Should(Succeed())

	// A full one does; the run keeps the phase it ended in.
	annotate(g, ps, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.RolloutPromoteValue(update, -1))
	waitForRolledOut(g, ps, 2)
	st := getPodSet(g, ps).Status
	g.Expect(st.Canary.Analyses).To(HaveLen(1))
	g.Expect(st.Canary.Analyses[0]).To(And(HaveField("Name", "background"), HaveField("Phase", "Error")))
	g.Expect(st.LastCompletedRevision).To(Equal(update))
}

func TestIntegrationCanaryAbortRetreatsWithoutAutoRollback(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "aborted", 3, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		canaryWith(
			appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](1)},
			appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{}},
		)(ps)
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 3)
	old := getPodSet(g, ps).Status.UpdateRevision

	setImage(g, ps, "registry.example.com/web:2")
	var update string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		update = st.UpdateRevision
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonCanaryPaused))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
	}, eventually, poll).Should(Succeed())

	annotate(g, ps, appv1alpha1.AnnotationRolloutAbort, update)
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.AutoRollback.Trigger).To(Equal("Aborted"))
		g.Expect(st.AutoRollback.FailedRevision).To(Equal(update))
		g.Expect(st.AutoRollback.Revision).To(Equal(old))
		g.Expect(st.AutoRollback.Complete).To(BeTrue())
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonRolledBack))
		g.Expect(st.UpdatedReplicas).To(BeZero(), "every pod back on the old revision")
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(3))
	}, eventually, poll).Should(Succeed())
	// Held there: the spec still asks for the aborted revision.
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeZero())
	}, 2*time.Second, poll).Should(Succeed())

	// A retry, as `kubectl podset rollout retry` writes it (the abort
	// cleared): the canary starts afresh from its first step.
	rb := getPodSet(g, ps).Status.AutoRollback
	patchSpec(g, ps, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:null}}}`,
		appv1alpha1.AnnotationRolloutRetry, appv1alpha1.RolloutRetryValue(rb), appv1alpha1.AnnotationRolloutAbort))
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.AutoRollback).To(BeNil())
		g.Expect(st.Canary.Revision).To(Equal(update))
		g.Expect(st.Canary.Step).To(BeEquivalentTo(1))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonCanaryPaused))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
	}, eventually, poll).Should(Succeed())
}

// annotate sets an annotation on a PodSet.
func annotate(g Gomega, ps *appv1alpha1.PodSet, key, value string) {
	patchSpec(g, ps, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
}

// condition is the PodSet status's condition of type t; nil when absent.
func condition(st appv1alpha1.PodSetStatus, t string) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, t)
}
