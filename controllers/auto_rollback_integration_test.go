package controllers

// Integration tests of auto-rollback (spec.updateStrategy.rollingUpdate.
// autoRollback): a kubelet stand-in makes the containers of chosen images
// crash, as a real kubelet reports a crash loop, and the PodSet must
// return its pods to the last completed revision within its bounds, say
// so, and never write its spec.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
	"github.com/example/podset-operator/internal/argocd"
)

// crashingImages is a kubelet stand-in's list of the images whose
// containers crash in the pods created from a given time on: those pods
// run, never turn Ready, and their container waits in CrashLoopBackOff
// with more restarts at each look.
type crashingImages struct {
	mu     sync.Mutex
	images map[string]time.Time
}

// crashFromNow makes the containers of image crash in pods created from
// now on (to the second, as creation times go).
func (c *crashingImages) crashFromNow(image string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.images == nil {
		c.images = map[string]time.Time{}
	}
	c.images[image] = time.Now().Truncate(time.Second)
}

// fixed makes the containers of image run in the pods created from now on
// (an image pushed again under the same tag, say).
func (c *crashingImages) fixed(image string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.images, image)
}

func (c *crashingImages) crashes(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	from, ok := c.images[pod.Spec.Containers[0].Image]
	return ok && !pod.CreationTimestamp.Time.Before(from)
}

// status is the kubelet stand-in's status for pod.
func (c *crashingImages) status(pod *corev1.Pod) (corev1.PodStatus, bool) {
	if !c.crashes(pod) {
		return readyStatus(pod)
	}
	st := *pod.Status.DeepCopy()
	restarts := int32(0)
	if len(st.ContainerStatuses) == 1 {
		restarts = st.ContainerStatuses[0].RestartCount
	}
	if restarts >= 10 {
		return corev1.PodStatus{}, false
	}
	st.Phase = corev1.PodRunning
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	st.ContainerStatuses = []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image, RestartCount: restarts + 1,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}},
	}}
	return st, true
}

func autoRollbackPodSet(t *testing.T, ns, name string, replicas int32) *appv1alpha1.PodSet {
	return createPodSet(t, ns, name, replicas, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			AutoRollback: &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](3)},
		}
	})
}

// waitForRolledBack waits until the PodSet reports that it rolled back
// from failed to good and that all n pods run good again, available.
func waitForRolledBack(g Gomega, ps *appv1alpha1.PodSet, n int32, failed, good string) *appv1alpha1.PodSet {
	var p *appv1alpha1.PodSet
	g.Eventually(func(g Gomega) {
		p = getPodSet(g, ps)
		st := p.Status
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.AutoRollback.FailedRevision).To(Equal(failed))
		g.Expect(st.AutoRollback.Revision).To(Equal(good))
		g.Expect(st.UpdateRevision).To(Equal(failed), "status.updateRevision is the spec's")
		g.Expect(st.CurrentRevision).To(Equal(good))
		g.Expect(st.UpdatedReplicas).To(BeZero())
		g.Expect(st.AvailableReplicas).To(Equal(n))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonRolledBack))
		g.Expect(conditionMessage(st, appv1alpha1.ConditionProgressing)).To(ContainSubstring("all %d pods are back on revision %s", n, good))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionTrue))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionReconciling)).To(Equal(metav1.ConditionFalse))
		pods := listLivePods(g, ps)
		g.Expect(pods).To(HaveLen(int(n)))
		for _, pod := range pods {
			g.Expect(revision.Name(ps.Name, pod.Labels[appv1alpha1.LabelRevisionHash])).To(Equal(good), "pod %s", pod.Name)
		}
		expectFailedToPipelines(g, ps)
	}, eventually, poll).Should(Succeed())
	return p
}

// expectFailedToPipelines checks what the tools that deploy the PodSet
// see: kstatus (Flux, Helm, kpt) Failed and Argo CD Degraded, since the
// spec still asks for a revision that failed.
func expectFailedToPipelines(g Gomega, ps *appv1alpha1.PodSet) {
	u, err := operandtest.Unstructured(getPodSet(g, ps))
	g.Expect(err).NotTo(HaveOccurred())
	res, err := kstatus.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Status).To(Equal(kstatus.FailedStatus), "kstatus: %s", res.Message)
	health, err := argocd.Evaluate(argocd.HealthLua, u.Object)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(health.Status).To(Equal(argocd.Degraded), "Argo CD: %s", health.Message)
}

