package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/internal/argocd"
)

// TestIntegrationKstatusVerdicts runs kstatus, the library Flux, Helm 4, kpt
// and Config Sync judge objects with, over PodSets whose status the
// reconciler wrote, in each situation a pipeline meets. The verdict is the
// one kstatus gives a Deployment in the same situation (a StatefulSet where
// only it has the feature); test/e2e compares the two kinds side by side
// with kube-controller-manager writing the Deployment's status.
func TestIntegrationKstatusVerdicts(t *testing.T) {
	requireEnvtest(t)
	imageReady := func(images ...string) func(*corev1.Pod) (corev1.PodStatus, bool) {
		return func(pod *corev1.Pod) (corev1.PodStatus, bool) {
			if !slices.Contains(images, pod.Spec.Containers[0].Image) {
				return corev1.PodStatus{}, false
			}
			return readyStatus(pod)
		}
	}
	const v1, v2 = "registry.example.com/web:1", "registry.example.com/web:2"
	surge1 := func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = v1
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		}
	}

	tests := []struct {
		name string
		// setup creates the PodSet in ns and brings it to the situation.
		setup func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet
		// view, if set, changes the object read before kstatus sees it.
		view func(u *unstructured.Unstructured)
		want kstatus.Status
		// reconciling and stalled are the reasons wanted on the condition
		// that is True ("" for neither).
		reconciling, stalled string
		// argo is the health Argo CD's check (internal/argocd) reports.
		argo string
	}{
		{
			name: "created and converged",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "converged", 3, func(ps *appv1alpha1.PodSet) { ps.Spec.Image = v1 })
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				return ps
			},
			want: kstatus.CurrentStatus, argo: argocd.Healthy,
		},
		{
			name: "scaling up, no pod ready yet",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				return createPodSet(t, ns, "unready", 3, nil)
			},
			want: kstatus.InProgressStatus, reconciling: appv1alpha1.ReasonWaitingForAvailability, argo: argocd.Progressing,
		},
		{
			name: "a ResourceQuota lets 1 of 3 pods exist",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				setPodQuota(g, ns, 1)
				ps := createPodSet(t, ns, "quota", 3, func(ps *appv1alpha1.PodSet) { ps.Spec.Image = v1 })
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				return ps
			},
			want: kstatus.InProgressStatus, reconciling: appv1alpha1.ReasonScalingUp, argo: argocd.Progressing,
		},
		{
			name: "the same, past progressDeadlineSeconds",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				setPodQuota(g, ns, 1)
				ps := createPodSet(t, ns, "deadline", 3, func(ps *appv1alpha1.PodSet) {
					ps.Spec.Image = v1
					ps.Spec.ProgressDeadlineSeconds = ptr.To(int32(2))
				})
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				return ps
			},
			want: kstatus.FailedStatus, stalled: appv1alpha1.ReasonProgressDeadlineExceeded, argo: argocd.Degraded,
		},
		{
			name: "a rollout in flight: the new pods are not ready",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "rolling", 3, surge1)
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				waitForRolledOut(g, ps, 3)
				setImage(g, ps, v2)
				return ps
			},
			want: kstatus.InProgressStatus, reconciling: appv1alpha1.ReasonRollingUpdate, argo: argocd.Progressing,
		},
		{
			name: "a canary paused at a step until promoted",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "canary-paused", 3, func(ps *appv1alpha1.PodSet) {
					surge1(ps)
					ps.Spec.UpdateStrategy.RollingUpdate.Canary = &appv1alpha1.Canary{Steps: []appv1alpha1.CanaryStep{
						{UpdatedReplicas: ptr.To[int32](1)}, {Pause: &appv1alpha1.CanaryPause{}},
					}}
				})
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1, v2))
				waitForRolledOut(g, ps, 3)
				setImage(g, ps, v2)
				return ps
			},
			want: kstatus.InProgressStatus, reconciling: appv1alpha1.ReasonCanaryPaused, argo: argocd.Suspended,
		},
		{
			name: "a canary aborted: back on the last completed revision",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "canary-aborted", 3, func(ps *appv1alpha1.PodSet) {
					surge1(ps)
					ps.Spec.UpdateStrategy.RollingUpdate.Canary = &appv1alpha1.Canary{Steps: []appv1alpha1.CanaryStep{
						{UpdatedReplicas: ptr.To[int32](1)}, {Pause: &appv1alpha1.CanaryPause{}},
					}}
				})
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1, v2))
				waitForRolledOut(g, ps, 3)
				setImage(g, ps, v2)
				g.Eventually(func(g Gomega) {
					g.Expect(progressingReason(getPodSet(g, ps).Status)).To(Equal(appv1alpha1.ReasonCanaryPaused))
				}, eventually, poll).Should(Succeed())
				annotate(g, ps, appv1alpha1.AnnotationRolloutAbort, getPodSet(g, ps).Status.UpdateRevision)
				return ps
			},
			want: kstatus.FailedStatus, stalled: appv1alpha1.ReasonRolledBack, argo: argocd.Degraded,
		},
		{
			name: "a rollout held: maxSurge 1, maxUnavailable 0, no room for the surge pod",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				setPodQuota(g, ns, 3)
				ps := createPodSet(t, ns, "held", 3, surge1)
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1, v2))
				waitForRolledOut(g, ps, 3)
				setImage(g, ps, v2)
				return ps
			},
			want: kstatus.InProgressStatus, reconciling: appv1alpha1.ReasonRollingUpdate, argo: argocd.Progressing,
		},
		{
			name: "paused mid-way",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "paused", 3, surge1)
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				waitForRolledOut(g, ps, 3)
				setImage(g, ps, v2)
				g.Eventually(func(g Gomega) {
					g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeEquivalentTo(1))
				}, eventually, poll).Should(Succeed())
				patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`)
				return ps
			},
			want: kstatus.InProgressStatus, reconciling: appv1alpha1.ReasonPaused, argo: argocd.Suspended,
		},
		{
			name: "scaled to 0",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "zero", 2, func(ps *appv1alpha1.PodSet) { ps.Spec.Image = v1 })
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				waitForRolledOut(g, ps, 2)
				setReplicas(g, ps, 0)
				return ps
			},
			want: kstatus.CurrentStatus, argo: argocd.Healthy,
		},
		{
			// The status a reconciler has not yet written for the newest
			// spec: the object as read between a spec change and the
			// reconcile that follows it.
			name: "observedGeneration behind",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "behind", 1, func(ps *appv1alpha1.PodSet) { ps.Spec.Image = v1 })
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				return ps
			},
			view: func(u *unstructured.Unstructured) { u.SetGeneration(u.GetGeneration() + 1) },
			want: kstatus.InProgressStatus, argo: argocd.Progressing,
		},
		{
			name: "being deleted",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "deleted", 1, func(ps *appv1alpha1.PodSet) {
					ps.Spec.Image = v1
					ps.Finalizers = []string{"example.com/test-holds-it"}
				})
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1))
				waitForRolledOut(g, ps, 1)
				g.Expect(k8sClient.Delete(ctx, ps)).To(Succeed())
				t.Cleanup(func() {
					_ = k8sClient.Patch(context.Background(), ps.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
				})
				return ps
			},
			want: kstatus.TerminatingStatus, argo: argocd.Progressing,
		},
		{
			// As a StatefulSet with a partition: Current once the pods
			// above the partition run the new template.
			name: "a partition holds pods back",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "partition", 4, func(ps *appv1alpha1.PodSet) {
					ps.Spec.Image = v1
					ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Partition: ptr.To(int32(3))}
				})
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1, v2))
				waitForRolledOut(g, ps, 4)
				setImage(g, ps, v2)
				g.Eventually(func(g Gomega) {
					g.Expect(getPodSet(g, ps).Status.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
				}, eventually, poll).Should(Succeed())
				return ps
			},
			want: kstatus.CurrentStatus, argo: argocd.Healthy,
		},
		{
			// As a StatefulSet with OnDelete (which kstatus calls Current
			// whatever its pods run): old pods wait for the user to delete
			// them, and the PodSet is Current once its pods are available.
			name: "OnDelete with pods on the old template",
			setup: func(ctx context.Context, t *testing.T, g Gomega, ns string) *appv1alpha1.PodSet {
				ps := createPodSet(t, ns, "ondelete", 2, func(ps *appv1alpha1.PodSet) {
					ps.Spec.Image = v1
					ps.Spec.UpdateStrategy.Type = appv1alpha1.OnDeleteStrategyType
				})
				runKubeletStandIn(ctx, ns, 150*time.Millisecond, imageReady(v1, v2))
				waitForRolledOut(g, ps, 2)
				setImage(g, ps, v2)
				g.Eventually(func(g Gomega) {
					st := getPodSet(g, ps)
					g.Expect(st.Status.ObservedGeneration).To(Equal(st.Generation))
					g.Expect(st.Status.UpdatedReplicas).To(BeEquivalentTo(0))
				}, eventually, poll).Should(Succeed())
				return ps
			},
			want: kstatus.CurrentStatus, argo: argocd.Healthy,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ns := newTestNamespace(t, nil)
			ps := tt.setup(ctx, t, g, ns)

			// verdict is kstatus' verdict of the PodSet as read now, and
			// the object it was drawn from.
			verdict := func(g Gomega) (*appv1alpha1.PodSet, *unstructured.Unstructured, *kstatus.Result) {
				got := getPodSet(g, ps)
				u, err := operandtest.Unstructured(got)
				g.Expect(err).NotTo(HaveOccurred())
				if tt.view != nil {
					tt.view(u)
				}
				res, err := kstatus.Compute(u)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Status).To(Equal(tt.want), "kstatus: %s", res.Message)
				return got, u, res
			}
			var last *kstatus.Result
			g.Eventually(func(g Gomega) {
				got, u, res := verdict(g)
				last = res
				health, err := argocd.Evaluate(argocd.HealthLua, u.Object)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(health.Status).To(Equal(tt.argo), "Argo CD: %s", health.Message)
				g.Expect(health.Message).NotTo(BeEmpty())
				if tt.want == kstatus.TerminatingStatus {
					return
				}
				st := got.Status
				g.Expect(st.ObservedGeneration).To(Equal(got.Generation))
				rec := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionReconciling)
				stalled := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionStalled)
				g.Expect(rec).NotTo(BeNil(), "Reconciling is always present")
				g.Expect(stalled).NotTo(BeNil(), "Stalled is always present")
				g.Expect(rec.ObservedGeneration).To(Equal(got.Generation))
				g.Expect(rec.Status == metav1.ConditionTrue && stalled.Status == metav1.ConditionTrue).To(BeFalse(), "both True")
				g.Expect(conditionReasonIfTrue(rec)).To(Equal(tt.reconciling), "Reconciling: %s", rec.Message)
				g.Expect(conditionReasonIfTrue(stalled)).To(Equal(tt.stalled), "Stalled: %s", stalled.Message)
			}, eventually, poll).Should(Succeed())
			// A verdict that only held for a moment would mislead a
			// pipeline that polls: it must stay.
			g.Consistently(func(g Gomega) { verdict(g) }, time.Second, poll).Should(Succeed())
			t.Logf("kstatus: %s (%s)", last.Status, last.Message)
		})
	}
}

func conditionReasonIfTrue(c *metav1.Condition) string {
	if c.Status != metav1.ConditionTrue {
		return ""
	}
	return c.Reason
}
