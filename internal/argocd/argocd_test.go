package argocd

import (
	"testing"
)

// The objects no reconcile wrote (or an older operator wrote); the
// statuses the reconciler writes are covered in controllers/status and the
// controllers' envtest suite.
func TestHealthBeforeAndBesideTheConditions(t *testing.T) {
	meta := func(generation int64, extra map[string]any) map[string]any {
		m := map[string]any{"name": "web", "namespace": "default", "generation": generation}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cond := func(typ, status, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message}
	}
	tests := []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"no status yet", map[string]any{"metadata": meta(1, nil)}, Progressing},
		{"status of an older generation", map[string]any{
			"metadata": meta(2, nil),
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{
				cond("Reconciling", "False", "Reconciled", "all 3 pods run revision web-1 and are available"),
			}},
		}, Progressing},
		{"an operator older than Reconciling and Stalled", map[string]any{
			"metadata": meta(1, nil),
			"status":   map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Available", "True", "MinimumReplicasAvailable", "3 of 3")}},
		}, Progressing},
		{"being deleted", map[string]any{"metadata": meta(1, map[string]any{"deletionTimestamp": "2026-11-27T10:00:00Z"})}, Progressing},
		{"reconciled", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": float64(3), "conditions": []any{
				cond("Reconciling", "False", "Reconciled", "all 3 pods run revision web-1 and are available"),
				cond("Stalled", "False", "NotStalled", "the pods match the spec"),
			}},
		}, Healthy},
		{"paused", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{
				cond("Reconciling", "True", "Paused", "rollout paused: 1 of 3 pods run revision web-2"),
			}},
		}, Suspended},
		{"canary pause step", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{
				cond("Reconciling", "True", "CanaryPaused", "step 2 of 4: paused until promoted"),
			}},
		}, Suspended},
		{"canary analysis held", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{
				cond("Reconciling", "True", "AnalysisInconclusive", "step 2 of 4: analysis Inconclusive; held"),
			}},
		}, Suspended},
		{"canary step under way", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{
				cond("Reconciling", "True", "CanaryStep", "step 2 of 4: analysis Running"),
			}},
		}, Progressing},
		{"canary analysis failed", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{
				cond("Reconciling", "False", "Stalled", "stalled"),
				cond("Stalled", "True", "RolledBack", "revision web-2 failed (AnalysisFailed: ...)"),
			}},
		}, Degraded},
		{"stalled", map[string]any{
			"metadata": meta(3, nil),
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{
				cond("Reconciling", "False", "Stalled", "stalled"),
				cond("Stalled", "True", "ProgressDeadlineExceeded", "no progress for 10m0s"),
			}},
		}, Degraded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := Evaluate(HealthLua, tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != tt.want {
				t.Errorf("health %q (%s), want %q", h.Status, h.Message, tt.want)
			}
			if h.Message == "" {
				t.Error("no message")
			}
		})
	}
}

func TestEvaluateRefusesAStatusArgoCDDoesNotKnow(t *testing.T) {
	if _, err := Evaluate(`return {status = "Fine"}`, map[string]any{}); err == nil {
		t.Fatal("want an error for an unknown status")
	}
	if _, err := Evaluate(`return 1`, map[string]any{}); err == nil {
		t.Fatal("want an error for a health check that returns no table")
	}
}
