package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/example/podset-operator/controllers/revision"
)

// An undo sets every field a revision holds, and clears those it leaves
// unset: a field of the template that the patch forgot would keep the
// current value and roll back to a template no revision holds.
func TestTemplatePatchNamesEveryTemplateField(t *testing.T) {
	g := NewWithT(t)
	raw, err := templatePatch(revision.Template{})
	g.Expect(err).NotTo(HaveOccurred())
	var patch struct {
		Spec map[string]any `json:"spec"`
	}
	g.Expect(json.Unmarshal(raw, &patch)).To(Succeed())
	fields := reflect.TypeFor[revision.Template]()
	for i := range fields.NumField() {
		name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
		g.Expect(patch.Spec).To(HaveKeyWithValue(name, BeNil()), "the patch of an empty template clears %s", name)
	}
	g.Expect(patch.Spec).To(HaveLen(fields.NumField()))
}
