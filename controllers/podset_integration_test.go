package controllers

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

const (
	eventually = 60 * time.Second
	poll       = 100 * time.Millisecond
)

func TestIntegrationScalesUpAndDownToExactCounts(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "web", 5, nil)

	pods := waitForLivePods(g, ps, 5)
	// Exactly five, not five on the way to more.
	g.Consistently(func(g Gomega) { g.Expect(listLivePods(g, ps)).To(HaveLen(5)) }, time.Second, poll).Should(Succeed())
	for _, pod := range pods {
		ref := metav1.GetControllerOf(&pod)
		g.Expect(ref).NotTo(BeNil(), "pod %s has no controller", pod.Name)
		g.Expect(ref.UID).To(Equal(ps.UID))
		g.Expect(ref.Kind).To(Equal("PodSet"))
		g.Expect(*ref.BlockOwnerDeletion).To(BeTrue())
		want := operand.Labels(ps)
		want[appv1alpha1.LabelRevisionHash] = revision.Hash(revision.FromPodSet(ps), nil)
		g.Expect(pod.Labels).To(Equal(want))
		g.Expect(pod.Spec.Containers[0].Image).To(Equal(testOperandImage))
	}

	// Without a kubelet nothing is ready yet.
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.Replicas).To(BeEquivalentTo(5))
		g.Expect(st.ReadyReplicas).To(BeEquivalentTo(0))
		g.Expect(st.PodNames).To(Equal(podNames(pods)))
		g.Expect(st.Selector).To(Equal(operand.Selector(ps).String()))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionFalse))
		g.Expect(meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing).Reason).To(Equal(appv1alpha1.ReasonWaitingForAvailability))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionReplicaFailure)).To(Equal(metav1.ConditionFalse))
	}, eventually, poll).Should(Succeed())

	// Play the kubelet: every pod becomes Running and Ready.
	for i := range pods {
		markPodReady(g, &pods[i])
	}
	g.Eventually(func(g Gomega) {
		p := getPodSet(g, ps)
		g.Expect(p.Status.ReadyReplicas).To(BeEquivalentTo(5))
		g.Expect(p.Status.AvailableReplicas).To(BeEquivalentTo(5))
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(conditionStatus(p.Status, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
		g.Expect(conditionStatus(p.Status, appv1alpha1.ConditionProgressing)).To(Equal(metav1.ConditionTrue))
		g.Expect(progressingReason(p.Status)).To(Equal(appv1alpha1.ReasonNewRevisionAvailable))
	}, eventually, poll).Should(Succeed())

	setReplicas(g, ps, 2)
	kept := waitForLivePods(g, ps, 2)
	g.Eventually(func(g Gomega) {
		p := getPodSet(g, ps)
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(p.Status.Replicas).To(BeEquivalentTo(2))
		g.Expect(p.Status.PodNames).To(Equal(podNames(kept)))
	}, eventually, poll).Should(Succeed())

	setReplicas(g, ps, 0)
	waitForLivePods(g, ps, 0)
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.Replicas).To(BeZero())
		g.Expect(st.PodNames).To(BeEmpty())
		g.Expect(conditionStatus(st, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, eventually, poll).Should(Succeed())

	// A Normal event reports the creations.
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, ps.Name)).To(ContainElements(EventSuccessfulCreate, EventSuccessfulDelete))
	}, eventually, poll).Should(Succeed())
}

