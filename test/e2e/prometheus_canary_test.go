//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
	"github.com/example/podset-operator/test/promapi"
)

// canaryErrorRatio is the analysis query of the canary scenarios: the share
// of the canary revision's requests answered with 500 over the last
// interval.
const canaryErrorRatio = `sum(rate(http_requests_total{controller_revision_hash="{{canaryHash}}",code="500"}[{{interval}}]))` +
	` / sum(rate(http_requests_total{controller_revision_hash="{{canaryHash}}"}[{{interval}}]))`

// TestCanaryAnalysisWithPrometheus runs canary analyses through a real
// Prometheus, against the traffic of real servers (test/images/canary-app,
// as processes: kwok's pods run nothing). Prometheus scrapes one server per
// revision, labelled with the namespace and the revision's hash as a
// PodMonitor with podTargetLabels would label the pods; a client sends
// each of them 20 requests a second. The operator queries it through
// prom-label-proxy, run as in front of OpenShift's Thanos querier tenancy
// port (--analysis-namespace-parameter=namespace); the real-node scenarios
// query Prometheus directly.
//
//   - v2 answers 30% of requests with 500 while staying Ready: the analysis
//     fails at its first measurement, the rollout retreats (no autoRollback
//     set), and no more than the step's one pod ever runs v2;
//   - a retry of v2 starts its canary afresh: it is measured again, and
//     fails again;
//   - v3 answers every request: the analysis succeeds three times, and the
//     rollout goes on through every step. The operator is killed (SIGKILL)
//     after the first measurement; the next one goes on from the status
//     and takes no measurement twice;
//   - Prometheus stopped at an analysis step: the run holds on its errors,
//     and the rollout is never promoted.
func TestCanaryAnalysisWithPrometheus(t *testing.T) {
	RegisterTestingT(t)
	promBin, appBin := os.Getenv("PROMETHEUS"), os.Getenv("CANARY_APP")
	Expect(promBin).NotTo(BeEmpty(), "PROMETHEUS is not set: run the suite with `make test-e2e`")
	Expect(appBin).NotTo(BeEmpty(), "CANARY_APP is not set: run the suite with `make test-e2e`")
	ctx := t.Context()
	ns := newNamespace(t, "canary-analysis", nil)
	dir := filepath.Join(env.cluster.WorkDir(), "canary-prometheus")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())

	// The servers: v1 (stable), v2 (30% 500s), v3 (good).
	apps := map[string]string{}
	for _, v := range []struct{ version, share string }{{"v1", "0"}, {"v2", "0.3"}, {"v3", "0"}} {
		port, err := localcluster.FreePort()
		Expect(err).NotTo(HaveOccurred())
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		proc, err := localcluster.StartProcess("canary-app-"+v.version, appBin,
			[]string{"--listen=" + addr, "--version=" + v.version, "--error-share=" + v.share}, nil,
			filepath.Join(env.cluster.LogDir(), "canary-app-"+v.version+".log"))
		Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = proc.Stop() })
		apps[v.version] = addr
	}
	load := startCanaryLoad(ctx, apps)

	// Prometheus, scraping the servers from a file the test rewrites as
	// revisions appear.
	targets := filepath.Join(dir, "targets.json")
	writeTargets := func(byVersion map[string]string) {
		var groups []map[string]any
		for version, hash := range byVersion {
			groups = append(groups, map[string]any{
				"targets": []string{apps[version]},
				"labels":  map[string]string{"namespace": ns, "controller_revision_hash": hash, "version": version},
			})
		}
		data, err := json.Marshal(groups)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(targets+".tmp", data, 0o644)).To(Succeed())
		Expect(os.Rename(targets+".tmp", targets)).To(Succeed())
	}
	writeTargets(nil)
	config := fmt.Sprintf(`global: {scrape_interval: 1s}
scrape_configs:
- job_name: canary-app
  file_sd_configs: [{files: [%q], refresh_interval: 1s}]
`, targets)
	Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644)).To(Succeed())
	promPort, err := localcluster.FreePort()
	Expect(err).NotTo(HaveOccurred())
	prom, err := localcluster.StartProcess("prometheus-canary", promBin, []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort),
	}, nil, filepath.Join(env.cluster.LogDir(), "prometheus-canary.log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = prom.Stop() })
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	api := &promapi.Client{Base: promURL + "/api/v1"}
	Eventually(func() error { _, err := api.Get(ctx, "/status/buildinfo"); return err }).
		WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Prometheus did not start; see prometheus-canary.log")

	// The operator queries through prom-label-proxy, run with the arguments
	// OpenShift's cluster monitoring operator gives it behind the tenancy
	// port of the Thanos querier: the namespace comes from the URL
	// parameter "namespace", and a query's own other namespace is an error.
	proxyURL := startTenancyProxy(ctx, t, promURL)
	env.operator.stop()
	op := &operatorProcess{
		bin: env.operator.bin, kubeconfig: env.operator.kubeconfig,
		logPath: filepath.Join(env.cluster.LogDir(), "operator-canary.log"),
		args:    []string{"--analysis-prometheus-url=" + proxyURL, "--analysis-namespace-parameter=namespace"},
	}
	Expect(op.start()).To(Succeed())
	t.Cleanup(func() {
		op.stop()
		Expect(env.operator.start()).To(Succeed())
	})
	step("Prometheus on %s scraping canary-app v1, v2 (30%% 500s) and v3, behind prom-label-proxy on %s as OpenShift's tenancy port runs it; operator with --analysis-prometheus-url=%s --analysis-namespace-parameter=namespace", promURL, proxyURL, proxyURL)

	const name, replicas = "web", 4
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appv1alpha1.PodSetSpec{
			Replicas: ptr.To[int32](replicas),
			Image:    "registry.example.com/web:v1",
			UpdateStrategy: appv1alpha1.UpdateStrategy{RollingUpdate: &appv1alpha1.RollingUpdate{
				Canary: &appv1alpha1.Canary{Steps: []appv1alpha1.CanaryStep{
					{UpdatedReplicas: ptr.To[int32](1)},
					{Analysis: &appv1alpha1.Analysis{
						Query: canaryErrorRatio, SuccessCondition: "result < 0.01", FailureCondition: "result > 0.05",
						IntervalSeconds: ptr.To[int32](10), Count: ptr.To[int32](3),
					}},
					{UpdatedPercent: ptr.To[int32](50)},
				}},
			}},
		},
	}
	Expect(env.admin.Create(ctx, ps)).To(Succeed())
	stable := waitForCanaryRevision(ctx, ns, name, "", replicas)
	hashOf := func(revision string) string { return strings.TrimPrefix(revision, name+"-") }

	// v2: fails its first measurement.
	setPodSetImage(ctx, ns, name, "registry.example.com/web:v2")
	v2 := waitForNewRevision(ctx, ns, name, stable)
	writeTargets(map[string]string{"v1": hashOf(stable), "v2": hashOf(v2)})
	stepStart, failedBefore := time.Now(), load.failedOf("v2")
	mostUpdated := watchMostPods(ctx, ns, name, hashOf(v2))
	var rb *appv1alpha1.AutoRollbackStatus
	var run appv1alpha1.AnalysisRunStatus
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.AutoRollback).NotTo(BeNil())
		rb = p.Status.AutoRollback
		g.Expect(p.Status.Canary.Analyses).To(HaveLen(1))
		run = p.Status.Canary.Analyses[0]
		g.Expect(p.Status.UpdatedReplicas).To(BeZero(), "every pod back on v1")
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(rb.Trigger).To(Equal("AnalysisFailed"))
	Expect(rb.FailedRevision).To(Equal(v2))
	Expect(rb.Revision).To(Equal(stable))
	Expect(rb.Message).To(ContainSubstring(`met failureCondition "result > 0.05"`))
	Expect(rb.Message).To(ContainSubstring(fmt.Sprintf(`namespace=%q`, ns)), "the message names the query as sent")
	Expect(run.Phase).To(Equal("Failed"))
	Expect(run.Measurements).NotTo(BeEmpty())
	first := run.Measurements[0]
	Expect(first.Phase).To(Equal("Failed"))
	Expect(mostUpdated()).To(BeNumerically("<=", 1), "more pods than the step's one ran v2")
	// Status times are to the second.
	step("v2 (30%% 500s): measured %s (%s) %s into the step; retreat decided %s after that measurement; at most %d pod ran v2; %d requests to the v2 server failed from the step's start to the retreat's end",
		first.Value, first.Phase, first.Time.Sub(stepStart).Round(time.Second), rb.Time.Sub(first.Time.Time), mostUpdated(), load.failedOf("v2")-failedBefore)

	// A retry of v2 (its retreat complete): the canary starts afresh and
	// measures again, and v2 fails again.
	Eventually(func(g Gomega) {
		g.Expect(getPodSet(g, ctx, ns, name).Status.AutoRollback.Complete).To(BeTrue())
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	retryPatch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, appv1alpha1.AnnotationRolloutRetry, appv1alpha1.RolloutRetryValue(rb))
	Expect(env.admin.Patch(ctx, &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		client.RawPatch(types.MergePatchType, []byte(retryPatch)))).To(Succeed())
	retried := time.Now()
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.AutoRollback).NotTo(BeNil())
		g.Expect(p.Status.AutoRollback.Time.After(rb.Time.Time)).To(BeTrue(), "a new retreat")
		g.Expect(p.Status.AutoRollback.Trigger).To(Equal("AnalysisFailed"))
		run = p.Status.Canary.Analyses[0]
		g.Expect(run.Measurements).To(HaveLen(1))
		g.Expect(run.Measurements[0].Time.Time).To(BeTemporally(">=", retried.Truncate(time.Second)), "measured anew")
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(mostUpdated()).To(BeNumerically("<=", 1), "more pods than the step's one ran v2")
	step("v2 retried: measured anew (%s, %s) and retreated again; still at most %d pod ran v2", run.Measurements[0].Value, run.Measurements[0].Phase, mostUpdated())

	// v3: three good measurements, then every step.
	setPodSetImage(ctx, ns, name, "registry.example.com/web:v3")
	v3 := waitForNewRevision(ctx, ns, name, v2)
	writeTargets(map[string]string{"v1": hashOf(stable), "v3": hashOf(v3)})
	start := time.Now()
	// The operator killed (SIGKILL) once the run has its first
	// measurement: the new one goes on from the status, and takes no
	// measurement twice.
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.Canary).NotTo(BeNil())
		g.Expect(p.Status.Canary.Revision).To(Equal(v3))
		g.Expect(p.Status.Canary.Analyses).To(HaveLen(1))
		g.Expect(p.Status.Canary.Analyses[0].Measurements).To(HaveLen(1))
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	op.kill()
	Expect(op.start()).To(Succeed())
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.LastCompletedRevision).To(Equal(v3))
		g.Expect(p.Status.Canary.Step).To(BeEquivalentTo(3))
		run = p.Status.Canary.Analyses[0]
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(run.Phase).To(Equal("Successful"))
	Expect(run.Successful).To(BeEquivalentTo(3))
	Expect(run.Failed + run.Inconclusive).To(BeZero())
	Expect(run.Measurements).To(HaveLen(3))
	for i := 1; i < len(run.Measurements); i++ {
		// Times are to the second: an interval of 10 s, less rounding.
		Expect(run.Measurements[i].Time.Sub(run.Measurements[i-1].Time.Time)).To(BeNumerically(">=", 9*time.Second),
			"measurements %d and %d were taken less than an interval apart: %v", i-1, i, run.Measurements)
	}
	step("v3 (no 500s), the operator SIGKILLed after the first measurement: %d measurements successful, none twice, promoted through every step in %s; %d requests to the v3 server failed",
		run.Successful, time.Since(start).Round(time.Second), load.failedOf("v3"))

	// Prometheus stopped in the middle of an analysis: every measurement
	// is an error, the run holds at its consecutive-error limit (1 here,
	// to keep the scenario short), and the rollout is never promoted.
	patch := `{"spec":{"image":"registry.example.com/web:v1","updateStrategy":{"rollingUpdate":{"canary":{"steps":[` +
		`{"updatedReplicas":1},{"analysis":{"query":` + strconvQuote(canaryErrorRatio) + `,"successCondition":"result < 0.01","intervalSeconds":10,"consecutiveErrorLimit":1}},{"updatedPercent":50}]}}}}}`
	Expect(env.admin.Patch(ctx, &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
	v1again := waitForNewRevision(ctx, ns, name, v3)
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.Canary.Revision).To(Equal(v1again))
		g.Expect(p.Status.Canary.Step).To(BeEquivalentTo(1), "at the analysis")
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	run, held := stopPrometheusUntilHeld(ctx, prom, ns, name, v3, "Prometheus answered with an error (server_error): server error: 502")
	step("Prometheus stopped at the analysis step: prom-label-proxy answered 502; held (AnalysisError) %s later after %d errors in a row, never promoted", held.Round(time.Second), run.Errors)
}

