package inplace

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
)

// classifyTemplates is Classify where either side is a spec.template. This
// release updates only short-form pods in place: a template's pods take any
// change by being replaced, and the change names the first field that
// differs, as spec.template.spec.containers[1].ports.
func classifyTemplates(from, to revision.Template, defaultImage string) Change {
	a, b := operand.PodTemplate(from, defaultImage), operand.PodTemplate(to, defaultImage)
	if equality.Semantic.DeepEqual(revision.NormalizePodTemplate(&a), revision.NormalizePodTemplate(&b)) {
		return Change{}
	}
	path := FirstDifference("spec.template", &a, &b)
	if path == "" {
		// Semantically different, the same in JSON: cannot be, since
		// both sides are normalized through JSON.
		path = "spec.template"
	}
	return Change{NotInPlace: path + ": pods of a spec.template are replaced for any change; only the short form's are updated in place"}
}

// FirstDifference is the path, under prefix, of the first field in which
// the JSON forms of a and b differ (map keys in sorted order, list items by
// index), or "" when they are the same.
func FirstDifference(prefix string, a, b any) string {
	return firstDifference(prefix, jsonValue(a), jsonValue(b))
}

func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding for a comparison: %v", err))
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("decoding for a comparison: %v", err))
	}
	return out
}

func firstDifference(path string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, seen := x[k]; !seen {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if d := firstDifference(childPath(path, k), x[k], y[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path
		}
		for i := range x {
			if d := firstDifference(path+"["+strconv.Itoa(i)+"]", x[i], y[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(a, b) {
			return path
		}
		return ""
	}
}

// childPath names a field as kubectl explain does, and a map key that is
// no identifier (a label or annotation key) in brackets.
func childPath(path, key string) string {
	if strings.ContainsAny(key, "./-") {
		return path + "[" + key + "]"
	}
	return path + "." + key
}
