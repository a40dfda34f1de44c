package analysis

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/config"
)

// prometheusAPI answers /api/v1/query as Prometheus does, with the status
// code and body a test gives, and records the requests it gets.
type prometheusAPI struct {
	code     int
	body     string
	delay    time.Duration
	noPost   bool
	requests atomic.Int32
	last     atomic.Pointer[http.Request]
	form     atomic.Pointer[map[string][]string]
}

func (p *prometheusAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if p.noPost && r.Method == http.MethodPost {
		// As the tenancy port's kube-rbac-proxy answers a POST (verb
		// create) from a caller allowed to get pods.metrics.k8s.io only.
		w.WriteHeader(http.StatusForbidden)
		return
	}
	_ = r.ParseForm()
	form := map[string][]string(r.Form)
	p.form.Store(&form)
	p.last.Store(r)
	if r.URL.Path != "/api/v1/query" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	select {
	case <-time.After(p.delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(p.code)
	_, _ = w.Write([]byte(p.body))
}

func vectorBody(values ...string) string {
	var series []string
	for i, v := range values {
		series = append(series, `{"metric":{"pod":"web-`+string(rune('a'+i))+`"},"value":[1765000000.123,"`+v+`"]}`)
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(series, ",") + `]}}`
}

func newPrometheus(t *testing.T, url string, edit func(*PrometheusConfig)) *Prometheus {
	t.Helper()
	cfg := PrometheusConfig{URL: url, NamespaceLabel: "namespace", Timeout: 2 * time.Second, MaxResponseBytes: 1 << 20}
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewPrometheus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const errorRatio = `sum(rate(http_requests_total{code=~"5.."}[1m])) / sum(rate(http_requests_total[1m]))`

func TestMeasureAgainstPrometheusAnswers(t *testing.T) {
	c := conditions(t, "result < 0.05", "")
	for _, tc := range []struct {
		name    string
		api     *prometheusAPI
		edit    func(*PrometheusConfig)
		phase   Phase
		message string
	}{
		{name: "one series", api: &prometheusAPI{code: 200, body: vectorBody("0.01")}, phase: Successful, message: "0.01 met successCondition"},
		{name: "one series over the bound", api: &prometheusAPI{code: 200, body: vectorBody("0.25")}, phase: Failed},
		{name: "a scalar", api: &prometheusAPI{code: 200, body: `{"status":"success","data":{"resultType":"scalar","result":[1765000000,"0.01"]}}`}, phase: Successful},
		{name: "NaN", api: &prometheusAPI{code: 200, body: vectorBody("NaN")}, phase: Inconclusive, message: "NaN"},
		{name: "+Inf", api: &prometheusAPI{code: 200, body: vectorBody("+Inf")}, phase: Failed, message: "+Inf did not meet"},
		{name: "no series", api: &prometheusAPI{code: 200, body: vectorBody()}, phase: Inconclusive, message: "no series"},
		{name: "several series", api: &prometheusAPI{code: 200, body: vectorBody("0.01", "0.02")}, phase: Error, message: "2 series"},
		{name: "a range vector", api: &prometheusAPI{code: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1765000000,"0.01"]]}]}}`}, phase: Error, message: "range vector"},
		{name: "400 bad_data", api: &prometheusAPI{code: 400, body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error"}`}, phase: Error,
			message: "Prometheus answered with an error (bad_data): invalid parameter"},
		{name: "422 execution", api: &prometheusAPI{code: 422, body: `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory"}`}, phase: Error,
			message: "(execution): query processing would load too many samples"},
		{name: "503 with no API body", api: &prometheusAPI{code: 503, body: "Service Unavailable"}, phase: Error, message: "(server_error): server error: 503"},
		{name: "a 404 of a proxy", api: &prometheusAPI{code: 404, body: "not found"}, phase: Error, message: "(client_error): client error: 404"},
		{name: "an answer that is no JSON", api: &prometheusAPI{code: 200, body: "<html>"}, phase: Error, message: "(bad_response)"},
		{name: "no answer in time", api: &prometheusAPI{code: 200, body: vectorBody("0.01"), delay: 5 * time.Second},
			edit: func(c *PrometheusConfig) { c.Timeout = 200 * time.Millisecond }, phase: Error, message: "did not answer in time"},
		{name: "an answer with warnings is no evidence", api: &prometheusAPI{code: 200, body: `{"status":"success","warnings":["receive store 10.0.0.7:10901 Unavailable"],"data":{"resultType":"vector","result":[{"metric":{},"value":[1765000000,"0.001"]}]}}`},
			phase: Error, message: "Prometheus answered with warnings: receive store 10.0.0.7:10901 Unavailable"},
		{name: "a long error is cut to the status's bound", api: &prometheusAPI{code: 422, body: `{"status":"error","errorType":"execution","error":"` + strings.Repeat("x", 2000) + `"}`},
			phase: Error, message: "xxx..."},
		{name: "an answer longer than the bound", api: &prometheusAPI{code: 200, body: vectorBody(strings.Repeat("1", 2000))},
			edit: func(c *PrometheusConfig) { c.MaxResponseBytes = 1024 }, phase: Error, message: "longer than 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := httptest.NewServer(tc.api)
			defer server.Close()
			m := Measure(context.Background(), newPrometheus(t, server.URL, tc.edit), "shop", errorRatio, c)
			if m.Phase != tc.phase || !strings.Contains(m.Message, tc.message) {
				t.Fatalf("Measure = %+v; want phase %s and a message with %q", m, tc.phase, tc.message)
			}
			if len(m.Message) > MaxMessageLength || len(m.Value) > MaxValueLength {
				t.Fatalf("Measure = %+v; longer than the status takes", m)
			}
			form := *tc.api.form.Load()
			if q := form["query"]; len(q) != 1 || !strings.Contains(q[0], `http_requests_total{code=~"5..",namespace="shop"}`) {
				t.Errorf("Prometheus got the query %q; want it confined to the namespace", q)
			}
			if l := form["limit"]; len(l) != 1 || l[0] != "2" {
				t.Errorf("Prometheus got limit %q; want 2", l)
			}
		})
	}
}

func TestMeasureWithPrometheusUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	_ = l.Close()
	m := Measure(context.Background(), newPrometheus(t, url, nil), "shop", errorRatio, conditions(t, "result < 0.05", ""))
	if m.Phase != Error || !strings.Contains(m.Message, "could not be reached") {
		t.Fatalf("Measure = %+v; want an Error saying Prometheus could not be reached", m)
	}
}

func TestARefusedQueryIsNeverSent(t *testing.T) {
	api := &prometheusAPI{code: 200, body: vectorBody("0.01")}
	server := httptest.NewServer(api)
	defer server.Close()
	m := Measure(context.Background(), newPrometheus(t, server.URL, nil), "shop",
		`sum(rate(http_requests_total{namespace="bank"}[1m]))`, conditions(t, "result < 0.05", ""))
	if m.Phase != Error || !strings.HasPrefix(m.Message, "refused: the query selects series outside its PodSet's namespace") {
		t.Fatalf("Measure = %+v; want the refusal", m)
	}
	if n := api.requests.Load(); n != 0 {
		t.Fatalf("Prometheus got %d requests; want none", n)
	}
}

func TestTheNamespaceParameterOfTheTenancyPort(t *testing.T) {
	api := &prometheusAPI{code: 200, body: vectorBody("0.01"), noPost: true}
	server := httptest.NewServer(api)
	defer server.Close()
	m := Measure(context.Background(), newPrometheus(t, server.URL, func(c *PrometheusConfig) { c.NamespaceParameter = "namespace" }),
		"shop", errorRatio, conditions(t, "result < 0.05", ""))
	if m.Phase != Successful {
		t.Fatalf("Measure = %+v", m)
	}
	r := api.last.Load()
	if n := api.requests.Load(); n != 1 || r.Method != http.MethodGet {
		t.Fatalf("%d requests, the last a %s; want one GET, which the tenancy proxy authorizes as get", n, r.Method)
	}
	query := r.URL.Query()
	if got := query["namespace"]; len(got) != 1 || got[0] != "shop" {
		t.Errorf("the URL has namespace=%q; want shop", got)
	}
	if got := query.Get("query"); !strings.Contains(got, `namespace="shop"`) {
		t.Errorf("the URL has query=%q; want the confined query", got)
	}
}

func TestARedirectIsNotFollowed(t *testing.T) {
	elsewhere := &prometheusAPI{code: 200, body: vectorBody("0.01")}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	m := Measure(context.Background(), newPrometheus(t, redirecting.URL, nil), "shop", errorRatio, conditions(t, "result < 0.05", ""))
	if m.Phase != Error || elsewhere.requests.Load() != 0 {
		t.Fatalf("Measure = %+v, and the other server got %d requests; want an Error and none", m, elsewhere.requests.Load())
	}
}

func TestNewPrometheusRefusesUnboundedAnswers(t *testing.T) {
	for _, n := range []int64{0, -1, 1 << 62} {
		if _, err := NewPrometheus(PrometheusConfig{URL: "http://127.0.0.1:9", NamespaceLabel: "namespace", Timeout: time.Second, MaxResponseBytes: n}); err == nil {
			t.Errorf("MaxResponseBytes %d was taken", n)
		}
	}
}

func TestTheAdminsCAAndCredentials(t *testing.T) {
	api := &prometheusAPI{code: 200, body: vectorBody("0.01")}
	var authorization atomic.Value
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authorization.Store(r.Header.Get("Authorization"))
		api.ServeHTTP(w, r)
	}))
	// The handshake the client refuses, without the CA, is expected.
	server.Config.ErrorLog = log.New(io.Discard, "", 0)
	server.StartTLS()
	defer server.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("first-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withCA := func(c *PrometheusConfig) {
		c.HTTP = config.HTTPClientConfig{
			TLSConfig:     config.TLSConfig{CAFile: ca},
			Authorization: &config.Authorization{Type: "Bearer", CredentialsFile: token},
		}
	}
	success := conditions(t, "result < 0.05", "")

	m := Measure(context.Background(), newPrometheus(t, server.URL, nil), "shop", errorRatio, success)
	if m.Phase != Error || !strings.Contains(m.Message, "certificate") {
		t.Fatalf("without the CA: Measure = %+v; want an Error about the certificate", m)
	}
	p := newPrometheus(t, server.URL, withCA)
	if m := Measure(context.Background(), p, "shop", errorRatio, success); m.Phase != Successful {
		t.Fatalf("with the CA: Measure = %+v", m)
	}
	if got := authorization.Load(); got != "Bearer first-token" {
		t.Fatalf("Authorization = %q; want the token file's", got)
	}
	// A rotated token is read on the next query.
	if err := os.WriteFile(token, []byte("second-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if m := Measure(context.Background(), p, "shop", errorRatio, success); m.Phase != Successful {
		t.Fatalf("after the rotation: Measure = %+v", m)
	}
	if got := authorization.Load(); got != "Bearer second-token" {
		t.Fatalf("after the rotation, Authorization = %q; want the new token", got)
	}
}
