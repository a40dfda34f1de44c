package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestErrorShare(t *testing.T) {
	for _, tc := range []struct {
		share        float64
		requests     int
		failed       int
		firstFailure int
	}{
		{share: 0, requests: 100, failed: 0},
		{share: 0.25, requests: 100, failed: 25, firstFailure: 4},
		{share: 0.1, requests: 95, failed: 9, firstFailure: 10},
		{share: 1, requests: 10, failed: 10, firstFailure: 1},
	} {
		a := newApp("v2", tc.share)
		server := httptest.NewServer(a.mux())
		failed, first := 0, 0
		for i := 1; i <= tc.requests; i++ {
			resp, err := http.Get(server.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusInternalServerError {
				failed++
				if first == 0 {
					first = i
				}
			} else if strings.TrimSpace(string(body)) != "v2" {
				t.Fatalf("request %d answered %q; want the version", i, body)
			}
		}
		if failed != tc.failed || first != tc.firstFailure {
			t.Errorf("share %v: %d of %d requests failed, the first at %d; want %d, the first at %d", tc.share, failed, tc.requests, first, tc.failed, tc.firstFailure)
		}
		if got := testutil.ToFloat64(a.requests.WithLabelValues("500")); int(got) != tc.failed {
			t.Errorf("share %v: http_requests_total{code=\"500\"} = %v; want %d", tc.share, got, tc.failed)
		}
		if got := testutil.ToFloat64(a.requests.WithLabelValues("200")); int(got) != tc.requests-tc.failed {
			t.Errorf("share %v: http_requests_total{code=\"200\"} = %v; want %d", tc.share, got, tc.requests-tc.failed)
		}
		// Ready whatever the share, and the metrics are served.
		for _, path := range []string{"/healthz", "/metrics"} {
			resp, err := http.Get(server.URL + path)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %v, %v", path, resp, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if path == "/metrics" && !strings.Contains(string(body), `http_requests_total{code="500"}`) {
				t.Fatalf("/metrics has no http_requests_total{code=\"500\"}:\n%s", body)
			}
		}
		server.Close()
	}
}
