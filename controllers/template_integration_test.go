package controllers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// chartTemplate is a pod template of the kind popular charts ship: an init
// container and a sidecar, probes on a named port, envFrom, a projected
// volume, spread constraints and tolerations, a preStop hook, and the
// chart's own labels, with no security context.
func chartTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				appv1alpha1.LabelName:      "shop",
				appv1alpha1.LabelInstance:  "shop-prod",
				appv1alpha1.LabelManagedBy: "Helm",
			},
			Annotations: map[string]string{"checksum/config": "abc"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:            "default",
			TerminationGracePeriodSeconds: ptr.To[int64](20),
			InitContainers: []corev1.Container{
				{Name: "migrate", Image: "registry.example.com/shop:1.4", Command: []string{"/migrate"}},
				{Name: "proxy", Image: "registry.example.com/proxy:2", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
			},
			Containers: []corev1.Container{{
				Name:  "shop",
				Image: "registry.example.com/shop:1.4",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}, Optional: ptr.To(true),
				}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}},
				// exec, not the sleep action: that is off by default before Kubernetes 1.30.
				Lifecycle:    &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "info", MountPath: "/etc/info"}},
			}},
			Volumes: []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				}}}},
			}}}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "shop", Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{appv1alpha1.LabelInstance: "shop-prod"}},
			}},
		},
	}
}

// A PodSet's pods are its template's, as the API server stores the template,
// plus only the operator's labels and what the restricted profile needs.
func TestIntegrationPodsOfATemplate(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	ps := createPodSet(t, ns, "shop", 2, func(ps *appv1alpha1.PodSet) { ps.Spec.Template = chartTemplate() })
	pods := waitForLivePods(g, ps, 2)
	stored := getPodSet(g, ps)

	for _, pod := range pods {
		want := stored.Spec.Template.DeepCopy()
		operand.Restrict(&want.Spec)
		got := pod.DeepCopy()
		// What the API server adds to every pod it admits (defaults,
		// the service account's token volume) is no part of the
		// comparison: the template as stored is.
		g.Expect(got.Labels).To(HaveKeyWithValue(appv1alpha1.LabelName, "shop"), "the template's own labels win")
		g.Expect(got.Labels).To(HaveKeyWithValue(appv1alpha1.LabelManagedBy, "Helm"))
		g.Expect(got.Labels).To(HaveKeyWithValue(appv1alpha1.LabelPodSet, "shop"))
		g.Expect(got.Labels).To(HaveKey(appv1alpha1.LabelRevisionHash))
		g.Expect(got.Annotations).To(Equal(want.Annotations))
		g.Expect(got.Spec.InitContainers).To(HaveLen(2))
		g.Expect(got.Spec.InitContainers[1].RestartPolicy).To(HaveValue(Equal(corev1.ContainerRestartPolicyAlways)))
		g.Expect(got.Spec.Containers[0].ReadinessProbe.HTTPGet.Port).To(Equal(intstr.FromString("http")))
		g.Expect(got.Spec.Containers[0].Lifecycle).To(Equal(want.Spec.Containers[0].Lifecycle))
		g.Expect(got.Spec.Containers[0].EnvFrom).To(Equal(want.Spec.Containers[0].EnvFrom))
		g.Expect(got.Spec.Containers[0].SecurityContext).To(Equal(want.Spec.Containers[0].SecurityContext))
		g.Expect(got.Spec.InitContainers[0].SecurityContext).To(Equal(want.Spec.InitContainers[0].SecurityContext))
		g.Expect(got.Spec.SecurityContext).To(Equal(want.Spec.SecurityContext))
		g.Expect(got.Spec.Tolerations).To(ContainElements(want.Spec.Tolerations))
		g.Expect(got.Spec.TopologySpreadConstraints).To(Equal(want.Spec.TopologySpreadConstraints))
		g.Expect(got.Spec.TerminationGracePeriodSeconds).To(Equal(want.Spec.TerminationGracePeriodSeconds))
		// The API server defaults the pod's volume (defaultMode), as it
		// defaults a Deployment's template and pods.
		g.Expect(got.Spec.Volumes).To(ContainElement(And(
			HaveField("Name", "info"),
			HaveField("Projected.Sources", ConsistOf(HaveField("DownwardAPI.Items", ConsistOf(HaveField("Path", "labels"))))))))
	}
}

