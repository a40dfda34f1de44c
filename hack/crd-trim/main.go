// Command crd-trim removes the descriptions below spec.template from the
// PodSet CRD that controller-gen wrote (`make manifests` runs it on the
// file named by its argument, in place).
//
// Why: the template is a corev1.PodTemplateSpec, whose descriptions are
// three quarters of the CRD (348 KB of JSON with them, 94 KB without).
// At that size:
//   - `kubectl apply` without --server-side, and any tool that applies
//     client-side (Argo CD by default), refuse the CRD: the
//     last-applied-configuration annotation may hold at most 256 KiB;
//   - every watcher of CRDs, OLM's InstallPlan steps (which read, compare
//     and write the CRD, and validate the stored PodSets against it) and
//     the API server's OpenAPI aggregation carry it whole.
//
// The fields keep their names, types and validation, so `kubectl explain`
// still lists them; what each means is the Kubernetes API reference's, to
// which the template's own description (kept) points.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crd-trim <crd.yaml>")
		os.Exit(2)
	}
	if err := trim(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crd-trim:", err)
		os.Exit(1)
	}
}

func trim(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := trimYAML(in)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// trimYAML returns the CRD in with no description below
// spec.template in any version's schema. The YAML is written as
// controller-gen writes it: keys in order, the document opened by "---".
func trimYAML(in []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return nil, err
	}
	versions, _ := dig(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return nil, fmt.Errorf("no spec.versions")
	}
	for _, v := range versions {
		template, ok := dig(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", "template").(map[string]any)
		if !ok {
			return nil, fmt.Errorf("version %v has no spec.template in its schema", dig(v, "name"))
		}
		for k, child := range template {
			if k != "description" {
				dropDescriptions(child)
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// dig follows keys through nested maps; nil where one is missing.
func dig(n any, keys ...string) any {
	for _, k := range keys {
		m, ok := n.(map[string]any)
		if !ok {
			return nil
		}
		n = m[k]
	}
	return n
}

// dropDescriptions removes every schema description in n. A property that
// is itself named "description" (a field of the pod spec could be) is a
// schema, not a description: under "properties" every key is a field name.
func dropDescriptions(n any) {
	switch n := n.(type) {
	case map[string]any:
		for k, child := range n {
			if k == "properties" {
				if props, ok := child.(map[string]any); ok {
					for _, p := range props {
						dropDescriptions(p)
					}
					continue
				}
			}
			if k == "description" {
				if _, isText := child.(string); isText {
					delete(n, k)
					continue
				}
			}
			dropDescriptions(child)
		}
	case []any:
		for _, child := range n {
			dropDescriptions(child)
		}
	}
}