func TestIntegrationScaleSubresource(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "scaled", 1, nil)
	waitForLivePods(g, ps, 1)

	// What `kubectl scale` does: a merge patch of the scale subresource, so
	// it does not conflict with the operator's concurrent status writes.
	scale := &autoscalingv1.Scale{}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`))
	g.Expect(k8sClient.SubResource("scale").Patch(ctx, ps, patch, client.WithSubResourceBody(scale))).To(Succeed())
	g.Expect(scale.Spec.Replicas).To(BeEquivalentTo(4))
	waitForLivePods(g, ps, 4)
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.SubResource("scale").Get(ctx, ps, scale)).To(Succeed())
		g.Expect(scale.Status.Replicas).To(BeEquivalentTo(4))
		g.Expect(scale.Status.Selector).To(Equal(operand.Selector(ps).String()))
	}, eventually, poll).Should(Succeed())
}

func TestIntegrationPodsAreAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	})

	// The API server enforces the profile here: a pod without the
	// restricted security context is refused...
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	err := k8sClient.Create(context.Background(), bare)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("violates PodSecurity"))

	// ...and the operator's pods, whatever the spec asks for, are not.
	ps := createPodSet(t, ns, "secure", 3, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "docker.io/library/nginx:1.27"
		ps.Spec.Command = []string{"nginx", "-g", "daemon off;"}
	})
	for _, pod := range waitForLivePods(g, ps, 3) {
		g.Expect(*pod.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
		g.Expect(*pod.Spec.SecurityContext.RunAsUser).NotTo(BeZero())
		g.Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		sc := pod.Spec.Containers[0].SecurityContext
		g.Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
		g.Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		g.Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
	}
	g.Consistently(func(g Gomega) {
		g.Expect(conditionStatus(getPodSet(g, ps).Status, appv1alpha1.ConditionReplicaFailure)).NotTo(Equal(metav1.ConditionTrue))
	}, 2*time.Second, poll).Should(Succeed())
}

// A namespace whose user IDs the platform allocates (OpenShift's
// openshift.io/sa.scc.uid-range) gets pods whose operand image runs as the
// range's first user, with no group or fsGroup of the operator's (the
// platform's admission assigns them, and would refuse 65532). Elsewhere the
// operand image runs as 65532, in the short form and in a template that
// names no user; another image's template keeps its own.
func TestIntegrationUserIDsFollowTheNamespace(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	openshift := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podset-test-", Annotations: map[string]string{
		operand.AnnotationUIDRange: "1000660000/10000",
	}}}
	g.Expect(k8sClient.Create(context.Background(), openshift)).To(Succeed())
	plain := newTestNamespace(t, nil)
	operandTemplate := func(ps *appv1alpha1.PodSet) {
		ps.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "web", Image: testOperandImage},
			{Name: "app", Image: "registry.example.com/app:1"},
		}}}
	}
	for _, tc := range []struct {
		ns       string
		mutate   func(*appv1alpha1.PodSet)
		wantUser []*int64 // each container's, by pod or container
		wantFS   *int64
	}{
		{ns: openshift.Name, wantUser: []*int64{ptr.To[int64](1000660000)}},
		{ns: plain, wantUser: []*int64{ptr.To(operand.UID)}, wantFS: ptr.To(operand.UID)},
		{ns: openshift.Name, mutate: operandTemplate, wantUser: []*int64{ptr.To[int64](1000660000), nil}},
		{ns: plain, mutate: operandTemplate, wantUser: []*int64{ptr.To(operand.UID), nil}},
	} {
		ps := createPodSet(t, tc.ns, fmt.Sprintf("ids-%d", len(tc.wantUser)), 2, tc.mutate)
		for _, pod := range waitForLivePods(g, ps, 2) {
			var users []*int64
			for _, c := range pod.Spec.Containers {
				u := pod.Spec.SecurityContext.RunAsUser
				if c.SecurityContext.RunAsUser != nil {
					u = c.SecurityContext.RunAsUser
				}
				users = append(users, u)
			}
			g.Expect(users).To(Equal(tc.wantUser), "namespace %s, pod %s", tc.ns, pod.Name)
			g.Expect(pod.Spec.SecurityContext.FSGroup).To(Equal(tc.wantFS), "namespace %s, pod %s", tc.ns, pod.Name)
			g.Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		}
	}
}

func TestIntegrationReplacesDeletedAndTerminatedPods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "healing", 3, nil)
	pods := waitForLivePods(g, ps, 3)

	victim := pods[0]
	g.Expect(k8sClient.Delete(ctx, &victim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		now := listLivePods(g, ps)
		g.Expect(now).To(HaveLen(3))
		g.Expect(podNames(now)).NotTo(ContainElement(victim.Name))
	}, eventually, poll).Should(Succeed())

	// A pod that ran to completion no longer counts and is replaced.
	finished := listLivePods(g, ps)[0]
	finished.Status.Phase = corev1.PodSucceeded
	g.Expect(k8sClient.Status().Update(ctx, &finished)).To(Succeed())
	g.Eventually(func(g Gomega) {
		now := listLivePods(g, ps)
		g.Expect(now).To(HaveLen(3))
		g.Expect(podNames(now)).NotTo(ContainElement(finished.Name))
		g.Expect(getPodSet(g, ps).Status.PodNames).To(Equal(podNames(now)))
	}, eventually, poll).Should(Succeed())
}

// A pod that is being deleted is replaced at once and counted in
// status.terminatingReplicas until it stops or is gone, as a ReplicaSet
// counts it. A finalizer of the test's own holds the pods in deletion here,
// as a kubelet running out a grace period would (envtest has none).
func TestIntegrationCountsTerminatingPods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "leaving", 3, nil)
	pods := waitForLivePods(g, ps, 3)
	const hold = "test.example.com/hold"
	held := pods[:2]
	for i := range held {
		patch := client.MergeFrom(held[i].DeepCopy())
		controllerutil.AddFinalizer(&held[i], hold)
		g.Expect(k8sClient.Patch(ctx, &held[i], patch)).To(Succeed())
	}
	t.Cleanup(func() {
		for i := range held {
			pod := &corev1.Pod{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&held[i]), pod); err == nil && controllerutil.RemoveFinalizer(pod, hold) {
				_ = k8sClient.Update(ctx, pod)
			}
		}
	})
	for i := range held {
		g.Expect(k8sClient.Delete(ctx, &held[i])).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.TerminatingReplicas).To(Equal(int32(2)))
		g.Expect(st.Replicas).To(Equal(int32(3)))
		g.Expect(st.PodNames).NotTo(ContainElement(BeElementOf(held[0].Name, held[1].Name)))
	}, eventually, poll).Should(Succeed())
	g.Expect(listLivePods(g, ps)).To(HaveLen(3), "the terminating pods are replaced, not waited for")

	// One stops (its phase Failed, as the kubelet reports a pod it killed):
	// it is no longer terminating, though its object is still there.
	stopped := &corev1.Pod{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&held[0]), stopped)).To(Succeed())
	stopped.Status.Phase = corev1.PodFailed
	g.Expect(k8sClient.Status().Update(ctx, stopped)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.TerminatingReplicas).To(Equal(int32(1)))
	}, eventually, poll).Should(Succeed())

	// The other goes: none is left.
	gone := &corev1.Pod{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&held[1]), gone)).To(Succeed())
	controllerutil.RemoveFinalizer(gone, hold)
	g.Expect(k8sClient.Update(ctx, gone)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.TerminatingReplicas).To(Equal(int32(0)))
		g.Expect(st.Replicas).To(Equal(int32(3)))
	}, eventually, poll).Should(Succeed())
}

func TestIntegrationLeavesForeignPodsAlone(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)

	// Same labels as the PodSet's pods, but controlled by something else.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-controller", Namespace: ns}}
	g.Expect(k8sClient.Create(ctx, owner)).To(Succeed())
	foreign := plainPod(ns, "foreign", operand.Labels(&appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}))
	foreign.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}
	g.Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
	// An unlabelled pod in the same namespace.
	bystander := plainPod(ns, "bystander", map[string]string{"app": "other"})
	g.Expect(k8sClient.Create(ctx, bystander)).To(Succeed())

	ps := createPodSet(t, ns, "mine", 2, nil)
	waitForLivePods(g, ps, 2)
	setReplicas(g, ps, 0)
	waitForLivePods(g, ps, 0)

	for _, name := range []string{"foreign", "bystander"} {
		pod := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
		g.Expect(pod.DeletionTimestamp).To(BeNil())
		if ref := metav1.GetControllerOf(pod); ref != nil {
			g.Expect(ref.UID).NotTo(Equal(ps.UID))
		}
	}
	g.Expect(getPodSet(g, ps).Status.PodNames).NotTo(ContainElement("foreign"))
}

func TestIntegrationAdoptsOrphansAndReleasesMismatches(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)

	// An orphan that already carries the PodSet's labels, and runs its pod
	// template, is adopted instead of a new pod being created. (One that
	// runs another template is adopted and then replaced by the rollout:
	// see TestIntegrationPodsWithoutRevisionAreRecognised.)
	spec := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "adopter", Namespace: ns}}
	orphan := operand.NewPod(spec, revision.FromPodSet(spec), "", testOperandImage, operand.OperatorPicksIDs)
	delete(orphan.Labels, appv1alpha1.LabelRevisionHash)
	orphan.GenerateName, orphan.Name = "", "orphan"
	g.Expect(k8sClient.Create(ctx, orphan)).To(Succeed())
	// Only an orphan in the manager's cache can be adopted: on a loaded
	// machine the first reconcile could otherwise come before it, create
	// two pods, and adopt the orphan later as one too many (as the
	// ReplicaSet controller would). That is not what this test is about.
	g.Eventually(func(g Gomega) {
		cached, err := suitePods.Candidates(ns, "adopter", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cached).To(ContainElement(HaveField("Name", "orphan")))
	}, eventually, poll).Should(Succeed())
	ps := createPodSet(t, ns, "adopter", 2, nil)
	pods := waitForLivePods(g, ps, 2)
	g.Expect(podNames(pods)).To(ContainElement("orphan"))
	g.Expect(createdPodCount(g, ps, ns)).To(Equal(1), "one pod created besides the adopted orphan")

	// Relabelling an owned pod releases it: it loses the ownerReference
	// and a replacement is created.
	released := &corev1.Pod{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orphan"}, released)).To(Succeed())
	patch := client.MergeFrom(released.DeepCopy())
	released.Labels[appv1alpha1.LabelPodSet] = "someone-else"
	g.Expect(k8sClient.Patch(ctx, released, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orphan"}, pod)).To(Succeed())
		g.Expect(metav1.GetControllerOf(pod)).To(BeNil())
		g.Expect(pod.DeletionTimestamp).To(BeNil())
		now := listLivePods(g, ps)
		g.Expect(now).To(HaveLen(2))
		g.Expect(podNames(now)).NotTo(ContainElement("orphan"))
	}, eventually, poll).Should(Succeed())
}

func TestIntegrationRejectsInvalidSpecs(t *testing.T) {
	requireEnvtest(t)
	ns := newTestNamespace(t, nil)
	for _, tc := range []struct {
		name   string
		mutate func(*appv1alpha1.PodSet)
		field  string
	}{
		{"negative replicas", func(p *appv1alpha1.PodSet) { p.Spec.Replicas = ptr.To[int32](-1) }, "spec.replicas"},
		{"too many replicas", func(p *appv1alpha1.PodSet) { p.Spec.Replicas = ptr.To[int32](5001) }, "spec.replicas"},
		{"negative minReadySeconds", func(p *appv1alpha1.PodSet) { p.Spec.MinReadySeconds = -5 }, "spec.minReadySeconds"},
		{"image with a space", func(p *appv1alpha1.PodSet) { p.Spec.Image = "busybox latest" }, "spec.image"},
		{"duplicate env names", func(p *appv1alpha1.PodSet) {
			p.Spec.Env = []appv1alpha1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}
		}, "spec.env"},
		{"invalid env name", func(p *appv1alpha1.PodSet) { p.Spec.Env = []appv1alpha1.EnvVar{{Name: "1=x"}} }, "spec.env[0].name"},
		{"requests above limits", func(p *appv1alpha1.PodSet) {
			p.Spec.Resources = &appv1alpha1.Resources{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}
		}, "spec.resources.requests"},
		{"negative limit", func(p *appv1alpha1.PodSet) {
			p.Spec.Resources = &appv1alpha1.Resources{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}}
		}, "spec.resources.limits"},
		{"unsupported resource", func(p *appv1alpha1.PodSet) {
			p.Spec.Resources = &appv1alpha1.Resources{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
		}, "spec.resources.requests"},
		{"name too long for a label value", func(p *appv1alpha1.PodSet) { p.Name = strings.Repeat("a", 64) }, "metadata.name"},
		{"maxSurge and maxUnavailable both 0", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}
		}, "spec.updateStrategy.rollingUpdate"},
		{"maxUnavailable above 100%", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{MaxUnavailable: ptr.To(intstr.FromString("150%"))}
		}, "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{"maxSurge not a number or percentage", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromString("lots"))}
		}, "spec.updateStrategy.rollingUpdate.maxSurge"},
		{"negative maxSurge", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(-1))}
		}, "spec.updateStrategy.rollingUpdate.maxSurge"},
		{"unknown pod update policy", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{PodUpdatePolicy: "InPlace"}
		}, "spec.updateStrategy.rollingUpdate.podUpdatePolicy"},
		{"negative in-place grace period", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{InPlace: &appv1alpha1.InPlaceUpdate{GracePeriodSeconds: -1}}
		}, "spec.updateStrategy.rollingUpdate.inPlace.gracePeriodSeconds"},
		{"resize policy of another resource", func(p *appv1alpha1.PodSet) {
			p.Spec.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "ephemeral-storage", RestartPolicy: corev1.NotRequired}}
		}, "spec.resizePolicy"},
		{"negative partition", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Partition: ptr.To(int32(-1))}
		}, "spec.updateStrategy.rollingUpdate.partition"},
		{"rollingUpdate with OnDelete", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy = appv1alpha1.UpdateStrategy{Type: appv1alpha1.OnDeleteStrategyType, RollingUpdate: &appv1alpha1.RollingUpdate{}}
		}, "spec.updateStrategy.rollingUpdate"},
		{"unknown strategy type", func(p *appv1alpha1.PodSet) { p.Spec.UpdateStrategy.Type = "Replace" }, "spec.updateStrategy.type"},
		{"rollingUpdate with Recreate", func(p *appv1alpha1.PodSet) {
			p.Spec.UpdateStrategy = appv1alpha1.UpdateStrategy{Type: appv1alpha1.RecreateStrategyType, RollingUpdate: &appv1alpha1.RollingUpdate{}}
		}, "spec.updateStrategy.rollingUpdate"},
		{"unknown pod replacement policy", func(p *appv1alpha1.PodSet) { p.Spec.PodReplacementPolicy = "Never" }, "spec.podReplacementPolicy"},
		{"zero progress deadline", func(p *appv1alpha1.PodSet) { p.Spec.ProgressDeadlineSeconds = ptr.To(int32(0)) }, "spec.progressDeadlineSeconds"},
		{"negative revision history", func(p *appv1alpha1.PodSet) { p.Spec.RevisionHistoryLimit = ptr.To(int32(-1)) }, "spec.revisionHistoryLimit"},
		{"annotation key with spaces", func(p *appv1alpha1.PodSet) { p.Spec.PodAnnotations = map[string]string{"not a key": "x"} }, "spec.podAnnotations"},
		{"canary without steps", canaryWith(), "spec.updateStrategy.rollingUpdate.canary.steps"},
		{"canary with 33 steps", canaryWith(slices.Repeat([]appv1alpha1.CanaryStep{{Pause: &appv1alpha1.CanaryPause{}}}, 33)...), "spec.updateStrategy.rollingUpdate.canary.steps"},
		{"a step with two fields", canaryWith(appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](1), UpdatedPercent: ptr.To[int32](10)}), "spec.updateStrategy.rollingUpdate.canary.steps[0]"},
		{"a step with nothing", canaryWith(appv1alpha1.CanaryStep{}), "spec.updateStrategy.rollingUpdate.canary.steps[0]"},
		{"updatedReplicas 0", canaryWith(appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](0)}), "spec.updateStrategy.rollingUpdate.canary.steps[0].updatedReplicas"},
		{"updatedReplicas above 5000", canaryWith(appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](5001)}), "spec.updateStrategy.rollingUpdate.canary.steps[0].updatedReplicas"},
		{"updatedPercent 0", canaryWith(appv1alpha1.CanaryStep{UpdatedPercent: ptr.To[int32](0)}), "spec.updateStrategy.rollingUpdate.canary.steps[0].updatedPercent"},
		{"updatedPercent 150", canaryWith(appv1alpha1.CanaryStep{UpdatedPercent: ptr.To[int32](150)}), "spec.updateStrategy.rollingUpdate.canary.steps[0].updatedPercent"},
		{"a negative pause", canaryWith(appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{DurationSeconds: ptr.To[int32](-1)}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].pause.durationSeconds"},
		{"an analysis without conditions", canaryWith(appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{Query: "up"}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].analysis"},
		{"an analysis without a query", canaryWith(appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{SuccessCondition: "result < 0.01"}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].analysis.query"},
		{"a query too long", canaryWith(appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{Query: strings.Repeat("u", 4097), SuccessCondition: "result < 0.01"}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].analysis.query"},
		{"an analysis step of unbounded count", canaryWith(appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{Query: "up", SuccessCondition: "result < 0.01", Count: ptr.To[int32](0)}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].analysis.count"},
		{"an interval under 10 s", canaryWith(appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{Query: "up", SuccessCondition: "result < 0.01", IntervalSeconds: ptr.To[int32](5)}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].analysis.intervalSeconds"},
		{"a condition too long", canaryWith(appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{Query: "up", FailureCondition: strings.Repeat(" ", 1025)}}), "spec.updateStrategy.rollingUpdate.canary.steps[0].analysis.failureCondition"},
		{"a background analysis without conditions", withBackground(appv1alpha1.Analysis{Query: "up"}), "spec.updateStrategy.rollingUpdate.canary.backgroundAnalysis"},
		{"a background analysis of over 100 measurements", withBackground(appv1alpha1.Analysis{Query: "up", FailureCondition: "result > 0.5", Count: ptr.To[int32](101)}), "spec.updateStrategy.rollingUpdate.canary.backgroundAnalysis.count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "invalid", Namespace: ns}}
			tc.mutate(ps)
			err := k8sClient.Create(context.Background(), ps)
			g.Expect(err).To(HaveOccurred())
			// The error names the field as its path, not only in its
			// message ("<nil>: Invalid value: ... metadata.name must ...").
			g.Expect(err.Error()).To(MatchRegexp(`(^|[ "[])` + regexp.QuoteMeta(tc.field) + `(\[\d+\])?: `))
		})
	}

	// An invalid update is refused whole: the stored object is unchanged.
	g := NewWithT(t)
	ps := createPodSet(t, ns, "valid", 1, nil)
	bad := getPodSet(g, ps)
	bad.Spec.Replicas = ptr.To[int32](2)
	bad.Spec.Image = "has space"
	err := k8sClient.Update(context.Background(), bad)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.image"))
	stored := getPodSet(g, ps)
	g.Expect(*stored.Spec.Replicas).To(BeEquivalentTo(1))
	g.Expect(stored.Spec.Image).To(BeEmpty())

	// Defaults are applied at admission.
	defaulted := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: ns}}
	g.Expect(k8sClient.Create(context.Background(), defaulted)).To(Succeed())
	g.Expect(defaulted.Spec.Replicas).To(Equal(ptr.To[int32](1)))

	// A canary of every kind of step is taken, the analysis defaulted.
	canary := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "canary", Namespace: ns}}
	canaryWith(
		appv1alpha1.CanaryStep{UpdatedPercent: ptr.To[int32](100)},
		appv1alpha1.CanaryStep{UpdatedReplicas: ptr.To[int32](5000)},
		appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{DurationSeconds: ptr.To[int32](0)}},
		appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{}},
		appv1alpha1.CanaryStep{Analysis: &appv1alpha1.Analysis{Query: strings.Repeat("u", 4096), SuccessCondition: "result < 0.01", FailureCondition: "result > 0.05"}},
	)(canary)
	g.Expect(k8sClient.Create(context.Background(), canary)).To(Succeed())
	a := canary.Spec.UpdateStrategy.RollingUpdate.Canary.Steps[4].Analysis
	g.Expect([]*int32{a.IntervalSeconds, a.InitialDelaySeconds, a.FailureLimit, a.InconclusiveLimit, a.ConsecutiveErrorLimit}).
		To(Equal([]*int32{ptr.To[int32](60), ptr.To[int32](0), ptr.To[int32](0), ptr.To[int32](0), ptr.To[int32](4)}))
	g.Expect(a.Count).To(BeNil(), "count has no schema default")

	// A background analysis of unbounded count is taken.
	background := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "background", Namespace: ns}}
	withBackground(appv1alpha1.Analysis{Query: strings.Repeat("u", 4096), FailureCondition: "result > 0.5", Count: ptr.To[int32](0)})(background)
	g.Expect(k8sClient.Create(context.Background(), background)).To(Succeed())
	g.Expect(background.Spec.UpdateStrategy.RollingUpdate.Canary.BackgroundAnalysis.IntervalSeconds).To(Equal(ptr.To[int32](60)))
}