func conditionMessage(st appv1alpha1.PodSetStatus, t string) string {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}

// rolledOutOnWeb1 creates a PodSet of replicas web:1 pods with
// auto-rollback on, beside a kubelet stand-in whose web:2 containers
// crash, and waits until web:1 is rolled out: its revision is the last
// completed one.
func rolledOutOnWeb1(ctx context.Context, t *testing.T, g Gomega, ns, name string, replicas int32) (*appv1alpha1.PodSet, *crashingImages, string) {
	t.Helper()
	ps := autoRollbackPodSet(t, ns, name, replicas)
	kubelet := &crashingImages{}
	kubelet.crashFromNow("registry.example.com/web:2")
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, kubelet.status)
	waitForRolledOut(g, ps, replicas)
	good := getPodSet(g, ps).Status.UpdateRevision
	g.Expect(getPodSet(g, ps).Status.LastCompletedRevision).To(Equal(good))
	return ps, kubelet, good
}

// rollToCrashingWeb2 sets the image that crashes (web:2) and returns the
// revision that the PodSet then rolls to, the one to fail.
func rollToCrashingWeb2(g Gomega, ps *appv1alpha1.PodSet, good string) string {
	setImage(g, ps, "registry.example.com/web:2")
	var failed string
	g.Eventually(func(g Gomega) {
		failed = getPodSet(g, ps).Status.UpdateRevision
		g.Expect(failed).NotTo(Equal(good))
	}, eventually, poll).Should(Succeed())
	return failed
}

func TestIntegrationAutoRollbackReturnsToTheLastCompletedRevision(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 4
	ps, _, good := rolledOutOnWeb1(ctx, t, g, ns, "web", replicas)

	rollbacks := func() float64 { return testutil.ToFloat64(metrics.Rollbacks.WithLabelValues("RestartLimit")) }
	rollbacksBefore := rollbacks()
	bounds := watchBounds(ctx, t, ns, ps.Name)
	failed := rollToCrashingWeb2(g, ps, good)
	p := waitForRolledBack(g, ps, replicas, failed, good)
	g.Expect(p.Spec.Image).To(Equal("registry.example.com/web:2"), "the operator never writes the spec")
	g.Expect(p.Status.AutoRollback.Trigger).To(Equal("RestartLimit"))
	g.Expect(p.Status.AutoRollback.Message).To(ContainSubstring("restarted 3 times"))
	g.Expect(p.Status.LastCompletedRevision).To(Equal(good))
	maxLive, minReady := bounds()
	t.Logf("most live pods %d (bound %d), fewest ready %d (bound %d)", maxLive, replicas+1, minReady, replicas-1)
	g.Expect(maxLive).To(BeNumerically("<=", replicas+1), "more than replicas + maxSurge live pods")
	g.Expect(minReady).To(BeNumerically(">=", replicas-1), "fewer than replicas - maxUnavailable ready pods")
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, ps.Name) }, eventually, poll).Should(ContainElement(appv1alpha1.ReasonRolledBack))
	g.Expect(rollbacks()-rollbacksBefore).To(Equal(1.0), "one rollback counted")

	// A re-apply of the failed template (a GitOps resync that changes
	// nothing else) keeps the pods where they are.
	patchSpec(g, ps, `{"metadata":{"annotations":{"resynced":"1"}},"spec":{"image":"registry.example.com/web:2"}}`)
	g.Consistently(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.UpdatedReplicas).To(BeZero())
	}, "2s", poll).Should(Succeed())
	g.Expect(rollbacks()-rollbacksBefore).To(Equal(1.0), "still one rollback")

	// A new template starts a new rollout, which completes.
	setImage(g, ps, "registry.example.com/web:3")
	waitForRolledOut(g, ps, replicas)
	st := getPodSet(g, ps).Status
	g.Expect(st.AutoRollback).To(BeNil())
	g.Expect(st.LastCompletedRevision).To(Equal(st.UpdateRevision))
	g.Expect(st.LastCompletedRevision).NotTo(Or(Equal(good), Equal(failed)))
	g.Expect(revisionNames(g, ps)).To(ContainElements(good, failed))
}

