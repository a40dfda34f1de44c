//go:build e2e && realnode

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/loadclient"
	"github.com/example/podset-operator/test/localcluster"
	"github.com/example/podset-operator/test/makebuild"
	"github.com/example/podset-operator/test/promapi"
)

// The canary scenarios on the real node (TestRealNode/CanaryAnalysis): the
// servers are canary-app pods (test/images/canary-app) behind a ClusterIP
// Service, the load client reaches them through the node's kube-proxy, and
// the real Prometheus discovers and scrapes the pods through the API server
// with the relabelling a PodMonitor with podTargetLabels renders. The
// operator is the manager Deployment of config/default, with
// ANALYSIS_PROMETHEUS_URL in its container's env, as docs/install.md tells
// a kustomize user to set it.

// realPrometheusAddr is where the scenarios' Prometheus listens: the node's
// own address, which the manager's pod reaches. Its port is chosen before
// the cluster starts, since the manager's Deployment carries it.
var realPrometheusAddr string

// realPrometheus builds PROMETHEUS, the Prometheus the Prometheus Operator
// deploys, from its module (the Debian build has no Kubernetes service
// discovery), beside the suite's first tests: only the canary scenarios,
// the last, need it.
var realPrometheus *makebuild.Build

func init() {
	stopBuild := func() {}
	clusterOptions = append(clusterOptions, func(*localcluster.Options) error {
		if prom := os.Getenv("PROMETHEUS"); prom != "" {
			var ctx context.Context
			ctx, stopBuild = context.WithCancel(context.Background())
			realPrometheus = makebuild.Start(ctx, env.repoRoot, filepath.Join(env.repoRoot, "bin", "make-prometheus.log"), prom)
		}
		port, err := localcluster.FreePort()
		if err != nil {
			return err
		}
		realPrometheusAddr = net.JoinHostPort(localcluster.RealNodeIP, strconv.Itoa(port))
		return addManagerEnv(env.deployment, "ANALYSIS_PROMETHEUS_URL", "http://"+realPrometheusAddr)
	})
	afterClusterStop = append(afterClusterStop, func() error { stopBuild(); return nil })
}

// addManagerEnv adds a variable to the env of the manager container of
// config/default's Deployment.
func addManagerEnv(d *unstructured.Unstructured, name, value string) error {
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return err
	}
	for i, c := range containers {
		container, ok := c.(map[string]any)
		if !ok || container["name"] != "manager" {
			continue
		}
		vars, _ := container["env"].([]any)
		container["env"] = append(vars, map[string]any{"name": name, "value": value})
		containers[i] = container
		return unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers")
	}
	return errors.New("config/default's Deployment has no container named manager")
}

// canaryAppTemplate is the scenarios' server: it answers errorShare of its
// requests with 500 and stays Ready, and leaves its Service before it
// stops (preStop sleep), as docs/reference.md says to write a server.
func canaryAppTemplate(version, errorShare string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](15),
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "docker.io/example/canary-app:v1",
				Args:  []string{"--listen=:8080", "--version=$(VERSION)", "--error-share=$(ERROR_SHARE)"},
				Env:   []corev1.EnvVar{{Name: "VERSION", Value: version}, {Name: "ERROR_SHARE", Value: errorShare}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}

// errorRatioAnalysis measures the share of 500s of the canary's pods
// every 10 s: below 1% is a success, above 5% a failure.
func errorRatioAnalysis(count *int32, dryRun bool, consecutiveErrorLimit *int32) *appv1alpha1.Analysis {
	return &appv1alpha1.Analysis{
		Query: canaryErrorRatio, SuccessCondition: "result < 0.01", FailureCondition: "result > 0.05",
		IntervalSeconds: ptr.To[int32](10), Count: count, ConsecutiveErrorLimit: consecutiveErrorLimit, DryRun: dryRun,
	}
}

// newCanaryAppService creates the Service name of the canary-app pods
// (app=web) of ns, on their "http" port.
func newCanaryAppService(t *testing.T, ns, name string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	Expect(env.admin.Create(t.Context(), svc)).To(Succeed())
	return svc
}

