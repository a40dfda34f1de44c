package controllers

// Integration tests of in-place updates (podUpdatePolicy InPlaceIfPossible
// and InPlaceOnly): the readiness gate, the steps' patches, what InPlaceOnly
// keeps,
// with a stand-in for the kubelet's side (startInPlaceKubelet). The real
// kubelet's side is proven in test/e2e (the real-node suite).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// inPlace sets the pod update policy, with one pod unavailable at a time.
func inPlace(policy appv1alpha1.PodUpdatePolicy) func(*appv1alpha1.PodSet) {
	return func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			PodUpdatePolicy: policy, MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(1)),
		}
	}
}

func TestIntegrationInPlaceImageUpdateKeepsThePods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 4
	ps := createPodSet(t, ns, "inplace", replicas, inPlace(appv1alpha1.InPlaceIfPossiblePodUpdatePolicy))
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)

	before := map[types.UID]string{}
	for _, pod := range listLivePods(g, ps) {
		g.Expect(pod.Spec.ReadinessGates).To(ConsistOf(corev1.PodReadinessGate{ConditionType: appv1alpha1.PodConditionInPlaceUpdateReady}))
		g.Expect(operand.InPlaceGateCondition(slimpod.From(&pod)).Status).To(Equal(corev1.ConditionTrue), "the operator puts a new pod in service")
		before[pod.UID] = inplace.ContainerStatus(slimpod.From(&pod)).ContainerID
	}

	bounds := watchBounds(ctx, t, ns, ps.Name)
	setImage(g, ps, "registry.example.com/web:2")
	waitForRolledOut(g, ps, replicas)

	st := getPodSet(g, ps).Status
	for _, pod := range listLivePods(g, ps) {
		g.Expect(before).To(HaveKey(pod.UID), "pod %s was replaced", pod.Name)
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example.com/web:2"))
		g.Expect(revision.Name(ps.Name, pod.Labels[appv1alpha1.LabelRevisionHash])).To(Equal(st.UpdateRevision))
		cs := inplace.ContainerStatus(slimpod.From(&pod))
		g.Expect(cs.RestartCount).To(Equal(int32(1)), "the container restarted once, for its new image")
		g.Expect(cs.ContainerID).NotTo(Equal(before[pod.UID]))
		state, ok := inplace.StateOf(slimpod.From(&pod))
		g.Expect(ok).To(BeTrue())
		g.Expect(state).To(Equal(inplace.State{Revision: pod.Labels[appv1alpha1.LabelRevisionHash], Restart: true, ContainerID: before[pod.UID], Restarts: ptr.To[int32](0)}))
		g.Expect(operand.InPlaceGateCondition(slimpod.From(&pod)).Status).To(Equal(corev1.ConditionTrue))
	}
	maxLive, minReady := bounds()
	g.Expect(maxLive).To(Equal(replicas), "an in-place update uses no surge")
	g.Expect(minReady).To(Equal(replicas-1), "one pod at a time was out of service (maxUnavailable 1), and one was")
	g.Expect(eventReasons(g, ns, ps.Name)).To(ContainElement(EventUpdatedInPlace))
	g.Expect(eventReasons(g, ns, ps.Name)).NotTo(ContainElement(EventSuccessfulDelete))

	// A change that cannot be made in place replaces the pods.
	patchSpec(g, ps, `{"spec":{"env":[{"name":"MODE","value":"b"}]}}`)
	waitForRolledOut(g, ps, replicas)
	for _, pod := range listLivePods(g, ps) {
		g.Expect(before).NotTo(HaveKey(pod.UID), "pod %s was not replaced for an env change", pod.Name)
		g.Expect(pod.Spec.ReadinessGates).NotTo(BeEmpty())
	}
}

func TestIntegrationInPlaceResizeKeepsPodsInService(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "resize", 2, func(ps *appv1alpha1.PodSet) {
		inPlace(appv1alpha1.InPlaceOnlyPodUpdatePolicy)(ps)
		ps.Spec.Resources = &appv1alpha1.Resources{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
		}}
	})
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)
	uids := podUIDs(listLivePods(g, ps))

	bounds := watchBounds(ctx, t, ns, ps.Name)
	patchSpec(g, ps, `{"spec":{"resources":{"requests":{"cpu":"200m","memory":"48Mi"}}}}`)
	if suiteResizeRules.NoResize {
		// Before Kubernetes 1.33 no resize is served: InPlaceOnly keeps
		// the pods and says why.
		g.Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("kept under InPlaceOnly"))
			g.Expect(c.Message).To(ContainSubstring("pods/resize, which this API server does not serve"))
		}, eventually, poll).Should(Succeed())
		g.Expect(podUIDs(listLivePods(g, ps))).To(ConsistOf(uids))
		return
	}
	waitForRolledOut(g, ps, 2)
	for _, pod := range listLivePods(g, ps) {
		g.Expect(uids).To(ContainElement(pod.UID))
		cs := inplace.ContainerStatus(slimpod.From(&pod))
		g.Expect(cs.RestartCount).To(BeZero(), "a resize with the NotRequired policy restarts nothing")
		g.Expect(cs.Resources.Requests.Cpu().String()).To(Equal("200m"))
		g.Expect(pod.Spec.Containers[0].Resources.Requests.Memory().String()).To(Equal("48Mi"))
	}
	_, minReady := bounds()
	g.Expect(minReady).To(Equal(2), "a resize that restarts nothing takes no pod out of service")
}

