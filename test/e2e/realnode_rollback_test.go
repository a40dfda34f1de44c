//go:build e2e && realnode

package e2e

// Auto-rollback on a real node: containers that really fail to pull,
// exit, or crash after turning Ready, and the operator returning the pods
// to the last revision that completed.

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// goodPodsWatch follows the PodSet's pods and records the fewest Ready
// pods of one revision (the last good one) seen at any moment.
type goodPodsWatch struct {
	mu       sync.Mutex
	hash     string
	ready    map[string]bool
	minReady int
}

func watchGoodPods(t *testing.T, ps *appv1alpha1.PodSet, hash string, pods []corev1.Pod) *goodPodsWatch {
	t.Helper()
	w := &goodPodsWatch{hash: hash, ready: map[string]bool{}}
	for i := range pods {
		w.ready[pods[i].Name] = isRunningAndReady(&pods[i])
	}
	w.minReady = w.count()
	iface, err := env.clientset.CoreV1().Pods(ps.Namespace).Watch(t.Context(), metav1.ListOptions{LabelSelector: podSetLabel + "=" + ps.Name})
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(iface.Stop)
	go func() {
		for ev := range iface.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Labels[appv1alpha1.LabelRevisionHash] != hash {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted || pod.DeletionTimestamp != nil {
				delete(w.ready, pod.Name)
			} else {
				w.ready[pod.Name] = isRunningAndReady(pod)
			}
			w.minReady = min(w.minReady, w.count())
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *goodPodsWatch) count() int {
	n := 0
	for _, r := range w.ready {
		if r {
			n++
		}
	}
	return n
}

func (w *goodPodsWatch) fewestReady() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minReady
}

// testRealAutoRollback rolls one PodSet to three bad revisions in a row,
// each failing its own way on the node, and expects each rollout returned
// to the same last good revision, within maxUnavailable, with the status,
// the conditions and an event saying why; then a good revision completes.
func testRealAutoRollback(t *testing.T) {
	const replicas = 3
	ps := newRealPodSet(t, "real-rollback", replicas, func(s *appv1alpha1.PodSetSpec) {
		s.Image = busybox137
		s.Command = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}
		// A pod whose container crashes a few seconds after starting is
		// Ready for those seconds: minReadySeconds keeps it from counting
		// as available, so the rollout does not take it for progress.
		s.MinReadySeconds = 5
		s.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			AutoRollback: &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](2), FailureGracePeriodSeconds: ptr.To[int32](5)},
		}
	})
	pods := waitRunning(t, ps, replicas)
	var good string
	Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.LastCompletedRevision).NotTo(BeEmpty())
		good = got.Status.LastCompletedRevision
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	goodHash := pods[0].Labels[appv1alpha1.LabelRevisionHash]
	Expect(good).To(HaveSuffix("-" + goodHash))
	w := watchGoodPods(t, ps, goodHash, pods)

	for _, bad := range []struct {
		what, patch string
		trigger     []string
	}{
		{"an image tag the registry does not have", `{"spec":{"image":"docker.io/library/busybox:no-such-tag"}}`,
			[]string{"ImagePullFailure"}},
		{"a command that exits 1", `{"spec":{"image":"` + busybox137 + `","command":["sh","-c","exit 1"]}}`,
			[]string{"RestartLimit", "CrashLoopBackOff"}},
		{"a container that crashes 2 s after turning Ready", `{"spec":{"command":["sh","-c","sleep 2; exit 1"]}}`,
			[]string{"RestartLimit", "CrashLoopBackOff"}},
	} {
		step("rolling out %s", bad.what)
		Expect(patchPodSet(t, ps, bad.patch)).To(Succeed())
		var failed string
		Eventually(func(g Gomega) {
			got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.UpdateRevision).NotTo(Equal(good))
			failed = got.Status.UpdateRevision
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
			rb := got.Status.AutoRollback
			g.Expect(rb).NotTo(BeNil(), "no rollback yet; the pods:\n%s", podStates(g, t, ps))
			g.Expect(rb.FailedRevision).To(Equal(failed))
			g.Expect(rb.Revision).To(Equal(good))
			g.Expect(rb.Stopped).To(BeFalse())
			g.Expect(bad.trigger).To(ContainElement(rb.Trigger), "trigger: %s", rb.Message)
			c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
			g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonRolledBack))
			g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("all %d pods are back on revision %s", replicas, good)))
			g.Expect(conditionStatus(got, appv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(replicas))
			for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
				g.Expect(p.Labels[appv1alpha1.LabelRevisionHash]).To(Equal(goodHash), "pod %s", p.Name)
				g.Expect(isRunningAndReady(&p)).To(BeTrue(), "pod %s: %s", p.Name, podState(&p))
			}
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		rb := getPodSet(Default, t.Context(), ps.Namespace, ps.Name).Status.AutoRollback
		step("rolled back from %s to %s: %s: %s", failed, good, rb.Trigger, rb.Message)
		Eventually(func(g Gomega) string {
			return rollbackEventFor(g, t, ps, failed)
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("revision " + failed + " failed"))
		Expect(w.fewestReady()).To(BeNumerically(">=", replicas-1), "more than maxUnavailable pods of the last good revision were unavailable")
	}

	step("`kubectl podset rollout status` exits non-zero and says why")
	out, stderr, err := kubectl(t.Context(), "podset", "rollout", "status", "-n", ps.Namespace, ps.Name, "--timeout=10s")
	Expect(err).To(HaveOccurred(), "stdout: %s", out)
	Expect(stderr).To(ContainSubstring("(RolledBack): rollout failed"))

	step("a good template starts a new rollout, which completes")
	Expect(patchPodSet(t, ps, `{"spec":{"command":["sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"],"podAnnotations":{"v":"2"}}}`)).To(Succeed())
	Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.AutoRollback).To(BeNil())
		g.Expect(got.Status.UpdatedAvailableReplicas).To(BeEquivalentTo(replicas))
		g.Expect(got.Status.LastCompletedRevision).To(Equal(got.Status.UpdateRevision))
		g.Expect(got.Status.LastCompletedRevision).NotTo(Equal(good))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// rollbackEventFor is the note of the PodSet's RolledBack event that names
// the failed revision, "" when there is none yet.
func rollbackEventFor(g Gomega, t *testing.T, ps *appv1alpha1.PodSet, failed string) string {
	events, err := env.clientset.EventsV1().Events(ps.Namespace).List(t.Context(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range events.Items {
		if e.Regarding.Name == ps.Name && e.Reason == appv1alpha1.ReasonRolledBack && e.Type == corev1.EventTypeWarning &&
			strings.Contains(e.Note, failed) {
			return e.Note
		}
	}
	return ""
}

// podStates describes the PodSet's live pods, for a failure message.
func podStates(g Gomega, t *testing.T, ps *appv1alpha1.PodSet) string {
	var b strings.Builder
	for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
		fmt.Fprintf(&b, "  %s (%s): %s\n", p.Name, p.Labels[appv1alpha1.LabelRevisionHash], podState(&p))
	}
	return b.String()
}