// canarySteps are the scenarios' steps: one pod, an analysis, half the
// pods, an analysis, then the rest.
func canarySteps(dryRun bool, consecutiveErrorLimit *int32) []appv1alpha1.CanaryStep {
	return []appv1alpha1.CanaryStep{
		{UpdatedReplicas: ptr.To[int32](1)}, {Analysis: errorRatioAnalysis(ptr.To[int32](1), dryRun, consecutiveErrorLimit)},
		{UpdatedPercent: ptr.To[int32](50)}, {Analysis: errorRatioAnalysis(ptr.To[int32](1), dryRun, consecutiveErrorLimit)},
	}
}

// canaryScenario is one row of the table the test prints.
type canaryScenario struct {
	name string
	// badToRetreat is from the first failed measurement to the retreat's
	// decision, both from the status (to the second), and badToGone from
	// that measurement until the test saw no pod of the revision left, for
	// a retreat (retreated).
	badToRetreat, badToGone time.Duration
	retreated               bool
	// took is from the change until no pod of its revision was left, for
	// a retreat; until the rollout completed or held, otherwise.
	took     time.Duration
	mostPods int
	failures map[string]int
}

func testRealCanaryAnalysis(t *testing.T) {
	Expect(realPrometheus).NotTo(BeNil(), "PROMETHEUS is not set: run the suite with `make test-real-node`")
	ctx := t.Context()
	waited, err := realPrometheus.Wait(ctx)
	Expect(err).NotTo(HaveOccurred())
	step("Prometheus built (waited %s for it)", waited.Round(time.Second))
	ns := newNamespace(t, "real-canary", restricted)
	const name, replicas = "store", 4

	prom := startPodMonitorPrometheus(t, ns, realPrometheusAddr, appv1alpha1.LabelRevisionHash)
	step("Prometheus on %s discovers the pods of %s through the API server, as a PodMonitor's configuration does; the manager has ANALYSIS_PROMETHEUS_URL=http://%s", realPrometheusAddr, ns, realPrometheusAddr)

	svc := newCanaryAppService(t, ns, name)
	template := canaryAppTemplate("v1", "0")
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appv1alpha1.PodSetSpec{
			Replicas: ptr.To[int32](replicas),
			Template: &template,
			UpdateStrategy: appv1alpha1.UpdateStrategy{RollingUpdate: &appv1alpha1.RollingUpdate{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				Canary: &appv1alpha1.Canary{Steps: canarySteps(false, nil)},
			}},
		},
	}
	Expect(env.admin.Create(ctx, ps)).To(Succeed())
	stable := waitForCanaryRevision(ctx, ns, name, "", replicas)
	hashOf := func(revision string) string { return strings.TrimPrefix(revision, name+"-") }
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	Eventually(func() string { return getOnce(url) }).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(BeEmpty())

	table := startScenarioLog(ctx, url)
	defer table.stop()
	step("%d pods of v1 behind %s, %d requests a second over new connections and as many kept alive", replicas, url, zeroDowntimeRate)
	time.Sleep(2 * time.Second)

	patch := func(ops ...string) {
		Expect(env.admin.Patch(ctx, &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			client.RawPatch(types.JSONPatchType, []byte("["+strings.Join(ops, ",")+"]")))).To(Succeed())
	}
	setVersion := func(version, errorShare string) string {
		return fmt.Sprintf(`{"op":"replace","path":"/spec/template/spec/containers/0/env","value":[{"name":"VERSION","value":%q},{"name":"ERROR_SHARE","value":%q}]}`, version, errorShare)
	}
	setCanary := func(c appv1alpha1.Canary) string {
		data, err := json.Marshal(c)
		Expect(err).NotTo(HaveOccurred())
		return fmt.Sprintf(`{"op":"replace","path":"/spec/updateStrategy/rollingUpdate/canary","value":%s}`, data)
	}
	setSteps := func(dryRun bool, consecutiveErrorLimit *int32) string {
		return setCanary(appv1alpha1.Canary{Steps: canarySteps(dryRun, consecutiveErrorLimit)})
	}

	// v2 answers 30% of its requests with 500, and stays Ready: it is
	// rolled back at its first analysis step, with one pod of it at most.
	start := time.Now()
	patch(setVersion("v2", "0.3"))
	v2 := waitForNewRevision(ctx, ns, name, stable)
	mostV2 := watchMostPods(ctx, ns, name, hashOf(v2))
	var rb *appv1alpha1.AutoRollbackStatus
	var run appv1alpha1.AnalysisRunStatus
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.AutoRollback).NotTo(BeNil())
		rb = p.Status.AutoRollback
		g.Expect(p.Status.Canary.Analyses).NotTo(BeEmpty())
		run = p.Status.Canary.Analyses[0]
		g.Expect(podsOfRevision(g, ctx, ns, name, hashOf(v2))).To(BeZero(), "a pod of v2 still exists")
		g.Expect(p.Status.AvailableReplicas).To(BeEquivalentTo(replicas))
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	gone := time.Now()
	v2row := &canaryScenario{name: "v2, 30% 500s: rolled back", took: gone.Sub(start), mostPods: mostV2()}
	table.add(v2row, start, gone)
	Expect(rb.Trigger).To(Equal("AnalysisFailed"))
	Expect(rb.FailedRevision).To(Equal(v2))
	Expect(run.Name).To(Equal("steps[1]"), "retreated at the first analysis step")
	Expect(run.Phase).To(Equal("Failed"))
	Expect(run.Measurements).NotTo(BeEmpty())
	firstBad := run.Measurements[0]
	Expect(firstBad.Phase).To(Equal("Failed"))
	v2row.retreated, v2row.badToRetreat = true, rb.Time.Sub(firstBad.Time.Time)
	v2row.badToGone = gone.Sub(firstBad.Time.Time)
	Expect(v2row.mostPods).To(BeNumerically("<=", 1), "more pods than the step's one ran v2")
	step("v2: measured %s (Failed); the retreat decided %s later, every pod of v2 gone %s later (%s after the change); at most %d pod of v2",
		firstBad.Value, v2row.badToRetreat, v2row.badToGone.Round(100*time.Millisecond), v2row.took.Round(100*time.Millisecond), v2row.mostPods)
	Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ctx, ns, name).Status.AutoRollback.Complete).To(BeTrue())
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// v3 answers every request: promoted through every step, a
	// background analysis measuring it all along.
	start = time.Now()
	patch(setVersion("v3", "0"), setCanary(appv1alpha1.Canary{Steps: canarySteps(false, nil), BackgroundAnalysis: errorRatioAnalysis(nil, false, nil)}))
	v3 := waitForNewRevision(ctx, ns, name, v2)
	mostV3 := watchMostPods(ctx, ns, name, hashOf(v3))
	waitCanaryDone(ctx, ns, name, v3, replicas)
	v3row := &canaryScenario{name: "v3, good, with a background analysis: promoted", took: time.Since(start), mostPods: mostV3()}
	table.add(v3row, start, start.Add(v3row.took))
	// The status keeps the last analysis step's run and the background
	// run, which ended with the rollout; the events tell of each.
	var background appv1alpha1.AnalysisRunStatus
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.Canary.Analyses).To(HaveLen(2))
		g.Expect(p.Status.Canary.Analyses[0].Phase).To(Equal("Successful"), "%+v", p.Status.Canary.Analyses[0])
		background = p.Status.Canary.Analyses[1]
		g.Expect(background.Name).To(Equal("background"))
		g.Expect(background.Phase).To(Equal("Successful"), "%+v", background)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(background.Message).To(HavePrefix("ended: the rollout is done"))
	Expect(background.Successful).To(BeNumerically(">=", 1))
	Expect(background.Failed + background.Inconclusive + background.Errors).To(BeZero())
	Eventually(func(g Gomega) []string {
		return analysisEvents(g, ctx, ns, name, "AnalysisSucceeded", v3)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(ConsistOf("steps[1]", "steps[3]"))
	Eventually(func(g Gomega) []string {
		return analysisEvents(g, ctx, ns, name, "AnalysisEnded", v3)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(ConsistOf("background"))
	step("v3: both analyses Successful, every step done %s after the change; the background analysis %s",
		v3row.took.Round(100*time.Millisecond), background.Message)

	// v4 fails as v2 did, but its analyses are dry runs: they record the
	// failures and act on none, and v4 goes through.
	start = time.Now()
	patch(setVersion("v4", "0.3"), setSteps(true, nil))
	v4 := waitForNewRevision(ctx, ns, name, v3)
	mostV4 := watchMostPods(ctx, ns, name, hashOf(v4))
	waitCanaryDone(ctx, ns, name, v4, replicas)
	v4row := &canaryScenario{name: "v4, 30% 500s, dry run: let through", took: time.Since(start), mostPods: mostV4()}
	table.add(v4row, start, start.Add(v4row.took))
	p := getPodSet(Default, ctx, ns, name)
	Expect(p.Status.Canary.Analyses).To(HaveLen(1))
	run = p.Status.Canary.Analyses[0]
	Expect(run.Name).To(Equal("steps[3]"))
	Expect(run.Phase).To(Equal("Failed"), "%+v", run)
	Expect(run.DryRun).To(BeTrue())
	Expect(run.Measurements).NotTo(BeEmpty())
	Expect(p.Status.AutoRollback == nil || p.Status.AutoRollback.FailedRevision != v4).To(BeTrue(), "a dry run retreated: %+v", p.Status.AutoRollback)
	Eventually(func(g Gomega) []string {
		return analysisEvents(g, ctx, ns, name, "AnalysisDryRunDone", v4)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(ConsistOf("steps[1]", "steps[3]"))
	step("v4 (dry run): both analyses Failed and reported (the last measured %s), and v4 rolled out in %s",
		run.Measurements[0].Value, v4row.took.Round(100*time.Millisecond))

	// v5 fails too, and its only steps are one pod and a pause until
	// promoted: the background analysis rolls it back in the pause.
	start = time.Now()
	patch(setVersion("v5", "0.5"), setCanary(appv1alpha1.Canary{
		Steps:              []appv1alpha1.CanaryStep{{UpdatedReplicas: ptr.To[int32](1)}, {Pause: &appv1alpha1.CanaryPause{}}},
		BackgroundAnalysis: errorRatioAnalysis(nil, false, nil),
	}))
	v5 := waitForNewRevision(ctx, ns, name, v4)
	mostV5 := watchMostPods(ctx, ns, name, hashOf(v5))
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.AutoRollback).NotTo(BeNil())
		rb = p.Status.AutoRollback
		g.Expect(rb.FailedRevision).To(Equal(v5))
		background = p.Status.Canary.Analyses[0]
		g.Expect(podsOfRevision(g, ctx, ns, name, hashOf(v5))).To(BeZero(), "a pod of v5 still exists")
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	gone = time.Now()
	v5row := &canaryScenario{name: "v5, 50% 500s, background analysis, paused: rolled back (the stable pods are v4's)", took: gone.Sub(start), mostPods: mostV5()}
	table.add(v5row, start, gone)
	Expect(rb.Trigger).To(Equal("AnalysisFailed"))
	Expect(rb.Message).To(ContainSubstring("background analysis failed"))
	Expect(background.Name).To(Equal("background"))
	Expect(background.Phase).To(Equal("Failed"))
	Expect(background.Measurements).NotTo(BeEmpty())
	firstBad = background.Measurements[0]
	Expect(firstBad.Phase).To(Equal("Failed"))
	Expect(getPodSet(Default, ctx, ns, name).Status.Canary.Step).To(BeEquivalentTo(1), "retreated in the pause")
	v5row.retreated, v5row.badToRetreat, v5row.badToGone = true, rb.Time.Sub(firstBad.Time.Time), gone.Sub(firstBad.Time.Time)
	Expect(v5row.mostPods).To(BeNumerically("<=", 1), "more pods than the step's one ran v5")
	step("v5: the background analysis measured %s (Failed) in the pause; the retreat decided %s later, every pod of v5 gone %s later; at most %d pod of v5",
		firstBad.Value, v5row.badToRetreat, v5row.badToGone.Round(100*time.Millisecond), v5row.mostPods)
	Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ctx, ns, name).Status.AutoRollback.Complete).To(BeTrue())
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// v6 good, but Prometheus stops at its first analysis step: the run
	// holds on its errors (at 1 in a row, to keep this short), and v6 is
	// never promoted.
	start = time.Now()
	patch(setVersion("v6", "0"), setSteps(false, ptr.To[int32](1)))
	v6 := waitForNewRevision(ctx, ns, name, v5)
	mostV6 := watchMostPods(ctx, ns, name, hashOf(v6))
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.Canary).NotTo(BeNil())
		g.Expect(p.Status.Canary.Revision).To(Equal(v6))
		g.Expect(p.Status.Canary.Step).To(BeEquivalentTo(1), "at the analysis")
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	run, held := stopPrometheusUntilHeld(ctx, prom, ns, name, v4, "Prometheus could not be reached")
	v6row := &canaryScenario{name: "v6, good, Prometheus stopped: held (the stable pods are v4's)", took: time.Since(start), mostPods: mostV6()}
	table.add(v6row, start, start.Add(v6row.took))
	step("v6, Prometheus stopped at the analysis step: held (AnalysisError) %s later after %d errors in a row, never promoted",
		held.Round(time.Second), run.Errors)

	before, between := table.finish("PodSet")
	Expect(before).To(BeEmpty(), "requests failed before any change")
	// What the client saw: the 500s of the failing versions, and not one
	// request lost to the pods' changes. The failing versions' 500s show
	// the analyses judged what the client saw. (During v6's scenario the
	// stable pods are v4's, which answer 500 as well.)
	for reason := range between {
		Expect(reason).To(Equal("HTTP 500"), "between the scenarios, a request failed otherwise than by the server's 500: %s", describeFailures(between))
	}
	for _, row := range []*canaryScenario{v2row, v3row, v4row, v5row, v6row} {
		for reason := range row.failures {
			Expect(reason).To(Equal("HTTP 500"), "%s: a request failed otherwise than by the server's 500: %s", row.name, describeFailures(row.failures))
		}
	}
	Expect(v2row.failures["HTTP 500"]).To(BeNumerically(">", 0), "the client never reached v2's pod")
	Expect(v4row.failures["HTTP 500"]).To(BeNumerically(">", 0), "the client never reached v4's pods")
	Expect(v3row.failures).To(BeEmpty())
}

// startPodMonitorPrometheus starts Prometheus on addr, discovering the
// pods of ns through the API server and labelling their series as the
// Prometheus Operator does for a PodMonitor of the pods' "http" port with
// podTargetLabels: [hashLabel] (controller-revision-hash for a PodSet's).
func startPodMonitorPrometheus(t *testing.T, ns, addr, hashLabel string) *localcluster.Process {
	dir := filepath.Join(env.cluster.WorkDir(), "prometheus-"+ns)
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	sanitized := strings.NewReplacer("-", "_", ".", "_", "/", "_").Replace(hashLabel)
	config := fmt.Sprintf(`global: {scrape_interval: 1s}
scrape_configs:
- job_name: podMonitor/%[1]s/web/0
  kubernetes_sd_configs:
  - role: pod
    kubeconfig_file: %[2]q
    namespaces: {names: [%[1]q]}
  relabel_configs:
  - {source_labels: [__meta_kubernetes_pod_label_app], regex: web, action: keep}
  - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: http, action: keep}
  - {source_labels: [__meta_kubernetes_pod_label_%[3]s], target_label: %[3]s}
  - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
  - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
`, ns, env.cluster.KubeconfigPath(), sanitized)
	Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644)).To(Succeed())
	prom, err := localcluster.StartProcess("prometheus-"+ns, os.Getenv("PROMETHEUS"), []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
	}, nil, filepath.Join(env.cluster.LogDir(), "prometheus-"+ns+".log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = prom.Stop() })
	api := &promapi.Client{Base: "http://" + addr + "/api/v1"}
	Eventually(func() error { _, err := api.Get(t.Context(), "/status/buildinfo"); return err }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Prometheus did not start; see prometheus-%s.log", ns)
	return prom
}

// waitCanaryDone waits until revision is the PodSet's last completed one,
// its canary past its last step, and all its pods available.
func waitCanaryDone(ctx context.Context, ns, name, revision string, replicas int32) {
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.LastCompletedRevision).To(Equal(revision))
		g.Expect(p.Status.Canary).NotTo(BeNil())
		g.Expect(p.Status.Canary.Step).To(BeEquivalentTo(len(p.Spec.UpdateStrategy.RollingUpdate.Canary.Steps)))
		g.Expect(p.Status.UpdatedAvailableReplicas).To(Equal(replicas))
		g.Expect(p.Status.Replicas).To(Equal(replicas))
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// podsOfRevision counts the PodSet's pods of a revision, terminating ones
// included.
func podsOfRevision(g Gomega, ctx context.Context, ns, name, hash string) int {
	var pods corev1.PodList
	g.Expect(env.admin.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{podSetLabel: name, appv1alpha1.LabelRevisionHash: hash})).To(Succeed())
	return len(pods.Items)
}

