package monitoring

// The Applier in a real manager against a real kube-apiserver and etcd
// (envtest, with the binaries `make envtest-assets` builds), first without
// the Prometheus Operator's CRDs, then with the real ones (`make test` fetches
// them from the prometheus-operator Go module into MONITORING_CRDS).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/example/podset-operator/internal/selfapply"
)

// testInterval stands in for DefaultInterval: short, so that the tests see
// several rounds.
const testInterval = 200 * time.Millisecond

// found returns the first match of a glob under the repository's bin/, the
// way `make test` lays it out, so that a plain `go test` works after it.
func found(pattern string) string {
	m, _ := filepath.Glob(filepath.Join("..", "..", "bin", pattern))
	if len(m) == 0 {
		return ""
	}
	return filepath.Dir(m[len(m)-1])
}

func TestApplierAgainstAPIServer(t *testing.T) {
	g := NewWithT(t)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = found(filepath.Join("k8s-*", "kube-apiserver"))
	}
	crds := os.Getenv("MONITORING_CRDS")
	if crds == "" {
		crds = found(filepath.Join("prometheus-operator-crds-*", "*.yaml"))
	}
	if assets == "" || crds == "" {
		t.Fatal("KUBEBUILDER_ASSETS and MONITORING_CRDS must name the envtest binaries and the Prometheus Operator's CRDs: run `make test`")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := t.Context()

	// (a) No monitoring CRDs: the applier says so once, in one info line,
	// however many rounds pass, and reports no error.
	nsA, podA, depA := managerPod(t, c, "without-crds")
	logA := startManager(t, cfg, Options{Enabled: true, Namespace: nsA, PodName: podA})
	time.Sleep(5 * testInterval)
	g.Expect(logA.get()).To(ConsistOf(ContainSubstring(GroupVersion + " is not served")))
	g.Expect(logA.errors()).To(BeEmpty())

	// (c) The flag off, in a namespace of its own, started before the CRDs
	// exist and checked after: nothing at all.
	nsC, podC, _ := managerPod(t, c, "flag-off")
	logC := startManager(t, cfg, Options{Enabled: false, Namespace: nsC, PodName: podC})

	// (b) The real CRDs, installed while the manager runs: the objects
	// appear, as embedded, owned by the Deployment, applied by FieldOwner.
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
	g.Expect(err).NotTo(HaveOccurred())
	want, err := Objects(nsA, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: depA.Name, UID: depA.UID})
	g.Expect(err).NotTo(HaveOccurred())
	for _, w := range want {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(w.GroupVersionKind())
		g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(w), got) }).
			WithTimeout(30*time.Second).WithPolling(testInterval).Should(Succeed(), "%s %s", w.GetKind(), w.GetName())
		g.Expect(got.Object["spec"]).To(Equal(w.Object["spec"]), "%s spec", w.GetKind())
		g.Expect(got.GetLabels()).To(Equal(w.GetLabels()))
		g.Expect(got.GetOwnerReferences()).To(Equal(w.GetOwnerReferences()))
		var managers []string
		for _, f := range got.GetManagedFields() {
			managers = append(managers, string(f.Operation)+" "+f.Manager)
		}
		g.Expect(managers).To(Equal([]string{"Apply " + selfapply.FieldOwner}))
	}
	g.Expect(logA.errors()).To(BeEmpty())
	// The CRDs are created one after the other, so a round may find one
	// kind served and apply it alone: one line per change of what was
	// applied, the last one naming both.
	g.Eventually(func() string { l := logA.get(); return l[len(l)-1] }).WithTimeout(10 * time.Second).WithPolling(testInterval).
		Should(And(ContainSubstring("applied the ServiceMonitor and PrometheusRule"), ContainSubstring("ServiceMonitor "+want[0].GetName()), ContainSubstring("PrometheusRule")))
	applied := logA.get()
	g.Expect(applied[1:]).To(HaveEach(ContainSubstring("applied the ServiceMonitor and PrometheusRule")))

	// An object deleted by hand comes back at the next round, silently.
	sm := want[0].DeepCopy()
	g.Expect(c.Delete(ctx, sm)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(sm), sm) }).
		WithTimeout(30 * time.Second).WithPolling(testInterval).Should(Succeed())
	g.Expect(logA.get()).To(HaveLen(len(applied)))

	// (c) continued: several rounds after the CRDs are served, nothing in
	// the flag-off namespace, and one line saying why.
	time.Sleep(5 * testInterval)
	for _, kind := range []string{"ServiceMonitorList", "PrometheusRuleList"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(GroupVersion)
		list.SetKind(kind)
		g.Expect(c.List(ctx, list, client.InNamespace(nsC))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty(), kind)
	}
	g.Expect(logC.get()).To(ConsistOf(ContainSubstring("--monitoring-objects=false")))
}

// managerPod creates a namespace with a Deployment, its ReplicaSet and its
// pod, as the Deployment controller (which envtest does not run) would; it
// returns the namespace, the pod's name and the Deployment.
func managerPod(t *testing.T, c client.Client, name string) (string, string, *appsv1.Deployment) {
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	labels := map[string]string{"app": "manager"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "manager:1"}}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "podset-operator-controller-manager"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec},
		},
	}
	g.Expect(c.Create(ctx, dep)).To(Succeed())
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: dep.Name + "-6b7c9", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec},
		},
	}
	g.Expect(c.Create(ctx, rs)).To(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: rs.Name + "-q8xzt", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: podSpec,
	}
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	return name, pod.Name, dep
}

// startManager runs a manager with only what Add adds, until the test ends,
// and returns what the monitoring logger wrote.
func startManager(t *testing.T, cfg *rest.Config, opts Options) *logLines {
	g := NewWithT(t)
	log := &logLines{}
	opts.Log = log.logger()
	opts.Interval = testInterval
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Add(mgr, opts)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("the manager: %v", err)
		}
	})
	return log
}
