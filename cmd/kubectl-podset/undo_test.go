package main

import (
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
)

// fullSpec sets every pod template field of a spec, both forms at once.
func fullSpec() appv1alpha1.PodSetSpec {
	return appv1alpha1.PodSetSpec{
		Image: "app:1", Command: []string{"c"}, Args: []string{"a"},
		Env:            []appv1alpha1.EnvVar{{Name: "E", Value: "v"}},
		Resources:      &appv1alpha1.Resources{},
		PodAnnotations: map[string]string{"k": "v"},
		ResizePolicy:   []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}},
		Template:       &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}},
	}
}

// specField is the PodSetSpec field that a revision.Template field holds
// (the same JSON name).
func specField(spec *appv1alpha1.PodSetSpec, jsonName string) reflect.Value {
	v := reflect.ValueOf(spec).Elem()
	for i := range v.NumField() {
		if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); name == jsonName {
			return v.Field(i)
		}
	}
	panic("no spec field " + jsonName)
}

// An undo sets every field a revision holds, and clears those it leaves
// unset: a field of the template that it forgot would keep the current
// value and roll back to a template no revision holds.
func TestSetTemplateClearsEveryTemplateField(t *testing.T) {
	g := NewWithT(t)
	spec := fullSpec()
	spec.Template = nil
	setTemplate(&spec, revision.Template{})
	fields := reflect.TypeFor[revision.Template]()
	for i := range fields.NumField() {
		name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
		g.Expect(specField(&spec, name).IsZero()).To(BeTrue(), "an undo to an empty template clears spec.%s", name)
	}
}

func TestSetTemplateKeepsTheForm(t *testing.T) {
	g := NewWithT(t)
	short := revision.Template{Image: "app:0", Args: []string{"-v"}}

	spec := fullSpec()
	setTemplate(&spec, short)
	g.Expect(spec.Image).To(BeEmpty(), "a PodSet with a template keeps it")
	g.Expect(spec.Template).NotTo(BeNil())
	g.Expect(operand.Canonical(revision.FromPodSet(&appv1alpha1.PodSet{Spec: spec}))).To(Equal(short),
		"the template written is the one the short-form revision stands for")

	spec = fullSpec()
	spec.Template = nil
	setTemplate(&spec, short)
	g.Expect(spec.Template).To(BeNil(), "a short-form PodSet stays in the short form")
	g.Expect(spec.Image).To(Equal("app:0"))
	g.Expect(spec.Command).To(BeNil())

	spec = fullSpec()
	spec.Template = nil
	full := revision.Template{Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:2"}}}}}
	setTemplate(&spec, full)
	g.Expect(spec.Image).To(BeEmpty(), "a template-form revision can only be written as a template")
	g.Expect(spec.Template.Spec.Containers[0].Image).To(Equal("web:2"))
}
