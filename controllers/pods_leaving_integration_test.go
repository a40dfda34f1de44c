package controllers

// Integration tests of how pods leave: the Recreate update strategy (no pod
// of the new revision while any pod of an older one is live or terminating,
// through a rollout, a scale-up during it, and an auto-rollback), and
// podReplacementPolicy TerminationComplete (live and terminating pods never
// above the bound).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

// holdFinalizer keeps a deleted pod Terminating until the test removes it,
// as a kubelet keeps it through its grace period.
const holdFinalizer = "test.example.com/hold"

func TestIntegrationRecreateStrategyWaitsForTheOldPodsToGo(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "recreate", 3, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.Type = appv1alpha1.RecreateStrategyType
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 3)
	old := listLivePods(g, ps)
	holdTerminating(ctx, g, old)
	running := watchRunning(ctx, t, ns, ps.Name)

	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.TerminatingReplicas).To(BeEquivalentTo(3), "every old pod deleted at once")
		g.Expect(st.Replicas).To(BeZero())
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonWaitingForOldPods))
		g.Expect(conditionMessage(st, appv1alpha1.ConditionProgressing)).To(Equal(fmt.Sprintf(
			"Recreate: 3 pods of older revisions are left (3 of them terminating); the pods of revision %s are created once they are gone", st.UpdateRevision)))
	}, eventually, poll).Should(Succeed())

	// A scale-up while they terminate waits for them too.
	setReplicas(g, ps, 4)
	releaseTerminating(ctx, g, old[:2])
	g.Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.TerminatingReplicas).To(BeEquivalentTo(1))
	}, eventually, poll).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(listLivePods(g, ps)).To(BeEmpty(), "a pod created while an old one terminates")
	}, 2*time.Second, poll).Should(Succeed())

	releaseTerminating(ctx, g, old[2:])
	waitForRolledOut(g, ps, 4)
	for _, pod := range listLivePods(g, ps) {
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example.com/web:2"))
	}
	g.Expect(running.twoRevisions()).To(BeEmpty(), "moments with pods of two revisions")
}

func TestIntegrationRecreateStrategyAutoRollback(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps := createPodSet(t, ns, "recreate", replicas, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy = appv1alpha1.UpdateStrategy{
			Type:     appv1alpha1.RecreateStrategyType,
			Recreate: &appv1alpha1.RecreateUpdate{AutoRollback: &appv1alpha1.AutoRollback{RestartLimit: ptr.To[int32](3)}},
		}
	})
	kubelet := &crashingImages{}
	kubelet.crashFromNow("registry.example.com/web:2")
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, kubelet.status)
	runGracePeriods(ctx, ns, time.Second)
	waitForRolledOut(g, ps, replicas)
	good := getPodSet(g, ps).Status.UpdateRevision
	running := watchRunning(ctx, t, ns, ps.Name)

	failed := rollToCrashingWeb2(g, ps, good)
	p := waitForRolledBack(g, ps, replicas, failed, good)
	g.Expect(p.Status.AutoRollback.Trigger).To(Equal("RestartLimit"))
	g.Expect(running.twoRevisions()).To(BeEmpty(), "moments with pods of two revisions")
}

