package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/analysis"
)

// TestCanaryHowToRuns holds docs/canary-howto.md to what the operator
// accepts: its PromQL query renders and is confined to a namespace, and the
// PodSet's analyses (their queries, their CEL conditions) are ones the
// operator would run rather than stop with InvalidAnalysis.
func TestCanaryHowToRuns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "canary-howto.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(promql|yaml)\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	vars := analysis.Vars{Namespace: "shop", Name: "web", CanaryHash: "6d4f9c7b8", StableHash: "5c8b7f6d9", Interval: "60s"}
	check := func(what, query string, conditions ...string) {
		t.Helper()
		rendered, err := analysis.Render(query, vars)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// Confine checks, too, that every selector came out confined.
		if _, err := analysis.Confine(rendered, "namespace", "shop"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(conditions) == 2 {
			if _, err := analysis.CompileConditions(conditions[0], conditions[1]); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	var queries, podSets int
	for _, b := range blocks {
		switch b[1] {
		case "promql":
			queries++
			check("the promql block", b[2])
		case "yaml":
			if !strings.Contains(b[2], "kind: PodSet") {
				continue
			}
			podSets++
			// The how-to elides the template and the background query.
			src := strings.ReplaceAll(strings.ReplaceAll(b[2], "template: {...}", "template: {}"), "query: ...", "query: up")
			var ps appv1alpha1.PodSet
			if err := yaml.UnmarshalStrict([]byte(src), &ps); err != nil {
				t.Fatalf("the PodSet does not parse as one: %v", err)
			}
			c := ps.Spec.UpdateStrategy.RollingUpdate.Canary
			for i, st := range c.Steps {
				if a := st.Analysis; a != nil {
					check(fmt.Sprintf("steps[%d]", i), a.Query, a.SuccessCondition, a.FailureCondition)
				}
			}
			if a := c.BackgroundAnalysis; a != nil {
				check("backgroundAnalysis", a.Query, a.SuccessCondition, a.FailureCondition)
			}
		}
	}
	if queries != 1 || podSets != 1 {
		t.Fatalf("found %d promql blocks and %d PodSets in the how-to; want 1 and 1", queries, podSets)
	}
}
