package podcache

import (
	"bytes"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/slimpod"
)

// sharedValues makes the parts that cached pods have in common one value
// that all of them point to, instead of one copy per pod: the pods of a
// PodSet revision carry the same labels, annotations and owner reference,
// sit in a few namespaces and on a few nodes, and most of them report the
// same slimmed container statuses. Cached PodSets and revisions share
// theirs too (sharePodSet, shareRevision). The API server's decoder
// allocates each of those anew for every object and every event; held per
// pod they were about a third of the operator's heap.
//
// Sharing is safe because cached objects are read-only: the reconciler
// writes a pod through a copy of its metadata (slimpod.Pod.MetadataOnly)
// and changes its own pods only after a DeepCopy, and it reads PodSets and
// revisions through the client, which copies them.
//
// What was shared is forgotten when no event has asked for it for one to
// two periods (see generations), so that the revisions, nodes and
// namespaces of the past do not stay in memory. An object that holds a
// forgotten value keeps it; a later object with the same content starts a
// new shared value.
type sharedValues struct {
	mu         sync.Mutex
	strings    generations[string]
	stringMaps generations[map[string]string]
	owners     generations[[]metav1.OwnerReference]
	conditions generations[[]corev1.PodCondition]
	containers generations[[]corev1.ContainerStatus]
}

// sharedValuesPeriod is how long a shared value is kept at least without an
// event asking for it. Each reuse keeps it for another period.
const sharedValuesPeriod = 10 * time.Minute

func newSharedValues(now func() time.Time) *sharedValues {
	v := &sharedValues{}
	seed := maphash.MakeSeed()
	hash := func(key []byte) uint64 { return maphash.Bytes(seed, key) }
	v.strings.init(now, hash, appendStringKey)
	v.stringMaps.init(now, hash, appendStringMapKey)
	v.owners.init(now, hash, appendOwnerReferencesKey)
	v.conditions.init(now, hash, appendConditionsKey)
	v.containers.init(now, hash, appendContainerStatusesKey)
	return v
}

// sharePod points pod's common parts at the shared values. pod has been
// slimmed (slimPod): its Extra (readiness gates, and for a pod without a
// revision its containers) is not shared.
// A pod that may be updated in place (inPlace) keeps its containers' whole
// states and resources (slimPodStatus); those are its own.
func (v *sharedValues) sharePod(pod *slimpod.Pod, inPlace bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	pod.Namespace = v.string(pod.Namespace)
	pod.GenerateName = v.string(pod.GenerateName)
	pod.Spec.NodeName = v.string(pod.Spec.NodeName)
	pod.Status.Phase = corev1.PodPhase(v.string(string(pod.Status.Phase)))
	pod.Labels = v.stringMap(pod.Labels)
	pod.Annotations = v.stringMap(pod.Annotations)
	if len(pod.OwnerReferences) > 0 {
		pod.OwnerReferences = v.owners.share(pod.OwnerReferences)
	}
	if len(pod.Status.Conditions) > 0 {
		pod.Status.Conditions = v.conditions.share(pod.Status.Conditions)
	}
	if len(pod.Status.ContainerStatuses) > 0 && !inPlace {
		pod.Status.ContainerStatuses = v.containers.share(pod.Status.ContainerStatuses)
	}
}

// sharePodSet points a cached PodSet's common strings at the shared ones:
// its namespace, and its conditions' types, statuses and reasons, which
// every PodSet writes from the same few. Their messages are left as they
// are: most name the PodSet's own revision. Its update and last completed
// revisions, when they are its current one (as at rest), become that
// string. Like shareRevision, it writes only what is not shared yet, so
// that a second transform of a cached object, which others may be reading,
// writes nothing.
func (v *sharedValues) sharePodSet(ps *appv1alpha1.PodSet) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.shareString(&ps.Namespace)
	for i := range ps.Status.Conditions {
		c := &ps.Status.Conditions[i]
		v.shareString(&c.Type)
		v.shareString((*string)(&c.Status))
		v.shareString(&c.Reason)
	}
	st := &ps.Status
	for _, r := range []*string{&st.UpdateRevision, &st.LastCompletedRevision} {
		if *r == st.CurrentRevision && !sameString(*r, st.CurrentRevision) {
			*r = st.CurrentRevision
		}
	}
}

// shareRevision points a cached ControllerRevision's common parts at the
// shared ones: its namespace, its owner reference (the same as its pods':
// the PodSet that controls them), and its labels' keys and their values
// but those naming the PodSet and the revision, which are its own.
func (v *sharedValues) shareRevision(cr *appsv1.ControllerRevision) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.shareString(&cr.Namespace)
	if len(cr.OwnerReferences) > 0 {
		if refs := v.owners.share(cr.OwnerReferences); !sameSlice(refs, cr.OwnerReferences) {
			cr.OwnerReferences = refs
		}
	}
	if len(cr.Labels) == 0 {
		return
	}
	labels, changed := make(map[string]string, len(cr.Labels)), false
	for k, val := range cr.Labels {
		sk, sval := v.string(k), val
		if k != appv1alpha1.LabelPodSet && k != appv1alpha1.LabelRevisionHash {
			sval = v.string(val)
		}
		changed = changed || !sameString(sk, k) || !sameString(sval, val)
		labels[sk] = sval
	}
	if changed {
		cr.Labels = labels
	}
}

