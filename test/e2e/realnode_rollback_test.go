//go:build e2e && realnode

package e2e

// Auto-rollback on a real node: containers that really fail to pull,
// exit, or crash after turning Ready, and the operator returning the pods
// to the last revision that completed.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// goodPodsWatch follows the PodSet's pods and records the fewest Ready
// pods of one revision (the last good one) seen at any moment. For the
// pods of other revisions it records how long the API showed each Ready,
// from its Ready condition's transition to the first event that showed it
// not Ready: a span of minReadySeconds or more made the pod available to
// the operator, whatever its container did meanwhile.
type goodPodsWatch struct {
	mu       sync.Mutex
	hash     string
	ready    map[string]bool
	minReady int
	// readySince and shownReady are of the pods of other revisions.
	readySince map[string]time.Time
	shownReady map[string]time.Duration
}

func watchGoodPods(t *testing.T, ps *appv1alpha1.PodSet, hash string, pods []corev1.Pod) *goodPodsWatch {
	t.Helper()
	w := &goodPodsWatch{hash: hash, ready: map[string]bool{}, readySince: map[string]time.Time{}, shownReady: map[string]time.Duration{}}
	for i := range pods {
		w.ready[pods[i].Name] = isRunningAndReady(&pods[i])
	}
	w.minReady = w.count()
	iface, err := env.clientset.CoreV1().Pods(ps.Namespace).Watch(t.Context(), metav1.ListOptions{LabelSelector: podSetLabel + "=" + ps.Name})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(iface.Stop)
	go func() {
		for ev := range iface.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if pod.Labels[appv1alpha1.LabelRevisionHash] != hash {
				w.otherRevision(pod, ev.Type == watch.Deleted)
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

// otherRevision records how long the API has shown a pod of another
// revision Ready.
func (w *goodPodsWatch) otherRevision(pod *corev1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !deleted && isRunningAndReady(pod) {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				w.readySince[pod.Name] = c.LastTransitionTime.Time
			}
		}
		return
	}
	if since, ok := w.readySince[pod.Name]; ok {
		w.shownReady[pod.Name] = max(w.shownReady[pod.Name], time.Since(since))
		delete(w.readySince, pod.Name)
	}
}

// shownReadyLongest says which pods of other revisions the API showed
// Ready longest, and for how long, the longest first.
func (w *goodPodsWatch) shownReadyLongest() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := slices.Collect(maps.Keys(w.shownReady))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(w.shownReady[b], w.shownReady[a]) })
	spans := make([]string, len(names))
	for i, name := range names {
		spans[i] = fmt.Sprintf("%s %.1fs", name, w.shownReady[name].Seconds())
	}
	return strings.Join(spans, ", ")
}

