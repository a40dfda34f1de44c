//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/test/localcluster"
)

// The stand-in of OpenShift's pod admission (test/openshift/sccadmission:
// OpenShift's SecurityContextConstraints plugin served as a webhook) judges
// the pods of the namespaces that carry openshiftLabel, as OpenShift judges
// every namespace's. Scoped so that the suite's other tests keep a plain
// Kubernetes.
const (
	openshiftLabel = "e2e.example.com/openshift"
	// The other two annotations OpenShift's namespace controller sets
	// beside operand.AnnotationUIDRange.
	annotationSupplementalGroups = "openshift.io/sa.scc.supplemental-groups"
	annotationMCS                = "openshift.io/sa.scc.mcs"
	sccAnnotation                = "openshift.io/scc"
	uidRangeSize                 = 10000
)

// The crashing image's kwok Stage, for the auto-rollback flow (the fault
// matrix adds the same one).
func init() {
	clusterOptions = append(clusterOptions, func(o *localcluster.Options) error {
		path, err := filepath.Abs(filepath.Join("testdata", "kwok-stage-crashing-image.yaml"))
		if err != nil {
			return err
		}
		if !slices.Contains(o.KwokArgs, "--config="+path) {
			o.KwokArgs = append(o.KwokArgs, "--config="+path)
		}
		return nil
	})
}

// openshift is the running stand-in.
type openshift struct {
	base string // https://127.0.0.1:PORT
	http *http.Client
	// next is the index of the next namespace's UID range.
	next int
}

