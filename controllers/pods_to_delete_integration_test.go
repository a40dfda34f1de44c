package controllers

// Integration tests of spec.scaleStrategy.podsToDelete: a named pod is
// replaced (its replacement first where maxUnavailable is 0), a scale-down
// removes the named pod and no other, names that are not the PodSet's pods
// are reported, and the list clears itself.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

func TestIntegrationPodsToDelete(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps := createPodSet(t, ns, "named", replicas, surgeFirst)
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)
	running := watchRunning(ctx, t, ns, ps.Name)
	uids := func(g Gomega) map[string]types.UID {
		out := map[string]types.UID{}
		for _, pod := range listLivePods(g, ps) {
			out[pod.Name] = pod.UID
		}
		return out
	}
	cleared := func(g Gomega) {
		g.Expect(getPodSet(g, ps).Spec.PodsToDelete()).To(BeEmpty(), "spec.scaleStrategy.podsToDelete")
	}

	// Replaced, its replacement first: maxUnavailable is 0.
	before := uids(g)
	named := slices.Sorted(maps.Keys(before))[0]
	patchSpec(g, ps, fmt.Sprintf(`{"spec":{"scaleStrategy":{"podsToDelete":[%q]}}}`, named))
	g.Eventually(func(g Gomega) {
		cleared(g)
		now := uids(g)
		g.Expect(now).NotTo(HaveKey(named))
		for name, uid := range before {
			if name != named {
				g.Expect(now).To(HaveKeyWithValue(name, uid), "a pod not named was replaced")
			}
		}
	}, eventually, poll).Should(Succeed())
	waitForRolledOut(g, ps, replicas)
	g.Expect(running.mostRunning()).To(Equal(replicas+1), "the replacement is created before the named pod is deleted, within maxSurge")

	// A scale-down removes the named pod, and no other: the deletion
	// ranking would have taken the last name.
	before = uids(g)
	named = slices.Sorted(maps.Keys(before))[0]
	patchSpec(g, ps, fmt.Sprintf(`{"spec":{"replicas":%d,"scaleStrategy":{"podsToDelete":[%q]}}}`, replicas-1, named))
	g.Eventually(func(g Gomega) {
		cleared(g)
		want := maps.Clone(before)
		delete(want, named)
		g.Expect(uids(g)).To(Equal(want))
	}, eventually, poll).Should(Succeed())
	waitForRolledOut(g, ps, replicas-1)

	// A name that is no pod of the PodSet is reported, and removed.
	before = uids(g)
	patchSpec(g, ps, `{"spec":{"scaleStrategy":{"podsToDelete":["no-such-pod"]}}}`)
	g.Eventually(cleared, eventually, poll).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, ps.Name) }, eventually, poll).Should(ContainElement(EventPodToDeleteUnknown))
	g.Expect(uids(g)).To(Equal(before), "no pod deleted for an unknown name")

	// The schema refuses what cannot be a pod's name.
	err := k8sClient.Patch(ctx, getPodSet(g, ps), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"scaleStrategy":{"podsToDelete":["Not_A_Name"]}}}`)))
	g.Expect(err).To(MatchError(ContainSubstring("spec.scaleStrategy.podsToDelete[0]")))
}

// A scale-down that names a pod, with maxUnavailable 0 and another pod
// crash-looping since before: the named pod goes all the same, and no
// other.
func TestIntegrationPodsToDeleteScaleDownBesideABrokenPod(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas = 3
	ps := createPodSet(t, ns, "broken", replicas, surgeFirst)
	var broken sync.Map
	runKubeletStandIn(ctx, ns, 150*time.Millisecond, func(pod *corev1.Pod) (corev1.PodStatus, bool) {
		if _, ok := broken.Load(pod.Name); !ok {
			return readyStatus(pod)
		}
		if !operand.IsReady(slimpod.From(pod)) {
			return corev1.PodStatus{}, false
		}
		st := *pod.Status.DeepCopy()
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		return st, true
	})
	waitForRolledOut(g, ps, replicas)
	names := slices.Sorted(maps.Keys(livePodUIDs(g, ps)))
	named, sick := names[0], names[1]
	broken.Store(sick, true)
	g.Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Status.AvailableReplicas).To(BeEquivalentTo(replicas - 1))
	}, eventually, poll).Should(Succeed())

	patchSpec(g, ps, fmt.Sprintf(`{"spec":{"replicas":%d,"scaleStrategy":{"podsToDelete":[%q]}}}`, replicas-1, named))
	g.Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ps).Spec.PodsToDelete()).To(BeEmpty(), "spec.scaleStrategy.podsToDelete")
		g.Expect(slices.Sorted(maps.Keys(livePodUIDs(g, ps)))).To(Equal(names[1:]), "the live pods")
	}, eventually, poll).Should(Succeed())
}

// livePodUIDs are the PodSet's live pods' UIDs, by name.
func livePodUIDs(g Gomega, ps *appv1alpha1.PodSet) map[string]types.UID {
	out := map[string]types.UID{}
	for _, pod := range listLivePods(g, ps) {
		out[pod.Name] = pod.UID
	}
	return out
}

// surgeFirst rolls with maxSurge 1 and maxUnavailable 0.
func surgeFirst(ps *appv1alpha1.PodSet) {
	ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
		MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}
}
