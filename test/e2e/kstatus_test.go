//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/internal/argocd"
)

// TestKstatus puts a PodSet and a Deployment into the same situation on the
// local cluster, where the operator writes the one's status and
// kube-controller-manager the other's, and requires kstatus, the library
// Flux, Helm 4, kpt and Config Sync judge objects with, to give both the
// same verdict; and Argo CD's health check of the kind (internal/argocd)
// the health Argo CD gives the Deployment.
func TestKstatus(t *testing.T) {
	RegisterTestingT(t)
	const (
		imageV1 = "docker.io/library/busybox:1.37.0"
		imageV2 = "docker.io/library/busybox:1.36.1"
	)
	tests := []struct {
		name string
		// replicas, quota (pods; 0: none), and the progress deadline.
		replicas int32
		quota    int64
		deadline int32
		// surge1: maxSurge 1, maxUnavailable 0.
		surge1 bool
		// then changes both objects once they first converged (or at
		// once, with quota set, when they cannot).
		then func(t *testing.T, p pair)
		// unschedulable taints every node, so that no pod is scheduled.
		unschedulable bool
		want          kstatus.Status
		argo          string
	}{
		{name: "converged", replicas: 3, want: kstatus.CurrentStatus, argo: argocd.Healthy},
		{name: "no pod ready", replicas: 3, unschedulable: true, want: kstatus.InProgressStatus, argo: argocd.Progressing},
		{name: "a ResourceQuota lets 1 of 3 pods exist", replicas: 3, quota: 1, want: kstatus.InProgressStatus, argo: argocd.Progressing},
		{name: "the same, past progressDeadlineSeconds", replicas: 3, quota: 1, deadline: 10, want: kstatus.FailedStatus, argo: argocd.Degraded},
		{
			name: "a rollout held: maxSurge 1, maxUnavailable 0, no room for the surge pod", replicas: 3, quota: 3, surge1: true,
			then: func(t *testing.T, p pair) { setImages(t, p, imageV2) },
			want: kstatus.InProgressStatus, argo: argocd.Progressing,
		},
		{
			name: "the held rollout, past progressDeadlineSeconds", replicas: 3, quota: 3, surge1: true, deadline: 10,
			then: func(t *testing.T, p pair) { setImages(t, p, imageV2) },
			want: kstatus.FailedStatus, argo: argocd.Degraded,
		},
		{
			name: "paused, then a new template", replicas: 3, surge1: true,
			then: func(t *testing.T, p pair) {
				patchBoth(t, p, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`, `{"spec":{"paused":true}}`)
				setImages(t, p, imageV2)
			},
			want: kstatus.InProgressStatus, argo: argocd.Suspended,
		},
		{
			name: "scaled to 0", replicas: 2,
			then: func(t *testing.T, p pair) { patchBoth(t, p, `{"spec":{"replicas":0}}`, `{"spec":{"replicas":0}}`) },
			want: kstatus.CurrentStatus, argo: argocd.Healthy,
		},
		{
			name: "being deleted", replicas: 1,
			then: func(t *testing.T, p pair) {
				hold := `{"metadata":{"finalizers":["example.com/test-holds-it"]}}`
				patchBoth(t, p, hold, hold)
				release := func(obj client.Object) {
					_ = env.admin.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
				}
				ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: p.podset.Namespace, Name: p.podset.Name}}
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: p.deployment.Namespace, Name: p.deployment.Name}}
				t.Cleanup(func() { release(ps); release(d) })
				Expect(env.admin.Delete(t.Context(), ps)).To(Succeed())
				Expect(env.admin.Delete(t.Context(), d)).To(Succeed())
			},
			want: kstatus.TerminatingStatus, argo: argocd.Progressing,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			RegisterTestingT(t)
			// A namespace each, so that a quota counts one kind's pods.
			p := pair{
				podset:     client.ObjectKey{Namespace: newNamespace(t, fmt.Sprintf("kstatus-%d-podset", i), nil), Name: "web"},
				deployment: client.ObjectKey{Namespace: newNamespace(t, fmt.Sprintf("kstatus-%d-deployment", i), nil), Name: "web"},
			}
			if tt.quota > 0 {
				setQuotaEnforced(t, p.podset.Namespace, tt.quota)
				setQuotaEnforced(t, p.deployment.Namespace, tt.quota)
			}
			if tt.unschedulable {
				taintAllNodes(t)
			}
			ps := &appv1alpha1.PodSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.podset.Namespace, Name: p.podset.Name},
				Spec: appv1alpha1.PodSetSpec{
					Replicas: ptr.To(tt.replicas), Image: imageV1,
					ProgressDeadlineSeconds: nonZero(tt.deadline),
				},
			}
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.deployment.Namespace, Name: p.deployment.Name},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To(tt.replicas),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.deployment.Name}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": p.deployment.Name}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "app", Image: imageV1, Command: []string{"sleep", "3600"},
						}}},
					},
					ProgressDeadlineSeconds: nonZero(tt.deadline),
				},
			}
			if tt.surge1 {
				one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
				ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{MaxSurge: &one, MaxUnavailable: &zero}
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}
			}
			Expect(env.admin.Create(t.Context(), ps)).To(Succeed())
			Expect(env.admin.Create(t.Context(), d)).To(Succeed())
			if tt.then != nil {
				if tt.quota == 0 || int64(tt.replicas) <= tt.quota {
					// Converged first, as a pipeline's earlier apply left it.
					Eventually(func(g Gomega) {
						g.Expect(verdicts(g, p)).To(Equal([3]string{string(kstatus.CurrentStatus), string(kstatus.CurrentStatus), argocd.Healthy}))
					}, time.Minute, 200*time.Millisecond).Should(Succeed())
				}
				tt.then(t, p)
			}
			want := [3]string{string(tt.want), string(tt.want), tt.argo}
			Eventually(func(g Gomega) {
				g.Expect(verdicts(g, p)).To(Equal(want), "PodSet, Deployment, Argo CD")
			}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
			// Held, not passing through: a pipeline polls.
			Consistently(func(g Gomega) {
				g.Expect(verdicts(g, p)).To(Equal(want), "PodSet, Deployment, Argo CD")
			}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
			// The kubectl wait that docs/reference.md gives for the state.
			if cond := map[kstatus.Status]string{
				kstatus.CurrentStatus: "Reconciling=False", kstatus.FailedStatus: "Stalled", kstatus.InProgressStatus: "Reconciling",
			}[tt.want]; cond != "" {
				mustKubectl(t, "wait", "-n", p.podset.Namespace, "podset/"+p.podset.Name, "--for=condition="+cond, "--timeout=10s")
			}
		})
	}
}

// verdicts is kstatus' verdict of the PodSet and of the Deployment, and
// Argo CD's health of the PodSet, read as unstructured objects as the tools
// read them.
func verdicts(g Gomega, p pair) [3]string {
	ctx := context.Background()
	read := func(key client.ObjectKey, gvk schema.GroupVersionKind) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		g.Expect(env.admin.Get(ctx, key, u)).To(Succeed())
		return u
	}
	ps := read(p.podset, appv1alpha1.GroupVersion.WithKind("PodSet"))
	d := read(p.deployment, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	psRes, err := kstatus.Compute(ps)
	g.Expect(err).NotTo(HaveOccurred())
	dRes, err := kstatus.Compute(d)
	g.Expect(err).NotTo(HaveOccurred())
	health, err := argocd.Evaluate(argocd.HealthLua, ps.Object)
	g.Expect(err).NotTo(HaveOccurred())
	return [3]string{string(psRes.Status), string(dRes.Status), health.Status}
}

// pair names a PodSet and the Deployment put in the same situation.
type pair struct{ podset, deployment client.ObjectKey }

func setImages(t *testing.T, p pair, image string) {
	patchBoth(t, p,
		fmt.Sprintf(`{"spec":{"image":%q}}`, image),
		fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image))
}

func patchBoth(t *testing.T, p pair, podsetPatch, deploymentPatch string) {
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: p.podset.Namespace, Name: p.podset.Name}}
	Expect(env.admin.Patch(t.Context(), ps, client.RawPatch(types.MergePatchType, []byte(podsetPatch)))).To(Succeed())
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: p.deployment.Namespace, Name: p.deployment.Name}}
	Expect(env.admin.Patch(t.Context(), d, client.RawPatch(types.StrategicMergePatchType, []byte(deploymentPatch)))).To(Succeed())
}

// setQuotaEnforced limits ns to pods pods, once the API server enforces
// the limit: a ResourceQuota whose status the quota controller has not
// filled yet, or that the API server's quota admission has not seen yet,
// admits every pod. The quota starts at 0 pods, so a pod is refused once it
// is enforced (probed by a dry-run create); raising it then can only refuse
// pods for a moment longer, which the controllers retry.
func setQuotaEnforced(t *testing.T, ns string, pods int64) {
	t.Helper()
	setQuota(t, ns, "pods", 0)
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota-probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "docker.io/library/busybox:1.37.0"}}},
	}
	Eventually(func(g Gomega) {
		err := env.admin.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a pod beyond the quota was not refused: %v", err)
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	setQuota(t, ns, "pods", pods)
	Eventually(func(g Gomega) {
		q := &corev1.ResourceQuota{}
		g.Expect(env.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "pods"}, q)).To(Succeed())
		g.Expect(q.Status.Hard.Pods().Value()).To(Equal(pods))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

// taintAllNodes keeps new pods from being scheduled until the test ends.
func taintAllNodes(t *testing.T) {
	const key = "example.com/kstatus-test"
	var nodes corev1.NodeList
	Expect(env.admin.List(t.Context(), &nodes)).To(Succeed())
	for i := range nodes.Items {
		n := &nodes.Items[i]
		before := n.DeepCopy()
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		Expect(env.admin.Patch(t.Context(), n, client.MergeFrom(before))).To(Succeed())
	}
	t.Cleanup(func() {
		var nodes corev1.NodeList
		Expect(env.admin.List(context.Background(), &nodes)).To(Succeed())
		for i := range nodes.Items {
			n := &nodes.Items[i]
			before := n.DeepCopy()
			var kept []corev1.Taint
			for _, taint := range n.Spec.Taints {
				if taint.Key != key {
					kept = append(kept, taint)
				}
			}
			n.Spec.Taints = kept
			Expect(env.admin.Patch(context.Background(), n, client.MergeFrom(before))).To(Succeed())
		}
	})
}

func nonZero(n int32) *int32 {
	if n == 0 {
		return nil
	}
	return &n
}
