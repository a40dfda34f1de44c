//go:build e2e && realnode

package e2e

// In-place updates on the real node: the kubelet restarts a container for
// its new image in the same pod (same UID, IP, node), resizes one through
// pods/resize without a restart, and reports what the operator judges
// completion by.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/internal/resizerules"
)

// The node's images (hack/build-node-images.sh): busybox 1.36.0 and 1.37.0
// are one image under two tags; v2 is another image.
const (
	busybox137 = "docker.io/library/busybox:1.37.0"
	busybox136 = "docker.io/library/busybox:1.36.0"
	busyboxV2  = "docker.io/example/busybox:v2"
)

// newInPlacePodSet makes a PodSet of n busybox pods updated in place, one
// at a time, with cpu and memory requests (Burstable).
func newInPlacePodSet(t *testing.T, nsName string, n int32, mutate func(*appv1alpha1.PodSetSpec)) *appv1alpha1.PodSet {
	return newRealPodSet(t, nsName, n, func(s *appv1alpha1.PodSetSpec) {
		s.Image = busybox137
		// A shell that ends on SIGTERM: `sleep` as PID 1 ignores it, and
		// every restart would wait out the 30 s grace period.
		s.Command = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}
		s.Resources = &appv1alpha1.Resources{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
		}}
		s.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			PodUpdatePolicy: appv1alpha1.InPlaceIfPossiblePodUpdatePolicy,
			MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
		}
		if mutate != nil {
			mutate(s)
		}
	})
}

// podFacts are what an in-place update must keep, or change, of a pod.
type podFacts struct {
	uid                types.UID
	ip, node           string
	containerID, image string
	imageID            string
	restarts           int32
}

func factsOf(pods []corev1.Pod) map[string]podFacts {
	facts := map[string]podFacts{}
	for _, p := range pods {
		cs := p.Status.ContainerStatuses[0]
		facts[p.Name] = podFacts{
			uid: p.UID, ip: p.Status.PodIP, node: p.Spec.NodeName,
			containerID: cs.ContainerID, image: p.Spec.Containers[0].Image, imageID: cs.ImageID, restarts: cs.RestartCount,
		}
	}
	return facts
}

func patchPodSet(t *testing.T, ps *appv1alpha1.PodSet, patch string) error {
	return env.admin.Patch(t.Context(), ps.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
}

// waitUpdated waits until every pod of the PodSet runs its update revision
// and is available, and the rollout says so.
func waitUpdated(t *testing.T, ps *appv1alpha1.PodSet, n int) []corev1.Pod {
	t.Helper()
	Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.UpdatedAvailableReplicas).To(BeEquivalentTo(n), "pods updated and available; the pods:\n%s", describeInPlace(g, t, ps))
		c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonNewRevisionAvailable))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return waitRunning(t, ps, n)
}

// serviceWatch follows the PodSet's pods and checks what a Service would
// see: a pod is Ready only while its container runs the image its spec
// names, and never while the container it had is gone and the new one not
// yet in service. It records which pods were taken out of service.
type serviceWatch struct {
	mu        sync.Mutex
	violation string
	notReady  map[types.UID]bool
	live      map[types.UID]bool
	maxLive   int
}

func watchService(t *testing.T, ps *appv1alpha1.PodSet) *serviceWatch {
	t.Helper()
	w, err := env.clientset.CoreV1().Pods(ps.Namespace).Watch(t.Context(), metav1.ListOptions{LabelSelector: podSetLabel + "=" + ps.Name})
	Expect(err).NotTo(HaveOccurred())
	sw := &serviceWatch{notReady: map[types.UID]bool{}, live: map[types.UID]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			sw.mu.Lock()
			if ev.Type == watch.Deleted || !isLive(p) {
				delete(sw.live, p.UID)
			} else {
				sw.live[p.UID] = true
			}
			sw.maxLive = max(sw.maxLive, len(sw.live))
			ready := isRunningAndReady(p)
			if !ready {
				sw.notReady[p.UID] = true
			}
			if ready && len(p.Status.ContainerStatuses) == 1 {
				cs := p.Status.ContainerStatuses[0]
				if cs.State.Running == nil || !cs.Ready {
					sw.violation = fmt.Sprintf("pod %s Ready while its container is not (%s)", p.Name, podState(p))
				}
			}
			sw.mu.Unlock()
		}
	}()
	return sw
}

func (sw *serviceWatch) result() (violation string, notReady map[types.UID]bool, maxLive int) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	out := map[types.UID]bool{}
	for k, v := range sw.notReady {
		out[k] = v
	}
	return sw.violation, out, sw.maxLive
}