// withBackground sets a canary of one pause step and a background analysis
// on a PodSet.
func withBackground(a appv1alpha1.Analysis) func(*appv1alpha1.PodSet) {
	return func(p *appv1alpha1.PodSet) {
		canaryWith(appv1alpha1.CanaryStep{Pause: &appv1alpha1.CanaryPause{}})(p)
		p.Spec.UpdateStrategy.RollingUpdate.Canary.BackgroundAnalysis = &a
	}
}

// canaryWith sets a canary of steps on a PodSet.
func canaryWith(steps ...appv1alpha1.CanaryStep) func(*appv1alpha1.PodSet) {
	return func(p *appv1alpha1.PodSet) {
		p.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Canary: &appv1alpha1.Canary{Steps: steps}}
	}
}

func TestIntegrationReportsReplicaFailureFromQuota(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	quota := setPodQuota(g, ns, 2)

	ps := createPodSet(t, ns, "limited", 3, nil)
	waitForLivePods(g, ps, 2)
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionReplicaFailure)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonFailedCreate))
		g.Expect(c.Message).To(ContainSubstring("exceeded quota"))
		g.Expect(eventReasons(g, ns, ps.Name)).To(ContainElement(EventFailedCreate))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(listLivePods(g, ps)).To(HaveLen(2)) }, time.Second, poll).Should(Succeed())

	// Lift the quota: the missing pod is created and the condition clears.
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("10")
	g.Expect(k8sClient.Update(ctx, quota)).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Status.Hard = quota.Spec.Hard
	g.Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())

	waitForLivePods(g, ps, 3)
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionReplicaFailure)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	}, eventually, poll).Should(Succeed())
}