// expectFloor expects that no more than maxUnavailable (1) of the
// replicas pods of the last good revision were ever unavailable at once,
// and names on failure how long the API showed the new pods Ready.
func (w *goodPodsWatch) expectFloor(g Gomega, ps *appv1alpha1.PodSet, replicas int) {
	g.Expect(w.fewestReady()).To(BeNumerically(">=", replicas-1),
		"more than maxUnavailable pods of the last good revision were unavailable; the API showed these pods of failed revisions Ready for (minReadySeconds %d): %s",
		ps.Spec.MinReadySeconds, w.shownReadyLongest())
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

// testRealAutoRollbackScenarios runs the auto-rollback scenarios side by
// side: each has its own namespace and PodSet, and most of their time is
// spent waiting for containers to fail and for the grace periods
// (`make test-real-node` runs up to four at once, -parallel 4).
func testRealAutoRollbackScenarios(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ReturnsToTheLastGoodRevision", testRealAutoRollback},
		{"SparesASlowRolloutAndAPausedOne", testRealAutoRollbackSpares},
		{"UnderAPartitionReturnsOnlyTheUpdatedPods", testRealAutoRollbackPartition},
		{"StopsWhenTheLastGoodRevisionIsBrokenToo", testRealAutoRollbackStops},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// crashingPodsMinReadySeconds is the minReadySeconds of the scenarios that
// count the last good revision's Ready pods while new pods crash. A pod
// whose container crashes a few seconds after starting is Ready for those
// seconds; minReadySeconds keeps it from counting as available, so the
// rollout does not take it for progress and delete one more old pod. That
// holds only while the kubelet reports the crash within minReadySeconds of
// the Ready transition: until then the API shows the pod Ready, and the
// operator, as the ReplicaSet controller, counts it available once that
// Ready is minReadySeconds old. On a loaded 2-core node the API showed a
// container that exits at once Ready for up to 5.6 s, and one that crashes
// 2 s after starting for up to 7.0 s; each step logs how long.
const crashingPodsMinReadySeconds = 12

// testRealAutoRollback rolls one PodSet to three bad revisions in a row,
// each failing its own way on the node, and expects each rollout returned
// to the same last good revision, within maxUnavailable, with the status,
// the conditions and an event saying why; then a good revision completes.
func testRealAutoRollback(t *testing.T) {
	g := NewWithT(t)
	const replicas = 3
	ps := newRealPodSet(t, "real-rollback", replicas, func(s *appv1alpha1.PodSetSpec) {
		s.Image = busybox137
		s.Command = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}
		s.MinReadySeconds = crashingPodsMinReadySeconds
		s.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			AutoRollback: &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](2), FailureGracePeriodSeconds: ptr.To[int32](5)},
		}
	})
	pods := waitRunning(t, ps, replicas)
	var good string
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.LastCompletedRevision).NotTo(BeEmpty())
		good = got.Status.LastCompletedRevision
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	goodHash := pods[0].Labels[appv1alpha1.LabelRevisionHash]
	g.Expect(good).To(HaveSuffix("-" + goodHash))
	w := watchGoodPods(t, ps, goodHash, pods)
	scrape := managerMetrics(t, ps.Namespace)
	var lastFailed string

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
		rollbacksBefore := map[string]float64{}
		for _, tr := range bad.trigger {
			rollbacksBefore[tr] = metricValue(g, scrape(g), `podset_operator_rollbacks_total{trigger="`+tr+`"}`)
		}
		g.Expect(patchPodSet(t, ps, bad.patch)).To(Succeed())
		var failed string
		g.Eventually(func(g Gomega) {
			got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.UpdateRevision).NotTo(Equal(good))
			failed = got.Status.UpdateRevision
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		g.Eventually(func(g Gomega) {
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
		rb := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.AutoRollback
		step("rolled back from %s to %s: %s: %s; the API has shown pods of failed revisions Ready for: %s", failed, good, rb.Trigger, rb.Message, w.shownReadyLongest())
		// The metrics say the same: the rollback counted under its
		// trigger, and the series that the alert PodSetRolledBack fires
		// on (podset_status_auto_rollback == 1, no `for`; promtool tests
		// the rule) present with it.
		g.Eventually(func(g Gomega) {
			body := scrape(g)
			g.Expect(metricValue(g, body, `podset_operator_rollbacks_total{trigger="`+rb.Trigger+`"}`)).To(BeNumerically(">=", rollbacksBefore[rb.Trigger]+1))
			g.Expect(metricValue(g, body, fmt.Sprintf(`podset_status_auto_rollback{namespace=%q,podset=%q,stopped="false",trigger=%q}`, ps.Namespace, ps.Name, rb.Trigger))).To(Equal(1.0))
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		g.Eventually(func(g Gomega) string {
			return rollbackEventFor(g, t, ps, failed)
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("revision " + failed + " failed"))
		w.expectFloor(g, ps, replicas)
		lastFailed = failed
	}

	step("`kubectl podset rollout status` exits non-zero and says why")
	out, stderr, err := kubectl(t.Context(), "podset", "rollout", "status", "-n", ps.Namespace, ps.Name, "--timeout=10s")
	g.Expect(err).To(HaveOccurred(), "stdout: %s", out)
	g.Expect(stderr).To(ContainSubstring("(RolledBack; "))
	g.Expect(stderr).To(ContainSubstring("rollout failed"))

	step("`kubectl podset rollout retry` tries the failed revision once more: it crashes again and is rolled back again, once")
	var first *appv1alpha1.AutoRollbackStatus
	g.Eventually(func(g Gomega) {
		first = getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.AutoRollback
		g.Expect(first).NotTo(BeNil())
		g.Expect(first.Complete).To(BeTrue())
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	out, stderr, err = kubectl(t.Context(), "podset", "rollout", "retry", "-n", ps.Namespace, ps.Name)
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
	g.Expect(out).To(ContainSubstring("retrying revision " + lastFailed))
	g.Eventually(func(g Gomega) {
		rb := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.AutoRollback
		g.Expect(rb).NotTo(BeNil())
		g.Expect(rb.Time.Time).To(BeTemporally(">", first.Time.Time), "no new rollback yet; the pods:\n%s", podStates(g, t, ps))
		g.Expect(rb.FailedRevision).To(Equal(lastFailed))
		g.Expect(rb.Revision).To(Equal(good))
		g.Expect(rb.Complete).To(BeTrue())
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	second := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.AutoRollback
	step("retried, rolled back again: %s: %s", second.Trigger, second.Message)
	// The annotation names the first rollback: it asks for nothing more.
	g.Consistently(func(g Gomega) {
		rb := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.AutoRollback
		g.Expect(rb).NotTo(BeNil())
		g.Expect(rb.Time).To(Equal(second.Time))
	}).WithContext(t.Context()).WithTimeout(10 * time.Second).WithPolling(poll).Should(Succeed())
	w.expectFloor(g, ps, replicas)

	step("a good template starts a new rollout, which completes")
	g.Expect(patchPodSet(t, ps, `{"spec":{"command":["sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"],"podAnnotations":{"v":"2"}}}`)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.AutoRollback).To(BeNil())
		g.Expect(got.Status.UpdatedAvailableReplicas).To(BeEquivalentTo(replicas))
		g.Expect(got.Status.LastCompletedRevision).To(Equal(got.Status.UpdateRevision))
		g.Expect(got.Status.LastCompletedRevision).NotTo(Equal(good))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// managerMetrics returns a reader of the manager pod's metrics endpoint,
// with the token of a ServiceAccount in ns bound to the metrics reader
// ClusterRole, as Prometheus reads it.
func managerMetrics(t *testing.T, ns string) func(Gomega) string {
	t.Helper()
	g := NewWithT(t)
	sel, _, err := unstructured.NestedStringMap(env.deployment.Object, "spec", "selector", "matchLabels")
	g.Expect(err).NotTo(HaveOccurred())
	var pods corev1.PodList
	g.Expect(env.admin.List(t.Context(), &pods, client.InNamespace(env.operatorNS), client.MatchingLabels(sel))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	url := "https://" + pods.Items[0].Status.PodIP + ":8443/metrics"
	g.Expect(client.IgnoreAlreadyExists(env.admin.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics", Namespace: ns}}))).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "podset-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "metrics", Namespace: ns}},
	}
	g.Expect(client.IgnoreAlreadyExists(env.admin.Create(t.Context(), binding))).To(Succeed())
	t.Cleanup(func() { _ = env.admin.Delete(context.Background(), binding) })
	token := saToken(t, ns, "metrics")
	return func(g Gomega) string {
		code, body := metricsGet(g, url, token)
		g.Expect(code).To(Equal(http.StatusOK))
		return body
	}
}

// metricValue is the value of the series (name and labels exactly as the
// text format writes them) in a metrics page, 0 when it is absent.
func metricValue(g Gomega, body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			g.Expect(err).NotTo(HaveOccurred(), "series %s", series)
			return f
		}
	}
	return 0
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

// rollbackEventOf is the note of the PodSet's Warning event of that reason,
// "" when there is none yet.
func rollbackEventOf(g Gomega, t *testing.T, ps *appv1alpha1.PodSet, reason string) string {
	events, err := env.clientset.EventsV1().Events(ps.Namespace).List(t.Context(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range events.Items {
		if e.Regarding.Name == ps.Name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
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

// sleepForever is a container command that ends on SIGTERM.
var sleepForever = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}

// newRealRollbackPodSet is a PodSet of replicas busybox pods with
// auto-rollback on (restart limit 2, grace 5 s), maxSurge and
// maxUnavailable 1, and minReadySeconds 5, as the reference advises: a
// container that exits at once is Ready for an instant, and would count as
// available without it; mutate changes the rest. It waits until the first
// revision is rolled out and returns it with its pods.
func newRealRollbackPodSet(t *testing.T, ns string, replicas int32, mutate func(*appv1alpha1.PodSetSpec)) (*appv1alpha1.PodSet, string, []corev1.Pod) {
	t.Helper()
	ps := newRealPodSet(t, ns, replicas, func(s *appv1alpha1.PodSetSpec) {
		s.Image, s.Command, s.MinReadySeconds = busybox137, sleepForever, 5
		s.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			AutoRollback: &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](2), FailureGracePeriodSeconds: ptr.To[int32](5)},
		}
		if mutate != nil {
			mutate(s)
		}
	})
	pods := waitRunning(t, ps, int(replicas))
	var good string
	NewWithT(t).Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.LastCompletedRevision).NotTo(BeEmpty())
		g.Expect(got.Status.LastCompletedRevision).To(Equal(got.Status.UpdateRevision))
		good = got.Status.LastCompletedRevision
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return ps, good, pods
}

// waitForRealRollback waits until the PodSet reports a rollback from the
// spec's revision to good, and everything else that says so too: the
// Progressing (RolledBack) and Stalled conditions, the Warning event, and
// the series the alert PodSetRolledBack fires on. It returns the rollback.
func waitForRealRollback(t *testing.T, ps *appv1alpha1.PodSet, good string) *appv1alpha1.AutoRollbackStatus {
	t.Helper()
	var rb *appv1alpha1.AutoRollbackStatus
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		rb = got.Status.AutoRollback
		g.Expect(rb).NotTo(BeNil(), "no rollback yet; the pods:\n%s", podStates(g, t, ps))
		g.Expect(rb.FailedRevision).To(Equal(got.Status.UpdateRevision))
		g.Expect(rb.Revision).To(Equal(good))
		c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonRolledBack))
		g.Expect(conditionStatus(got, appv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionTrue))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) string {
		return rollbackEventFor(g, t, ps, rb.FailedRevision)
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("revision " + rb.FailedRevision + " failed"))
	scrape := managerMetrics(t, ps.Namespace)
	g.Eventually(func(g Gomega) float64 {
		return metricValue(g, scrape(g), fmt.Sprintf(`podset_status_auto_rollback{namespace=%q,podset=%q,stopped="false",trigger=%q}`, ps.Namespace, ps.Name, rb.Trigger))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(1.0))
	return rb
}

// testRealAutoRollbackSpares: what is not a failure. A rollout whose every
// pod takes a while to count as available, longer in all than the
// progress deadline but each step within it, completes; a paused rollout
// with a pod that cannot pull its image is left alone past the deadline and
// the grace period, and is rolled back once resumed.
func testRealAutoRollbackSpares(t *testing.T) {
	g := NewWithT(t)
	const replicas = 3
	// Each pod is available 8 s after it is Ready, under the 12 s
	// deadline: a rollout of three, one at a time, takes longer than it.
	ps, good, _ := newRealRollbackPodSet(t, "real-rollback-spares", replicas, func(s *appv1alpha1.PodSetSpec) {
		s.MinReadySeconds = 8
		s.ProgressDeadlineSeconds = ptr.To[int32](12)
		s.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	})

	step("a slow but good rollout: each new pod is available 8 s after it is Ready, under the 12 s deadline; three pods take longer than it")
	start := time.Now()
	g.Expect(patchPodSet(t, ps, `{"spec":{"podAnnotations":{"v":"slow"}}}`)).To(Succeed())
	sawRollback := ""
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		if rb := got.Status.AutoRollback; rb != nil && sawRollback == "" {
			sawRollback = rb.Trigger + ": " + rb.Message
		}
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.UpdateRevision).NotTo(Equal(good))
		g.Expect(got.Status.LastCompletedRevision).To(Equal(got.Status.UpdateRevision))
		g.Expect(got.Status.UpdatedAvailableReplicas).To(BeEquivalentTo(replicas))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	took := time.Since(start)
	g.Expect(sawRollback).To(BeEmpty(), "a slow rollout was rolled back")
	g.Expect(took).To(BeNumerically(">", 12*time.Second), "the rollout was not slower than the deadline in all")
	step("rolled out in %s, past the 12 s deadline in all, without a rollback", took.Round(time.Second))
	good = getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status.LastCompletedRevision

	step("paused, a scale-up makes a pod of a template that cannot pull its image: past the deadline and the grace, nothing is rolled back")
	g.Expect(patchPodSet(t, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`)).To(Succeed())
	g.Expect(patchPodSet(t, ps, `{"spec":{"replicas":4,"image":"docker.io/library/busybox:no-such-tag"}}`)).To(Succeed())
	g.Eventually(func(g Gomega) {
		var waiting []string
		for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil && strings.Contains(cs.State.Waiting.Reason, "Image") {
					waiting = append(waiting, p.Name)
				}
			}
		}
		g.Expect(waiting).To(HaveLen(1), "the pods:\n%s", podStates(g, t, ps))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.AutoRollback).To(BeNil())
		c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonPaused))
	}).WithContext(t.Context()).WithTimeout(20 * time.Second).WithPolling(poll).Should(Succeed())

	step("resumed, the rollout fails and is rolled back")
	g.Expect(patchPodSet(t, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`)).To(Succeed())
	rb := waitForRealRollback(t, ps, good)
	g.Expect(rb.Trigger).To(Equal("ImagePullFailure"), rb.Message)
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(4))
		for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
			g.Expect(revisionOf(ps, &p)).To(Equal(good), "pod %s", p.Name)
		}
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// revisionOf is the name of the revision pod runs.
func revisionOf(ps *appv1alpha1.PodSet, pod *corev1.Pod) string {
	return ps.Name + "-" + pod.Labels[appv1alpha1.LabelRevisionHash]
}

// testRealAutoRollbackPartition: under a partition at half, the rollout
// updates at most half the pods, and the rollback replaces only those: the
// pods the partition kept are the same pods after it.
func testRealAutoRollbackPartition(t *testing.T) {
	g := NewWithT(t)
	const replicas = 4
	ps, good, pods := newRealRollbackPodSet(t, "real-rollback-partition", replicas, func(s *appv1alpha1.PodSetSpec) {
		s.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
		s.MinReadySeconds = crashingPodsMinReadySeconds
	})
	w := watchGoodPods(t, ps, pods[0].Labels[appv1alpha1.LabelRevisionHash], pods)
	before := map[string]bool{}
	for _, p := range pods {
		before[p.Name] = true
	}
	step("rolling out a command that exits 1, partition 2 of 4")
	g.Expect(patchPodSet(t, ps, `{"spec":{"command":["sh","-c","exit 1"]}}`)).To(Succeed())
	rb := waitForRealRollback(t, ps, good)
	g.Expect([]string{"RestartLimit", "CrashLoopBackOff"}).To(ContainElement(rb.Trigger), rb.Message)
	var kept int
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(replicas))
		live := livePods(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(live).To(HaveLen(replicas))
		kept = 0
		for _, p := range live {
			g.Expect(revisionOf(ps, &p)).To(Equal(good), "pod %s", p.Name)
			if before[p.Name] {
				kept++
			}
		}
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	step("rolled back: %d of the %d pods are those from before the rollout (%s: %s); the API showed pods of the failed revision Ready for: %s",
		kept, replicas, rb.Trigger, rb.Message, w.shownReadyLongest())
	g.Expect(kept).To(BeNumerically(">=", 2), "the pods the partition kept were replaced")
	w.expectFloor(g, ps, replicas)
}

// testRealAutoRollbackStops: the last good revision is broken by the time
// it is needed again (its container refuses to start after a fixed time,
// as a baked-in certificate expires), so the rollback's own new pods crash:
// the PodSet stops, says so, and replaces no pod from then on.
func testRealAutoRollbackStops(t *testing.T) {
	g := NewWithT(t)
	const replicas = 3
	expiry := time.Now().Add(40 * time.Second).Unix()
	ps, good, _ := newRealRollbackPodSet(t, "real-rollback-stops", replicas, func(s *appv1alpha1.PodSetSpec) {
		s.Command = []string{"sh", "-c", fmt.Sprintf(
			"if [ $(date +%%s) -ge %d ]; then echo certificate expired >&2; exit 1; fi; trap 'exit 0' TERM; sleep 3600 & wait", expiry)}
	})
	step("waiting for the last good revision's certificate to expire")
	time.Sleep(time.Until(time.Unix(expiry+1, 0)))

	step("rolling out an image tag the registry does not have")
	g.Expect(patchPodSet(t, ps, `{"spec":{"image":"docker.io/library/busybox:no-such-tag"}}`)).To(Succeed())
	var stopped *appv1alpha1.AutoRollbackStatus
	g.Eventually(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		stopped = got.Status.AutoRollback
		g.Expect(stopped).NotTo(BeNil(), "no rollback yet; the pods:\n%s", podStates(g, t, ps))
		g.Expect(stopped.Revision).To(Equal(good))
		g.Expect(stopped.Stopped).To(BeTrue(), "not stopped; the pods:\n%s", podStates(g, t, ps))
		c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonRollbackStopped))
		g.Expect(conditionStatus(got, appv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionTrue))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	step("stopped: %s", stopped.Message)
	g.Expect(stopped.Message).To(ContainSubstring("then revision " + good + " failed too"))

	names := func(g Gomega) []string {
		var n []string
		for _, p := range livePods(g, t.Context(), ps.Namespace, ps.Name) {
			n = append(n, p.Name)
		}
		return n
	}
	left := names(g)
	step("no loop: the pods stay as they are (%d of them)", len(left))
	g.Consistently(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.AutoRollback).To(Equal(stopped))
		g.Expect(names(g)).To(ConsistOf(left))
	}).WithContext(t.Context()).WithTimeout(15 * time.Second).WithPolling(poll).Should(Succeed())
	g.Eventually(func(g Gomega) string {
		return rollbackEventOf(g, t, ps, appv1alpha1.ReasonRollbackStopped)
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("failed too"))
	// The series PodSetRolledBack fires on says it stopped.
	scrape := managerMetrics(t, ps.Namespace)
	g.Eventually(func(g Gomega) float64 {
		return metricValue(g, scrape(g), fmt.Sprintf(`podset_status_auto_rollback{namespace=%q,podset=%q,stopped="true",trigger=%q}`, ps.Namespace, ps.Name, stopped.Trigger))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(1.0))
}
