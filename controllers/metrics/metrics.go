// Package metrics defines the operator's metrics: the podset_* gauges of
// each PodSet, read from the PodSet informers' stores at scrape time, and the
// podset_operator_* counters of what the reconciler does.
package metrics

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// The operator's metrics, served with controller-runtime's on the manager's
// metrics endpoint. docs/metrics.md is generated from the definitions below
// (`make metrics-docs`); keep the help texts worth reading there.
//
// Two kinds:
//   - what each PodSet is, named as kube-state-metrics names a ReplicaSet's
//     (kube_replicaset_spec_replicas becomes podset_spec_replicas), so that
//     dashboards and alerts written for ReplicaSets carry over. They are
//     computed at scrape time from the manager's cache: no API call, and a
//     PodSet's series disappear with it.
//   - what the controller does: counters, incremented where it acts.

// Labels of every per-PodSet series.
var podSetLabels = []string{"namespace", "podset"}

// PodSet state, one gauge per status field, as kube-state-metrics has them
// for ReplicaSets.
var (
	descSpecReplicas = prometheus.NewDesc("podset_spec_replicas",
		"Number of desired pods for a PodSet (spec.replicas).", podSetLabels, nil)
	descStatusReplicas = prometheus.NewDesc("podset_status_replicas",
		"Number of live pods of a PodSet (status.replicas).", podSetLabels, nil)
	descStatusReadyReplicas = prometheus.NewDesc("podset_status_ready_replicas",
		"Number of live pods of a PodSet that are Ready (status.readyReplicas).", podSetLabels, nil)
	descStatusAvailableReplicas = prometheus.NewDesc("podset_status_available_replicas",
		"Number of live pods of a PodSet that have been Ready for minReadySeconds (status.availableReplicas).", podSetLabels, nil)
	descStatusTerminatingReplicas = prometheus.NewDesc("podset_status_terminating_replicas",
		"Number of pods of a PodSet being deleted that have not stopped yet (status.terminatingReplicas).", podSetLabels, nil)
	descStatusUpdatedReplicas = prometheus.NewDesc("podset_status_updated_replicas",
		"Number of live pods of a PodSet that run its current pod template (status.updatedReplicas).", podSetLabels, nil)
	descStatusObservedGeneration = prometheus.NewDesc("podset_status_observed_generation",
		"The generation of the PodSet's spec that its status describes (status.observedGeneration).", podSetLabels, nil)
	descMetadataGeneration = prometheus.NewDesc("podset_metadata_generation",
		"The generation of the PodSet's spec (metadata.generation).", podSetLabels, nil)
	descStatusCondition = prometheus.NewDesc("podset_status_condition",
		"The status of each of the PodSet's conditions (Available, Progressing, ReplicaFailure, Reconciling, Stalled): one series per condition, with value 1, labelled with its status (true, false, or unknown when not set).",
		[]string{"condition", "namespace", "podset", "status"}, nil)
	descStatusCanaryStep = prometheus.NewDesc("podset_status_canary_step",
		"The index of the current step of a PodSet's canary rollout while one is under way (status.canary.step), labelled with its state, the Progressing condition's reason: CanaryStep (moving pods or measuring), CanaryPaused, AnalysisInconclusive or AnalysisError (held until promoted or aborted), InvalidAnalysis; absent otherwise.",
		[]string{"namespace", "podset", "state"}, nil)
	descStatusAutoRollback = prometheus.NewDesc("podset_status_auto_rollback",
		"1 while auto-rollback keeps a PodSet's pods on its last completed revision after a rollout failed (status.autoRollback), labelled with the trigger and whether it stopped (the revision returned to failed too); absent otherwise.",
		[]string{"namespace", "podset", "stopped", "trigger"}, nil)
)

// podSetStateDescs are the per-PodSet metrics, in documentation order.
var podSetStateDescs = []*prometheus.Desc{
	descSpecReplicas, descStatusReplicas, descStatusReadyReplicas, descStatusAvailableReplicas,
	descStatusTerminatingReplicas, descStatusUpdatedReplicas, descStatusObservedGeneration, descMetadataGeneration, descStatusCondition, descStatusCanaryStep, descStatusAutoRollback,
}

