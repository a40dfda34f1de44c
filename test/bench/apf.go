package main

import (
	"bytes"
	"context"

	"k8s.io/client-go/kubernetes"
)

// API Priority and Fairness, as the API server counts it for one flow
// schema: how many requests it dispatched, how many of those waited in a
// queue, how long all waited, and how many it rejected (429). Read from
// kube-apiserver's /metrics before and after a phase, so that a controller
// that queues (or is throttled) shows it beside its times.
type apfCounts struct {
	Requests float64 // requests that went through APF (executed or not)
	Queued   float64 // of those, requests that waited over queuedAfter
	WaitS    float64 // the total wait of all
	Rejected float64
}

// queuedAfter is the histogram bucket under which a request counts as not
// queued: every request's wait is measured, and is never exactly 0 even
// when a seat was free (the API server's buckets start 0, 0.005, 0.02).
const queuedAfter = 0.005

// controllerFlowSchema is the flow schema that the API server's default
// configuration classifies a controller's requests into: the operator's is
// its identity's (none when exempt); kube-controller-manager's controllers
// use ServiceAccounts in kube-system, and share that flow schema, so the
// ReplicaSet phases' figures are all of kube-controller-manager's.
func (b *bench) controllerFlowSchema(kind string) string {
	if kind == "podset" {
		return b.id.flowSchema
	}
	return "kube-system-service-accounts"
}

// scrapeAPF reads the flow schema's counters from kube-apiserver.
func scrapeAPF(ctx context.Context, cs kubernetes.Interface, flowSchema string) (apfCounts, error) {
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apfCounts{}, err
	}
	return parseAPF(data, flowSchema)
}

// parseAPF reads a flow schema's counters from the API server's metrics
// text.
func parseAPF(data []byte, flowSchema string) (apfCounts, error) {
	families, err := metricFamilies(bytes.NewReader(data))
	if err != nil {
		return apfCounts{}, err
	}
	var c apfCounts
	for _, m := range families["apiserver_flowcontrol_request_wait_duration_seconds"].GetMetric() {
		if labelValue(m, "flow_schema") != flowSchema {
			continue
		}
		h := m.GetHistogram()
		c.Requests += float64(h.GetSampleCount())
		c.WaitS += h.GetSampleSum()
		c.Queued += float64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == queuedAfter {
				c.Queued -= float64(b.GetCumulativeCount())
			}
		}
	}
	for _, m := range families["apiserver_flowcontrol_rejected_requests_total"].GetMetric() {
		if labelValue(m, "flow_schema") == flowSchema {
			c.Rejected += m.GetCounter().GetValue()
		}
	}
	return c, nil
}

// since is what happened between before and c.
func (c apfCounts) since(before apfCounts) apfCounts {
	return apfCounts{
		Requests: c.Requests - before.Requests,
		Queued:   c.Queued - before.Queued,
		WaitS:    c.WaitS - before.WaitS,
		Rejected: c.Rejected - before.Rejected,
	}
}