// stopPrometheusUntilHeld stops Prometheus while the PodSet's rollout is at
// an analysis step of one updated pod whose run bears one error in a row,
// and waits until the run holds the rollout on its errors (AnalysisError).
// It returns the run and how long after the stop it held, once the held
// rollout has moved no pod, and completed nothing, for 5 s (lastCompleted
// is the revision before it). The last measurement's message says why:
// because (Prometheus could not be reached, or the 502 of a proxy in front
// of it).
func stopPrometheusUntilHeld(ctx context.Context, prom *localcluster.Process, ns, name, lastCompleted, because string) (appv1alpha1.AnalysisRunStatus, time.Duration) {
	Expect(prom.Stop()).To(Succeed())
	stopped := time.Now()
	var run appv1alpha1.AnalysisRunStatus
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(progressingOf(p)).To(Equal(appv1alpha1.ReasonAnalysisError))
		run = p.Status.Canary.Analyses[0]
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	held := time.Since(stopped)
	Expect(run.Phase).To(Equal("Error"))
	Expect(run.Errors).To(BeEquivalentTo(2))
	Expect(run.Measurements[len(run.Measurements)-1].Message).To(ContainSubstring(because))
	Consistently(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.UpdatedReplicas).To(BeEquivalentTo(1), "a held rollout moves no pod")
		g.Expect(p.Status.LastCompletedRevision).To(Equal(lastCompleted))
	}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
	return run, held
}