// What the controller does.
var (
	PodCreates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podset_operator_pod_creates_total",
		Help: "Pod creates sent, by result: created; failed (refused or never sent); uncertain (the connection broke after sending: the pod may exist).",
	}, []string{"result"})
	PodDeletes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podset_operator_pod_deletes_total",
		Help: "Pod deletes sent, by result: deleted; gone (the pod was already gone); failed.",
	}, []string{"result"})
	PodsAdopted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podset_operator_pods_adopted_total",
		Help: "Orphan pods whose labels match a PodSet, made its pods.",
	})
	PodsReleased = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podset_operator_pods_released_total",
		Help: "Pods a PodSet stopped controlling, because their labels no longer match it.",
	})
	ExpectationsExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podset_operator_expectations_expired_total",
		Help: "Times a PodSet acted after waiting the whole expectations timeout for its own writes to show in the cache: a watch event was lost.",
	})
	PodCacheBehind = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podset_operator_pod_cache_behind_total",
		Help: "Checks of a PodSet's cached pods against the API server (after an uncertain create, a pause of the leader, or pod events lagging its writes) that found the cache behind.",
	})
	PodEventsLagging = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podset_operator_pod_events_lagging_total",
		Help: "Times a PodSet's awaited pod events lagged its last write by a second or more, so that it checked its cache against the API server rather than wait: a broken pod watch, or an API server too loaded to deliver events in time.",
	})
	StatusWritesSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podset_operator_status_writes_skipped_total",
		Help: "Status changes not written at once, by reason: scaling (counts that move while the PodSet scales, written when it settles); paced (held back until --status-write-interval has passed).",
	}, []string{"reason"})
	Rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podset_operator_rollbacks_total",
		Help: "Rollouts that failed and that auto-rollback (spec.updateStrategy.rollingUpdate.autoRollback) returned to the last completed revision, by trigger: ProgressDeadlineExceeded, RestartLimit, CrashLoopBackOff, ImagePullFailure, InvalidImageName, CreateContainerFailure; and canary rollouts returned there for AnalysisFailed or Aborted.",
	}, []string{"trigger"})
	AnalysisMeasurements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podset_operator_analysis_measurements_total",
		Help: "Canary analysis measurements taken, by phase: Successful, Failed, Inconclusive, Error.",
	}, []string{"phase"})
	AnalysisQueryDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "podset_operator_analysis_query_duration_seconds",
		Help:    "How long Prometheus took to answer a canary analysis query, errors and timeouts included.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})
)

// controllerCollectors are the counters, in documentation order.
var controllerCollectors = []prometheus.Collector{
	PodCreates, PodDeletes, PodsAdopted, PodsReleased, ExpectationsExpired, PodCacheBehind, PodEventsLagging, StatusWritesSkipped, Rollbacks,
	AnalysisMeasurements, AnalysisQueryDuration,
}

func init() {
	crmetrics.Registry.MustRegister(controllerCollectors...)
}

// PodSetCollector is the collector of the per-PodSet metrics. It reads the
// PodSet informers' stores (one per watched namespace, or one for all), so
// that a scrape copies no PodSet: with 10,000 PodSets a List through the
// cache would copy each of them, status and pod names included, on every
// scrape.
type PodSetCollector struct {
	mu     sync.RWMutex
	stores []toolscache.Store
}

// NewPodSetCollector returns a collector with no store yet; CacheOptions hands
// it the PodSet informers' stores as the manager builds them.
func NewPodSetCollector() *PodSetCollector { return &PodSetCollector{} }

func (m *PodSetCollector) AddStore(s toolscache.Store) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stores = append(m.stores, s)
}

// Describe implements prometheus.Collector.
func (m *PodSetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range podSetStateDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It sends each family's series in
// the order the registry sorts them in (by label values: namespace, podset;
// condition first for the conditions): the registry's sort then finds them
// sorted, which with 10,000 PodSets was two fifths of a scrape's CPU.
func (m *PodSetCollector) Collect(ch chan<- prometheus.Metric) {
	m.mu.RLock()
	stores := m.stores
	m.mu.RUnlock()
	var podSets []*appv1alpha1.PodSet
	for _, store := range stores {
		for _, obj := range store.List() {
			if ps, ok := obj.(*appv1alpha1.PodSet); ok {
				podSets = append(podSets, ps)
			}
		}
	}
	slices.SortFunc(podSets, func(a, b *appv1alpha1.PodSet) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	gauges := []struct {
		desc  *prometheus.Desc
		value func(*appv1alpha1.PodSet) int64
	}{
		{descSpecReplicas, func(ps *appv1alpha1.PodSet) int64 { return int64(ps.DesiredReplicas()) }},
		{descStatusReplicas, func(ps *appv1alpha1.PodSet) int64 { return int64(ps.Status.Replicas) }},
		{descStatusReadyReplicas, func(ps *appv1alpha1.PodSet) int64 { return int64(ps.Status.ReadyReplicas) }},
		{descStatusAvailableReplicas, func(ps *appv1alpha1.PodSet) int64 { return int64(ps.Status.AvailableReplicas) }},
		{descStatusTerminatingReplicas, func(ps *appv1alpha1.PodSet) int64 { return int64(ps.Status.TerminatingReplicas) }},
		{descStatusUpdatedReplicas, func(ps *appv1alpha1.PodSet) int64 { return int64(ps.Status.UpdatedReplicas) }},
		{descStatusObservedGeneration, func(ps *appv1alpha1.PodSet) int64 { return ps.Status.ObservedGeneration }},
		{descMetadataGeneration, func(ps *appv1alpha1.PodSet) int64 { return ps.Generation }},
	}
	for _, g := range gauges {
		for _, ps := range podSets {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.value(ps)), ps.Namespace, ps.Name)
		}
	}
	for _, t := range podSetConditionTypes {
		for _, ps := range podSets {
			status := metav1.ConditionUnknown
			if c := meta.FindStatusCondition(ps.Status.Conditions, t); c != nil {
				status = c.Status
			}
			ch <- prometheus.MustNewConstMetric(descStatusCondition, prometheus.GaugeValue, 1, t, ps.Namespace, ps.Name, strings.ToLower(string(status)))
		}
	}
	for _, ps := range podSets {
		if state, ok := canaryState(ps); ok {
			ch <- prometheus.MustNewConstMetric(descStatusCanaryStep, prometheus.GaugeValue, float64(ps.Status.Canary.Step), ps.Namespace, ps.Name, state)
		}
	}
	for _, ps := range podSets {
		if rb := ps.Status.AutoRollback; rb != nil && rb.Revision != "" {
			ch <- prometheus.MustNewConstMetric(descStatusAutoRollback, prometheus.GaugeValue, 1, ps.Namespace, ps.Name, strconv.FormatBool(rb.Stopped), rb.Trigger)
		}
	}
}