// completedRollback waits until the PodSet's status records its rollback
// as complete, which a retry waits for, and returns it.
func completedRollback(g Gomega, ps *appv1alpha1.PodSet) *appv1alpha1.AutoRollbackStatus {
	var rb *appv1alpha1.AutoRollbackStatus
	g.Eventually(func(g Gomega) {
		rb = getPodSet(g, ps).Status.AutoRollback
		g.Expect(rb).NotTo(BeNil())
		g.Expect(rb.Complete).To(BeTrue())
	}, eventually, poll).Should(Succeed())
	return rb
}

// A retry (`kubectl podset rollout retry`) rolls to the failed revision
// again, once; failing again, it is rolled back again and stays so, the
// request having been answered; retried once what it needs is there, the
// rollout completes.
func TestIntegrationAutoRollbackRetry(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps, kubelet, good := rolledOutOnWeb1(ctx, t, g, ns, "web", replicas)
	rollbacks := func() float64 { return testutil.ToFloat64(metrics.Rollbacks.WithLabelValues("RestartLimit")) }
	rollbacksBefore := rollbacks()
	failed := rollToCrashingWeb2(g, ps, good)
	waitForRolledBack(g, ps, replicas, failed, good)
	first := completedRollback(g, ps)

	// web:2 still crashes: the retry rolls to it, and back once more.
	retry := func(rb *appv1alpha1.AutoRollbackStatus) {
		patchSpec(g, ps, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, appv1alpha1.AnnotationRolloutRetry, appv1alpha1.RolloutRetryValue(rb)))
	}
	retry(first)
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, ps.Name) }, eventually, poll).Should(ContainElement(appv1alpha1.ReasonRolloutRetried))
	waitForRolledBack(g, ps, replicas, failed, good)
	second := completedRollback(g, ps)
	g.Expect(second.Time.Time).To(BeTemporally(">", first.Time.Time), "a new rollback")
	g.Expect(rollbacks() - rollbacksBefore).To(Equal(2.0))
	// The request named the first rollback: it does not undo the second.
	g.Consistently(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.AutoRollback.Time).To(Equal(second.Time))
		g.Expect(st.UpdatedReplicas).To(BeZero())
	}, "3s", poll).Should(Succeed())
	g.Expect(rollbacks() - rollbacksBefore).To(Equal(2.0))

	// What web:2 needed is there now: retried, it completes, and becomes
	// the last completed revision; the spec was never written.
	kubelet.fixed("registry.example.com/web:2")
	retry(second)
	waitForRolledOut(g, ps, replicas)
	p := getPodSet(g, ps)
	g.Expect(p.Status.AutoRollback).To(BeNil())
	g.Expect(p.Status.UpdateRevision).To(Equal(failed))
	g.Expect(p.Status.LastCompletedRevision).To(Equal(failed))
	g.Expect(p.Spec.Image).To(Equal("registry.example.com/web:2"))
	g.Expect(rollbacks() - rollbacksBefore).To(Equal(2.0))
}

func TestIntegrationAutoRollbackWithoutACompletedRevisionOnlyReports(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	var kubelet crashingImages
	kubelet.crashFromNow("registry.example.com/web:1")
	ps := autoRollbackPodSet(t, ns, "new", 2)
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, kubelet.status)
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonRolloutFailed))
		g.Expect(conditionMessage(st, appv1alpha1.ConditionProgressing)).To(ContainSubstring("none to roll back to"))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionTrue))
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.AutoRollback.FailedRevision).To(Equal(st.UpdateRevision))
		g.Expect(st.AutoRollback.Revision).To(BeEmpty(), "nothing to return to")
		g.Expect(st.LastCompletedRevision).To(BeEmpty())
		expectFailedToPipelines(g, ps)
	}, eventually, poll).Should(Succeed())
	g.Expect(listLivePods(g, ps)).To(HaveLen(2))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, ps.Name) }, eventually, poll).Should(ContainElement(appv1alpha1.ReasonRolloutFailed))
	// It stays so (the pods crash on), and says it once.
	g.Consistently(func(g Gomega) string { return progressingReason(getPodSet(g, ps).Status) }, "2s", poll).Should(Equal(appv1alpha1.ReasonRolloutFailed))
	failures := 0
	for _, r := range eventReasons(g, ns, ps.Name) {
		if r == appv1alpha1.ReasonRolloutFailed {
			failures++
		}
	}
	g.Expect(failures).To(Equal(1))
}