func TestIntegrationTerminationCompleteKeepsTheBound(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas, surge = 4, 1
	ps := createPodSet(t, ns, "complete", replicas, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.PodReplacementPolicy = appv1alpha1.TerminationCompletePodReplacementPolicy
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(surge)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		}
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)
	running := watchRunning(ctx, t, ns, ps.Name)
	// hold keeps the pods Terminating once deleted, until release.
	hold := func(pods []corev1.Pod) {
		for i := range pods {
			g.Expect(k8sClient.Patch(ctx, &pods[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+holdFinalizer+`"]}}`)))).To(Succeed())
		}
	}
	release := func() {
		var list corev1.PodList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			if pod := &list.Items[i]; pod.DeletionTimestamp != nil {
				g.Expect(k8sClient.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
			}
		}
	}
	waitedFor := func(exist, terminating int) {
		g.Eventually(func(g Gomega) {
			st := getPodSet(g, ps).Status
			g.Expect(st.TerminatingReplicas).To(BeEquivalentTo(terminating))
			g.Expect(conditionMessage(st, appv1alpha1.ConditionProgressing)).To(Equal(fmt.Sprintf(
				"%d of %d pods exist; %d terminating pods are waited for (podReplacementPolicy TerminationComplete)", exist, replicas, terminating)))
		}, eventually, poll).Should(Succeed())
		g.Expect(listLivePods(g, ps)).To(HaveLen(exist), "a replacement made while the pod it replaces terminates")
	}

	// A pod deleted by hand is replaced once it is gone, not before.
	pods := listLivePods(g, ps)
	hold(pods)
	g.Expect(k8sClient.Delete(ctx, &pods[0])).To(Succeed())
	waitedFor(replicas-1, 1)
	release()
	waitForRolledOut(g, ps, replicas)
	g.Expect(running.mostRunning()).To(Equal(replicas), "live and terminating pods above replicas")

	// A scale-down, then a scale-up while the deleted pods terminate: the
	// scale-up waits for them.
	hold(listLivePods(g, ps))
	setReplicas(g, ps, 2)
	g.Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.TerminatingReplicas).To(BeEquivalentTo(2))
	}, eventually, poll).Should(Succeed())
	setReplicas(g, ps, replicas)
	waitedFor(2, 2)
	release()
	waitForRolledOut(g, ps, replicas)
	g.Expect(running.mostRunning()).To(Equal(replicas), "live and terminating pods above replicas outside a rollout")

	// A rollout whose deleted pods terminate for a second: live and
	// terminating pods within replicas + maxSurge.
	runGracePeriods(ctx, ns, time.Second)
	setImage(g, ps, "registry.example.com/web:2")
	waitForRolledOut(g, ps, replicas)
	t.Logf("most live and terminating pods at once: %d (bound %d in a rollout)", running.mostRunning(), replicas+surge)
	g.Expect(running.mostRunning()).To(BeNumerically("<=", replicas+surge), "live and terminating pods above replicas + maxSurge")
}

// Without the admission policy (Kubernetes 1.29, or --admission-policy
// false), recreate set beside another strategy makes no pod, and
// ReplicaFailure names the field.
func TestIntegrationRecreateSettingsWithAnotherStrategy(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "mixed", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.UpdateStrategy.Recreate = &appv1alpha1.RecreateUpdate{}
	})
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(conditionStatus(st, appv1alpha1.ConditionReplicaFailure)).To(Equal(metav1.ConditionTrue))
		g.Expect(conditionMessage(st, appv1alpha1.ConditionReplicaFailure)).To(ContainSubstring(
			"spec.updateStrategy.recreate may only be set when type is Recreate, not RollingUpdate"))
	}, eventually, poll).Should(Succeed())
	g.Expect(listLivePods(g, ps)).To(BeEmpty())
}

// holdTerminating keeps pods Terminating once deleted (holdFinalizer),
// until releaseTerminating.
func holdTerminating(ctx context.Context, g Gomega, pods []corev1.Pod) {
	for i := range pods {
		g.Expect(k8sClient.Patch(ctx, &pods[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+holdFinalizer+`"]}}`)))).To(Succeed())
	}
}

