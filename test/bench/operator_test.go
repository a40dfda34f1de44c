package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// metricsServer serves one Prometheus text page per scrape, in turn.
func metricsServer(pages ...string) *httptest.Server {
	n := 0
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, pages[min(n, len(pages)-1)])
		n++
	}))
}

func TestScrapeReadsRequestsCreatesAndTheWorkQueue(t *testing.T) {
	g := NewWithT(t)
	srv := metricsServer(`# HELP rest_client_requests_total x
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="201",host="h",method="POST"} 10
rest_client_requests_total{code="200",host="h",method="GET"} 99
# TYPE podset_operator_pod_creates_total counter
podset_operator_pod_creates_total{result="created"} 8
podset_operator_pod_creates_total{result="uncertain"} 1
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_sum{controller="podset",name="podset"} 2
workqueue_queue_duration_seconds_count{controller="podset",name="podset"} 10
workqueue_queue_duration_seconds_sum{controller="other",name="other"} 50
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_sum{controller="podset",name="podset"} 1
workqueue_work_duration_seconds_count{controller="podset",name="podset"} 10
`, `# TYPE rest_client_requests_total counter
rest_client_requests_total{code="201",host="h",method="POST"} 20
rest_client_requests_total{code="200",host="h",method="DELETE"} 5
# TYPE podset_operator_pod_creates_total counter
podset_operator_pod_creates_total{result="created"} 18
podset_operator_pod_creates_total{result="uncertain"} 1
podset_operator_pod_creates_total{result="failed"} 4
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_sum{controller="podset",name="podset"} 5
workqueue_queue_duration_seconds_count{controller="podset",name="podset"} 20
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_sum{controller="podset",name="podset"} 3
workqueue_work_duration_seconds_count{controller="podset",name="podset"} 30
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 4.194304e+07
`)
	defer srv.Close()
	op := &operator{metricsURL: srv.URL}
	before, err := op.scrape()
	g.Expect(err).NotTo(HaveOccurred())
	after, err := op.scrape()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before.writes()).To(Equal(10.0))
	g.Expect(after.writes() - before.writes()).To(Equal(15.0))
	g.Expect(after.podsCreatedSince(before)).To(Equal(10), "failed creates made no pod")
	g.Expect(after.meanQueueWait(before)).To(BeNumerically("~", 300, 1e-9), "3 s over 10 waits, other queues left out")
	g.Expect(after.meanReconcile(before)).To(BeNumerically("~", 100, 1e-9))
	g.Expect(before.meanQueueWait(before)).To(Equal(0.0), "no reconcile between the scrapes")
	g.Expect(before.liveHeapBytes).To(Equal(0.0), "no live heap gauge in the first page")
	g.Expect(after.liveHeapBytes).To(Equal(40.0 * (1 << 20)))
}