// Moving a PodSet from the short form to the template it stands for is no
// change: the same revision, the same pods.
func TestIntegrationShortFormToItsTemplateKeepsThePods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	short := revision.Template{Image: "registry.example.com/app:1", Args: []string{"serve"},
		Env: []appv1alpha1.EnvVar{{Name: "MODE", Value: "prod"}}, PodAnnotations: map[string]string{"team": "web"}}
	ps := createPodSet(t, ns, "moving", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image, ps.Spec.Args, ps.Spec.Env, ps.Spec.PodAnnotations = short.Image, short.Args, short.Env, short.PodAnnotations
	})
	before := waitForLivePods(g, ps, 2)
	var revisionBefore string
	g.Eventually(func(g Gomega) {
		revisionBefore = getPodSet(g, ps).Status.UpdateRevision
		g.Expect(revisionBefore).NotTo(BeEmpty())
	}, eventually, poll).Should(Succeed())

	moved := getPodSet(g, ps)
	pts := operand.PodTemplate(short, "")
	moved.Spec.Image, moved.Spec.Args, moved.Spec.Env, moved.Spec.PodAnnotations = "", nil, nil, nil
	moved.Spec.Template = &pts
	g.Expect(k8sClient.Update(ctx, moved)).To(Succeed())

	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.ObservedGeneration).To(Equal(moved.Generation))
		g.Expect(st.UpdateRevision).To(Equal(revisionBefore))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(podNames(listLivePods(g, ps))).To(ConsistOf(podNames(before)))
	}, 2*time.Second, poll).Should(Succeed())
}

// A template that breaks the restricted profile (written where no
// admission policy refused it) makes no pod: ReplicaFailure carries the
// Pod Security admission's own words, and the operator does not loop.
func TestIntegrationATemplateThatBreaksRestrictedMakesNoPod(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "privileged", 2, func(ps *appv1alpha1.PodSet) {
		// Room to delete a pod before its replacement is made.
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
		}
		ps.Spec.Template = chartTemplate()
		ps.Spec.Template.Spec.InitContainers[1].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionReplicaFailure)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonFailedCreate))
		g.Expect(c.Message).To(ContainSubstring(`Pod Security Standard "restricted"`))
		g.Expect(c.Message).To(ContainSubstring(`container "proxy" must not set securityContext.privileged=true`))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		var list corev1.PodList
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}, time.Second, poll).Should(Succeed())

	// Fixed, it runs.
	fixed := getPodSet(g, ps)
	fixed.Spec.Template.Spec.InitContainers[1].SecurityContext = nil
	g.Expect(writeSpec(fixed)).To(Succeed())
	running := podUIDs(waitForLivePods(g, ps, 2))

	// Broken again, with room to roll: not one running pod is deleted
	// for a template that can make none.
	broken := getPodSet(g, ps)
	broken.Spec.Template.Spec.HostNetwork = true
	g.Expect(writeSpec(broken)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionReplicaFailure)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("hostNetwork"))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(podUIDs(listLivePods(g, ps))).To(ConsistOf(running))
	}, 2*time.Second, poll).Should(Succeed())
}