// A PodSet refused by a quota for a while is deep in the controller's
// backoff: after 12 s of refusals its next attempt is about 8 s away. Room
// made in the quota must wake it at once (wakeups.RefusedPodSets), not at the end
// of that backoff.
func TestIntegrationAQuotaThatMakesRoomWakesARefusedPodSet(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	quota := setPodQuota(g, ns, 0)
	ps := createPodSet(t, ns, "refused", 1, nil)
	g.Eventually(func(g Gomega) {
		g.Expect(conditionStatus(getPodSet(g, ps).Status, appv1alpha1.ConditionReplicaFailure)).To(Equal(metav1.ConditionTrue))
	}, eventually, poll).Should(Succeed())
	time.Sleep(12 * time.Second)
	g.Expect(listLivePods(g, ps)).To(BeEmpty())

	// What the quota controller does once an admin raises spec.hard.
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Status.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	g.Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(listLivePods(g, ps)).To(HaveLen(1)) }, 4*time.Second, poll).Should(Succeed())
}

func TestIntegrationMinReadySecondsDelaysAvailability(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "slow", 1, func(ps *appv1alpha1.PodSet) { ps.Spec.MinReadySeconds = 3 })
	pod := waitForLivePods(g, ps, 1)[0]
	markPodReady(g, &pod)

	// Ready at once, available only after minReadySeconds, with no pod
	// event in between: the reconciler must requeue itself.
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.ReadyReplicas).To(BeEquivalentTo(1))
		g.Expect(st.AvailableReplicas).To(BeZero())
	}, eventually, poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(1))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, eventually, poll).Should(Succeed())
}

