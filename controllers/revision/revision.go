// Package revision is the pure part of a PodSet's pod template history: what
// a revision holds, how it is named and hashed, which stored revision a
// template matches, and which old revisions may be pruned. It makes no API
// calls; controllers/revisions.go does, with these functions.
//
// A revision is an apps/v1 ControllerRevision owned by the PodSet, as the
// StatefulSet and DaemonSet controllers keep theirs. Its data is the PodSet's
// pod template fields (Template) exactly as the user wrote them, so that a
// rollback is a patch of those same spec fields, and so that an operator
// upgrade that changes only the default operand image does not roll pods.
package revision

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Template is what a revision holds: the spec fields of a PodSet that shape
// its pods. replicas, minReadySeconds and the strategy fields are not part of
// it: changing them never rolls a pod. The JSON names are the spec's, so a
// template is also the merge patch that rolls a PodSet back to it.
type Template struct {
	Image          string                 `json:"image,omitempty"`
	Command        []string               `json:"command,omitempty"`
	Args           []string               `json:"args,omitempty"`
	Env            []appv1alpha1.EnvVar   `json:"env,omitempty"`
	Resources      *appv1alpha1.Resources `json:"resources,omitempty"`
	PodAnnotations map[string]string      `json:"podAnnotations,omitempty"`
	// ResizePolicy is part of the template because a pod's containers
	// cannot change theirs: a new one needs new pods.
	ResizePolicy []corev1.ContainerResizePolicy `json:"resizePolicy,omitempty"`
	// Template is spec.template, the full pod template. A PodSet sets it
	// or the short form above, never both. A template that is exactly the
	// pod template a short form stands for is held as that short form
	// (operand.Canonical), so that moving a PodSet between the two forms
	// keeps its revision and its pods.
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
}

// IsShortForm reports whether t is a short form (no spec.template).
func (t Template) IsShortForm() bool { return t.Template == nil }

// FromPodSet is the template of ps's spec. The slices and maps are copies.
func FromPodSet(ps *appv1alpha1.PodSet) Template {
	spec := ps.Spec.DeepCopy()
	return Template{
		Image:          spec.Image,
		Command:        spec.Command,
		Args:           spec.Args,
		Env:            spec.Env,
		Resources:      spec.Resources,
		PodAnnotations: spec.PodAnnotations,
		ResizePolicy:   spec.ResizePolicy,
		Template:       spec.Template,
	}
}

// SameTemplate reports whether two templates make the same pods. An empty list or
// map equals an absent one, as the API server stores them the same way.
func SameTemplate(a, b Template) bool {
	return equality.Semantic.DeepEqual(normalize(a), normalize(b))
}

func normalize(t Template) Template {
	if len(t.Command) == 0 {
		t.Command = nil
	}
	if len(t.Args) == 0 {
		t.Args = nil
	}
	if len(t.Env) == 0 {
		t.Env = nil
	}
	if len(t.PodAnnotations) == 0 {
		t.PodAnnotations = nil
	}
	if len(t.ResizePolicy) == 0 {
		t.ResizePolicy = nil
	}
	if t.Resources != nil && len(t.Resources.Requests) == 0 && len(t.Resources.Limits) == 0 {
		t.Resources = nil
	}
	if t.Template != nil {
		t.Template = NormalizePodTemplate(t.Template)
	}
	return t
}

// NormalizePodTemplate is pts as it reads back from JSON, which is how the
// API server stores it: empty lists and maps are absent, and quantities are
// in their canonical form. Two templates that make the same pods then
// compare equal however they were built.
func NormalizePodTemplate(pts *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	raw, err := json.Marshal(pts)
	if err != nil {
		panic(fmt.Sprintf("encoding a pod template: %v", err))
	}
	out := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal(raw, out); err != nil {
		panic(fmt.Sprintf("decoding a pod template: %v", err))
	}
	return out
}

// Encode is the template as a ControllerRevision's data.
func Encode(t Template) (runtime.RawExtension, error) {
	raw, err := json.Marshal(normalize(t))
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding the pod template: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// Decode reads the template a ControllerRevision holds: in Data.Raw, as
// the API server sends it, or in Data.Object, an object that encodes to
// that JSON (the operator's cache keeps it deflated so).
func Decode(cr *appsv1.ControllerRevision) (Template, error) {
	var t Template
	raw := cr.Data.Raw
	if raw == nil && cr.Data.Object != nil {
		var err error
		if raw, err = json.Marshal(cr.Data.Object); err != nil {
			return t, fmt.Errorf("reading revision %s: %w", cr.Name, err)
		}
	}
	if len(raw) == 0 {
		return t, fmt.Errorf("revision %s holds no data", cr.Name)
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("decoding revision %s: %w", cr.Name, err)
	}
	return t, nil
}

// Hash names a template: an FNV-1a hash of its canonical JSON (Go's encoder
// sorts map keys) and of the collision count, written with the alphabet the
// kube controllers use for generated names (no vowels, so no words). A
// collision count bumped after a name clash yields a new name for the same
// template, as the Deployment and StatefulSet controllers do.
func Hash(t Template, collisionCount *int32) string {
	raw, err := json.Marshal(normalize(t))
	if err != nil {
		// A Template holds only strings, numbers, maps, slices and
		// quantities: it always encodes.
		panic(fmt.Sprintf("encoding a pod template: %v", err))
	}
	h := fnv.New32a()
	_, _ = h.Write(raw)
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// Name is the name of a PodSet's revision with this hash.
func Name(podSetName, hash string) string {
	return podSetName + "-" + hash
}

// FindEqual returns the revision among revs whose template equals t, or nil.
// A rollback finds its old revision this way and reuses it (and its hash),
// so that the pods still running it are kept.
func FindEqual(revs []*appsv1.ControllerRevision, t Template) *appsv1.ControllerRevision {
	for _, cr := range revs {
		if stored, err := Decode(cr); err == nil && SameTemplate(stored, t) {
			return cr
		}
	}
	return nil
}

// NextNumber is the revision number a new or reused revision gets: one more
// than the highest stored.
func NextNumber(revs []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, cr := range revs {
		highest = max(highest, cr.Revision)
	}
	return highest + 1
}

// ToPrune picks the revisions to delete so that at most limit old revisions
// remain: the oldest (by revision number) first. The revisions named in keep
// (the update and current revisions, and every revision a live pod still
// runs) are never pruned and do not count towards the limit.
func ToPrune(revs []*appsv1.ControllerRevision, keep map[string]bool, limit int) []*appsv1.ControllerRevision {
	var old []*appsv1.ControllerRevision
	for _, cr := range revs {
		if keep[cr.Name] {
			continue
		}
		old = append(old, cr)
	}
	if len(old) <= limit {
		return nil
	}
	sorted := slices.Clone(old)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Revision != sorted[j].Revision {
			return sorted[i].Revision < sorted[j].Revision
		}
		return sorted[i].Name < sorted[j].Name
	})
	return sorted[:len(old)-max(limit, 0)]
}
