//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A controller replaces a deleted pod as soon as it sees the deletion; the
// API server may log the delete's response after the replacement's create.
// Counted by the delete's receipt, the two never overlap.
func TestMaxLiveInAuditLogCountsADeleteWhenReceived(t *testing.T) {
	g := NewWithT(t)
	log := strings.Join([]string{
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"a"}},"requestReceivedTimestamp":"2026-11-23T10:00:00.000000Z","stageTimestamp":"2026-11-23T10:00:00.010000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"b"}},"requestReceivedTimestamp":"2026-11-23T10:00:00.000000Z","stageTimestamp":"2026-11-23T10:00:00.020000Z"}`,
		// b deleted (received 1.000), its replacement c created (done
		// 1.050) before the delete's response completed (1.100).
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"c"}},"requestReceivedTimestamp":"2026-11-23T10:00:01.030000Z","stageTimestamp":"2026-11-23T10:00:01.050000Z"}`,
		`{"verb":"delete","objectRef":{"resource":"pods","namespace":"ns","name":"b"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.100000Z"}`,
		// Other namespaces, subresources and failed requests do not count.
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"other"},"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"x"}},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.060000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","subresource":"binding","namespace":"ns","name":"c"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.060000Z"}`,
		`{"verb":"create","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-11-23T10:00:01.000000Z","stageTimestamp":"2026-11-23T10:00:01.060000Z"}`,
	}, "\n")
	most, err := maxLiveInAuditLog(strings.NewReader(log), "ns")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(most).To(Equal(2))
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