// canaryState is the state of a PodSet's canary rollout under way: the
// Progressing condition's reason while it is one of a canary's.
func canaryState(ps *appv1alpha1.PodSet) (string, bool) {
	c := ps.Status.Canary
	if c == nil || c.Revision != ps.Status.UpdateRevision {
		return "", false
	}
	p := meta.FindStatusCondition(ps.Status.Conditions, appv1alpha1.ConditionProgressing)
	if p == nil {
		return "", false
	}
	switch p.Reason {
	case appv1alpha1.ReasonCanaryStep, appv1alpha1.ReasonCanaryPaused, appv1alpha1.ReasonAnalysisInconclusive,
		appv1alpha1.ReasonAnalysisError, appv1alpha1.ReasonInvalidAnalysis:
		return p.Reason, true
	}
	return "", false
}

// podSetConditionTypes are the conditions reported for every PodSet, set or
// not: a condition not set yet reads as unknown. kube-state-metrics reports
// a ReplicaSet's condition as three series (value 1 for its status, 0 for
// the two others); one series per condition, the one that would be 1,
// answers the same queries (`podset_status_condition{status="true"} == 1`)
// with a third of the series, which is most of a scrape's cost.
var podSetConditionTypes = []string{
	appv1alpha1.ConditionAvailable, appv1alpha1.ConditionProgressing, appv1alpha1.ConditionReplicaFailure,
	appv1alpha1.ConditionReconciling, appv1alpha1.ConditionStalled,
}

// Doc describes one metric for docs/metrics.md.
type Doc struct {
	Name, Type, Help string
	Labels           []string
}

// Docs describes every metric this operator adds to controller-runtime's,
// in documentation order, from the definitions themselves: a registry
// gathers them from a sample PodSet and a child of every counter.
func Docs() ([]Doc, error) {
	reg := prometheus.NewPedanticRegistry()
	sample := NewPodSetCollector()
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	// Rolled back, so that the series that only such a PodSet has are
	// gathered too.
	rolledBack := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sample"}}
	rolledBack.Status.AutoRollback = &appv1alpha1.AutoRollbackStatus{Revision: "sample-1", Trigger: "RestartLimit"}
	// ... and at a canary's step, for the canary's series.
	rolledBack.Status.UpdateRevision = "sample-2"
	rolledBack.Status.Canary = &appv1alpha1.CanaryStatus{Revision: "sample-2", Step: 1}
	rolledBack.Status.Conditions = []metav1.Condition{{Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionUnknown, Reason: appv1alpha1.ReasonCanaryPaused}}
	if err := store.Add(rolledBack); err != nil {
		return nil, err
	}
	sample.AddStore(store)
	if err := reg.Register(sample); err != nil {
		return nil, err
	}
	// Fresh counters of the same definitions, so that the process's own
	// counts stay untouched.
	var order []string
	for _, d := range podSetStateDescs {
		order = append(order, descName(d))
	}
	for _, c := range controllerCollectors {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		order = append(order, descName(<-ch))
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, vec := range []*prometheus.CounterVec{PodCreates, PodDeletes, StatusWritesSkipped, Rollbacks, AnalysisMeasurements} {
		vec.WithLabelValues("sample").Add(0)
		defer vec.DeleteLabelValues("sample")
	}
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	byName := map[string]Doc{}
	for _, f := range families {
		doc := Doc{Name: f.GetName(), Type: strings.ToLower(f.GetType().String()), Help: f.GetHelp()}
		if len(f.GetMetric()) > 0 {
			for _, l := range f.GetMetric()[0].GetLabel() {
				doc.Labels = append(doc.Labels, l.GetName())
			}
		}
		byName[doc.Name] = doc
	}
	docs := make([]Doc, 0, len(order))
	for _, name := range order {
		doc, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("metric %s was not gathered", name)
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// descName is the metric name in a Desc's String(): Desc{fqName: "name", ...}.
func descName(d *prometheus.Desc) string {
	s := d.String()
	if i := strings.Index(s, `fqName: "`); i >= 0 {
		s = s[i+len(`fqName: "`):]
		if j := strings.IndexByte(s, '"'); j >= 0 {
			return s[:j]
		}
	}
	return s
}
