//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/example/podset-operator/controllers/analysis"
	"github.com/example/podset-operator/internal/monitoring"
	"github.com/example/podset-operator/test/localcluster"
	"github.com/example/podset-operator/test/promapi"
)

// metricsJob is the job name of the operator's metrics in Prometheus: the
// name of the metrics Service, which is what the ServiceMonitor makes it,
// and what the alerts select on.
const metricsJob = "podset-operator-controller-manager-metrics-service"

// TestMetricsWithPrometheus runs a real Prometheus (Debian's, the version
// the Makefile pins) against the operator's authenticated HTTPS metrics
// endpoint, as the ServiceMonitor asks: a ServiceAccount token bound to the
// metrics-reader ClusterRole. It loads the shipped alerting rules (with
// their `for` durations cut to 0, which promtool's unit tests cover), drives
// a PodSet into a quota failure and out of it, and follows the metrics and
// the PodSetReplicaFailure alert through Prometheus's HTTP API. It runs
// after TestOperator, whose least-privilege check must see only that suite.
func TestMetricsWithPrometheus(t *testing.T) {
	RegisterTestingT(t)
	promBin := os.Getenv("PROMETHEUS")
	Expect(promBin).NotTo(BeEmpty(), "PROMETHEUS is not set: run the suite with `make test-e2e`")

	// A scraper allowed to read the metrics, and one that is not.
	monitoring := newNamespace(t, "monitoring", nil)
	for _, sa := range []string{"prometheus", "stranger"} {
		Expect(env.admin.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: monitoring, Name: sa}})).To(Succeed())
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "podset-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: monitoring, Name: "prometheus"}},
	}
	Expect(env.admin.Create(t.Context(), binding)).To(Succeed())
	t.Cleanup(func() { _ = env.admin.Delete(t.Context(), binding) })
	token := func(sa string) string {
		cfg, err := env.cluster.ServiceAccountConfig(t.Context(), monitoring, sa, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		return cfg.BearerToken
	}
	allowed, stranger := token("prometheus"), token("stranger")

	// The operator, this time with its metrics served as in a cluster:
	// HTTPS, authenticated and authorized by the API server.
	port, err := localcluster.FreePort()
	Expect(err).NotTo(HaveOccurred())
	env.operator.stop()
	op := &operatorProcess{
		bin:        env.operator.bin,
		kubeconfig: env.operator.kubeconfig,
		logPath:    filepath.Join(env.cluster.LogDir(), "operator-metrics.log"),
		args:       []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port)},
	}
	Expect(op.start()).To(Succeed())
	t.Cleanup(func() {
		op.stop()
		Expect(env.operator.start()).To(Succeed())
	})
	metricsURL := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	// The manager's certificate is self-signed unless one is mounted, as
	// the ServiceMonitor's insecureSkipVerify says.
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the manager's own self-signed certificate
	get := func(bearer string) (int, error) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, metricsURL, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := insecure.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	Eventually(func() (int, error) { return get(allowed) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusOK), "the metrics endpoint with an allowed token")
	Expect(get("")).To(Equal(http.StatusUnauthorized), "no token")
	Expect(get(stranger)).To(Equal(http.StatusForbidden), "a token whose ServiceAccount lacks the metrics-reader role")
	step("metrics endpoint: 200 with the metrics-reader token, 401 without a token, 403 for another ServiceAccount")

	prom := startPrometheus(t, promBin, port, allowed)
	ctx := t.Context()

	// The sample, a PodSet of 3 from a pod template, in a namespace whose
	// quota allows one pod.
	ns := newNamespace(t, "metrics-quota", nil)
	setQuota(t, ns, "pods", 1)
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	sel := fmt.Sprintf(`namespace=%q, podset=%q`, ns, sample)

	Eventually(func() (float64, error) { return prom.Value(ctx, fmt.Sprintf(`up{job=%q}`, metricsJob)) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(1.0), "Prometheus scrapes the operator")
	// The manager's own garbage collector target when GOGC is not set
	// (main.go, defaultGCPercent), as Go's runtime reports it.
	Expect(prom.Value(ctx, fmt.Sprintf(`go_gc_gogc_percent{job=%q}`, metricsJob))).To(Equal(50.0), "GOGC unset: the manager's default of 50")
	Eventually(func() (float64, error) { return prom.Value(ctx, `podset_spec_replicas{`+sel+`}`) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(3.0))
	Eventually(func() (float64, error) {
		return prom.Value(ctx, `podset_status_condition{`+sel+`, condition="ReplicaFailure", status="true"}`)
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(1.0))
	Eventually(func() ([]string, error) { return prom.firing(ctx, ns) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(ContainElement("PodSetReplicaFailure"))
	// One pod, as the quota allows: it may come a while after the first
	// refusal. For up to a minute after a CRD is installed, the API server's
	// OwnerReferencesPermissionEnforcement refuses every pod a PodSet owns
	// ("cannot find RESTMapping") until its discovery learns the new kind;
	// the operator retries every second (OwnerMappingRetryAfter), and ReplicaFailure
	// keeps the first refusal's message while refusals go on.
	Eventually(func() (float64, error) { return prom.Value(ctx, `podset_status_replicas{`+sel+`}`) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(1.0))
	Expect(prom.Value(ctx, `sum(podset_operator_pod_creates_total{result="failed"})`)).To(BeNumerically(">", 0))
	step("quota refusing pods: ReplicaFailure true in Prometheus, PodSetReplicaFailure firing")

	// The quota lifted: the PodSet converges, the alert resolves.
	setQuota(t, ns, "pods", 100)
	Eventually(func() (float64, error) { return prom.Value(ctx, `podset_status_available_replicas{`+sel+`}`) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(3.0))
	Eventually(func() (float64, error) {
		return prom.Value(ctx, `podset_status_condition{`+sel+`, condition="ReplicaFailure", status="false"}`)
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(1.0))
	Eventually(func() ([]string, error) { return prom.firing(ctx, ns) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).ShouldNot(ContainElement("PodSetReplicaFailure"))
	step("quota lifted: 3 available, ReplicaFailure false, the alert resolved")

	measureAgainstPrometheus(t, prom, ns, sel)

	// A PodSet's series go with it.
	mustKubectl(t, "delete", "podset", sample, "-n", ns)
	Eventually(func() (float64, error) { return prom.Value(ctx, `count(podset_spec_replicas{`+sel+`}) or vector(0)`) }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Equal(0.0))
}

// measureAgainstPrometheus takes canary-analysis measurements
// (controllers/analysis) of the PodSet's series in ns through the real
// Prometheus: the answers it judges are Prometheus's own, and a query is
// confined to the namespace it is measured for.
func measureAgainstPrometheus(t *testing.T, prom *prometheus, ns, sel string) {
	querier, err := analysis.NewPrometheus(analysis.PrometheusConfig{
		URL: strings.TrimSuffix(prom.Base, "/api/v1"), NamespaceLabel: "namespace",
		Timeout: 10 * time.Second, MaxResponseBytes: 1 << 20,
	})
	Expect(err).NotTo(HaveOccurred())
	atLeast3, err := analysis.CompileConditions("result >= 3.0", "")
	Expect(err).NotTo(HaveOccurred())
	podset := fmt.Sprintf("podset=%q", sample)
	for _, tc := range []struct {
		namespace, query string
		phase            analysis.Phase
		value, message   string
	}{
		{ns, `podset_status_available_replicas{` + podset + `}`, analysis.Successful, "3", "3 met successCondition"},
		{ns, `podset_status_available_replicas{` + podset + `} - 1`, analysis.Failed, "2", "2 did not meet successCondition"},
		{ns, `podset_status_available_replicas{` + podset + `} * 0 / 0`, analysis.Inconclusive, "NaN", "NaN"},
		{ns, `podset_status_available_replicas{` + podset + `} / 0`, analysis.Successful, "+Inf", "+Inf met"},
		{ns, `podset_status_condition{` + podset + `}`, analysis.Error, "", "series, and a condition judges one number"},
		{ns, `podset_status_available_replicas{` + podset + `}[1m]`, analysis.Error, "", "range vector"},
		// The same series, measured for another namespace, is not there.
		{env.operatorNS, `podset_status_available_replicas{` + podset + `}`, analysis.Inconclusive, "", "no series"},
		{env.operatorNS, `podset_status_available_replicas{` + sel + `}`, analysis.Error, "", "refused: the query selects series outside"},
		// A selector in an aggregation's parameter is confined too.
		{ns, `topk(scalar(podset_status_available_replicas{` + podset + `}), podset_status_available_replicas{` + podset + `})`, analysis.Successful, "3", "3 met"},
		{env.operatorNS, `quantile(scalar(sum(podset_status_available_replicas{` + sel + `})), vector(1))`, analysis.Error, "", "refused: the query selects series outside"},
	} {
		m := analysis.Measure(t.Context(), querier, tc.namespace, tc.query, atLeast3)
		Expect(m.Phase).To(Equal(tc.phase), "%s for %s: %+v", tc.query, tc.namespace, m)
		Expect(m.Value).To(Equal(tc.value), "%s for %s", tc.query, tc.namespace)
		Expect(m.Message).To(ContainSubstring(tc.message), "%s for %s", tc.query, tc.namespace)
	}
	step("canary analysis through Prometheus: one value judged, NaN inconclusive, several series and ranges errors, other namespaces unseen or refused")
}

// prometheus is the Prometheus that startPrometheus runs, through its HTTP
// API.
type prometheus struct{ *promapi.Client }

// startPrometheus runs Prometheus scraping the operator's metrics on port
// every second with the bearer token, and evaluating the shipped rules
// every second with their `for` durations cut to 0.
func startPrometheus(t *testing.T, bin string, metricsPort int, bearer string) *prometheus {
	dir := filepath.Join(env.cluster.WorkDir(), "prometheus")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "token"), []byte(bearer), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), immediateRules(), 0o644)).To(Succeed())
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
- job_name: %s
  honor_labels: true
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: token}
  static_configs: [{targets: ["127.0.0.1:%d"], labels: {namespace: %s}}]
`, metricsJob, metricsPort, env.operatorNS)
	Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644)).To(Succeed())
	port, err := localcluster.FreePort()
	Expect(err).NotTo(HaveOccurred())
	proc, err := localcluster.StartProcess("prometheus", bin, []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
	}, nil, filepath.Join(env.cluster.LogDir(), "prometheus.log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = proc.Stop() })
	p := &prometheus{&promapi.Client{Base: fmt.Sprintf("http://127.0.0.1:%d/api/v1", port)}}
	Eventually(func() error { _, err := p.Get(t.Context(), "/status/buildinfo"); return err }).
		WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Prometheus did not start; see prometheus.log")
	step("Prometheus up on 127.0.0.1:%d, scraping https://127.0.0.1:%d/metrics with the metrics-reader token", port, metricsPort)
	return p
}

// immediateRules is the PrometheusRule the manager applies (package
// monitoring embeds it) as a rule file, each rule's `for` set to 0s.
func immediateRules() []byte {
	data := monitoring.PrometheusRuleYAML
	var rule struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	Expect(yaml.Unmarshal(data, &rule)).To(Succeed())
	Expect(rule.Spec.Groups).NotTo(BeEmpty())
	for _, g := range rule.Spec.Groups {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			if m, ok := r.(map[string]any); ok {
				m["for"] = "0s"
			}
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	Expect(err).NotTo(HaveOccurred())
	return out
}

// firing lists the alerts firing for namespace ns.
func (p *prometheus) firing(ctx context.Context, ns string) ([]string, error) {
	alerts, err := p.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range alerts {
		if a.State == "firing" && a.Labels["namespace"] == ns {
			names = append(names, a.Labels["alertname"])
		}
	}
	return names, nil
}