// The operator must never hold more than spec.replicas live pods, however fast
// the spec changes and however many PodSets are reconciled at once; a stale
// cache without expectations would create duplicates here.
func TestIntegrationRepeatedScalingNeverOvershoots(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const (
		podSets = 4
		n       = 20
		cycles  = 3
	)

	// Watch every pod of the namespace on the API server, and remember the
	// most live pods each PodSet ever had at once.
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	var mu sync.Mutex
	live := map[string]map[types.UID]bool{}
	peak := map[string]int{}
	created := map[string]int{}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			owner := pod.Labels[appv1alpha1.LabelPodSet]
			mu.Lock()
			if live[owner] == nil {
				live[owner] = map[types.UID]bool{}
			}
			switch ev.Type {
			case watch.Added:
				created[owner]++
				live[owner][pod.UID] = operand.IsLive(slimpod.From(pod))
			case watch.Deleted:
				delete(live[owner], pod.UID)
			default:
				live[owner][pod.UID] = operand.IsLive(slimpod.From(pod))
			}
			count := 0
			for _, l := range live[owner] {
				if l {
					count++
				}
			}
			peak[owner] = max(peak[owner], count)
			mu.Unlock()
		}
	}()

	var wg sync.WaitGroup
	for i := range podSets {
		ps := createPodSet(t, ns, fmt.Sprintf("stress-%d", i), 0, nil)
		wg.Go(func() {
			g := NewWithT(t)
			for range cycles {
				// Change the spec again before the previous change has
				// settled, then let it settle.
				setReplicas(g, ps, n)
				setReplicas(g, ps, 0)
				setReplicas(g, ps, n)
				waitForLivePods(g, ps, n)
				setReplicas(g, ps, 0)
				waitForLivePods(g, ps, 0)
			}
		})
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("peak live pods per PodSet: %v; pods created: %v", peak, created)
	for i := range podSets {
		name := fmt.Sprintf("stress-%d", i)
		g.Expect(peak[name]).To(Equal(n), "PodSet %s peaked at %d live pods", name, peak[name])
	}
}