func strconvQuote(s string) string {
	b, err := json.Marshal(s)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// progressingOf is the reason of the PodSet's Progressing condition.
func progressingOf(p *appv1alpha1.PodSet) string {
	for _, c := range p.Status.Conditions {
		if c.Type == appv1alpha1.ConditionProgressing {
			return c.Reason
		}
	}
	return ""
}

// canaryLoad sends each server 20 requests a second and counts the failed
// ones by version.
type canaryLoad struct {
	failed map[string]*atomic.Int64
}

func startCanaryLoad(ctx context.Context, apps map[string]string) *canaryLoad {
	l := &canaryLoad{failed: map[string]*atomic.Int64{}}
	client := &http.Client{Timeout: 2 * time.Second}
	for version, addr := range apps {
		failed := &atomic.Int64{}
		l.failed[version] = failed
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				resp, err := client.Get("http://" + addr + "/")
				if err != nil {
					failed.Add(1)
					continue
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		}()
	}
	return l
}

func (l *canaryLoad) failedOf(version string) int64 {
	return l.failed[version].Load()
}

// waitForCanaryRevision waits until the PodSet's n pods run one revision,
// other than not, and returns it.
func waitForCanaryRevision(ctx context.Context, ns, name, not string, n int32) string {
	var revision string
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(p.Status.UpdatedAvailableReplicas).To(Equal(n))
		g.Expect(p.Status.UpdateRevision).NotTo(Equal(not))
		revision = p.Status.UpdateRevision
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return revision
}

// waitForNewRevision waits until the PodSet's update revision is no longer
// old, and returns it.
func waitForNewRevision(ctx context.Context, ns, name, old string) string {
	var revision string
	Eventually(func(g Gomega) {
		p := getPodSet(g, ctx, ns, name)
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(p.Status.UpdateRevision).NotTo(Equal(old))
		revision = p.Status.UpdateRevision
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return revision
}

func setPodSetImage(ctx context.Context, ns, name, image string) {
	patch := fmt.Sprintf(`{"spec":{"image":%q}}`, image)
	Expect(env.admin.Patch(ctx, &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// watchMostPods polls the PodSet's pods that carry the revision hash, not
// terminating, until ctx ends, and returns what reports the most it saw.
func watchMostPods(ctx context.Context, ns, name, hash string) func() int {
	return watchMostPodsLabelled(ctx, ns, client.MatchingLabels{podSetLabel: name, appv1alpha1.LabelRevisionHash: hash})
}

// watchMostPodsLabelled polls the pods of ns that carry labels, not
// terminating, until ctx ends, and returns what reports the most it saw.
func watchMostPodsLabelled(ctx context.Context, ns string, labels client.MatchingLabels) func() int {
	var most atomic.Int32
	go func() {
		for ctx.Err() == nil {
			var pods corev1.PodList
			if env.admin.List(ctx, &pods, client.InNamespace(ns), labels) == nil {
				n := int32(0)
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil {
						n++
					}
				}
				if n > most.Load() {
					most.Store(n)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int { return int(most.Load()) }
}

// startTenancyProxy starts prom-label-proxy (PROM_LABEL_PROXY) in front of
// the Prometheus at promURL, with the arguments OpenShift's cluster
// monitoring operator gives it in the Thanos querier's pod, and returns its
// URL. Before it is used, it checks that the proxy enforces what the
// operator relies on: a query without the namespace parameter is refused,
// and so is one whose own matcher names another namespace.
func startTenancyProxy(ctx context.Context, t *testing.T, promURL string) string {
	bin := os.Getenv("PROM_LABEL_PROXY")
	Expect(bin).NotTo(BeEmpty(), "PROM_LABEL_PROXY is not set: run the suite with `make test-e2e`")
	port, err := localcluster.FreePort()
	Expect(err).NotTo(HaveOccurred())
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	proc, err := localcluster.StartProcess("prom-label-proxy", bin, []string{
		"--insecure-listen-address=" + addr, "--upstream=" + promURL,
		"--label=namespace", "--enable-label-apis", "--error-on-replace",
	}, nil, filepath.Join(env.cluster.LogDir(), "prom-label-proxy.log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = proc.Stop() })
	proxyURL := "http://" + addr
	query := func(params url.Values) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxyURL+"/api/v1/query?"+params.Encode(), nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	Eventually(func() int {
		code, _ := query(url.Values{"query": {"up"}, "namespace": {"tenant-a"}})
		return code
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Equal(http.StatusOK), "prom-label-proxy did not answer; see prom-label-proxy.log")
	code, body := query(url.Values{"query": {"up"}})
	Expect(code).To(Equal(http.StatusBadRequest), "a query without the namespace parameter: %s", body)
	code, body = query(url.Values{"query": {`up{namespace="tenant-b"}`}, "namespace": {"tenant-a"}})
	Expect(code).To(Equal(http.StatusBadRequest), "a query naming another namespace: %s", body)
	return proxyURL
}
