//go:build e2e && chaos

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The reference: kube-controller-manager's own controllers go through each
// fault beside the PodSet, in a namespace of their own, started at the same
// moment: a ReplicaSet scaling 0 → 50 for the scale scenario, a Deployment
// of 50 pods rolled (maxSurge and maxUnavailable 25 %, as the PodSet's
// defaults) for the rollout. How long they take to converge after the same
// fault says what the client-go machinery every controller shares allows
// (after an API server restart, each informer relists on client-go's
// reflector backoff). It is reported, not asserted.

const referenceName = "chaos-ref"

type reference struct {
	ns, scenario string
	// converged receives the time from the fault's end to convergence,
	// or 0 when it did not converge within convergeTimeout.
	converged chan time.Duration
}

func referenceTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": referenceName}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "docker.io/library/busybox:1.37.0", Command: []string{"sleep", "infinity"},
		}}},
	}
}

// startReference creates the reference object at its starting size and
// waits until it has converged there.
func startReference(t *testing.T, scenario, slug string) *reference {
	ref := &reference{ns: newNamespace(t, "chaos-ref-"+scenario+"-"+slug, nil), scenario: scenario, converged: make(chan time.Duration, 1)}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": referenceName}}
	meta := metav1.ObjectMeta{Namespace: ref.ns, Name: referenceName}
	var obj client.Object
	if scenario == "scale" {
		obj = &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: referenceTemplate()}}
	} else {
		obj = &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](chaosReplicas), Selector: selector, Template: referenceTemplate()}}
	}
	if err := env.admin.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating the reference: %v", err)
	}
	deadline := time.Now().Add(convergeTimeout)
	for !ref.isConverged(t.Context(), ref.startSize()) {
		if time.Now().After(deadline) {
			t.Fatalf("the reference did not reach %d pods", ref.startSize())
		}
		time.Sleep(poll)
	}
	return ref
}

func (r *reference) startSize() int32 {
	if r.scenario == "scale" {
		return 0
	}
	return chaosReplicas
}

// change scales the ReplicaSet to 50, or rolls the Deployment.
func (r *reference) change(ctx context.Context) error {
	key := client.ObjectKey{Namespace: r.ns, Name: referenceName}
	if r.scenario == "scale" {
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, chaosReplicas))
		return env.admin.Patch(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, client.RawPatch(types.MergePatchType, patch))
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano)))
	return env.admin.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, client.RawPatch(types.MergePatchType, patch))
}

// livePods lists the reference's live pods.
func (r *reference) livePods(t *testing.T) []corev1.Pod {
	return livePodsLabelled(Default, t.Context(), r.ns, client.MatchingLabels{"app": referenceName})
}

// isConverged is the reference's equivalent of expectConverged: exactly n
// live pods, all Running and Ready (on the new template, for the
// Deployment), and a status that says so for the current generation.
func (r *reference) isConverged(ctx context.Context, n int32) bool {
	pods := &corev1.PodList{}
	if err := env.admin.List(ctx, pods, client.InNamespace(r.ns), client.MatchingLabels{"app": referenceName}); err != nil {
		return false
	}
	live := int32(0)
	for i := range pods.Items {
		if p := &pods.Items[i]; isLive(p) {
			if !isRunningAndReady(p) {
				return false
			}
			live++
		}
	}
	if live != n {
		return false
	}
	key := client.ObjectKey{Namespace: r.ns, Name: referenceName}
	if r.scenario == "scale" {
		rs := &appsv1.ReplicaSet{}
		if env.admin.Get(ctx, key, rs) != nil {
			return false
		}
		st := rs.Status
		return st.ObservedGeneration == rs.Generation && st.Replicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n
	}
	d := &appsv1.Deployment{}
	if env.admin.Get(ctx, key, d) != nil {
		return false
	}
	st := d.Status
	return st.ObservedGeneration == d.Generation && st.Replicas == n && st.UpdatedReplicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n
}

// measure waits, in the background, for the reference to converge once the
// fault is over (faultOver receives its end).
func (r *reference) measure(ctx context.Context, faultOver <-chan time.Time) {
	go func() {
		end, ok := <-faultOver
		if !ok {
			r.converged <- 0
			return
		}
		deadline := end.Add(convergeTimeout)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if r.isConverged(ctx, chaosReplicas) {
				r.converged <- time.Since(end)
				return
			}
			time.Sleep(poll)
		}
		r.converged <- 0
	}()
}

// result waits for the measurement, for as long as the reference may take.
func (r *reference) result(t *testing.T) time.Duration {
	select {
	case d := <-r.converged:
		return d
	case <-time.After(convergeTimeout + time.Minute):
		return 0
	case <-t.Context().Done():
		return 0
	}
}
