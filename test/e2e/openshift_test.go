//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
	"github.com/example/podset-operator/test/openshift"
)

// The crashing image's kwok Stage, for the auto-rollback flow (the fault
// matrix adds the same one).
func init() {
	clusterOptions = append(clusterOptions, func(o *localcluster.Options) error {
		return addKwokStage(o, "kwok-stage-crashing-image.yaml")
	})
}

// TestOpenShift: every pod the operator makes is admitted by OpenShift's own
// SCC admission under restricted-v2, the SCC every authenticated user may
// use, with the user ID the namespace's range assigns: the sample (the
// CSV's alm-examples), the short form with the default image and with
// another, a chart-like template, a rollout, an in-place update, an
// auto-rollback and the manager's Deployment. A template that sets its own
// user outside the range is refused in OpenShift's words and retried
// without a hot loop.
func TestOpenShift(t *testing.T) {
	RegisterTestingT(t)
	oc := startOpenShiftAdmission(t)
	flows := []struct {
		name string
		fn   func(*testing.T, *ocp)
	}{
		{"Sample", testOpenShiftSample},
		{"ShortForm", testOpenShiftShortForm},
		{"ChartTemplate", testOpenShiftChartTemplate},
		{"RolloutAndInPlace", testOpenShiftRolloutAndInPlace},
		{"AutoRollback", testOpenShiftAutoRollback},
		{"OwnUserOutsideTheRange", testOpenShiftOwnUser},
		{"ManagerDeployment", testOpenShiftManagerDeployment},
	}
	for _, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			RegisterTestingT(t)
			Expect(env.operator.running()).To(BeTrue(), "the operator process is not running")
			f.fn(t, oc)
		})
	}
}

// ocp is the stand-in of OpenShift's pod admission in front of the suite's
// cluster (test/openshift), for one test.
type ocp struct {
	*openshift.StandIn
}