// --- helpers ---

func createPodSet(t *testing.T, ns, name string, replicas int32, mutate func(*appv1alpha1.PodSet)) *appv1alpha1.PodSet {
	t.Helper()
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       appv1alpha1.PodSetSpec{Replicas: ptr.To(replicas)},
	}
	if mutate != nil {
		mutate(ps)
	}
	if err := k8sClient.Create(context.Background(), ps); err != nil {
		t.Fatalf("creating PodSet %s: %v", name, err)
	}
	return ps
}

func getPodSet(g Gomega, ps *appv1alpha1.PodSet) *appv1alpha1.PodSet {
	out := &appv1alpha1.PodSet{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ps), out)).To(Succeed())
	return out
}

// setReplicas changes spec.replicas with a merge patch, as `kubectl patch`.
func setReplicas(g Gomega, ps *appv1alpha1.PodSet, n int32) {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	g.Expect(k8sClient.Patch(context.Background(), ps.DeepCopy(), patch)).To(Succeed())
}

// listLivePods lists, from the API server, the live pods the PodSet controls.
func listLivePods(g Gomega, ps *appv1alpha1.PodSet) []corev1.Pod {
	var list corev1.PodList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ps.Namespace))).To(Succeed())
	var out []corev1.Pod
	for _, pod := range list.Items {
		if ref := metav1.GetControllerOf(&pod); ref != nil && ref.UID == ps.UID && operand.IsLive(slimpod.From(&pod)) {
			out = append(out, pod)
		}
	}
	return out
}