// judgement is what the stand-in decided for one namespace's pods
// (test/openshift/sccadmission).
type judgement struct {
	Admitted          int            `json:"admitted"`
	Refused           int            `json:"refused"`
	SCCs              map[string]int `json:"sccs"`
	Refusals          []string       `json:"refusals"`
	ValidationRefused int            `json:"validationRefused"`
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
		fn   func(*testing.T, *openshift)
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

// startOpenShiftAdmission installs what OpenShift ships (the SCC CRD, its
// default SCCs and the RBAC that lets system:authenticated use
// restricted-v2), starts the stand-in and registers it.
func startOpenShiftAdmission(t *testing.T) *openshift {
	bin := envOr("SCC_ADMISSION_BIN", filepath.Join(env.repoRoot, "bin", "openshift", "sccadmission"))
	_, err := os.Stat(bin)
	Expect(err).NotTo(HaveOccurred(), "run the suite with `make test-e2e`, which builds the stand-in")
	step("installing OpenShift's SecurityContextConstraints CRD, default SCCs and their RBAC")
	mustKubectl(t, "apply", "--server-side", "-f", filepath.Join(filepath.Dir(bin), "securitycontextconstraints.crd.yaml"))
	Expect(env.cluster.WaitForCRDEstablished(t.Context(), "securitycontextconstraints.security.openshift.io", timeout)).To(Succeed())
	mustKubectl(t, "apply", "--server-side", "-f", "test/openshift/manifests/default-sccs.yaml")

	dir := t.TempDir()
	caPEM := writeServingCert(dir)
	addrFile := filepath.Join(dir, "address")
	proc, err := localcluster.StartProcess("sccadmission", bin, []string{
		"--kubeconfig=" + env.cluster.KubeconfigPath(), "--listen=127.0.0.1:0", "--address-file=" + addrFile,
		"--tls-cert=" + filepath.Join(dir, "tls.crt"), "--tls-key=" + filepath.Join(dir, "tls.key"),
	}, nil, filepath.Join(env.cluster.LogDir(), "sccadmission.log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = proc.Stop() })

	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(caPEM)).To(BeTrue())
	o := &openshift{http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
	Eventually(func(g Gomega) {
		addr, err := os.ReadFile(addrFile)
		g.Expect(err).NotTo(HaveOccurred(), "the stand-in is not serving yet; its log: %s", proc.LogPath())
		o.base = "https://" + string(addr)
		resp, err := o.http.Get(o.base + "/healthz")
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("registering the stand-in as the pods' mutating and validating admission, for namespaces labelled %s", openshiftLabel)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{openshiftLabel: "true"}}
	config := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(o.base + path), CABundle: caPEM}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-openshift-scc"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "scc.security.openshift.io", ClientConfig: config("/mutate"), Rules: rules, NamespaceSelector: selector,
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-openshift-scc"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "scc.security.openshift.io", ClientConfig: config("/validate"), Rules: rules, NamespaceSelector: selector,
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	Expect(env.admin.Create(t.Context(), mutating)).To(Succeed())
	Expect(env.admin.Create(t.Context(), validating)).To(Succeed())
	t.Cleanup(func() {
		_ = env.admin.Delete(t.Context(), mutating)
		_ = env.admin.Delete(t.Context(), validating)
	})

	// The API server calls the webhooks once it has seen their
	// configurations: a pod made before then would pass unjudged. Wait
	// until a probe pod comes back with the SCC that admitted it (the
	// admin's: it may use every SCC).
	probeNS := o.namespace(t, "e2e-openshift-probe")
	Eventually(func(g Gomega) {
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: probeNS},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		g.Expect(env.admin.Create(t.Context(), probe)).To(Succeed())
		_ = env.admin.Delete(t.Context(), probe)
		g.Expect(probe.Annotations).To(HaveKey(sccAnnotation))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return o
}

// namespace creates a namespace as OpenShift's namespace controller leaves
// it: its own ranges of user IDs and groups, and an MCS label.
func (o *openshift) namespace(t *testing.T, name string) string {
	o.next++
	uidRange := fmt.Sprintf("%d/%d", o.firstUID(), uidRangeSize)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{openshiftLabel: "true"},
		Annotations: map[string]string{
			operand.AnnotationUIDRange:   uidRange,
			annotationSupplementalGroups: uidRange,
			annotationMCS:                fmt.Sprintf("s0:c%d,c5", 20+o.next),
		},
	}}
	Expect(env.admin.Create(t.Context(), ns)).To(Succeed())
	Expect(localcluster.WaitForDefaultServiceAccount(t.Context(), env.clientset, name)).To(Succeed())
	t.Cleanup(func() { _ = env.admin.Delete(t.Context(), ns) })
	return name
}

// firstUID is the first user ID of the namespace o.namespace made last.
func (o *openshift) firstUID() int64 { return 1000600000 + int64(o.next)*uidRangeSize }

// judgements returns what the stand-in decided for ns's pods.
func (o *openshift) judgements(g Gomega, ns string) judgement {
	resp, err := o.http.Get(o.base + "/judgements")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	all := map[string]judgement{}
	g.Expect(json.NewDecoder(resp.Body).Decode(&all)).To(Succeed())
	return all[ns]
}

// expectAllAdmitted expects the stand-in to have judged at least min pods
// of ns, admitted each under restricted-v2 and refused none, and every live
// pod to run as a user of the namespace's range, from first.
func (o *openshift) expectAllAdmitted(t *testing.T, ns string, first int64, min int) judgement {
	var j judgement
	Eventually(func(g Gomega) {
		j = o.judgements(g, ns)
		g.Expect(j.Admitted).To(BeNumerically(">=", min), "pods judged in %s", ns)
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(j.Refused).To(BeZero(), "refused: %v", j.Refusals)
	Expect(j.ValidationRefused).To(BeZero())
	Expect(j.SCCs).To(HaveLen(1), "SCCs that admitted %s's pods", ns)
	Expect(j.SCCs).To(HaveKey("restricted-v2"))
	var pods corev1.PodList
	Expect(env.admin.List(t.Context(), &pods, client.InNamespace(ns))).To(Succeed())
	for _, p := range pods.Items {
		Expect(p.Annotations).To(HaveKeyWithValue(sccAnnotation, "restricted-v2"), "pod %s", p.Name)
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			uid := userOf(&p, c)
			Expect(uid).NotTo(BeNil(), "pod %s container %s has no user: the SCC assigns one", p.Name, c.Name)
			Expect(*uid).To(BeNumerically(">=", first), "pod %s container %s", p.Name, c.Name)
			Expect(*uid).To(BeNumerically("<", first+uidRangeSize), "pod %s container %s", p.Name, c.Name)
		}
		Expect(p.Spec.SecurityContext.FSGroup).To(HaveValue(Equal(first)), "pod %s: fsGroup, the range's first", p.Name)
	}
	step("the stand-in judged %d pods of %s: %d admitted (%v), %d refused", j.Admitted+j.Refused, ns, j.Admitted, j.SCCs, j.Refused)
	return j
}

func userOf(p *corev1.Pod, c corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if p.Spec.SecurityContext != nil {
		return p.Spec.SecurityContext.RunAsUser
	}
	return nil
}

// testOpenShiftSample: the sample, which the console offers as "Create
// PodSet" (alm-examples), makes its pods.
func testOpenShiftSample(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-sample")
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	o.expectAllAdmitted(t, ns, o.firstUID(), 3)

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
func testOpenShiftShortForm(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-short")
	mustKubectlIn(t, `{"apiVersion": "app.example.com/v1alpha1", "kind": "PodSet", "metadata": {"name": "default-image"}, "spec": {"replicas": 2}}`, "apply", "-n", ns, "-f", "-")
	mustKubectlIn(t, `{"apiVersion": "app.example.com/v1alpha1", "kind": "PodSet", "metadata": {"name": "own-image"}, "spec": {"replicas": 2, "image": "registry.example.com/app:1"}}`, "apply", "-n", ns, "-f", "-")
	expectSettledNamed(t, ns, "default-image", 2)
	expectSettledNamed(t, ns, "own-image", 2)
	o.expectAllAdmitted(t, ns, o.firstUID(), 4)
}

// testOpenShiftChartTemplate: a chart-like template (init container,
// sidecar, probes, projected and emptyDir volumes) makes its pods.
func testOpenShiftChartTemplate(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-chart")
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	ps.Spec.Replicas = ptr.To[int32](3)
	web := chartTemplates()["web"]
	ps.Spec.Template = &web
	Expect(env.admin.Create(t.Context(), ps)).To(Succeed())
	expectSettledNamed(t, ns, "web", 3)
	o.expectAllAdmitted(t, ns, o.firstUID(), 3)
}

// testOpenShiftRolloutAndInPlace: the sample rolls to a new template (new
// pods) and then updates its pods in place (the same pods, patched: an
// update the SCC admission judges without letting it mutate the pod).
func testOpenShiftRolloutAndInPlace(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-rollout")
	first := o.firstUID()
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)

	step("a rollout: a new environment variable replaces every pod")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=json", "-p",
		`[{"op": "add", "path": "/spec/template/spec/containers/0/env", "value": [{"name": "GREETING", "value": "hello"}]}]`)
	expectRolledOut(t, ns, sample, 3)
	o.expectAllAdmitted(t, ns, first, 6)

	step("in place: the pods' image changes, and they stay")
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=merge", "-p",
		`{"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"}}}}`)
	// A pod carries the in-place readiness gate from its creation: the
	// policy applies to the pods made after it.
	mustKubectl(t, "delete", "pods", "-n", ns, "-l", podSetLabel+"="+sample, "--wait=false")
	expectSettled(t, ns, 3)
	before := podUIDs(livePods(Default, t.Context(), ns, sample))
	j := o.judgements(Default, ns)
	mustKubectl(t, "patch", "podset", sample, "-n", ns, "--type=json", "-p",
		`[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry.example.com/web:2"}]`)
	// Under kwok no kubelet restarts the container, so the first pod
	// updated stays out of service and the update stops there; the real
	// node's suite runs it through. What is judged here is the patch.
	Eventually(func(g Gomega) {
		updated := 0
		for _, p := range livePods(g, t.Context(), ns, sample) {
			if slices.Contains(before, p.UID) && p.Spec.Containers[0].Image == "registry.example.com/web:2" {
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
func testOpenShiftAutoRollback(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-rollback")
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
	o.expectAllAdmitted(t, ns, o.firstUID(), 4)
}

// crashingImageForOpenShift is the image whose containers the kwok Stage in
// testdata/kwok-stage-crashing-image.yaml makes crash.
const crashingImageForOpenShift = "registry.example.com/crashing:1"

// testOpenShiftOwnUser: a template that sets its own user, outside the
// namespace's range, is refused as a Deployment's would be; the PodSet
// says so in ReplicaFailure with OpenShift's words, and its retries back
// off.
func testOpenShiftOwnUser(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-own-user")
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: ns}}
	ps.Spec.Replicas = ptr.To[int32](2)
	worker := chartTemplates()["worker"] // runAsUser 1000
	worker.Spec.PriorityClassName = ""
	ps.Spec.Template = &worker
	Expect(env.admin.Create(t.Context(), ps)).To(Succeed())
	want := "must be in the ranges: [" + strconv.FormatInt(o.firstUID(), 10)
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
func testOpenShiftManagerDeployment(t *testing.T, o *openshift) {
	ns := o.namespace(t, "e2e-openshift-manager")
	d := env.deployment.DeepCopy()
	d.SetNamespace(ns)
	d.SetResourceVersion("")
	mustKubectl(t, "create", "serviceaccount", env.operatorSA, "-n", ns)
	Expect(env.admin.Create(t.Context(), d)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(o.judgements(g, ns).Admitted).To(Equal(1))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	o.expectAllAdmitted(t, ns, o.firstUID(), 1)
}

func mustKubectlIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, _, err := kubectlIn(t.Context(), strings.NewReader(stdin), args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// writeServingCert writes a serving certificate for 127.0.0.1 (tls.crt,
// tls.key) into dir, and returns the PEM of the CA that signed it.
func writeServingCert(dir string) []byte {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-openshift-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	caCert, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sccadmission"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}