// startOpenShiftAdmission starts the stand-in for the rest of the test.
func startOpenShiftAdmission(t *testing.T) *ocp {
	bin := envOr("SCC_ADMISSION_BIN", filepath.Join(env.repoRoot, "bin", "openshift", "sccadmission"))
	step("OpenShift's SCC admission (its stand-in, %s) in front of the namespaces labelled %s", bin, openshift.Label)
	s, err := openshift.Start(t.Context(), env.cluster, env.admin, bin, filepath.Join(env.cluster.LogDir(), "sccadmission.log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return &ocp{StandIn: s}
}

// namespace creates a namespace as OpenShift leaves it, for this test, and
// returns its name and the first user ID of its range.
func (o *ocp) namespace(t *testing.T, name string) (string, int64) {
	ns, first, err := o.NewNamespace(t.Context(), name)
	Expect(err).NotTo(HaveOccurred())
	Expect(localcluster.WaitForDefaultServiceAccount(t.Context(), env.clientset, ns)).To(Succeed())
	t.Cleanup(func() {
		_ = env.admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return ns, first
}

func (o *ocp) judgements(g Gomega, ns string) openshift.Judgement {
	j, err := o.Judgements(ns)
	g.Expect(err).NotTo(HaveOccurred())
	return j
}

// expectAllAdmitted waits until the stand-in has admitted at least min pods
// of ns, and checks them (openshift.StandIn.CheckPods).
func (o *ocp) expectAllAdmitted(t *testing.T, ns string, first int64, min int) openshift.Judgement {
	var j openshift.Judgement
	Eventually(func(g Gomega) {
		var err error
		j, err = o.CheckPods(t.Context(), ns, first, min)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	step("the stand-in judged %d pods of %s: %d admitted (%v), %d refused", j.Admitted+j.Refused, ns, j.Admitted, j.SCCs, j.Refused)
	return j
}

// testOpenShiftSample: the sample, which the console offers as "Create
// PodSet" (alm-examples), makes its pods.
func testOpenShiftSample(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-sample")
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	o.expectAllAdmitted(t, ns, first, 3)

	// When TestOpenShift runs alone (go test -run), the sample comes
	// right after the install, while the API server's
	// OwnerReferencesPermissionEnforcement cannot map the PodSet kind yet.
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	Expect(env.admin.Get(t.Context(), client.ObjectKey{Name: "podsets.app.example.com"}, crd)).To(Succeed())
	var firstReady time.Time
	for _, p := range livePods(Default, t.Context(), ns, sample) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && (firstReady.IsZero() || c.LastTransitionTime.Before(&metav1.Time{Time: firstReady})) {
				firstReady = c.LastTransitionTime.Time
			}
		}
	}
	step("install to the sample's first Ready pod: %v (the CRD created at %s)", firstReady.Sub(crd.GetCreationTimestamp().Time), crd.GetCreationTimestamp().Format(time.TimeOnly))
}

// testOpenShiftShortForm: the short form, with the operator's default
// image and with another, makes its pods.
func testOpenShiftShortForm(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-short")
	mustKubectlIn(t, `{"apiVersion": "app.example.com/v1alpha1", "kind": "PodSet", "metadata": {"name": "default-image"}, "spec": {"replicas": 2}}`, "apply", "-n", ns, "-f", "-")
	mustKubectlIn(t, `{"apiVersion": "app.example.com/v1alpha1", "kind": "PodSet", "metadata": {"name": "own-image"}, "spec": {"replicas": 2, "image": "registry.example.com/app:1"}}`, "apply", "-n", ns, "-f", "-")
	expectSettledNamed(t, ns, "default-image", 2)
	expectSettledNamed(t, ns, "own-image", 2)
	o.expectAllAdmitted(t, ns, first, 4)
}

// testOpenShiftChartTemplate: a chart-like template (init container,
// sidecar, probes, projected and emptyDir volumes) makes its pods.
func testOpenShiftChartTemplate(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-chart")
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	ps.Spec.Replicas = ptr.To[int32](3)
	web := chartTemplates()["web"]
	ps.Spec.Template = &web
	Expect(env.admin.Create(t.Context(), ps)).To(Succeed())
	expectSettledNamed(t, ns, "web", 3)
	o.expectAllAdmitted(t, ns, first, 3)
}

// testOpenShiftRolloutAndInPlace: the sample rolls to a new template (new
// pods) and then updates its pods in place (the same pods, patched: an
// update the SCC admission judges without letting it mutate the pod).
func testOpenShiftRolloutAndInPlace(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-rollout")
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)

	step("a rollout: a new environment variable replaces every pod")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=json", "-p",
		`[{"op": "add", "path": "/spec/template/spec/containers/0/env", "value": [{"name": "GREETING", "value": "hello"}]}]`)
	expectRolledOut(t, ns, sample, 3)
	o.expectAllAdmitted(t, ns, first, 6)

	// Another tag of the operand image: the pods keep their user, which
	// the operator picks for that image (another image would run as its
	// own, and needs new pods).
	step("in place: the pods' image changes to another tag, and they stay")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p",
		`{"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"}}}}`)
	// A pod carries the in-place readiness gate from its creation: the
	// policy applies to the pods made after it.
	mustKubectl(t, "delete", "pods", "-n", ns, "-l", podSetLabel+"="+sample, "--wait=false")
	expectSettled(t, ns, 3)
	before := podUIDs(livePods(Default, t.Context(), ns, sample))
	j := o.judgements(Default, ns)
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=json", "-p",
		`[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "docker.io/library/busybox:1.36.1"}]`)
	// Under kwok no kubelet restarts the container, so the first pod
	// updated stays out of service and the update stops there; the real
	// node's suite runs it through. What is judged here is the patch.
	Eventually(func(g Gomega) {
		updated := 0
		for _, p := range livePods(g, t.Context(), ns, sample) {
			if slices.Contains(before, p.UID) && p.Spec.Containers[0].Image == "docker.io/library/busybox:1.36.1" {
				updated++
			}
		}
		g.Expect(updated).To(BeNumerically(">=", 1), "pods updated in place")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	after := o.expectAllAdmitted(t, ns, first, j.Admitted+1)
	step("in place: %d pod updates judged, none refused", after.Admitted-j.Admitted)
}

// testOpenShiftAutoRollback: a template whose container crashes is rolled
// back, and every pod of both revisions is admitted.
func testOpenShiftAutoRollback(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-rollback")
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p",
		`{"spec": {"updateStrategy": {"rollingUpdate": {"autoRollback": {}}}}}`)
	expectSettled(t, ns, 3)
	good := getPodSet(Default, t.Context(), ns, sample).Status.UpdateRevision
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=json", "-p",
		`[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "`+crashingImageForOpenShift+`"}]`)
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, sample)
		g.Expect(ps.Status.AutoRollback).NotTo(BeNil())
		g.Expect(ps.Status.AutoRollback.Revision).To(Equal(good))
		g.Expect(ps.Status.AutoRollback.Complete).To(BeTrue())
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	expectSettled(t, ns, 3)
	o.expectAllAdmitted(t, ns, first, 4)
}

