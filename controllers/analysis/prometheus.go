package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// PrometheusConfig is the one Prometheus every analysis queries. Only the
// cluster admin sets it (the manager's flags); no PodSet can point the
// operator elsewhere.
type PrometheusConfig struct {
	// URL is Prometheus's (or a Thanos querier's) base URL, such as
	// https://thanos-querier.openshift-monitoring.svc:9092.
	URL string
	// HTTP holds the CA, client certificate and credentials, in
	// Prometheus's own configuration form; files are read again on every
	// request, so a rotated token is taken up.
	HTTP config.HTTPClientConfig
	// NamespaceLabel is the label that carries a series' namespace
	// (namespace, as the Prometheus Operator's and OpenShift's scrape
	// configurations set it).
	NamespaceLabel string
	// NamespaceParameter, when set, is the URL parameter that also carries
	// the namespace on every query: "namespace" for the tenancy port of
	// Thanos querier (OpenShift's thanos-querier:9092), which confines the
	// query itself and checks that the caller may read that namespace.
	NamespaceParameter string
	// Timeout bounds one query, from sending it to reading its answer.
	Timeout time.Duration
	// MaxResponseBytes bounds the answer the operator reads.
	MaxResponseBytes int64
}

// maxResponseBytes bounds PrometheusConfig.MaxResponseBytes.
const maxResponseBytes = 64 << 20

// ErrWarnings is what Query returns, wrapped, for an answer that came with
// warnings: a partial answer (a Thanos store or a remote-read endpoint was
// down) is no evidence to judge a canary by.
var ErrWarnings = errors.New("Prometheus answered with warnings")

// Prometheus is the Querier the manager uses.
type Prometheus struct {
	cfg    PrometheusConfig
	client api.Client
}

// NewPrometheus returns the Querier for cfg.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	if cfg.NamespaceLabel == "" {
		return nil, errors.New("no namespace label to confine queries with")
	}
	if cfg.Timeout <= 0 || cfg.MaxResponseBytes <= 0 || cfg.MaxResponseBytes > maxResponseBytes {
		return nil, fmt.Errorf("a query timeout and a bound on the answer (at most %d bytes) are needed", maxResponseBytes)
	}
	if err := cfg.HTTP.Validate(); err != nil {
		return nil, err
	}
	rt, err := config.NewRoundTripperFromConfig(cfg.HTTP, "podset-analysis")
	if err != nil {
		return nil, err
	}
	client, err := api.NewClient(api.Config{
		Address: cfg.URL,
		Client: &http.Client{
			Transport: boundedAnswers{next: rt, limit: cfg.MaxResponseBytes},
			// The admin's address is the one queried: a redirect
			// elsewhere is an error, not a second request.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	})
	if err != nil {
		return nil, err
	}
	return &Prometheus{cfg: cfg, client: client}, nil
}

// Query confines query to namespace and sends it as an instant query. It
// asks for at most two series: a condition judges one number, and two are
// enough to say there were several.
func (p *Prometheus) Query(ctx context.Context, namespace, query string) (model.Value, error) {
	confined, err := Confine(query, p.cfg.NamespaceLabel, namespace)
	if err != nil {
		return nil, err
	}
	client := p.client
	if p.cfg.NamespaceParameter != "" {
		client = tenantClient{Client: client, parameter: p.cfg.NamespaceParameter, namespace: namespace}
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	v, warnings, err := promv1.NewAPI(client).Query(ctx, confined, time.Now(),
		promv1.WithTimeout(p.cfg.Timeout), promv1.WithLimit(2))
	if err == nil && len(warnings) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrWarnings, strings.Join(warnings, "; "))
	}
	return v, err
}

// tenantClient adds the namespace to the URL of every request, and sends a
// query as a GET: the tenancy proxy reads the namespace from the URL only,
// and authorizes a POST as the verb create, which a reader of
// pods.metrics.k8s.io is not allowed (the client would then repeat it as a
// GET).
type tenantClient struct {
	api.Client
	parameter, namespace string
}

func (c tenantClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	q := req.URL.Query()
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, nil, err
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, nil, err
		}
		for k, v := range form {
			q[k] = v
		}
		get, err := http.NewRequestWithContext(req.Context(), http.MethodGet, req.URL.String(), nil)
		if err != nil {
			return nil, nil, err
		}
		req = get
	}
	q.Set(c.parameter, c.namespace)
	req.URL.RawQuery = q.Encode()
	return c.Client.Do(ctx, req)
}

// boundedAnswers fails a response whose body is longer than limit, so that
// a query matching many series cannot make the operator read them all.
type boundedAnswers struct {
	next  http.RoundTripper
	limit int64
}

func (b boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, limited: io.LimitReader(resp.Body, b.limit+1), limit: b.limit}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	limited     io.Reader
	read, limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.limited.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n, fmt.Errorf("the answer is longer than %d bytes", b.limit)
	}
	return n, err
}
