package monitoring

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestObjects(t *testing.T) {
	g := NewWithT(t)
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "op", UID: "uid-1"}
	objs, err := Objects("ops", owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	kinds := map[string]string{}
	for _, o := range objs {
		kinds[o.GetKind()] = o.GetName()
		g.Expect(o.GetAPIVersion()).To(Equal(GroupVersion))
		g.Expect(o.GetNamespace()).To(Equal("ops"))
		g.Expect(o.GetOwnerReferences()).To(Equal([]metav1.OwnerReference{*owner}))
		g.Expect(o.Object).To(HaveKey("spec"))
	}
	// The names OLM installed them under when the bundle shipped them, so
	// that an upgrade takes the same objects over.
	g.Expect(kinds).To(Equal(map[string]string{
		"ServiceMonitor": "podset-operator-controller-manager-metrics-monitor",
		"PrometheusRule": "podset-operator-rules",
	}))

	objs, err = Objects("ops", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs[0].GetOwnerReferences()).To(BeEmpty())
}

// managerObjects: the manager's pod under its ReplicaSet under its
// Deployment "op" (UID dep-uid), in namespace ops, as the Deployment
// controller makes them.
func managerObjects() (*corev1.Pod, *appsv1.ReplicaSet) {
	const ns = "ops"
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-5d4f", UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "op", UID: "dep-uid", Controller: ptr.To(true)}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-5d4f-x2x", UID: "pod-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}}}
	return pod, rs
}

func TestOwnerOf(t *testing.T) {
	ctx := context.Background()
	t.Run("pod, ReplicaSet, Deployment", func(t *testing.T) {
		g := NewWithT(t)
		pod, rs := managerObjects()
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod, rs).Build()
		ref, err := OwnerOf(ctx, c, "ops", pod.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(*ref).To(Equal(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "op", UID: types.UID("dep-uid")}))
	})
	t.Run("a bare pod", func(t *testing.T) {
		g := NewWithT(t)
		pod, _ := managerObjects()
		pod.OwnerReferences = nil
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).Build()
		_, err := OwnerOf(ctx, c, "ops", pod.Name)
		g.Expect(errors.Is(err, errNoDeployment)).To(BeTrue(), "%v", err)
	})
	t.Run("a ReplicaSet of no Deployment", func(t *testing.T) {
		g := NewWithT(t)
		pod, rs := managerObjects()
		rs.OwnerReferences = nil
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod, rs).Build()
		_, err := OwnerOf(ctx, c, "ops", pod.Name)
		g.Expect(errors.Is(err, errNoDeployment)).To(BeTrue(), "%v", err)
	})
	t.Run("the pod is missing", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
		_, err := OwnerOf(ctx, c, "ops", "gone")
		g.Expect(err).To(HaveOccurred())
		g.Expect(errors.Is(err, errNoDeployment)).To(BeFalse(), "a missing pod may be a transient error: keep trying")
	})
}

// logLines records what a logger writes, one string per line.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logLines) errors() []string {
	var out []string
	for _, s := range l.get() {
		if strings.Contains(s, `"error"`) {
			out = append(out, s)
		}
	}
	return out
}

// servedDiscovery serves monitoring.coreos.com/v1 with both kinds.
func servedDiscovery() *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: GroupVersion,
		APIResources: []metav1.APIResource{
			{Name: "servicemonitors", Kind: "ServiceMonitor", Namespaced: true},
			{Name: "prometheusrules", Kind: "PrometheusRule", Namespaced: true},
		},
	}}}}
}

func TestSyncWithoutTheAPILogsOnce(t *testing.T) {
	g := NewWithT(t)
	var log logLines
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	a := NewApplier(c, c, &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}, Options{Namespace: "ops", PodName: "op-1", Log: log.logger()})
	for range 3 {
		g.Expect(a.Sync(context.Background())).To(BeFalse(), "the API may appear later")
	}
	g.Expect(log.get()).To(HaveLen(1))
	g.Expect(log.get()[0]).To(ContainSubstring("is not served"))
	g.Expect(log.errors()).To(BeEmpty())
}

func TestSyncLogsARepeatedFailureOnce(t *testing.T) {
	g := NewWithT(t)
	var log logLines
	// The pod is not there: every round fails the same way.
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	a := NewApplier(c, c, servedDiscovery(), Options{Namespace: "ops", PodName: "op-1", Log: log.logger()})
	for range 3 {
		g.Expect(a.Sync(context.Background())).To(BeFalse())
	}
	g.Expect(log.errors()).To(HaveLen(1))
	g.Expect(log.get()).To(HaveLen(1))

	// Once the pod is readable, the failure is over and the next one is
	// logged again.
	pod, rs := managerObjects()
	pod.Name = "op-1"
	g.Expect(c.Create(context.Background(), rs)).To(Succeed())
	g.Expect(c.Create(context.Background(), pod)).To(Succeed())
	g.Expect(a.Sync(context.Background())).To(BeFalse())
	g.Expect(log.errors()).To(HaveLen(1))
	g.Expect(log.get()).To(HaveLen(2), "one line for the apply: %v", log.get())
	g.Expect(log.get()[1]).To(ContainSubstring("applied the ServiceMonitor and PrometheusRule"))
}

func TestSyncWithoutADeploymentStops(t *testing.T) {
	g := NewWithT(t)
	var log logLines
	pod, _ := managerObjects()
	pod.OwnerReferences = nil
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).Build()
	a := NewApplier(c, c, servedDiscovery(), Options{Namespace: "ops", PodName: pod.Name, Log: log.logger()})
	g.Expect(a.Sync(context.Background())).To(BeTrue())
	g.Expect(log.errors()).To(BeEmpty())
	g.Expect(log.get()).To(ConsistOf(ContainSubstring("not applying")))
}
