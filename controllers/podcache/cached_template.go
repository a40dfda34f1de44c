package podcache

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utiljson "sigs.k8s.io/json"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// cachedTemplateAnnotation holds, in the cache's copy of a PodSet only,
// its spec.template as JSON: encodeTemplate moves the template there, and
// RestoreTemplate moves it back. The API server's object never carries it.
const cachedTemplateAnnotation = "cache.podset-operator.app.example.com/template"

// cachedTemplateSeal starts each value encodeTemplate writes, with a
// checksum: random for each process, so that a value the cache holds is
// known to be this process's own. A user's annotation of the same name
// (nothing stops one) is dropped, never read as a template; and a PodSet
// transformed twice keeps its template (client-go transforms each object
// once, but nothing here depends on it).
var cachedTemplateSeal = func() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return hex.EncodeToString(b)
}()

// seal is the prefix of an encoded template raw: a checksum of the seal
// and raw, and a separator.
func seal(raw []byte) string {
	h := fnv.New64a()
	h.Write([]byte(cachedTemplateSeal))
	h.Write(raw)
	return fmt.Sprintf("%016x:", h.Sum64())
}

// encodeTemplate moves ps's spec.template, decoded, into its
// cachedTemplateAnnotation, as JSON. A PodSet with the short form keeps
// none; a value it already carries that is not this process's own is
// dropped.
func encodeTemplate(ps *appv1alpha1.PodSet) {
	if v, ok := ps.Annotations[cachedTemplateAnnotation]; ok {
		if ps.Spec.Template == nil && sealed(v) {
			return // transformed already
		}
		delete(ps.Annotations, cachedTemplateAnnotation)
	}
	if ps.Spec.Template == nil {
		if ps.Annotations != nil && len(ps.Annotations) == 0 {
			ps.Annotations = nil
		}
		return
	}
	raw, err := json.Marshal(ps.Spec.Template)
	if err != nil {
		return // kept decoded: RestoreTemplate leaves it as it is
	}
	if ps.Annotations == nil {
		ps.Annotations = map[string]string{}
	}
	ps.Annotations[cachedTemplateAnnotation] = seal(raw) + string(raw)
	ps.Spec.Template = nil
}

// sealed reports whether v is an encoded template of this process.
func sealed(v string) bool {
	sum, raw, ok := strings.Cut(v, ":")
	return ok && sum+":" == seal([]byte(raw))
}

// RestoreTemplate decodes the spec.template that the cache keeps encoded
// back into a PodSet read from the cache (a copy: the client's reads
// copy; never the cached object itself), and removes the annotation that
// held it. A PodSet read from the API server, or with the short form, is
// left as it is, but for a user's annotation of that name, which is
// dropped.
func RestoreTemplate(ps *appv1alpha1.PodSet) error {
	v, ok := ps.Annotations[cachedTemplateAnnotation]
	if !ok {
		return nil
	}
	if sealed(v) {
		_, raw, _ := strings.Cut(v, ":")
		template := &corev1.PodTemplateSpec{}
		if err := utiljson.UnmarshalCaseSensitivePreserveInts([]byte(raw), template); err != nil {
			return fmt.Errorf("PodSet %s/%s: decoding the cached template: %w", ps.Namespace, ps.Name, err)
		}
		ps.Spec.Template = template
	}
	delete(ps.Annotations, cachedTemplateAnnotation)
	if len(ps.Annotations) == 0 {
		ps.Annotations = nil
	}
	return nil
}
