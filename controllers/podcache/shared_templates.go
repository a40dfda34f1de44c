package podcache

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"k8s.io/apimachinery/pkg/runtime/schema"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// sharedTemplates keeps one copy of each encoded pod template the cache
// holds, deflated. A PodSet's template, as the cache keeps it
// (encodeTemplate), is byte for byte the data of the revision it runs, so
// the two cached objects hold one copy where they held two; and deflated,
// a chart-sized template's JSON takes about a third of its bytes (2.7 KB
// to 1.0 KB). Every PodSet's template differs from the others' (an
// application's labels at least), so each PodSet holds a copy of its own.
//
// A copy is shared while some cached object holds it: the table points to
// it weakly, and forgets it once the objects that held it are gone (a
// revision pruned, a PodSet deleted or given a new template).
//
// What share returns must never be written to: it is a string, and the
// cached revisions hold it in a deflatedData, which nothing modifies.
type sharedTemplates struct {
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]sharedCopy
}

// sharedCopy is one shared copy: its first byte, held weakly, and its
// length.
type sharedCopy struct {
	first weak.Pointer[byte]
	n     int
}

// minSharedTemplate is the shortest value worth sharing: a weak pointer
// and its cleanup cost more than a short copy, and the runtime does not
// run cleanups of the tiny allocations that hold the shortest ones.
const minSharedTemplate = 64

func newSharedTemplates() *sharedTemplates {
	return &sharedTemplates{byKey: map[[sha256.Size]byte]sharedCopy{}}
}

// share returns the shared deflated copy of the JSON b (see deflate), making
// one when there is none. A value shorter than minSharedTemplate is
// deflated but not shared. Copies are found by the SHA-256 of b: two
// templates that differ never share one.
func (t *sharedTemplates) share(b []byte) string {
	if len(b) < minSharedTemplate {
		return deflate(b)
	}
	key := sha256.Sum256(b)
	t.mu.Lock()
	s, ok := t.lookupLocked(key)
	t.mu.Unlock()
	if ok {
		return s
	}
	// Deflated outside the lock: the PodSet and revision informers share
	// the table.
	deflated := deflate(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.lookupLocked(key); ok {
		return s // made meanwhile
	}
	first := unsafe.StringData(deflated)
	t.byKey[key] = sharedCopy{first: weak.Make(first), n: len(deflated)}
	runtime.AddCleanup(first, t.forget, key)
	return deflated
}

// lookupLocked returns the shared copy of key, if some object still holds
// it; t.mu is held.
func (t *sharedTemplates) lookupLocked(key [sha256.Size]byte) (string, bool) {
	if c, ok := t.byKey[key]; ok {
		if p := c.first.Value(); p != nil {
			return unsafe.String(p, c.n), true
		}
	}
	return "", false
}

// forget drops the copy of key once no object holds it; one made since
// for the same key is kept.
func (t *sharedTemplates) forget(key [sha256.Size]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.byKey[key]; ok && c.first.Value() == nil {
		delete(t.byKey, key)
	}
}

// size is how many copies the table points to (for tests).
func (t *sharedTemplates) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// deflated is the form of a template the cache holds: the length of the
// JSON as a uvarint, then the JSON deflated. The length lets inflate
// allocate the JSON once.
var flateWriters = sync.Pool{New: func() any {
	w, err := flate.NewWriter(nil, flate.DefaultCompression)
	if err != nil {
		panic(err) // a valid level
	}
	return w
}}

var flateReaders = sync.Pool{New: func() any { return flate.NewReader(nil) }}

// deflate is b in the deflated form.
func deflate(b []byte) string {
	var buf bytes.Buffer
	buf.Grow(len(b)/2 + binary.MaxVarintLen64)
	buf.Write(binary.AppendUvarint(nil, uint64(len(b))))
	w := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(w)
	w.Reset(&buf)
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.String()
}

var errNotDeflated = errors.New("not a deflated template")

// inflate is the JSON that deflate made s from.
func inflate(s string) ([]byte, error) {
	n, size := binary.Uvarint(bytesOf(s))
	if size <= 0 || n > 1<<24 {
		return nil, errNotDeflated
	}
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(bytesOf(s[size:])), nil); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("inflating a cached template: %w", err)
	}
	return out, nil
}

// deflatedData is the data of a cached ControllerRevision (its
// Data.Object, with Data.Raw nil): its JSON in the shared deflated copy.
// It encodes to JSON as that JSON, so that a cached revision marshals
// (into a merge patch's original, say) exactly as the API server's.
// revision.Decode reads it so. In protobuf a revision's data is Data.Raw
// alone: a cached revision, or a copy of one, may be written only by a
// JSON merge patch (as every write of one is), never sent whole by an
// update, which the manager's client encodes in protobuf for apps/v1.
type deflatedData struct{ deflated string }

var _ k8sruntime.Object = (*deflatedData)(nil)

func (d *deflatedData) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns d itself: it is never modified, and copies of a
// cached revision keep sharing its data.
func (d *deflatedData) DeepCopyObject() k8sruntime.Object { return d }

func (d *deflatedData) MarshalJSON() ([]byte, error) { return inflate(d.deflated) }

// bytesOf is s as a []byte without a copy: it must never be written to.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
