// Package analysisconfig is the manager's configuration of the Prometheus
// that canary analyses query (docs/canary-analysis.md): flags whose
// defaults come from environment variables, since OLM lets a cluster admin
// set a Subscription's or a ClusterExtension's environment, not the
// manager's arguments.
package analysisconfig

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/common/config"

	"github.com/example/podset-operator/controllers"
	"github.com/example/podset-operator/controllers/analysis"
)

// Environment variables that give the flags' defaults.
const (
	EnvURL                = "ANALYSIS_PROMETHEUS_URL"
	EnvCAFile             = "ANALYSIS_PROMETHEUS_CA_FILE"
	EnvBearerTokenFile    = "ANALYSIS_PROMETHEUS_BEARER_TOKEN_FILE"
	EnvCertFile           = "ANALYSIS_PROMETHEUS_CERT_FILE"
	EnvKeyFile            = "ANALYSIS_PROMETHEUS_KEY_FILE"
	EnvNamespaceLabel     = "ANALYSIS_NAMESPACE_LABEL"
	EnvNamespaceParameter = "ANALYSIS_NAMESPACE_PARAMETER"
	EnvQueryTimeout       = "ANALYSIS_QUERY_TIMEOUT"
)

// Defaults of the flags without an environment variable set.
const (
	DefaultQueryTimeout     = 10 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

// Config is what the flags set.
type Config struct {
	URL, CAFile, BearerTokenFile, CertFile, KeyFile string
	NamespaceLabel, NamespaceParameter              string
	QueryTimeout                                    time.Duration
	MaxResponseBytes                                int64
	QuerySlots                                      int
}

// Bind registers the flags on fs, their defaults read from the
// environment (getenv, os.Getenv when nil). It fails on an environment
// variable that does not parse.
func (c *Config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	timeout := DefaultQueryTimeout
	if v := getenv(EnvQueryTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", EnvQueryTimeout, v, err)
		}
		timeout = d
	}
	label := getenv(EnvNamespaceLabel)
	if label == "" {
		label = controllers.DefaultAnalysisNamespaceLabel
	}
	fs.StringVar(&c.URL, "analysis-prometheus-url", getenv(EnvURL), "The base URL of the Prometheus (or Thanos querier) that canary analyses query, e.g. https://thanos-querier.openshift-monitoring.svc:9092; empty: none, and an analysis step holds the rollout. Env "+EnvURL+".")
	fs.StringVar(&c.CAFile, "analysis-prometheus-ca-file", getenv(EnvCAFile), "The CA bundle that Prometheus's serving certificate is checked against. Env "+EnvCAFile+".")
	fs.StringVar(&c.BearerTokenFile, "analysis-prometheus-bearer-token-file", getenv(EnvBearerTokenFile), "A file holding the bearer token sent to Prometheus, read again on every query (a projected ServiceAccount token). Env "+EnvBearerTokenFile+".")
	fs.StringVar(&c.CertFile, "analysis-prometheus-cert-file", getenv(EnvCertFile), "A client certificate presented to Prometheus, with --analysis-prometheus-key-file. Env "+EnvCertFile+".")
	fs.StringVar(&c.KeyFile, "analysis-prometheus-key-file", getenv(EnvKeyFile), "The client certificate's key. Env "+EnvKeyFile+".")
	fs.StringVar(&c.NamespaceLabel, "analysis-namespace-label", label, "The label that carries a series' namespace; every query is confined to its PodSet's namespace by it. Env "+EnvNamespaceLabel+".")
	fs.StringVar(&c.NamespaceParameter, "analysis-namespace-parameter", getenv(EnvNamespaceParameter), "A URL parameter that also carries the namespace on every query: namespace, for the tenancy port of OpenShift's Thanos querier. Env "+EnvNamespaceParameter+".")
	fs.DurationVar(&c.QueryTimeout, "analysis-query-timeout", timeout, "How long one analysis query may take, from sending it to reading the answer. Env "+EnvQueryTimeout+".")
	fs.Int64Var(&c.MaxResponseBytes, "analysis-max-response-bytes", DefaultMaxResponseBytes, "The longest answer to an analysis query that is read.")
	fs.IntVar(&c.QuerySlots, "analysis-max-concurrent-queries", controllers.DefaultAnalysisQuerySlots, "How many analysis queries are sent at once; the others wait, never a reconcile.")
	return nil
}

// Querier is the Prometheus the flags configure; nil when no URL is set.
func (c *Config) Querier() (analysis.Querier, error) {
	if c.URL == "" {
		return nil, nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--analysis-prometheus-url %q: want an http or https URL", c.URL)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("--analysis-prometheus-cert-file and --analysis-prometheus-key-file go together")
	}
	httpConfig := config.DefaultHTTPClientConfig
	httpConfig.TLSConfig = config.TLSConfig{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
	if c.BearerTokenFile != "" {
		httpConfig.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: c.BearerTokenFile}
	}
	q, err := analysis.NewPrometheus(analysis.PrometheusConfig{
		URL: c.URL, HTTP: httpConfig, NamespaceLabel: c.NamespaceLabel, NamespaceParameter: c.NamespaceParameter,
		Timeout: c.QueryTimeout, MaxResponseBytes: c.MaxResponseBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("the analysis Prometheus: %w", err)
	}
	return q, nil
}

// String describes the configuration for the manager's log, without
// secrets (the files' paths only).
func (c *Config) String() string {
	if c.URL == "" {
		return "none"
	}
	return c.URL + " (namespace label " + strconv.Quote(c.NamespaceLabel) + ", parameter " + strconv.Quote(c.NamespaceParameter) + ", timeout " + c.QueryTimeout.String() + ")"
}
