package metrics

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func metricsFor(podSets ...*appv1alpha1.PodSet) *PodSetCollector {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for _, ps := range podSets {
		_ = store.Add(ps)
	}
	m := NewPodSetCollector()
	m.AddStore(store)
	return m
}

// podSet is the PodSet "web" of namespace "ns", asking for replicas pods.
func podSet(replicas int32) *appv1alpha1.PodSet {
	return &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "PodSet-web-uid", Generation: 1},
		Spec:       appv1alpha1.PodSetSpec{Replicas: ptr.To(replicas)},
	}
}

func TestPodSetMetrics(t *testing.T) {
	g := NewWithT(t)
	ps := podSet(3)
	ps.Generation = 4
	ps.Status = appv1alpha1.PodSetStatus{
		Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, TerminatingReplicas: 2, UpdatedReplicas: 3, ObservedGeneration: 3,
		Conditions: []metav1.Condition{
			{Type: appv1alpha1.ConditionAvailable, Status: metav1.ConditionFalse},
			{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue},
			{Type: appv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue},
		},
	}
	want := `
# HELP podset_spec_replicas Number of desired pods for a PodSet (spec.replicas).
# TYPE podset_spec_replicas gauge
podset_spec_replicas{namespace="ns",podset="web"} 3
# HELP podset_status_available_replicas Number of live pods of a PodSet that have been Ready for minReadySeconds (status.availableReplicas).
# TYPE podset_status_available_replicas gauge
podset_status_available_replicas{namespace="ns",podset="web"} 1
# HELP podset_status_ready_replicas Number of live pods of a PodSet that are Ready (status.readyReplicas).
# TYPE podset_status_ready_replicas gauge
podset_status_ready_replicas{namespace="ns",podset="web"} 2
# HELP podset_status_terminating_replicas Number of pods of a PodSet being deleted that have not stopped yet (status.terminatingReplicas).
# TYPE podset_status_terminating_replicas gauge
podset_status_terminating_replicas{namespace="ns",podset="web"} 2
# HELP podset_status_observed_generation The generation of the PodSet's spec that its status describes (status.observedGeneration).
# TYPE podset_status_observed_generation gauge
podset_status_observed_generation{namespace="ns",podset="web"} 3
# HELP podset_metadata_generation The generation of the PodSet's spec (metadata.generation).
# TYPE podset_metadata_generation gauge
podset_metadata_generation{namespace="ns",podset="web"} 4
# HELP podset_status_condition The status of each of the PodSet's conditions (Available, Progressing, ReplicaFailure, Reconciling, Stalled): one series per condition, with value 1, labelled with its status (true, false, or unknown when not set).
# TYPE podset_status_condition gauge
podset_status_condition{condition="Available",namespace="ns",podset="web",status="false"} 1
podset_status_condition{condition="Progressing",namespace="ns",podset="web",status="unknown"} 1
podset_status_condition{condition="Reconciling",namespace="ns",podset="web",status="true"} 1
podset_status_condition{condition="ReplicaFailure",namespace="ns",podset="web",status="true"} 1
podset_status_condition{condition="Stalled",namespace="ns",podset="web",status="unknown"} 1
`
	g.Expect(testutil.CollectAndCompare(metricsFor(ps), strings.NewReader(want),
		"podset_spec_replicas", "podset_status_available_replicas", "podset_status_ready_replicas",
		"podset_status_terminating_replicas", "podset_status_observed_generation", "podset_metadata_generation", "podset_status_condition")).To(Succeed())
	// Every per-PodSet metric is there, and passes the registry's lint.
	g.Expect(testutil.CollectAndCount(metricsFor(ps))).To(Equal(8 + 5))
	problems, err := testutil.CollectAndLint(metricsFor(ps))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())

	// A PodSet gone from the cache is gone from the metrics.
	g.Expect(testutil.CollectAndCount(metricsFor())).To(BeZero())
}

func TestControllerMetricsLint(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewPedanticRegistry()
	for _, c := range controllerCollectors {
		g.Expect(reg.Register(c)).To(Succeed())
	}
	PodCreates.WithLabelValues("created").Add(0)
	PodDeletes.WithLabelValues("deleted").Add(0)
	StatusWritesSkipped.WithLabelValues("paced").Add(0)
	Rollbacks.WithLabelValues("RestartLimit").Add(0)
	problems, err := testutil.GatherAndLint(reg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())
}

// BenchmarkPodSetMetricsScrape is the cost of the PodSet metrics in one
// scrape of 10,000 PodSets (13 series each: eight gauges and one per condition), collected and encoded as a
// Prometheus server would receive them.
func BenchmarkPodSetMetricsScrape(b *testing.B) {
	var podSets []*appv1alpha1.PodSet
	for i := range 10000 {
		ps := podSet(10)
		ps.Name = fmt.Sprintf("web-%05d", i)
		ps.Spec.Replicas = ptr.To[int32](10)
		ps.Status = appv1alpha1.PodSetStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10, UpdatedReplicas: 10, ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: appv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue}}}
		podSets = append(podSets, ps)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metricsFor(podSets...))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		families, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		if len(families) != len(podSetStateDescs) {
			b.Fatalf("%d metric families", len(families))
		}
	}
}
