package analysisconfig

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/example/podset-operator/controllers/analysis"
)

func TestFlagsTakeTheirDefaultsFromTheEnvironment(t *testing.T) {
	env := map[string]string{EnvURL: "https://thanos-querier.openshift-monitoring.svc:9092", EnvNamespaceParameter: "namespace", EnvQueryTimeout: "30s"}
	var c Config
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	if err := c.Bind(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--analysis-namespace-label=kubernetes_namespace"}); err != nil {
		t.Fatal(err)
	}
	want := Config{URL: env[EnvURL], NamespaceLabel: "kubernetes_namespace", NamespaceParameter: "namespace", QueryTimeout: 30 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes, QuerySlots: 4}
	if c != want {
		t.Fatalf("config %+v; want %+v", c, want)
	}
	var bad Config
	if err := bad.Bind(flag.NewFlagSet("m", flag.ContinueOnError), func(k string) string { return map[string]string{EnvQueryTimeout: "soon"}[k] }); err == nil || !strings.Contains(err.Error(), EnvQueryTimeout) {
		t.Fatalf("Bind with a bad timeout = %v; want an error naming %s", err, EnvQueryTimeout)
	}
}

func TestQuerier(t *testing.T) {
	var c Config
	if err := c.Bind(flag.NewFlagSet("m", flag.ContinueOnError), func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if q, err := c.Querier(); q != nil || err != nil {
		t.Fatalf("no URL: Querier = %v, %v; want none", q, err)
	}
	for _, bad := range []Config{
		{URL: "thanos:9092", NamespaceLabel: "namespace", QueryTimeout: time.Second, MaxResponseBytes: 1},
		{URL: "http://p:9090", CertFile: "tls.crt", NamespaceLabel: "namespace", QueryTimeout: time.Second, MaxResponseBytes: 1},
		{URL: "http://p:9090", NamespaceLabel: "namespace", QueryTimeout: 0, MaxResponseBytes: 1},
	} {
		if _, err := bad.Querier(); err == nil {
			t.Errorf("Querier of %+v succeeded", bad)
		}
	}
	// A configured Querier confines and sends the query.
	var got string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = r.Form.Get("query")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1765000000,"1"]}]}}`))
	}))
	defer server.Close()
	c.URL = server.URL
	q, err := c.Querier()
	if err != nil {
		t.Fatal(err)
	}
	conds, _ := analysis.CompileConditions("result == 1.0", "")
	if m := analysis.Measure(context.Background(), q, "shop", "up", conds); m.Phase != analysis.Successful || got != `up{namespace="shop"}` {
		t.Fatalf("Measure = %+v, the query sent %q", m, got)
	}
}
