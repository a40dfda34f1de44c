package podcache

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"

	utiljson "sigs.k8s.io/json"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

// cachedTemplateAnnotation holds, in the cache's copy of a PodSet only,
// its spec.template encoded as the data of a revision of it (a
// revision.Template with only its template set), deflated: encodeTemplate
// moves the template there, and RestoreTemplate moves it back. The API
// server's object never carries it. In that form the value is the same
// bytes as the data of the revision the PodSet runs, and the cache keeps
// one deflated copy of both (sharedTemplates).
const cachedTemplateAnnotation = "cache.podset-operator.app.example.com/template"

// cachedTemplateSealAnnotation holds the seal of cachedTemplateAnnotation's
// value: a checksum of it and of a key random for each process, so that a
// value the cache holds is known to be this process's own. A user's
// annotation of the same name (nothing stops one) is dropped, never read as
// a template; and a PodSet transformed twice keeps its template (client-go
// transforms each object once, but nothing here depends on it). The seal
// is an annotation of its own so that the value itself can be the shared
// copy.
const cachedTemplateSealAnnotation = "cache.podset-operator.app.example.com/template-seal"

var cachedTemplateSealKey = func() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return hex.EncodeToString(b)
}()

// seal is the seal of an encoded template.
func seal(encoded string) string {
	h := fnv.New64a()
	_, _ = io.WriteString(h, cachedTemplateSealKey)
	_, _ = io.WriteString(h, encoded)
	return fmt.Sprintf("%016x", h.Sum64())
}

// encodeTemplate moves ps's spec.template, decoded, into its
// cachedTemplateAnnotation, encoded as a revision's data, deflated and
// shared through templates. A PodSet with the short form keeps none; a value it already
// carries that is not this process's own is dropped.
func encodeTemplate(ps *appv1alpha1.PodSet, templates *sharedTemplates) {
	if v, ok := ps.Annotations[cachedTemplateAnnotation]; ok {
		if ps.Spec.Template == nil && ps.Annotations[cachedTemplateSealAnnotation] == seal(v) {
			return // transformed already
		}
	}
	dropCachedTemplate(ps)
	if ps.Spec.Template == nil {
		return
	}
	// As revision.Encode writes it, without its normalization: a
	// template decoded from the API server's JSON encodes to the same
	// bytes either way.
	raw, err := json.Marshal(revision.Template{Template: ps.Spec.Template})
	if err != nil {
		return // kept decoded: RestoreTemplate leaves it as it is
	}
	encoded := templates.share(raw)
	if ps.Annotations == nil {
		ps.Annotations = map[string]string{}
	}
	ps.Annotations[cachedTemplateAnnotation] = encoded
	ps.Annotations[cachedTemplateSealAnnotation] = seal(encoded)
	ps.Spec.Template = nil
}

// dropCachedTemplate removes the two annotations, and the annotations'
// map when nothing else is left in it.
func dropCachedTemplate(ps *appv1alpha1.PodSet) {
	_, hasValue := ps.Annotations[cachedTemplateAnnotation]
	_, hasSeal := ps.Annotations[cachedTemplateSealAnnotation]
	if hasValue || hasSeal {
		delete(ps.Annotations, cachedTemplateAnnotation)
		delete(ps.Annotations, cachedTemplateSealAnnotation)
	}
	if ps.Annotations != nil && len(ps.Annotations) == 0 {
		ps.Annotations = nil
	}
}

// RestoreTemplate decodes the spec.template that the cache keeps encoded
// back into a PodSet read from the cache (a copy: the client's reads
// copy; never the cached object itself), and removes the annotations that
// held it. A PodSet read from the API server, or with the short form, is
// left as it is, but for a user's annotations of those names, which are
// dropped.
func RestoreTemplate(ps *appv1alpha1.PodSet) error {
	v, ok := ps.Annotations[cachedTemplateAnnotation]
	if ok && ps.Annotations[cachedTemplateSealAnnotation] == seal(v) {
		raw, err := inflate(v)
		if err != nil {
			return fmt.Errorf("PodSet %s/%s: reading the cached template: %w", ps.Namespace, ps.Name, err)
		}
		var t revision.Template
		if err := utiljson.UnmarshalCaseSensitivePreserveInts(raw, &t); err != nil {
			return fmt.Errorf("PodSet %s/%s: decoding the cached template: %w", ps.Namespace, ps.Name, err)
		}
		ps.Spec.Template = t.Template
	}
	dropCachedTemplate(ps)
	return nil
}
