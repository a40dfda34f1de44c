//go:build e2e && realnode

package e2e

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// testRealTerminatingPods: a pod whose process ignores SIGTERM (sleep as a
// container's first process has no handler, and the kernel does not give
// PID 1 a signal's default action) runs out its whole grace period after a
// scale-down. All that time status.terminatingReplicas counts it, as the
// API server shows it (deletionTimestamp set, not stopped), and
// status.replicas does not; once the kubelet has killed it and it is gone,
// the count is 0 again.
func testRealTerminatingPods(t *testing.T) {
	ps := newRealPodSet(t, "real-terminating", 2, func(s *appv1alpha1.PodSetSpec) {
		s.Image = "docker.io/library/busybox:1.37.0"
		s.Command = []string{"sleep", "3600"}
	})
	pods := waitRunning(t, ps, 2)
	grace := time.Duration(*pods[0].Spec.TerminationGracePeriodSeconds) * time.Second
	Expect(grace).To(Equal(30*time.Second), "the pods' grace period")

	step("scaling %s/%s to 1: one pod runs out its %s grace period", ps.Namespace, ps.Name, grace)
	start := time.Now()
	Expect(patchPodSet(t, ps, `{"spec":{"replicas":1}}`)).To(Succeed())

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
	var leaving string
	Eventually(func(g Gomega) {
		names := terminating(g)
		g.Expect(names).To(HaveLen(1))
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status
		g.Expect(got.TerminatingReplicas).To(BeEquivalentTo(1))
		g.Expect(got.Replicas).To(BeEquivalentTo(1))
		g.Expect(got.PodNames).NotTo(ContainElement(names[0]))
		leaving = names[0]
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	reported := time.Since(start)
	step("status.terminatingReplicas 1 (%s) %s after the scale-down; status.replicas 1", leaving, reported.Round(time.Millisecond))

	// The status says so for as long as the pod really is terminating, and
	// stops saying so once it is gone. Each look compares the two; the
	// status may trail the API server for a moment, not for seconds.
	var lastSeen, cleared time.Duration
	var trailing int
	Eventually(func(g Gomega) {
		names := terminating(g)
		st := getPodSet(g, t.Context(), ps.Namespace, ps.Name).Status
		if len(names) == 1 {
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
		g.Expect(st.Replicas).To(BeEquivalentTo(1))
		cleared = time.Since(start)
	}).WithContext(t.Context()).WithTimeout(grace + timeout).WithPolling(poll).Should(Succeed())
	step("pod %s terminating until %s after the scale-down (grace period %s); status.terminatingReplicas 0 %s after it",
		leaving, lastSeen.Round(100*time.Millisecond), grace, cleared.Round(100*time.Millisecond))
	Expect(lastSeen).To(BeNumerically(">=", grace-2*time.Second),
		fmt.Sprintf("the pod stopped before its grace period ran out (%s): it was not held by it", lastSeen))
}