// releaseTerminating lets pods held by holdTerminating go.
func releaseTerminating(ctx context.Context, g Gomega, pods []corev1.Pod) {
	for i := range pods {
		g.Expect(k8sClient.Patch(ctx, &pods[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	}
}

// runGracePeriods makes every pod of ns that is deleted terminate for
// grace before it is gone, as a kubelet ends a container that takes its
// grace period: it holds each live pod with a finalizer, and removes the
// finalizer grace after the pod's deletion, until ctx ends.
func runGracePeriods(ctx context.Context, ns string, grace time.Duration) {
	hold := []byte(`{"metadata":{"finalizers":["` + holdFinalizer + `"]}}`)
	go func() {
		for ctx.Err() == nil {
			var list corev1.PodList
			if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err == nil {
				for i := range list.Items {
					pod := &list.Items[i]
					held := slices.Contains(pod.Finalizers, holdFinalizer)
					switch {
					case pod.DeletionTimestamp == nil && !held:
						_ = k8sClient.Patch(ctx, pod, client.RawPatch(types.MergePatchType, hold))
					case pod.DeletionTimestamp != nil && held && time.Since(pod.DeletionTimestamp.Time) >= grace:
						_ = k8sClient.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// runningWatch follows a PodSet's running pods (live or terminating; a pod
// that stopped, Succeeded or Failed, no longer runs) through a watch on the
// API server.
type runningWatch struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
	// moments are those at which pods of two revisions ran at once; most
	// is the most pods that ran at once.
	moments []string
	most    int
}

// watchRunning starts a runningWatch of PodSet name's pods in ns.
func watchRunning(ctx context.Context, t *testing.T, ns, name string) *runningWatch {
	t.Helper()
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: appv1alpha1.LabelPodSet + "=" + name})
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	rw := &runningWatch{pods: map[types.UID]*corev1.Pod{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				rw.observe(ev.Type, pod, name)
			}
		}
	}()
	return rw
}

func (rw *runningWatch) observe(typ watch.EventType, pod *corev1.Pod, name string) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if typ == watch.Deleted || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		delete(rw.pods, pod.UID)
	} else {
		rw.pods[pod.UID] = pod
	}
	rw.most = max(rw.most, len(rw.pods))
	byRevision := map[string][]string{}
	for _, p := range rw.pods {
		rev := revision.Name(name, p.Labels[appv1alpha1.LabelRevisionHash])
		byRevision[rev] = append(byRevision[rev], p.Name)
	}
	if len(byRevision) > 1 {
		var revs []string
		for rev, names := range byRevision {
			sort.Strings(names)
			revs = append(revs, fmt.Sprintf("%s %v", rev, names))
		}
		slices.Sort(revs)
		rw.moments = append(rw.moments, fmt.Sprintf("%s %s: %v", typ, pod.Name, revs))
	}
}

// twoRevisions is each moment at which pods of two revisions ran at once.
func (rw *runningWatch) twoRevisions() []string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return slices.Clone(rw.moments)
}

// mostRunning is the most pods, live and terminating, that ran at once.
func (rw *runningWatch) mostRunning() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.most
}

// Recreate through the rest of a rollout's life: a rollout whose old pods
// do not end passes its progress deadline (ProgressDeadlineExceeded, and
// the operator keeps waiting), and completes once they end; an undo to the
// first revision (the spec set back to its template, as `kubectl podset
// rollout undo` sets it) is a Recreate rollout too, back on that revision,
// and at no moment do pods of two revisions run.
func TestIntegrationRecreateDeadlineAndUndo(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "recreate", 2, func(ps *appv1alpha1.PodSet) {
		ps.Spec.Image = "registry.example.com/web:1"
		ps.Spec.UpdateStrategy.Type = appv1alpha1.RecreateStrategyType
		ps.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
	})
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)
	first := getPodSet(g, ps).Status.UpdateRevision
	old := listLivePods(g, ps)
	holdTerminating(ctx, g, old)
	running := watchRunning(ctx, t, ns, ps.Name)

	setImage(g, ps, "registry.example.com/web:2")
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.TerminatingReplicas).To(BeEquivalentTo(2))
		g.Expect(conditionStatus(st, appv1alpha1.ConditionProgressing)).To(Equal(metav1.ConditionFalse))
		g.Expect(progressingReason(st)).To(Equal(appv1alpha1.ReasonProgressDeadlineExceeded))
	}, eventually, poll).Should(Succeed())
	g.Expect(listLivePods(g, ps)).To(BeEmpty(), "a pod created while the old ones terminate")
	releaseTerminating(ctx, g, old)
	waitForRolledOut(g, ps, 2)
	second := getPodSet(g, ps).Status.UpdateRevision
	g.Expect(second).NotTo(Equal(first))

	setImage(g, ps, "registry.example.com/web:1")
	waitForRolledOut(g, ps, 2)
	g.Expect(getPodSet(g, ps).Status.UpdateRevision).To(Equal(first), "the undo is back on the first revision")
	g.Expect(revisionNames(g, ps)).To(ConsistOf(first, second), "the history")
	g.Expect(running.twoRevisions()).To(BeEmpty(), "moments with pods of two revisions")
}
