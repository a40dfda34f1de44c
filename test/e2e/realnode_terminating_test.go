//go:build e2e && realnode

package e2e

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// testRealTerminatingPods: pods whose process ignores SIGTERM (sleep as a
// container's first process has no handler, and the kernel does not give
// PID 1 a signal's default action) run out their whole grace period when a
// Recreate rollout deletes them. All that time status.terminatingReplicas
// counts them, as the API server shows them (deletionTimestamp set, not
// stopped), status.replicas does not, and no pod of the new revision is
// created; once the kubelet has killed them and they are gone, the count is
// 0 again and the new revision's pods start. Watched from outside, pods of
// two revisions never run at once.
func testRealTerminatingPods(t *testing.T) {
	const replicas = 2
	ps := newRealPodSet(t, "real-terminating", replicas, func(s *appv1alpha1.PodSetSpec) {
		s.Image = "docker.io/library/busybox:1.37.0"
		s.Command = []string{"sleep", "3600"}
		s.UpdateStrategy.Type = appv1alpha1.RecreateStrategyType
	})
	pods := waitRunning(t, ps, replicas)
	grace := time.Duration(*pods[0].Spec.TerminationGracePeriodSeconds) * time.Second
	Expect(grace).To(Equal(30*time.Second), "the pods' grace period")
	w := watchPods(t, ps.Namespace, ps.Name)

	step("a new command for %s/%s under Recreate: both pods run out their %s grace period before any new one", ps.Namespace, ps.Name, grace)
	w.reset()
	start := time.Now()
	Expect(patchPodSet(t, ps, `{"spec":{"command":["sleep","3601"]}}`)).To(Succeed())

	// terminating counts the PodSet's pods that the API server shows being
	// deleted and not stopped.
	terminating := func(g Gomega) (names []string) {
		var list corev1.PodList
		g.Expect(env.admin.List(t.Context(), &list, client.InNamespace(ps.Namespace))).To(Succeed())
		for _, p := range list.Items {
			if operand.IsTerminating(slimpod.From(&p)) {
				names = append(names, p.Name)
			}
		}
		return names
	}
	Eventually(func(g Gomega) {
		names := terminating(g)
		g.Expect(names).To(HaveLen(replicas))
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status
		g.Expect(got.TerminatingReplicas).To(BeEquivalentTo(replicas))
		g.Expect(got.Replicas).To(BeZero())
		c := meta.FindStatusCondition(got.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonWaitingForOldPods))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	reported := time.Since(start)
	step("status.terminatingReplicas %d %s after the change; status.replicas 0, Progressing WaitingForOldPods", replicas, reported.Round(time.Millisecond))

	// The status says so for as long as the pod really is terminating, and
	// stops saying so once it is gone. Each look compares the two; the
	// status may trail the API server for a moment, not for seconds.
	var lastSeen, cleared time.Duration
	var trailing int
	Eventually(func(g Gomega) {
		names := terminating(g)
		st := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status
		if len(names) > 0 {
			lastSeen = time.Since(start)
		}
		if int(st.TerminatingReplicas) != len(names) {
			// 40 looks are 10 s: more than a status write is ever paced.
			if trailing++; trailing == 40 {
				StopTrying(fmt.Sprintf("status.terminatingReplicas %d for 10 s, while the API server shows %d terminating (%v)",
					st.TerminatingReplicas, len(names), names)).Now()
			}
		} else {
			trailing = 0
		}
		g.Expect(names).To(BeEmpty())
		g.Expect(st.TerminatingReplicas).To(BeZero())
		cleared = time.Since(start)
	}).WithContext(t.Context()).WithTimeout(grace + timeout).WithPolling(poll).Should(Succeed())
	step("old pods terminating until %s after the change (grace period %s); status.terminatingReplicas 0 %s after it",
		lastSeen.Round(100*time.Millisecond), grace, cleared.Round(100*time.Millisecond))
	Expect(lastSeen).To(BeNumerically(">=", grace-2*time.Second),
		fmt.Sprintf("the pods stopped before their grace period ran out (%s): they were not held by it", lastSeen))
	waitRunning(t, ps, replicas)
	_, created := w.stats()
	step("pods created %d; moments with two revisions running, by a watch: %d", created, len(w.revisionsAtOnce()))
	Expect(w.revisionsAtOnce()).To(BeEmpty(), "pods of two revisions ran at once")
	Expect(created).To(Equal(replicas), "one new pod per old pod")
}

// testRealTerminationComplete: under podReplacementPolicy TerminationComplete,
// pods that take 5 s to end once deleted, on the real node. By the API
// server's audit log, live and terminating pods together never exceed
// replicas + maxSurge through a rollout, nor replicas through a scale-down
// followed at once by a scale-up. The two run at once, in two namespaces.
func testRealTerminationComplete(t *testing.T) {
	const replicas, grace = 3, 5
	spec := func(s *appv1alpha1.PodSetSpec) {
		s.PodReplacementPolicy = appv1alpha1.TerminationCompletePodReplacementPolicy
		s.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
		s.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](grace),
			Containers:                    []corev1.Container{{Name: "app", Image: "docker.io/library/busybox:1.37.0", Command: []string{"sleep", "3600"}}},
		}}
	}
	rolling := newRealPodSet(t, "real-complete-roll", replicas, spec)
	scaling := newRealPodSet(t, "real-complete-scale", replicas, spec)
	for _, ps := range []*appv1alpha1.PodSet{rolling, scaling} {
		waitRunning(t, ps, replicas)
	}

	step("a rollout of %s, and a scale-down of %s to 1 and at once back to %d, with pods that take %d s to end", rolling.Namespace, scaling.Namespace, replicas, grace)
	Expect(patchPodSet(t, rolling, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"docker.io/library/busybox:1.37.0","command":["sleep","3601"]}]}}}}`)).To(Succeed())
	Expect(patchPodSet(t, scaling, `{"spec":{"replicas":1}}`)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, t.Context(), scaling.Namespace, scaling.Name).Status.TerminatingReplicas).To(BeEquivalentTo(replicas - 1))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(patchPodSet(t, scaling, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))).To(Succeed())
	for _, ps := range []*appv1alpha1.PodSet{rolling, scaling} {
		Eventually(func(g Gomega) {
			st := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status
			c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonNewRevisionAvailable), c.Message)
			g.Expect(st.TerminatingReplicas).To(BeZero())
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		waitRunning(t, ps, replicas)
	}
	rolled, err := auditMaxRunning(rolling.Namespace)
	Expect(err).NotTo(HaveOccurred())
	scaled, err := auditMaxRunning(scaling.Namespace)
	Expect(err).NotTo(HaveOccurred())
	step("most live and terminating pods at once, by the audit log: %d rolling (bound %d), %d scaling (bound %d)", rolled, replicas+1, scaled, replicas)
	Expect(rolled).To(BeNumerically("<=", replicas+1), "live and terminating pods above replicas + maxSurge")
	Expect(scaled).To(Equal(replicas), "live and terminating pods above replicas")
}