func TestIntegrationAutoRollbackStopsWhenTheLastGoodRevisionFailsToo(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps, kubelet, good := rolledOutOnWeb1(ctx, t, g, ns, "broken", replicas)

	// What web:1 needs is gone now (a deleted Secret, say): its pods that
	// run already keep running, its new ones crash.
	time.Sleep(time.Second)
	kubelet.crashFromNow("registry.example.com/web:1")
	setImage(g, ps, "registry.example.com/web:2")
	var st appv1alpha1.PodSetStatus
	g.Eventually(func(g Gomega) {
		st = getPodSet(g, ps).Status
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.AutoRollback.Stopped).To(BeTrue())
		g.Expect(st.AutoRollback.Revision).To(Equal(good))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonRollbackStopped))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionTrue))
		expectFailedToPipelines(g, ps)
	}, eventually, poll).Should(Succeed())
	g.Expect(st.AutoRollback.Message).To(ContainSubstring("then revision " + good + " failed too"))

	// Stopped: no pod is replaced any more, whatever its revision.
	names := func(g Gomega) []string {
		var out []string
		for _, pod := range listLivePods(g, ps) {
			out = append(out, pod.Name)
		}
		return out
	}
	before := names(g)
	g.Expect(before).To(HaveLen(replicas))
	g.Consistently(names, "3s", poll).Should(ConsistOf(before))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, ps.Name) }, eventually, poll).Should(ContainElement(appv1alpha1.ReasonRollbackStopped))
	var crashing int
	for _, pod := range listLivePods(g, ps) {
		if !operand.IsReady(slimpod.From(&pod)) {
			crashing++
		}
	}
	t.Logf("stopped with %d of %d pods not ready: %s", crashing, replicas, strings.Join(before, ", "))
}

// A partition at half: only the pods the rollout updated go back; those
// the partition kept on the last good revision stay, the same pods.
func TestIntegrationAutoRollbackUnderAPartitionReturnsOnlyTheUpdatedPods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 4
	ps, _, good := rolledOutOnWeb1(ctx, t, g, ns, "half", replicas)
	before := map[string]bool{}
	for _, pod := range listLivePods(g, ps) {
		before[string(pod.UID)] = true
	}

	patchSpec(g, ps, `{"spec":{"image":"registry.example.com/web:2","updateStrategy":{"rollingUpdate":{"partition":2}}}}`)
	failed := ""
	g.Eventually(func(g Gomega) {
		failed = getPodSet(g, ps).Status.UpdateRevision
		g.Expect(failed).NotTo(Equal(good))
	}, eventually, poll).Should(Succeed())
	waitForRolledBack(g, ps, replicas, failed, good)
	kept := 0
	for _, pod := range listLivePods(g, ps) {
		if before[string(pod.UID)] {
			kept++
		}
	}
	// The rollout updates at most two pods (it may fail after the
	// first), each replacing a good one; the rollback replaces only those.
	g.Expect(kept).To(BeNumerically(">=", 2), "the partition's two pods are kept")
	g.Expect(kept).To(BeNumerically("<", replicas), "no pod was updated")
}

