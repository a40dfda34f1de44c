package controllers

// Integration tests of pod template updates: rolling updates within their
// bounds, partition, pause, OnDelete, rollback, history pruning, the progress
// deadline, and pods made before revisions existed.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

func TestIntegrationRollingUpdateStaysWithinBounds(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas, surge, unavailable = 8, 2, 1
	ps := createPodSet(t, ns, "roll", replicas, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(surge)), MaxUnavailable: ptr.To(intstr.FromInt32(unavailable)),
		}
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)
	first := getPodSet(g, ps).Status.UpdateRevision

	bounds := watchBounds(ctx, t, ns, ps.Name)
	setImage(g, ps, "registry.example.com/web:2")
	waitForRolledOut(g, ps, replicas)

	st := getPodSet(g, ps).Status
	g.Expect(st.UpdateRevision).NotTo(Equal(first))
	g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
	for _, pod := range listLivePods(g, ps) {
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example.com/web:2"))
		g.Expect(revision.Name(ps.Name, pod.Labels[appv1alpha1.LabelRevisionHash])).To(Equal(st.UpdateRevision))
	}
	maxLive, minReady := bounds()
	t.Logf("most live pods %d (bound %d), fewest ready %d (bound %d)", maxLive, replicas+surge, minReady, replicas-unavailable)
	g.Expect(maxLive).To(BeNumerically("<=", replicas+surge), "more than replicas + maxSurge live pods")
	g.Expect(maxLive).To(BeNumerically(">", replicas), "the rollout never surged")
	g.Expect(minReady).To(BeNumerically(">=", replicas-unavailable), "fewer than replicas - maxUnavailable ready pods")
	g.Expect(revisionNames(g, ps)).To(ConsistOf(first, st.UpdateRevision))

	// Scaling during a rollout: the HPA moves replicas while pods are
	// being replaced, and the rollout ends at the new count.
	setImage(g, ps, "registry.example.com/web:3")
	setReplicas(g, ps, 12)
	waitForRolledOut(g, ps, 12)
	for _, pod := range listLivePods(g, ps) {
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example.com/web:3"))
	}
}

func TestIntegrationPartitionAndPause(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "canary", 4, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Partition: ptr.To(int32(3))}
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 4)
	old := getPodSet(g, ps).Status.UpdateRevision

	// A canary: one pod on the new image, three stay.
	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(1))
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(1))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(4))
		g.Expect(st.CurrentRevision).To(Equal(old))
		g.Expect(st.UpdateRevision).NotTo(Equal(old))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonNewRevisionAvailable))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeEquivalentTo(1))
	}, 2*time.Second, poll).Should(Succeed())

	// Scaling up with a partition adds pods of the old revision too.
	setReplicas(g, ps, 6)
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(6))
		g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(3))
	}, eventually, poll).Should(Succeed())

	// Paused, the partition's release changes nothing.
	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true,"partition":0}}}}`)
	g.Eventually(func(g Gomega) {
		g.Expect(progressingReason(getPodSet(g, ps).Status)).To(Equal(appv1alpha1.ReasonPaused))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.UpdatedReplicas).To(BeEquivalentTo(3))
		g.Expect(listLivePods(g, ps)).To(HaveLen(6))
	}, 2*time.Second, poll).Should(Succeed())

	// Resumed, the rollout completes.
	patchSpec(g, ps, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`)
	waitForRolledOut(g, ps, 6)
	st := getPodSet(g, ps).Status
	g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
}

func TestIntegrationOnDeleteReplacesOnlyDeletedPods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "manual", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.Type = appv1alpha1.OnDeleteStrategyType
	})
	startFakeKubelet(ctx, t, ns)
	before := podNames(waitForLivePods(g, ps, 2))
	waitForRolledOut(g, ps, 2)

	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.UpdatedReplicas).To(BeZero())
		g.Expect(st.ObservedGeneration).To(Equal(getPodSet(g, ps).Generation))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(podNames(listLivePods(g, ps))).To(Equal(before))
	}, 2*time.Second, poll).Should(Succeed())

	victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: before[0], Namespace: ns}}
	g.Expect(k8sClient.Delete(ctx, victim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(1))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(2))
	}, eventually, poll).Should(Succeed())
	g.Expect(podNames(listLivePods(g, ps))).To(ContainElement(before[1]), "the other pod is left alone")
}