// shareString points *s at the shared copy of its value, unless it is
// that copy already.
func (v *sharedValues) shareString(s *string) {
	if shared := v.string(*s); !sameString(shared, *s) {
		*s = shared
	}
}

// sameString tells whether a and b are one string, not two equal ones.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// sameSlice tells whether a and b are one slice.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func (v *sharedValues) string(s string) string {
	if s == "" {
		return s
	}
	return v.strings.share(s)
}

func (v *sharedValues) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return v.stringMaps.share(m)
}

// generations is one kind of shared value. A value lives in the current
// generation or the one before; a value found in the one before moves to
// the current one. Every period the current generation becomes the one
// before, and the one before is dropped: what nothing asked for in a whole
// period goes.
//
// Values are found by the hash of their key, a serialization of their
// whole content (appendKey), and told equal by their keys. The tables
// hold the 8-byte hash, not the key, which for a PodSet's pods' labels,
// annotations and owner reference would take about 500 bytes. A value
// whose hash is an unequal value's in the current generation is left
// unshared; one whose hash is an unequal value's in the generation before
// replaces it.
type generations[V any] struct {
	now             func() time.Time
	rotated         time.Time
	current, before map[uint64]V
	hash            func(key []byte) uint64
	appendKey       func(key []byte, v V) []byte
	// key and sharedKey are the keys of the value asked for and of a
	// shared one, reused from call to call (sharedValues.mu is held).
	key, sharedKey []byte
}

func (g *generations[V]) init(now func() time.Time, hash func([]byte) uint64, appendKey func([]byte, V) []byte) {
	g.now, g.rotated, g.current, g.hash, g.appendKey = now, now(), map[uint64]V{}, hash, appendKey
}

// share returns the shared value equal to v, and makes v that value if
// there is none.
func (g *generations[V]) share(v V) V {
	if now := g.now(); now.Sub(g.rotated) >= sharedValuesPeriod {
		g.before, g.current, g.rotated = g.current, make(map[uint64]V, len(g.current)), now
	}
	g.key = g.appendKey(g.key[:0], v)
	h := g.hash(g.key)
	defer func() {
		if cap(g.key) > maxKeptKeyBuffer {
			g.key = nil
		}
	}()
	if shared, ok := g.current[h]; ok {
		if g.equal(shared) {
			return shared
		}
		return v // another value has its hash
	}
	if shared, ok := g.before[h]; ok && g.equal(shared) {
		v = shared
	}
	g.current[h] = v
	return v
}

// equal tells whether shared has the key in g.key.
func (g *generations[V]) equal(shared V) bool {
	g.sharedKey = g.appendKey(g.sharedKey[:0], shared)
	equal := bytes.Equal(g.key, g.sharedKey)
	if cap(g.sharedKey) > maxKeptKeyBuffer {
		g.sharedKey = nil
	}
	return equal
}

// maxKeptKeyBuffer is the largest key buffer kept for the next call: a
// pod's annotations may hold up to 256 KiB.
const maxKeptKeyBuffer = 16 << 10

// The keys below write each field with its length first, so that no two
// different contents have the same key.

func appendStringKey(key []byte, s string) []byte { return append(key, s...) }

func appendField(key []byte, s string) []byte {
	key = strconv.AppendInt(key, int64(len(s)), 10)
	key = append(key, ':')
	return append(key, s...)
}

func appendInt(key []byte, i int64) []byte {
	return append(strconv.AppendInt(key, i, 10), ';')
}

func appendStringMapKey(key []byte, m map[string]string) []byte {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key = appendField(appendField(key, k), m[k])
	}
	return key
}

func appendBool(key []byte, b *bool) []byte {
	switch {
	case b == nil:
		return append(key, '-')
	case *b:
		return append(key, 't')
	}
	return append(key, 'f')
}

func appendOwnerReferencesKey(key []byte, refs []metav1.OwnerReference) []byte {
	for _, r := range refs {
		key = appendField(appendField(appendField(appendField(key, r.APIVersion), r.Kind), r.Name), string(r.UID))
		key = appendBool(appendBool(key, r.Controller), r.BlockOwnerDeletion)
	}
	return key
}

func appendTime(key []byte, t metav1.Time) []byte {
	if t.IsZero() {
		return append(key, '-')
	}
	return appendInt(key, t.UnixNano())
}

func appendConditionsKey(key []byte, conditions []corev1.PodCondition) []byte {
	for _, c := range conditions {
		key = appendField(appendField(appendField(appendField(key, string(c.Type)), string(c.Status)), c.Reason), c.Message)
		key = appendInt(appendTime(appendTime(key, c.LastProbeTime), c.LastTransitionTime), c.ObservedGeneration)
	}
	return key
}

// appendContainerStatusesKey appends the key of container statuses as
// slimPodStatus leaves them for a pod not updated in place: name, restarts and the
// reason a container waits, nothing more.
func appendContainerStatusesKey(key []byte, statuses []corev1.ContainerStatus) []byte {
	for _, cs := range statuses {
		reason := "-"
		if w := cs.State.Waiting; w != nil {
			reason = "w" + w.Reason
		}
		key = appendInt(appendField(appendField(key, cs.Name), reason), int64(cs.RestartCount))
	}
	return key
}