func waitForLivePods(g Gomega, ps *appv1alpha1.PodSet, n int) []corev1.Pod {
	var pods []corev1.Pod
	g.Eventually(func(g Gomega) {
		pods = listLivePods(g, ps)
		g.Expect(pods).To(HaveLen(n))
	}, eventually, poll).Should(Succeed())
	return pods
}

// createdPodCount counts the pods in the namespace that the operator
// generated for the PodSet (their names start with its generateName).
func createdPodCount(g Gomega, ps *appv1alpha1.PodSet, ns string) int {
	var list corev1.PodList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, pod := range list.Items {
		if pod.GenerateName == ps.Name+"-" {
			n++
		}
	}
	return n
}

func podNames(pods []corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	// The status lists them sorted.
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return names
}

// markPodReady does what a kubelet would: the pod runs and is Ready.
func markPodReady(g Gomega, pod *corev1.Pod) {
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	g.Expect(k8sClient.Status().Update(context.Background(), pod)).To(Succeed())
}

func conditionStatus(st appv1alpha1.PodSetStatus, t string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
		return c.Status
	}
	return ""
}

func eventReasons(g Gomega, ns, regarding string) []string {
	var list eventsv1.EventList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == regarding {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func plainPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// setPodQuota creates a ResourceQuota on pods and fills in its status, which
// the quota controller (absent under envtest) would otherwise do; the
// API server's quota admission then enforces it.
func setPodQuota(g Gomega, ns string, pods int64) *corev1.ResourceQuota {
	ctx := context.Background()
	hard := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
	g.Expect(k8sClient.Create(ctx, q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	g.Expect(k8sClient.Status().Update(ctx, q)).To(Succeed())
	return q
}

// A pod stripped of the app.example.com/podset label leaves the operator's
// cache (and its selector). It is
// released (its controller reference removed) before its replacement is
// created, so the PodSet never controls more live pods than spec.replicas.
func TestIntegrationPodStrippedOfItsPodSetLabelIsReleased(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "strip", 2, nil)
	pods := waitForLivePods(g, ps, 2)

	stripped := pods[0].DeepCopy()
	patch := client.MergeFrom(stripped.DeepCopy())
	delete(stripped.Labels, appv1alpha1.LabelPodSet)
	g.Expect(k8sClient.Patch(ctx, stripped, patch)).To(Succeed())

	g.Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stripped), pod)).To(Succeed())
		g.Expect(metav1.GetControllerOf(pod)).To(BeNil(), "the stripped pod is still controlled by the PodSet")
		g.Expect(pod.DeletionTimestamp).To(BeNil())
		live := listLivePods(g, ps)
		g.Expect(live).To(HaveLen(2))
		g.Expect(podNames(live)).NotTo(ContainElement(stripped.Name))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(listLivePods(g, ps)).To(HaveLen(2)) }, time.Second, poll).Should(Succeed())
}