// Paused, the clock stops: a paused PodSet with a pod of the new template
// that never turns Ready (made by a scale-up, as a paused rollout makes
// new pods from the new template) is not failed by the progress deadline;
// resumed, the rollout is.
func TestIntegrationAutoRollbackWaitsWhilePaused(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "paused", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			AutoRollback: &appv1alpha1.AutoRollback{},
		}
	})
	// web:2 pods run but never turn Ready: only the deadline can fail them.
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, func(pod *corev1.Pod) (corev1.PodStatus, bool) {
		if pod.Spec.Containers[0].Image != "registry.example.com/web:2" {
			return readyStatus(pod)
		}
		if pod.Status.Phase == corev1.PodRunning {
			return corev1.PodStatus{}, false
		}
		st := *pod.Status.DeepCopy()
		st.Phase = corev1.PodRunning
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image}}
		return st, true
	})
	waitForRolledOut(g, ps, 2)
	good := getPodSet(g, ps).Status.UpdateRevision

	patchSpec(g, ps, `{"spec":{"image":"registry.example.com/web:2","replicas":3,"updateStrategy":{"rollingUpdate":{"paused":true}}}}`)
	g.Eventually(func(g Gomega) []string {
		var images []string
		for _, pod := range listLivePods(g, ps) {
			images = append(images, pod.Spec.Containers[0].Image)
		}
		return images
	}, eventually, poll).Should(ConsistOf("registry.example.com/web:1", "registry.example.com/web:1", "registry.example.com/web:2"))
	paused := func(g Gomega) {
		p := getPodSet(g, ps)
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(p.Status.AutoRollback).To(BeNil())
		g.Expect(progressingReason(p.Status)).To(Equal(appv1alpha1.ReasonPaused))
	}
	g.Eventually(paused, eventually, poll).Should(Succeed())
	g.Consistently(paused, "5s", poll).Should(Succeed(), "paused past the deadline")

	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`)
	p := waitForRolledBack(g, ps, 3, getPodSet(g, ps).Status.UpdateRevision, good)
	g.Expect(p.Status.AutoRollback.Trigger).To(Equal("ProgressDeadlineExceeded"))
}

// crashingInitContainers is a kubelet stand-in for templates: a pod whose
// init container or sidecar runs one of the crashing images never gets
// past its init phase (the kubelet restarts that container, in
// CrashLoopBackOff, more often at each look); every other pod runs, Ready.
type crashingInitContainers struct{ images map[string]bool }

func (c crashingInitContainers) status(pod *corev1.Pod) (corev1.PodStatus, bool) {
	crashing := -1
	for i, ic := range pod.Spec.InitContainers {
		if c.images[ic.Image] {
			crashing = i
			break
		}
	}
	if crashing < 0 {
		return readyStatus(pod)
	}
	st := *pod.Status.DeepCopy()
	restarts := int32(0)
	if len(st.InitContainerStatuses) > crashing {
		restarts = st.InitContainerStatuses[crashing].RestartCount
	}
	if restarts >= 10 {
		return corev1.PodStatus{}, false
	}
	st.Phase = corev1.PodPending
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	st.InitContainerStatuses = nil
	for i, ic := range pod.Spec.InitContainers[:crashing+1] {
		s := corev1.ContainerStatus{Name: ic.Name, Image: ic.Image}
		switch {
		case i == crashing:
			s.RestartCount = restarts + 1
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}
		case ic.RestartPolicy != nil:
			s.Started, s.State.Running = ptr.To(true), &corev1.ContainerStateRunning{}
		default:
			s.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed"}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, s)
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
	}
	return st, true
}

// Auto-rollback judges every container of a template: a sidecar that
// crash-loops in the new revision, and then an init container that does,
// each return the pods to the last completed revision, and the status
// names the container.
func TestIntegrationAutoRollbackOfATemplatesSidecarAndInitContainer(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps := createPodSet(t, ns, "shop", replicas, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Template = chartTemplate()
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			AutoRollback: &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](3)},
		}
	})
	kubelet := crashingInitContainers{images: map[string]bool{
		"registry.example.com/proxy:3-crashing":  true,
		"registry.example.com/shop:1.5-crashing": true,
	}}
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, kubelet.status)
	waitForRolledOut(g, ps, replicas)
	good := getPodSet(g, ps).Status.UpdateRevision
	g.Expect(getPodSet(g, ps).Status.LastCompletedRevision).To(Equal(good))

	earlier := []string{good}
	for _, step := range []struct {
		container, image string
		index            int
	}{
		{"proxy", "registry.example.com/proxy:3-crashing", 1},
		{"migrate", "registry.example.com/shop:1.5-crashing", 0},
	} {
		p := getPodSet(g, ps)
		p.Spec.Template = chartTemplate()
		p.Spec.Template.Spec.InitContainers[step.index].Image = step.image
		g.Expect(k8sClient.Update(ctx, p)).To(Succeed())
		var failed string
		g.Eventually(func(g Gomega) {
			failed = getPodSet(g, ps).Status.UpdateRevision
			g.Expect(earlier).NotTo(ContainElement(failed))
		}, eventually, poll).Should(Succeed())
		earlier = append(earlier, failed)
		rolledBack := waitForRolledBack(g, ps, replicas, failed, good)
		g.Expect(rolledBack.Status.AutoRollback.Trigger).To(Equal("RestartLimit"), step.container)
		g.Expect(rolledBack.Status.AutoRollback.Message).To(MatchRegexp(`container %s of pod \S+ restarted \d+ times`, step.container))
	}
}