// analysisEvents are the names of the analysis runs of revision whose
// events of reason the PodSet has: "revision R, steps[N]: Phase: ...".
func analysisEvents(g Gomega, ctx context.Context, ns, name, reason, revision string) []string {
	events, err := env.clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var runs []string
	for _, e := range events.Items {
		rest, ok := strings.CutPrefix(e.Note, "revision "+revision+", ")
		if e.Regarding.Name != name || e.Reason != reason || !ok {
			continue
		}
		if run, _, ok := strings.Cut(rest, ":"); ok && !slices.Contains(runs, run) {
			runs = append(runs, run)
		}
	}
	return runs
}

// scenarioLog runs the load client through a Service for a series of
// scenarios, and gives each the failed requests of its own time window:
// from its change until its outcome. Those between the windows are the
// stable revision's own.
type scenarioLog struct {
	stop    context.CancelFunc
	done    chan *loadclient.Result
	rows    []*canaryScenario
	windows [][2]time.Time
}

func startScenarioLog(ctx context.Context, url string) *scenarioLog {
	ctx, stop := context.WithCancel(ctx)
	l := &scenarioLog{stop: stop, done: make(chan *loadclient.Result, 1)}
	go func() {
		l.done <- loadclient.Run(ctx, loadclient.Options{URL: url, PerSecond: zeroDowntimeRate, Timeout: 2 * time.Second})
	}()
	return l
}