// Under InPlaceIfPossible a template's pods take, in place, a new image of
// any container, new cpu of any container and new labels; they keep their
// UIDs, and each awaited container is judged on its own.
func TestIntegrationInPlaceUpdateOfATemplate(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps := createPodSet(t, ns, "inplace-template", replicas, func(ps *appv1alpha1.PodSet) {
		inPlace(appv1alpha1.InPlaceIfPossiblePodUpdatePolicy)(ps)
		ps.Spec.Image = ""
		ps.Spec.Template = &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "front"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "web", Image: "registry.example.com/web:1", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
				{Name: "metrics", Image: "registry.example.com/exporter:1"},
			}},
		}
	})
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)
	before := podUIDs(listLivePods(g, ps))

	patchSpec(g, ps, `{"spec":{"template":{"metadata":{"labels":{"tier":"back"}},"spec":{"containers":[`+
		`{"name":"web","image":"registry.example.com/web:1","resources":{"requests":{"cpu":"200m"}}},`+
		`{"name":"metrics","image":"registry.example.com/exporter:2"}]}}}}`)
	generation := getPodSet(g, ps).Generation
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.ObservedGeneration).To(Equal(generation))
		g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(replicas))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(replicas))
		g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
	}, eventually, poll).Should(Succeed())

	pods := listLivePods(g, ps)
	if suiteResizeRules.NoResize {
		// Before Kubernetes 1.33 the cpu change needs new pods.
		for _, pod := range pods {
			g.Expect(before).NotTo(ContainElement(pod.UID), "%s: the cpu change replaces the pod", suiteResizeRules)
			g.Expect(pod.Labels).To(HaveKeyWithValue("tier", "back"))
			g.Expect(pod.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("200m"))
		}
		return
	}
	g.Expect(podUIDs(pods)).To(ConsistOf(before), "pods were replaced")
	for _, pod := range pods {
		g.Expect(pod.Labels).To(HaveKeyWithValue("tier", "back"))
		g.Expect(pod.Spec.Containers[1].Image).To(Equal("registry.example.com/exporter:2"))
		g.Expect(pod.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("200m"))
		st, ok := inplace.StateOf(slimpod.From(&pod))
		g.Expect(ok).To(BeTrue())
		g.Expect(st.Template).To(BeTrue())
		for _, cs := range pod.Status.ContainerStatuses {
			want := int32(0)
			if cs.Name == "metrics" {
				want = 1
			}
			g.Expect(cs.RestartCount).To(Equal(want), "container %s of %s", cs.Name, pod.Name)
		}
	}

	// A change that cannot be made in place replaces the pods.
	patchSpec(g, ps, `{"spec":{"template":{"spec":{"containers":[`+
		`{"name":"web","image":"registry.example.com/web:1","resources":{"requests":{"cpu":"200m"}},"ports":[{"containerPort":8080}]},`+
		`{"name":"metrics","image":"registry.example.com/exporter:2"}]}}}}`)
	g.Eventually(func(g Gomega) {
		pods := listLivePods(g, ps)
		g.Expect(pods).To(HaveLen(replicas))
		for _, uid := range podUIDs(pods) {
			g.Expect(before).NotTo(ContainElement(uid))
		}
	}, eventually, poll).Should(Succeed())
}

// A template that passes the PodSet's admission but makes a pod the API
// server refuses (here a mount of a volume the template does not declare,
// which only pod validation knows) is reported in ReplicaFailure with the
// API server's own words, and retried with the controller's backoff, not in
// a loop of creates.
func TestIntegrationAPodTheAPIServerRefusesIsReportedNotRetriedInALoop(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	failed := func() float64 { return testutil.ToFloat64(metrics.PodCreates.WithLabelValues("failed")) }
	before := failed()
	ps := createPodSet(t, ns, "invalid", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Template = chartTemplate()
		c := &ps.Spec.Template.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "undeclared", MountPath: "/data"})
	})
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionReplicaFailure)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonFailedCreate))
		g.Expect(c.Message).To(ContainSubstring(`spec.containers[0].volumeMounts[1].name: Not found: "undeclared"`))
	}, eventually, poll).Should(Succeed())

	// The controller's per-item backoff doubles from 5 ms: about a dozen
	// attempts in the first 10 s, each stopped by slow start after one
	// refused create. A loop would send hundreds.
	time.Sleep(10 * time.Second)
	attempts := failed() - before
	t.Logf("refused creates in the first 10 s: %v", attempts)
	g.Expect(attempts).To(BeNumerically(">=", 1))
	g.Expect(attempts).To(BeNumerically("<=", 15))
	g.Expect(listLivePods(g, ps)).To(BeEmpty())

	// Mended, it runs.
	fixed := getPodSet(g, ps)
	c := &fixed.Spec.Template.Spec.Containers[0]
	c.VolumeMounts = c.VolumeMounts[:len(c.VolumeMounts)-1]
	g.Expect(writeSpec(fixed)).To(Succeed())
	waitForLivePods(g, ps, 2)
	g.Eventually(func(g Gomega) {
		g.Expect(conditionStatus(getPodSet(g, ps).Status, appv1alpha1.ConditionReplicaFailure)).To(Equal(metav1.ConditionFalse))
	}, eventually, poll).Should(Succeed())
}