func TestIntegrationRollbackReusesTheOldRevision(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "undo", 4, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Partition: ptr.To(int32(2))}
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 4)
	v1 := getPodSet(g, ps).Status.UpdateRevision

	// Half the pods move to v2, then the change is undone.
	setImage(g, ps, "registry.example.com/web:2")
	var onV1 []string
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.UpdatedAvailableReplicas).To(BeEquivalentTo(2))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(4))
		onV1 = nil
		for _, pod := range listLivePods(g, ps) {
			if revision.Name(ps.Name, pod.Labels[appv1alpha1.LabelRevisionHash]) == v1 {
				onV1 = append(onV1, pod.Name)
			}
		}
		g.Expect(onV1).To(HaveLen(2))
	}, eventually, poll).Should(Succeed())
	v2 := getPodSet(g, ps).Status.UpdateRevision

	patchSpec(g, ps, `{"spec":{"image":"registry.example.com/web:1","updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	waitForRolledOut(g, ps, 4)
	st := getPodSet(g, ps).Status
	g.Expect(st.UpdateRevision).To(Equal(v1), "a rollback goes back to the old revision's name and hash")
	g.Expect(podNames(listLivePods(g, ps))).To(ContainElements(onV1), "pods still on the old revision are kept")
	g.Expect(revisionNames(g, ps)).To(ConsistOf(v1, v2), "no new revision")
	numbers := revisionNumbers(g, ps)
	g.Expect(numbers[v1]).To(BeEquivalentTo(3), "the reused revision is the newest again")
	g.Expect(numbers[v2]).To(BeEquivalentTo(2))
}

func TestIntegrationRevisionHistoryIsPruned(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "history", 0, func(ps *appv1alpha1.PodSet) {
		ps.Spec.RevisionHistoryLimit = ptr.To(int32(2))
	})
	var seen []string
	for i := range 5 {
		setImage(g, ps, fmt.Sprintf("registry.example.com/web:%d", i))
		g.Eventually(func(g Gomega) {
			p := getPodSet(g, ps)
			g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
			g.Expect(p.Status.UpdateRevision).NotTo(BeEmpty())
			if len(seen) > 0 {
				g.Expect(p.Status.UpdateRevision).NotTo(Equal(seen[len(seen)-1]))
			}
		}, eventually, poll).Should(Succeed())
		seen = append(seen, getPodSet(g, ps).Status.UpdateRevision)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(revisionNames(g, ps)).To(ConsistOf(seen[2:]), "the update revision and the 2 newest old ones")
	}, eventually, poll).Should(Succeed())
	for _, name := range seen[2:] {
		cr := &appsv1.ControllerRevision{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cr)).To(Succeed())
		ref := metav1.GetControllerOf(cr)
		g.Expect(ref).NotTo(BeNil())
		g.Expect(ref.UID).To(Equal(ps.UID))
	}
}

func TestIntegrationProgressDeadlineExceeded(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	quota := setPodQuota(g, ns, 3)
	ps := createPodSet(t, ns, "stuck", 3, func(ps *appv1alpha1.PodSet) {
		ps.Spec.ProgressDeadlineSeconds = ptr.To(int32(2))
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		}
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 3)

	// The quota refuses the surge pod: no progress is possible.
	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonProgressDeadlineExceeded))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "availability is untouched")
		g.Expect(eventReasons(g, ns, ps.Name)).To(ContainElement(appv1alpha1.ReasonProgressDeadlineExceeded))
	}, eventually, poll).Should(Succeed())

	// The operator keeps trying: once the quota allows it, it finishes.
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("100")
	g.Expect(k8sClient.Update(ctx, quota)).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Status.Hard = quota.Spec.Hard
	g.Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
	waitForRolledOut(g, ps, 3)
}

// Pods made before revisions existed (operator v0.1.0) carry no revision
// label. Those that match the spec are labelled and kept; the rest are
// replaced by the rollout.
func TestIntegrationPodsWithoutRevisionAreRecognised(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	spec := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns}}
	spec.Spec.Replicas = ptr.To(int32(2))
	spec.Spec.Image = "registry.example.com/web:1"
	var matching []string
	for i, image := range []string{"registry.example.com/web:1", "registry.example.com/web:1", "registry.example.com/web:0"} {
		tmpl := revision.FromPodSet(spec)
		tmpl.Image = image
		pod := operand.NewPod(spec, tmpl, "", testOperandImage, operand.OperatorPicksIDs)
		delete(pod.Labels, appv1alpha1.LabelRevisionHash)
		pod.GenerateName, pod.Name = "", fmt.Sprintf("legacy-v010-%d", i)
		g.Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		markPodReady(g, pod)
		if image == spec.Spec.Image {
			matching = append(matching, pod.Name)
		}
	}

	ps := createPodSet(t, ns, "legacy", 2, func(ps *appv1alpha1.PodSet) { ps.Spec.Image = "registry.example.com/web:1" })
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(2))
		g.Expect(st.Replicas).To(BeEquivalentTo(2))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(2))
	}, eventually, poll).Should(Succeed())
	g.Expect(podNames(listLivePods(g, ps))).To(Equal(matching), "the matching pods are kept, the other one goes")
	g.Expect(createdPodCount(g, ps, ns)).To(BeZero(), "nothing was created")
	for _, pod := range listLivePods(g, ps) {
		g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelRevisionHash, revision.Hash(revision.FromPodSet(ps), nil)))
	}
}

// Every count the status documents as an integer is stored, 0 included.
func TestIntegrationZeroCountsAreStored(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "zeros", 1, func(ps *appv1alpha1.PodSet) { ps.Spec.MinReadySeconds = 3600 })
	startFakeKubelet(ctx, t, ns)
	g.Eventually(func(g Gomega) {
		raw, err := clientset.Discovery().RESTClient().Get().AbsPath("/apis/app.example.com/v1alpha1/namespaces", ns, "podsets", ps.Name).DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var obj struct {
			Status map[string]any `json:"status"`
		}
		g.Expect(json.Unmarshal(raw, &obj)).To(Succeed())
		g.Expect(obj.Status).To(HaveKeyWithValue("readyReplicas", BeEquivalentTo(1)))
		for _, field := range []string{"availableReplicas", "updatedAvailableReplicas", "terminatingReplicas"} {
			g.Expect(obj.Status).To(HaveKeyWithValue(field, BeEquivalentTo(0)), field)
		}
	}, eventually, poll).Should(Succeed())
}

// --- helpers ---

// startFakeKubelet plays the kubelet for every pod of the namespace until ctx
// ends: each live pod becomes Running and Ready shortly after it appears.
func startFakeKubelet(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, readyStatus)
}

// readyStatus is the status a kubelet gives a pod whose container started
// and turned ready: Running and Ready from now. It says no change for a
// pod that is ready already.
func readyStatus(pod *corev1.Pod) (corev1.PodStatus, bool) {
	if operand.IsReady(slimpod.From(pod)) {
		return corev1.PodStatus{}, false
	}
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodRunning
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	return st, true
}

// runKubeletStandIn writes, every interval until ctx ends, the status that
// status gives each live pod of ns, when it says the status changed.
func runKubeletStandIn(ctx context.Context, ns string, interval time.Duration, status func(*corev1.Pod) (corev1.PodStatus, bool)) {
	go func() {
		for ctx.Err() == nil {
			var list corev1.PodList
			if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err == nil {
				for i := range list.Items {
					if pod := &list.Items[i]; operand.IsLive(slimpod.From(pod)) {
						if next, changed := status(pod); changed {
							pod.Status = next
							_ = k8sClient.Status().Update(ctx, pod)
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
}

// watchBounds follows the PodSet's pods through a watch on the API server
// and returns a function that reports the most live pods and the fewest ready
// live pods seen at any moment since the call.
func watchBounds(ctx context.Context, t *testing.T, ns, name string) func() (maxLive, minReady int) {
	t.Helper()
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: appv1alpha1.LabelPodSet + "=" + name})
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	var mu sync.Mutex
	pods := map[types.UID]*corev1.Pod{}
	maxLive, minReady := 0, -1
	initialised := false
	observe := func() {
		live, ready := 0, 0
		for _, p := range pods {
			if operand.IsLive(slimpod.From(p)) {
				live++
				if operand.IsReady(slimpod.From(p)) {
					ready++
				}
			}
		}
		maxLive = max(maxLive, live)
		if minReady < 0 || ready < minReady {
			minReady = ready
		}
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Deleted {
				delete(pods, pod.UID)
			} else {
				pods[pod.UID] = pod
			}
			// The watch starts with an ADDED event per existing pod;
			// the counts mean something once the last one is in.
			if initialised || ev.Type != watch.Added {
				initialised = true
				observe()
			}
			mu.Unlock()
		}
	}()
	return func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		observe()
		return maxLive, minReady
	}
}

// waitForRolledOut waits until the PodSet reports n pods, all on the update
// revision, available, and the rollout complete.
func waitForRolledOut(g Gomega, ps *appv1alpha1.PodSet, n int32) {
	g.Eventually(func(g Gomega) {
		p := getPodSet(g, ps)
		st := p.Status
		g.Expect(st.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(st.Replicas).To(Equal(n))
		g.Expect(st.UpdatedReplicas).To(Equal(n))
		g.Expect(st.UpdatedAvailableReplicas).To(Equal(n))
		g.Expect(st.AvailableReplicas).To(Equal(n))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonNewRevisionAvailable))
		g.Expect(listLivePods(g, ps)).To(HaveLen(int(n)))
	}, eventually, poll).Should(Succeed())
}

func progressingReason(st appv1alpha1.PodSetStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing); c != nil {
		return c.Reason
	}
	return ""
}

func setImage(g Gomega, ps *appv1alpha1.PodSet, image string) {
	patchSpec(g, ps, fmt.Sprintf(`{"spec":{"image":%q}}`, image))
}

func patchSpec(g Gomega, ps *appv1alpha1.PodSet, patch string) {
	g.Expect(k8sClient.Patch(context.Background(), ps.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

func revisionNames(g Gomega, ps *appv1alpha1.PodSet) []string {
	var names []string
	for name := range revisionNumbers(g, ps) {
		names = append(names, name)
	}
	return names
}

func revisionNumbers(g Gomega, ps *appv1alpha1.PodSet) map[string]int64 {
	var list appsv1.ControllerRevisionList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ps.Namespace))).To(Succeed())
	out := map[string]int64{}
	for _, cr := range list.Items {
		if ref := metav1.GetControllerOf(&cr); ref != nil && ref.UID == ps.UID {
			out[cr.Name] = cr.Revision
		}
	}
	return out
}
