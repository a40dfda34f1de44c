package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/podwrites"
)

// A pod delete returns the version of its last watch event, which is what
// the expectations compare the pod watch's progress with to tell late
// deletion events from lost ones (consistency.Expectations.DeletionReturned):
// for a pod bound to a node, the update that marks it for graceful
// deletion; for one never bound, its removal, which follows that update.
func TestIntegrationPodDeleteReturnsTheVersionOfItsEvent(t *testing.T) {
	requireEnvtest(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := newTestNamespace(t, nil)
	pc := podwrites.APIPodControl{Client: k8sClient, Pods: suitePodsREST}

	for _, tc := range []struct {
		name, node string
		want       watch.EventType
	}{
		{"bound: marked for graceful deletion", "node-a", watch.Modified},
		{"never bound: removed at once", "", watch.Deleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "victim-", Namespace: ns},
				Spec: corev1.PodSpec{
					NodeName:                      tc.node,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					Containers:                    []corev1.Container{{Name: "web", Image: testOperandImage}},
				},
			}
			g.Expect(k8sClient.Create(ctx, pod)).To(Succeed())
			w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
				FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion,
			})
			g.Expect(err).NotTo(HaveOccurred())
			defer w.Stop()

			victim := pod.DeepCopy()
			g.Expect(pc.DeletePod(ctx, victim)).To(Succeed())
			g.Expect(victim.ResourceVersion).NotTo(BeEmpty())
			g.Expect(victim.ResourceVersion).NotTo(Equal(pod.ResourceVersion))

			// The delete's events come in order, the last at the version
			// it returned: a watch that delivered that version has
			// delivered the deletion.
			var events []string
			for {
				select {
				case ev := <-w.ResultChan():
					seen, ok := ev.Object.(*corev1.Pod)
					g.Expect(ok).To(BeTrue(), "event %v", ev)
					g.Expect(seen.DeletionTimestamp).NotTo(BeNil(), "an event of the pod that does not show its deletion")
					events = append(events, string(ev.Type)+" at "+seen.ResourceVersion)
					if seen.ResourceVersion == victim.ResourceVersion {
						g.Expect(ev.Type).To(Equal(tc.want))
						t.Logf("the delete returned %s; events %v", victim.ResourceVersion, events)
						return
					}
					g.Expect(consistency.NewerVersion(seen.ResourceVersion, victim.ResourceVersion)).To(BeFalse(),
						"an event newer than the delete's answer (%s): %v", victim.ResourceVersion, events)
				case <-ctx.Done():
					t.Fatalf("no event at the version the delete returned (%s): %v", victim.ResourceVersion, events)
				}
			}
		})
	}
}