// testRealInPlaceImageUpdate: a new image is taken in place: each pod keeps
// its UID, IP and node, its container restarts once (one more restart, a
// new container ID) and runs the new image, restricted as before, and the
// pod is out of service while it restarts. A new tag of the same digest
// completes too (same image ID), which a rollout judged by the image ID
// would wait for forever.
func testRealInPlaceImageUpdate(t *testing.T) {
	ps := newInPlacePodSet(t, "real-inplace", 3, nil)
	before := factsOf(waitRunning(t, ps, 3))
	for _, f := range before {
		Expect(f.image).To(Equal(busybox137))
	}

	step("a new tag of the same image (%s): in place, completed by the kubelet's report", busybox136)
	sw := watchService(t, ps)
	Expect(patchPodSet(t, ps, fmt.Sprintf(`{"spec":{"image":%q}}`, busybox136))).To(Succeed())
	retagged := factsOf(waitUpdated(t, ps, 3))
	for name, f := range retagged {
		b, ok := before[name]
		Expect(ok).To(BeTrue(), "pod %s is new: the update was not made in place", name)
		Expect(f.uid).To(Equal(b.uid))
		Expect(f.ip).To(Equal(b.ip), "pod %s changed its IP", name)
		Expect(f.node).To(Equal(b.node))
		Expect(f.image).To(Equal(busybox136))
		Expect(f.restarts).To(Equal(b.restarts+1), "pod %s: restarts", name)
		Expect(f.containerID).NotTo(Equal(b.containerID))
		Expect(f.imageID).To(Equal(b.imageID), "the two tags are one image")
	}

	step("another image (%s): in place, with a new image ID", busyboxV2)
	Expect(patchPodSet(t, ps, fmt.Sprintf(`{"spec":{"image":%q}}`, busyboxV2))).To(Succeed())
	pods := waitUpdated(t, ps, 3)
	updated := factsOf(pods)
	for name, f := range updated {
		b, ok := retagged[name]
		Expect(ok).To(BeTrue(), "pod %s is new: the update was not made in place", name)
		Expect(f.uid).To(Equal(b.uid))
		Expect(f.ip).To(Equal(b.ip))
		Expect(f.restarts).To(Equal(b.restarts+1), "pod %s: restarts", name)
		Expect(f.imageID).NotTo(Equal(b.imageID), "pod %s runs the new image", name)
	}
	expectRestricted(t, pods)
	violation, notReady, maxLive := sw.result()
	Expect(violation).To(BeEmpty())
	Expect(maxLive).To(Equal(3), "an in-place update uses no surge")
	for _, f := range updated {
		Expect(notReady).To(HaveKey(f.uid), "a pod was never out of service while its container restarted")
	}

	step("an env change replaces the pods")
	Expect(patchPodSet(t, ps, `{"spec":{"env":[{"name":"MODE","value":"b"}]}}`)).To(Succeed())
	for _, p := range waitUpdated(t, ps, 3) {
		for _, f := range updated {
			Expect(p.UID).NotTo(Equal(f.uid), "pod %s was kept for an env change", p.Name)
		}
	}

	step("under InPlaceOnly, an env change is refused at admission, naming spec.env")
	kept := livePods(Default, t.Context(), ps.Namespace, ps.Name)
	Expect(patchPodSet(t, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"podUpdatePolicy":"InPlaceOnly"}}}}`)).To(Succeed())
	err := patchPodSet(t, ps, `{"spec":{"env":[{"name":"MODE","value":"c"}]}}`)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want the admission policy's 422, got %v", err)
	Expect(err.Error()).To(ContainSubstring("denied request: spec.env: cannot change under podUpdatePolicy InPlaceOnly"))

	step("a change made before InPlaceOnly was set (the rollout paused) keeps the pods, and Progressing names spec.env")
	Expect(patchPodSet(t, ps, `{"spec":{"env":[{"name":"MODE","value":"c"}],"updateStrategy":{"rollingUpdate":{"podUpdatePolicy":"InPlaceIfPossible","paused":true}}}}`)).To(Succeed())
	Expect(patchPodSet(t, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"podUpdatePolicy":"InPlaceOnly"}}}}`)).To(Succeed())
	Expect(patchPodSet(t, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`)).To(Succeed())
	Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(MatchRegexp(`3 pods cannot be updated in place and are kept under InPlaceOnly \(pod \S+: spec\.env\)`))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Consistently(func(g Gomega) {
		for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
			g.Expect(slices.ContainsFunc(kept, func(k corev1.Pod) bool { return k.UID == p.UID })).To(BeTrue(), "InPlaceOnly replaced pod %s", p.Name)
		}
	}).WithContext(t.Context()).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
}

// testRealInPlaceResize: cpu and memory change through pods/resize, with the
// default NotRequired policy: no restart, the pod stays in service, and the
// kubelet reports the new resources.
func testRealInPlaceResize(t *testing.T) {
	ps := newInPlacePodSet(t, "real-resize", 2, nil)
	before := factsOf(waitRunning(t, ps, 2))
	sw := watchService(t, ps)
	step("resizing cpu 50m -> 100m, memory 32Mi -> 48Mi")
	Expect(patchPodSet(t, ps, `{"spec":{"resources":{"requests":{"cpu":"100m","memory":"48Mi"}}}}`)).To(Succeed())
	pods := waitUpdated(t, ps, 2)
	for _, p := range pods {
		b, ok := before[p.Name]
		Expect(ok).To(BeTrue(), "pod %s is new: the resize was not made in place", p.Name)
		cs := p.Status.ContainerStatuses[0]
		Expect(cs.RestartCount).To(Equal(b.restarts), "a NotRequired resize restarted pod %s", p.Name)
		Expect(cs.ContainerID).To(Equal(b.containerID))
		Expect(cs.Resources).NotTo(BeNil())
		Expect(cs.Resources.Requests.Cpu().MilliValue()).To(BeEquivalentTo(100))
		Expect(cs.Resources.Requests.Memory().Value()).To(BeEquivalentTo(48 << 20))
	}
	violation, notReady, _ := sw.result()
	Expect(violation).To(BeEmpty())
	for _, f := range before {
		Expect(notReady).NotTo(HaveKey(f.uid), "a resize that restarts nothing took a pod out of service")
	}
}

// testRealInPlaceMemoryLimitDecrease: a memory limit lowered in place
// follows the rules of the API server the node runs under, as the manager
// read them when it started (internal/resizerules). Under resizePolicy
// NotRequired, Kubernetes 1.35 and later resize the running container and
// restart nothing; 1.33 and 1.34 refuse that resize, so the operator
// replaces the pods. Under RestartContainer every release with pods/resize
// resizes in place, restarting the container into the lower limit.
func testRealInPlaceMemoryLimitDecrease(t *testing.T) {
	rules, err := resizerules.Discover(t.Context(), env.clientset.Discovery(), logr.Discard())
	Expect(err).NotTo(HaveOccurred())
	step("the API server's resize rules: %s", rules)
	withLimit := func(policy corev1.ResourceResizeRestartPolicy) func(*appv1alpha1.PodSetSpec) {
		return func(s *appv1alpha1.PodSetSpec) {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
			if policy != "" {
				s.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: policy}}
			}
		}
	}
	for _, tc := range []struct {
		name    string
		policy  corev1.ResourceResizeRestartPolicy
		inPlace bool // the pods are kept
		restart bool // and their container restarted
	}{
		{"not-required", "", !rules.NoResize && !rules.NoMemoryLimitDecrease, false},
		{"restart-container", corev1.RestartContainer, !rules.NoResize, true},
	} {
		ps := newInPlacePodSet(t, "real-memory-"+tc.name, 2, withLimit(tc.policy))
		before := factsOf(waitRunning(t, ps, 2))
		step("%s: lowering the memory limit 64Mi -> 48Mi; kept in place: %v, restarted: %v", tc.name, tc.inPlace, tc.restart)
		Expect(patchPodSet(t, ps, `{"spec":{"resources":{"limits":{"memory":"48Mi"}}}}`)).To(Succeed())
		pods := waitUpdated(t, ps, 2)
		for _, p := range pods {
			cs := p.Status.ContainerStatuses[0]
			Expect(cs.Resources).NotTo(BeNil(), "pod %s reports no resources", p.Name)
			Expect(cs.Resources.Limits.Memory().Value()).To(BeEquivalentTo(48<<20), "pod %s runs with the new limit", p.Name)
			b, kept := before[p.Name]
			if !tc.inPlace {
				Expect(kept).To(BeFalse(), "%s: pod %s was kept, but this API server refuses the resize", tc.name, p.Name)
				continue
			}
			Expect(kept).To(BeTrue(), "%s: pod %s is new: the resize was not made in place", tc.name, p.Name)
			Expect(p.UID).To(Equal(b.uid))
			if tc.restart {
				Expect(cs.RestartCount).To(Equal(b.restarts+1), "%s: pod %s restarted once into the new limit", tc.name, p.Name)
			} else {
				Expect(cs.RestartCount).To(Equal(b.restarts), "%s: pod %s restarted", tc.name, p.Name)
				Expect(cs.ContainerID).To(Equal(b.containerID))
			}
		}
	}
}

// testRealInPlaceBadImage: an image that cannot be pulled stops the rollout
// within maxUnavailable, the Progressing condition says why and turns False
// at the deadline, and rolling back recovers the pod in place.
func testRealInPlaceBadImage(t *testing.T) {
	ps := newInPlacePodSet(t, "real-badimage", 3, func(s *appv1alpha1.PodSetSpec) {
		s.ProgressDeadlineSeconds = ptr.To(int32(20))
	})
	before := factsOf(waitRunning(t, ps, 3))
	Expect(patchPodSet(t, ps, `{"spec":{"image":"docker.io/example/missing:v1"}}`)).To(Succeed())
	Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonProgressDeadlineExceeded))
		g.Expect(c.Message).To(MatchRegexp(`in-place update stuck: pod \S+: container podset: (ErrImagePull|ImagePullBackOff)`))
		g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(2))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	pods := livePods(Default, t.Context(), ps.Namespace, ps.Name)
	stuck := 0
	for _, p := range pods {
		if strings.Contains(p.Spec.Containers[0].Image, "missing") {
			stuck++
		}
	}
	Expect(stuck).To(Equal(1), "the rollout went past maxUnavailable")

	step("rolling back recovers the stuck pod in place")
	Expect(patchPodSet(t, ps, fmt.Sprintf(`{"spec":{"image":%q}}`, busybox137))).To(Succeed())
	for name, f := range factsOf(waitUpdated(t, ps, 3)) {
		Expect(before).To(HaveKey(name), "pod %s is new", name)
		Expect(before[name].uid).To(Equal(f.uid))
	}
}

// testRealInPlaceOperatorKilled: the operator is SIGKILLed in the middle of
// an in-place rollout; the one that follows finishes it with every pod
// kept, none too many and none lost.
func testRealInPlaceOperatorKilled(t *testing.T) {
	ps := newInPlacePodSet(t, "real-inplace-kill", 4, nil)
	before := factsOf(waitRunning(t, ps, 4))
	sw := watchService(t, ps)
	Expect(patchPodSet(t, ps, fmt.Sprintf(`{"spec":{"image":%q}}`, busyboxV2))).To(Succeed())
	step("waiting for the first pod to move, then SIGKILL to the manager")
	Eventually(func(g Gomega) {
		moved := 0
		for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
			if p.Spec.Containers[0].Image == busyboxV2 {
				moved++
			}
		}
		g.Expect(moved).To(BeNumerically(">=", 1))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 5).Should(Succeed())
	killManager(t)
	for name, f := range factsOf(waitUpdated(t, ps, 4)) {
		Expect(before).To(HaveKey(name), "pod %s is new", name)
		Expect(before[name].uid).To(Equal(f.uid))
		Expect(f.image).To(Equal(busyboxV2))
	}
	violation, _, maxLive := sw.result()
	Expect(violation).To(BeEmpty())
	Expect(maxLive).To(Equal(4))
}

// killManager SIGKILLs the manager's process on the node, as an OOM kill
// would; the kubelet restarts its container.
func killManager(t *testing.T) {
	t.Helper()
	sel := client.MatchingLabels{"control-plane": "controller-manager"}
	pods := livePodsLabelled(Default, t.Context(), env.operatorNS, sel)
	Expect(pods).To(HaveLen(1))
	id := strings.TrimPrefix(pods[0].Status.ContainerStatuses[0].ContainerID, "containerd://")
	tasks, err := env.cluster.NodeTasks(context.Background())
	Expect(err).NotTo(HaveOccurred())
	Expect(tasks).To(HaveKey(id))
	Expect(syscall.Kill(tasks[id], syscall.SIGKILL)).To(Succeed())
	step("manager %s (pid %d) killed", pods[0].Name, tasks[id])
}

// describeInPlace is, per pod, what tells how far its in-place update got.
func describeInPlace(g Gomega, t *testing.T, ps *appv1alpha1.PodSet) string {
	var b strings.Builder
	for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
		fmt.Fprintf(&b, "  %s gen %d observed %d, revision %s, %s: %s\n", p.Name, p.Generation, p.Status.ObservedGeneration,
			p.Labels[appv1alpha1.LabelRevisionHash], p.Annotations[appv1alpha1.AnnotationInPlaceUpdate], podState(&p))
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "    %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "    container %s ready=%v restarts=%d image=%s\n", cs.ContainerID, cs.Ready, cs.RestartCount, cs.Image)
		}
	}
	return b.String()
}
