package main

import (
	"strings"
	"testing"
)

func TestTrimYAMLDropsOnlyTheTemplatesDescriptions(t *testing.T) {
	in := `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        description: the PodSet
        properties:
          spec:
            description: the spec
            properties:
              replicas:
                description: how many
                type: integer
              template:
                description: the pod template, see the API reference
                properties:
                  spec:
                    description: a pod spec
                    properties:
                      description:
                        type: string
                        description: a field that happens to be named description
                      containers:
                        description: the containers
                        items:
                          description: a container
                          properties:
                            name:
                              description: its name
                              type: string
                          type: object
                        type: array
                    type: object
                type: object
            type: object
        type: object
`
	out, err := trimYAML([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, kept := range []string{"description: the PodSet", "description: the spec", "description: how many",
		"description: the pod template, see the API reference", "      description:\n                        type: string\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("want %q kept in:\n%s", kept, got)
		}
	}
	for _, dropped := range []string{"a pod spec", "a field that happens", "the containers", "a container", "its name"} {
		if strings.Contains(got, dropped) {
			t.Errorf("want %q dropped from:\n%s", dropped, got)
		}
	}
	if !strings.HasPrefix(got, "---\napiVersion: apiextensions.k8s.io/v1\n") {
		t.Errorf("want the document as controller-gen writes it, got:\n%s", got)
	}
}

func TestTrimYAMLWantsTheTemplate(t *testing.T) {
	_, err := trimYAML([]byte("spec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        type: object\n"))
	if err == nil || !strings.Contains(err.Error(), "spec.template") {
		t.Fatalf("want an error naming spec.template, got %v", err)
	}
}