// TestIntegrationInPlaceMemoryLimitDecreaseFollowsTheServer lowers a memory
// limit whose resize policy is NotRequired. Kubernetes 1.33 and 1.34 refuse
// that resize, so the pods are replaced there; later versions take it in
// place; before 1.33 no resize is served and every pod is replaced. The
// suite's API server decides which, as it decides for the manager.
func TestIntegrationInPlaceMemoryLimitDecreaseFollowsTheServer(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "memory-down", 2, func(ps *appv1alpha1.PodSet) {
		inPlace(appv1alpha1.InPlaceIfPossiblePodUpdatePolicy)(ps)
		ps.Spec.Resources = &appv1alpha1.Resources{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
	})
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)
	uids := podUIDs(listLivePods(g, ps))

	patchSpec(g, ps, `{"spec":{"resources":{"limits":{"memory":"64Mi"}}}}`)
	waitForRolledOut(g, ps, 2)
	pods := listLivePods(g, ps)
	for _, pod := range pods {
		g.Expect(pod.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("64Mi"))
	}
	if suiteResizeRules.NoResize || suiteResizeRules.NoMemoryLimitDecrease {
		for _, pod := range pods {
			g.Expect(uids).NotTo(ContainElement(pod.UID), "%s: the server refuses the resize; the pod is replaced", suiteResizeRules)
		}
		return
	}
	g.Expect(podUIDs(pods)).To(ConsistOf(uids), "the server takes the resize in place")
	for _, pod := range pods {
		g.Expect(inplace.ContainerStatus(slimpod.From(&pod)).RestartCount).To(BeZero())
	}
}

func TestIntegrationInPlaceUpdateStopsOnABadImage(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "badimage", 3, func(ps *appv1alpha1.PodSet) {
		inPlace(appv1alpha1.InPlaceIfPossiblePodUpdatePolicy)(ps)
		ps.Spec.ProgressDeadlineSeconds = ptr.To(int32(3))
	})
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 3)

	setImage(g, ps, "registry.example.com/missing:1")
	updatedPods := func(g Gomega) int {
		n := 0
		for _, pod := range listLivePods(g, ps) {
			if pod.Spec.Containers[0].Image == "registry.example.com/missing:1" {
				n++
			}
		}
		return n
	}
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonProgressDeadlineExceeded))
		g.Expect(c.Message).To(ContainSubstring("in-place update stuck"))
		g.Expect(c.Message).To(ContainSubstring("ImagePullBackOff"))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(updatedPods(g)).To(Equal(1), "the rollout goes no further than maxUnavailable")
		g.Expect(getPodSet(g, ps).Status.AvailableReplicas).To(Equal(int32(2)))
	}, 2*time.Second, poll).Should(Succeed())

	// Rolling back moves the stuck pod back, in place.
	uids := podUIDs(listLivePods(g, ps))
	setImage(g, ps, "registry.example.com/web:1")
	waitForRolledOut(g, ps, 3)
	g.Expect(podUIDs(listLivePods(g, ps))).To(ConsistOf(uids))
}

// Under InPlaceOnly, a change the pods cannot take in place that reaches
// the operator (this suite runs no admission policy, as a cluster before
// Kubernetes 1.30 has none; internal/admission tests the policy) is refused
// by the operator: the pods are kept, and Progressing names the field.
// Reverting the change rolls nothing.
func TestIntegrationInPlaceOnlyKeepsPodsAChangeCannotReach(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "only", 2, inPlace(appv1alpha1.InPlaceOnlyPodUpdatePolicy))
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)
	uids := podUIDs(listLivePods(g, ps))

	patchSpec(g, ps, `{"spec":{"env":[{"name":"MODE","value":"b"}]}}`)
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, ps).Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(MatchRegexp(`2 pods cannot be updated in place and are kept under InPlaceOnly \(pod only-\w+: spec\.env\)`))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(podUIDs(listLivePods(g, ps))).To(ConsistOf(uids), "InPlaceOnly replaced a pod")
	}, 2*time.Second, poll).Should(Succeed())

	patchSpec(g, ps, `{"spec":{"env":null}}`)
	waitForRolledOut(g, ps, 2)
	g.Expect(podUIDs(listLivePods(g, ps))).To(ConsistOf(uids))
}

