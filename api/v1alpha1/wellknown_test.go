package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRolloutRetryValue(t *testing.T) {
	// The status keeps the rollback's time to the second; a value made from
	// a finer one names the same second.
	at := time.Date(2026, 11, 28, 7, 1, 2, 500_000_000, time.FixedZone("CET", 3600))
	v := RolloutRetryValue(&AutoRollbackStatus{FailedRevision: "web-5d8f", Time: metav1.NewTime(at)})
	if v != "web-5d8f@2026-11-28T06:01:02Z" {
		t.Fatalf("RolloutRetryValue = %q", v)
	}
	rev, got, err := ParseRolloutRetry(v)
	if err != nil || rev != "web-5d8f" || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("ParseRolloutRetry(%q) = %q, %v, %v", v, rev, got, err)
	}
}

func TestParseRolloutRetryRefuses(t *testing.T) {
	for _, v := range []string{"", "web-5d8f", "@2026-11-28T06:01:02Z", "web-5d8f@yesterday", "web-5d8f@"} {
		if _, _, err := ParseRolloutRetry(v); err == nil {
			t.Errorf("ParseRolloutRetry(%q) took it", v)
		}
	}
}
