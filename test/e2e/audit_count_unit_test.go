//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A controller replaces a deleted or failed pod as soon as it sees it end;
// the API server may log the delete's or status write's response after the
// replacement's create. Counted by their receipt, the two never overlap.
func TestMaxLiveInAuditLogCountsADeleteWhenReceived(t *testing.T) {
	g := NewWithT(t)
	log := strings.Join([]string{
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"a"}},"requestReceivedTimestamp":"2026-11-23T10:00:00.000000Z","stageTimestamp":"2026-11-23T10:00:00.010000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"b"}},"requestReceivedTimestamp":"2026-11-23T10:00:00.000000Z","stageTimestamp":"2026-11-23T10:00:00.020000Z"}`,
		// b deleted (received 1.000), its replacement c created (done
		// 1.050) before the delete's response completed (1.100).
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"c"}},"requestReceivedTimestamp":"2026-11-23T10:00:01.030000Z","stageTimestamp":"2026-11-23T10:00:01.050000Z"}`,
		`{"verb":"delete","objectRef":{"resource":"pods","namespace":"ns","name":"b"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.100000Z"}`,
		// a and c marked Failed (the pod garbage collector, on a deleted
		// node) and replaced by d and e before their deletes: a pod ends
		// when it fails. A status write that does not end it counts for
		// nothing.
		`{"verb":"patch","objectRef":{"resource":"pods","subresource":"status","namespace":"ns","name":"a"},"responseStatus":{"code":200},"responseObject":{"metadata":{"name":"a"},"status":{"phase":"Failed"}},"requestReceivedTimestamp":"2026-11-23T10:00:02.000000Z","stageTimestamp":"2026-11-23T10:00:02.020000Z"}`,
		`{"verb":"update","objectRef":{"resource":"pods","subresource":"status","namespace":"ns","name":"c"},"responseStatus":{"code":200},"responseObject":{"metadata":{"name":"c"},"status":{"phase":"Failed"}},"requestReceivedTimestamp":"2026-11-23T10:00:02.000000Z","stageTimestamp":"2026-11-23T10:00:02.020000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"d"}},"requestReceivedTimestamp":"2026-11-23T10:00:02.030000Z","stageTimestamp":"2026-11-23T10:00:02.040000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"e"}},"requestReceivedTimestamp":"2026-11-23T10:00:02.030000Z","stageTimestamp":"2026-11-23T10:00:02.045000Z"}`,
		`{"verb":"delete","objectRef":{"resource":"pods","namespace":"ns","name":"a"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:02.050000Z","stageTimestamp":"2026-11-23T10:00:02.060000Z"}`,
		`{"verb":"patch","objectRef":{"resource":"pods","subresource":"status","namespace":"ns","name":"d"},"responseStatus":{"code":200},"responseObject":{"metadata":{"name":"d"},"status":{"phase":"Running"}},"requestReceivedTimestamp":"2026-11-23T10:00:02.070000Z","stageTimestamp":"2026-11-23T10:00:02.080000Z"}`,
		// Other namespaces, subresources and failed requests do not count.
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"other"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"x"}},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.060000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","subresource":"binding","namespace":"ns","name":"c"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.060000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.060000Z"}`,
	}, "\n")
	most, err := maxLiveInAuditLog(strings.NewReader(log), "ns")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(most).To(Equal(2))
}

// A pod deleted gracefully runs until the delete that removes it; its
// replacement made meanwhile counts beside it.
func TestMaxRunningInAuditLogCountsTerminatingPods(t *testing.T) {
	g := NewWithT(t)
	line := func(verb, name, received string) string {
		ref := `"objectRef":{"resource":"pods","namespace":"ns","name":"` + name + `"}`
		obj := ""
		if verb == "create" {
			ref, obj = `"objectRef":{"resource":"pods","namespace":"ns"}`, `"responseObject":{"metadata":{"name":"`+name+`"}},`
		}
		return `{"verb":"` + verb + `",` + ref + `,"responseStatus":{"code":200},` + obj +
			`"requestReceivedTimestamp":"2026-12-06T10:00:` + received + `Z","stageTimestamp":"2026-12-06T10:00:` + received + `Z"}`
	}
	log := strings.Join([]string{
		line("create", "a", "00.000"), line("create", "b", "00.100"),
		// b deleted with a grace period, c created while it terminates,
		// b removed by its kubelet 5 s later.
		line("delete", "b", "01.000"), line("create", "c", "01.500"), line("delete", "b", "06.000"),
	}, "\n")
	running, err := maxRunningInAuditLog(strings.NewReader(log), "ns")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(running).To(Equal(3), "b ran until its last delete, beside a and c")
	live, err := maxLiveInAuditLog(strings.NewReader(log), "ns")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(live).To(Equal(2), "b was no longer live once deleted")
}

// Only the authorizer's refusals count as RBAC denials: a create refused by
// admission in a namespace being deleted is a 403 the authorizer allowed.
func TestDeniedByRBAC(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want bool
	}{
		{"forbidden by RBAC", `{"verb":"create","responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"forbid"}}`, true},
		{"403 without a decision recorded", `{"verb":"create","responseStatus":{"code":403}}`, true},
		{"allowed, refused by admission (namespace terminating)", `{"verb":"create","responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"allow"}}`, false},
		{"allowed and done", `{"verb":"create","responseStatus":{"code":201},"annotations":{"authorization.k8s.io/decision":"allow"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e auditEvent
			NewWithT(t).Expect(json.Unmarshal([]byte(tc.line), &e)).To(Succeed())
			NewWithT(t).Expect(e.deniedByRBAC()).To(Equal(tc.want))
		})
	}
}