// add records a scenario and its window.
func (l *scenarioLog) add(row *canaryScenario, start, end time.Time) {
	l.rows, l.windows = append(l.rows, row), append(l.windows, [2]time.Time{start, end})
}

// finish stops the client, gives each scenario its failures, prints the
// table of what controller ran them, and returns the failures outside
// every window: before the first (there should be none), and between
// them, by reason.
func (l *scenarioLog) finish(controller string) (before []loadclient.Failure, between map[string]int) {
	time.Sleep(2 * time.Second)
	l.stop()
	result := <-l.done
	between = map[string]int{}
	for _, f := range result.Failures() {
		i := slices.IndexFunc(l.windows, func(w [2]time.Time) bool { return !f.At.Before(w[0]) && f.At.Before(w[1]) })
		switch {
		case i >= 0:
			if l.rows[i].failures == nil {
				l.rows[i].failures = map[string]int{}
			}
			l.rows[i].failures[f.Reason]++
		case len(l.windows) == 0 || f.At.Before(l.windows[0][0]):
			before = append(before, f)
		default:
			between[f.Reason]++
		}
	}
	step("%s, the client: %s", controller, result)
	fmt.Printf("| %s: scenario | first failed measurement to retreat decided / last pod gone | took | most pods of the new revision | failed requests the client saw |\n|---|---|---|---|---|\n", controller)
	for _, row := range l.rows {
		retreat := "-"
		if row.retreated {
			retreat = row.badToRetreat.String() + " / " + row.badToGone.Round(100*time.Millisecond).String()
		}
		fmt.Printf("| %s | %s | %s | %d | %s |\n", row.name, retreat, row.took.Round(100*time.Millisecond), row.mostPods, describeFailures(row.failures))
	}
	fmt.Printf("| between the scenarios (the stable pods) | | | | %s |\n", describeFailures(between))
	return before, between
}

// describeFailures is "none", or each reason with its count.
func describeFailures(byReason map[string]int) string {
	if len(byReason) == 0 {
		return "none"
	}
	var parts []string
	for reason, n := range byReason {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
