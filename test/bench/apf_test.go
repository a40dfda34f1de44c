package main

import "testing"

func TestParseAPFCountsOneFlowSchema(t *testing.T) {
	metrics := []byte(`# HELP apiserver_flowcontrol_request_wait_duration_seconds [BETA] Length of time a request spent waiting in its queue
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="service-accounts",priority_level="workload-low",le="0"} 0
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="service-accounts",priority_level="workload-low",le="0.005"} 90
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="service-accounts",priority_level="workload-low",le="+Inf"} 100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 1.5
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 100
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="service-accounts",priority_level="workload-low",le="0.005"} 0
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="service-accounts",priority_level="workload-low"} 3
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="service-accounts",priority_level="workload-low"} 2
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="time-out"} 2
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="kube-system-service-accounts",priority_level="workload-high"} 7
apiserver_flowcontrol_rejected_requests_total{flow_schema="kube-system-service-accounts",priority_level="workload-high",reason="queue-full"} 1
`)
	got, err := parseAPF(metrics, "service-accounts")
	if err != nil {
		t.Fatal(err)
	}
	want := apfCounts{Requests: 102, Queued: 12, WaitS: 4.5, Rejected: 2}
	if got != want {
		t.Errorf("parseAPF = %+v, want %+v", got, want)
	}
	if d := got.since(apfCounts{Requests: 2, Queued: 2, WaitS: 0.5}); d != (apfCounts{Requests: 100, Queued: 10, WaitS: 4, Rejected: 2}) {
		t.Errorf("since = %+v", d)
	}
}