func podUIDs(pods []corev1.Pod) []types.UID {
	var uids []types.UID
	for _, pod := range pods {
		uids = append(uids, pod.UID)
	}
	return uids
}

// startInPlaceKubelet stands in for the kubelet of ns's pods, as far as
// in-place updates see it: a container runs the pod's image (a new
// container, one more restart, when the image changed; waiting in
// ImagePullBackOff for an image named "missing"), reports the spec's
// resources, and the pod is Ready once its container is and every
// readiness gate's condition is True. Conditions others set are kept, and
// the generation it acted on is reported.
func startInPlaceKubelet(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	runKubeletStandIn(ctx, ns, 100*time.Millisecond, kubeletStatus)
}

func kubeletStatus(pod *corev1.Pod) (corev1.PodStatus, bool) {
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodRunning
	st.ObservedGeneration = pod.Generation
	ready := true
	var statuses []corev1.ContainerStatus
	for _, spec := range pod.Spec.Containers {
		cs := containerStatusStandIn(pod, spec)
		ready = ready && cs.Ready
		statuses = append(statuses, cs)
	}
	st.ContainerStatuses = statuses
	for _, gate := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range st.Conditions {
			found = found || (c.Type == gate.ConditionType && c.Status == corev1.ConditionTrue)
		}
		ready = ready && found
	}
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	var conditions []corev1.PodCondition
	for _, c := range st.Conditions {
		if c.Type != corev1.PodReady {
			conditions = append(conditions, c)
		}
	}
	prev := operand.ReadyCondition(slimpod.From(pod))
	readyCond := corev1.PodCondition{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: metav1.Now()}
	if prev != nil && prev.Status == readyStatus {
		readyCond.LastTransitionTime = prev.LastTransitionTime
	}
	st.Conditions = append(conditions, readyCond)
	was, _ := json.Marshal(pod.Status)
	is, _ := json.Marshal(st)
	return st, string(was) != string(is)
}

// containerStatusStandIn is the status the stand-in kubelet reports for one
// container of pod: a new container, one more restart, when its image
// changed.
func containerStatusStandIn(pod *corev1.Pod, spec corev1.Container) corev1.ContainerStatus {
	var cs corev1.ContainerStatus
	for _, prev := range pod.Status.ContainerStatuses {
		if prev.Name == spec.Name {
			cs = prev
		}
	}
	if cs.Image != spec.Image {
		if cs.Image != "" {
			cs.RestartCount++
		}
		cs = corev1.ContainerStatus{
			Name: spec.Name, Image: spec.Image, RestartCount: cs.RestartCount,
			ContainerID: fmt.Sprintf("fake://%s-%s-%d", pod.UID, spec.Name, cs.RestartCount),
		}
		if strings.Contains(spec.Image, "missing") {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image " + spec.Image}
		} else {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
			cs.Ready, cs.Started = true, ptr.To(true)
		}
	}
	cs.Resources = spec.Resources.DeepCopy()
	return cs
}

// With inPlace.gracePeriodSeconds, a pod is out of service (its gate's
// condition False) for that long before its image changes.
func TestIntegrationInPlaceGracePeriodKeepsThePodOutOfServiceFirst(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const grace = 2
	ps := createPodSet(t, ns, "grace", 1, func(ps *appv1alpha1.PodSet) {
		inPlace(appv1alpha1.InPlaceIfPossiblePodUpdatePolicy)(ps)
		ps.Spec.UpdateStrategy.RollingUpdate.InPlace = &appv1alpha1.InPlaceUpdate{GracePeriodSeconds: grace}
	})
	startInPlaceKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 1)

	setImage(g, ps, "registry.example.com/web:2")
	var outOfService time.Time
	g.Eventually(func(g Gomega) {
		pods := listLivePods(g, ps)
		g.Expect(pods).To(HaveLen(1))
		gate := operand.InPlaceGateCondition(slimpod.From(&pods[0]))
		g.Expect(gate).NotTo(BeNil())
		g.Expect(gate.Status).To(Equal(corev1.ConditionFalse))
		g.Expect(pods[0].Spec.Containers[0].Image).To(Equal("registry.example.com/web:1"), "the image changed with no grace period")
		outOfService = time.Now()
	}, eventually, 50*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(listLivePods(g, ps)[0].Spec.Containers[0].Image).To(Equal("registry.example.com/web:2"))
	}, eventually, 50*time.Millisecond).Should(Succeed())
	g.Expect(time.Since(outOfService)).To(BeNumerically(">=", (grace-1)*time.Second), "the image changed before the grace period was over")
	waitForRolledOut(g, ps, 1)
}