// crashingImageForOpenShift is the image whose containers the kwok Stage in
// testdata/kwok-stage-crashing-image.yaml makes crash.
const crashingImageForOpenShift = "registry.example.com/crashing:1"

// testOpenShiftOwnUser: a template that sets its own user, outside the
// namespace's range, is refused as a Deployment's would be; the PodSet
// says so in ReplicaFailure with OpenShift's words, and its retries back
// off.
func testOpenShiftOwnUser(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-own-user")
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: ns}}
	ps.Spec.Replicas = ptr.To[int32](2)
	worker := chartTemplates()["worker"] // runAsUser 1000
	worker.Spec.PriorityClassName = ""
	ps.Spec.Template = &worker
	Expect(env.admin.Create(t.Context(), ps)).To(Succeed())
	want := "must be in the ranges: [" + strconv.FormatInt(first, 10)
	var since time.Time
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, "worker")
		var failure *metav1.Condition
		for i := range ps.Status.Conditions {
			if ps.Status.Conditions[i].Type == appv1alpha1.ConditionReplicaFailure {
				failure = &ps.Status.Conditions[i]
			}
		}
		g.Expect(failure).NotTo(BeNil())
		g.Expect(failure.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(failure.Message).To(ContainSubstring("unable to validate against any security context constraint"))
		g.Expect(failure.Message).To(ContainSubstring(want))
		since = time.Now()
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	j0 := o.judgements(Default, ns)
	time.Sleep(10 * time.Second)
	j := o.judgements(Default, ns)
	Expect(j.Admitted).To(BeZero())
	Expect(livePods(Default, t.Context(), ns, "worker")).To(BeEmpty())
	// The backoff starts at 5 ms and doubles to 30 s: a hot loop would
	// send hundreds of creates in 10 s, the backoff a handful.
	retries := j.Refused - j0.Refused
	step("the stand-in refused %d creates in the %v after the first ReplicaFailure: %q", retries, time.Since(since).Round(time.Second), j.Refusals[0])
	Expect(retries).To(BeNumerically("<=", 12), "creates refused in 10 s")
	Expect(strings.Join(j.Refusals, "\n")).To(ContainSubstring(want))
}

// testOpenShiftManagerDeployment: the manager's own Deployment, as
// config/default renders it, gets its pod in a namespace OpenShift
// allocates.
func testOpenShiftManagerDeployment(t *testing.T, o *ocp) {
	ns, first := o.namespace(t, "e2e-openshift-manager")
	d := env.deployment.DeepCopy()
	d.SetNamespace(ns)
	d.SetResourceVersion("")
	mustKubectl(t, "create", "serviceaccount", env.operatorSA, "-n", ns)
	Expect(env.admin.Create(t.Context(), d)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(o.judgements(g, ns).Admitted).To(Equal(1))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	o.expectAllAdmitted(t, ns, first, 1)
}

func mustKubectlIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, _, err := kubectlIn(t.Context(), strings.NewReader(stdin), args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}
