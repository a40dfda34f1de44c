// Command prometheus-rules prints the rule groups of a PrometheusRule
// manifest as a plain Prometheus rule file, which promtool checks and tests:
//
//	go run ./hack/prometheus-rules internal/monitoring/prometheusrule.yaml > rules.yaml
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: prometheus-rules PROMETHEUSRULE.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "prometheus-rules:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		return err
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		return fmt.Errorf("%s: not a PrometheusRule with rule groups", path)
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