// A template's rollout honours partition and pause as the short form's
// does, and a template PodSet deleted without its pods and created again
// adopts them with their revision.
func TestIntegrationATemplatesRolloutPartitionPauseAndReadoption(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 4
	withImage := func(image string, partition int32, paused bool) func(*appv1alpha1.PodSet) {
		return func(ps *appv1alpha1.PodSet) {
			ps.Spec.Template = chartTemplate()
			ps.Spec.Template.Spec.Containers[0].Image = image
			ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Partition: ptr.To(partition), Paused: paused,
			}
		}
	}
	update := func(change func(*appv1alpha1.PodSet)) {
		g.Eventually(func() error {
			p := getPodSet(g, &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
			change(p)
			return k8sClient.Update(ctx, p)
		}, eventually, poll).Should(Succeed())
	}
	ps := createPodSet(t, ns, "shop", replicas, withImage("registry.example.com/shop:1.4", 0, false))
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)
	first := getPodSet(g, ps).Status.UpdateRevision

	// Partition 2: two pods stay on the old template.
	update(withImage("registry.example.com/shop:1.5", 2, false))
	var second string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		second = st.UpdateRevision
		g.Expect(second).NotTo(Equal(first))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(replicas - 2))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(replicas))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		images := map[string]int{}
		for _, pod := range listLivePods(g, ps) {
			images[pod.Spec.Containers[0].Image]++
		}
		g.Expect(images).To(Equal(map[string]int{"registry.example.com/shop:1.4": 2, "registry.example.com/shop:1.5": 2}))
	}, 2*time.Second, poll).Should(Succeed())

	// Paused, with the partition lifted and a new template: no pod moves.
	update(withImage("registry.example.com/shop:1.6", 0, true))
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.ObservedGeneration).To(Equal(getPodSet(g, ps).Generation))
		g.Expect(st.UpdateRevision).NotTo(Or(Equal(first), Equal(second)))
	}, eventually, poll).Should(Succeed())
	before := podUIDs(listLivePods(g, ps))
	g.Consistently(func(g Gomega) {
		g.Expect(podUIDs(listLivePods(g, ps))).To(ConsistOf(before))
	}, 2*time.Second, poll).Should(Succeed())

	// Resumed: all four roll to the new template.
	update(withImage("registry.example.com/shop:1.6", 0, false))
	waitForRolledOut(g, ps, replicas)
	third := getPodSet(g, ps).Status.UpdateRevision

	// Deleted without its pods and created again: the same pods, adopted.
	rolled := podUIDs(listLivePods(g, ps))
	deleteOrphaningDependents(g, ps)
	again := createPodSet(t, ns, "shop", replicas, withImage("registry.example.com/shop:1.6", 0, false))
	waitForRolledOut(g, again, replicas)
	g.Expect(getPodSet(g, again).Status.UpdateRevision).To(Equal(third))
	g.Expect(podUIDs(listLivePods(g, again))).To(ConsistOf(rolled))
}

// writeSpec writes ps's spec as a merge patch of it, as kubectl apply and
// edit do, without the optimistic lock of an update: the operator writes
// the PodSet's status meanwhile, which moves its resourceVersion on.
func writeSpec(ps *appv1alpha1.PodSet) error {
	spec, err := json.Marshal(map[string]any{"spec": ps.Spec})
	if err != nil {
		return err
	}
	return k8sClient.Patch(context.Background(), ps, client.RawPatch(types.MergePatchType, spec))
}
