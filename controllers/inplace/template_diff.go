package inplace

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
)

// classifyTemplates is Classify where either side is a spec.template. As
// CloneSet does, any container's image and any container's cpu and memory
// change in place (the API server's rules of a resize, over the whole pod's
// QoS class), and so do the pod's labels and annotations; any other change
// needs new pods, and the change names the first field that differs, as
// spec.template.spec.containers[1].ports.
func classifyTemplates(from, to revision.Template, defaultImage string, server ServerRules) Change {
	a, b := operand.PodTemplate(from, defaultImage), operand.PodTemplate(to, defaultImage)
	a, b = *revision.NormalizePodTemplate(&a), *revision.NormalizePodTemplate(&b)
	if a.Annotations[appv1alpha1.AnnotationRestartedAt] != b.Annotations[appv1alpha1.AnnotationRestartedAt] {
		return Change{NotInPlace: "spec.template.metadata.annotations[" + appv1alpha1.AnnotationRestartedAt + "]: it asks for new pods"}
	}
	if k := appArmorChange(a.Annotations, b.Annotations); k != "" {
		return Change{NotInPlace: "spec.template.metadata.annotations[" + k + "]: " + appArmorWhy}
	}
	if path := FirstDifference("spec.template", fixedPart(a), fixedPart(b)); path != "" {
		return Change{NotInPlace: path + ": cannot change in place"}
	}
	for i := range b.Spec.Containers {
		if operand.OperandUserChanges(&a.Spec, &b.Spec, i, defaultImage) {
			return Change{NotInPlace: fmt.Sprintf("spec.template.spec.containers[%d].image: the operator's operand image and other images run as different users (the pod sets none), and a running container keeps its user", i)}
		}
	}
	c := Change{Labels: !maps.Equal(a.Labels, b.Labels), Annotations: !maps.Equal(a.Annotations, b.Annotations)}
	for i := range b.Spec.Containers {
		ca, cb := a.Spec.Containers[i], b.Spec.Containers[i]
		cc := ContainerChange{Name: cb.Name}
		if ca.Image != cb.Image {
			cc.Image, cc.Restarts, c.Image = cb.Image, true, true
		}
		ra, rb := DefaultedResources(ca.Resources), DefaultedResources(cb.Resources)
		if !equality.Semantic.DeepEqual(ra, rb) {
			why := resourcesRefusal(ra, rb)
			if why == "" {
				why = server.resizeRefusal(ra, rb, cb.ResizePolicy)
			}
			if why != "" {
				return Change{NotInPlace: fmt.Sprintf("spec.template.spec.containers[%d].resources: %s", i, why)}
			}
			want := computeResources(rb)
			cc.Resources, c.Resources = &want, true
			if resizeRestarts(ra, rb, cb.ResizePolicy) {
				cc.Restarts, c.ResizeRestarts = true, true
			}
		}
		if cc.Image != "" || cc.Resources != nil {
			c.Containers = append(c.Containers, cc)
		}
	}
	if qa, qb := PodQOSClass(&a.Spec), PodQOSClass(&b.Spec); c.Resources && qa != qb {
		return Change{NotInPlace: "spec.template.spec.containers: the QoS class would change from " + string(qa) + " to " + string(qb)}
	}
	return c
}

// fixedPart is what of a pod template no in-place update changes: all but
// its labels, its annotations, and its containers' images and resources.
func fixedPart(pts corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := pts.DeepCopy()
	out.Labels, out.Annotations = nil, nil
	for i := range out.Spec.Containers {
		out.Spec.Containers[i].Image = ""
		out.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	return out
}

// PodQOSClass is the QoS class of a pod with this spec, as the API server
// computes it from every container, init containers included: Guaranteed
// when each is, BestEffort when each is, Burstable otherwise.
func PodQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	guaranteed, bestEffort := true, true
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		switch QOSClass(DefaultedResources(c.Resources)) {
		case corev1.PodQOSGuaranteed:
			bestEffort = false
		case corev1.PodQOSBurstable:
			guaranteed, bestEffort = false, false
		default:
			guaranteed = false
		}
	}
	switch {
	case bestEffort:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
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
