package podcache

import (
	"hash/fnv"
	"runtime"
	"sync"
	"unsafe"
	"weak"
)

// sharedTemplates keeps one copy of each encoded pod template the cache
// holds. A PodSet's template, as the cache keeps it (encodeTemplate), is
// byte for byte the data of the revision it runs, so the two cached objects
// can hold one copy where they held two: with a chart-sized template, about
// 3 KB per PodSet, 0.3 KB per pod at ten pods a PodSet.
//
// A copy is shared while some cached object holds it: the table points to
// it weakly, and forgets it once the objects that held it are gone (a
// revision pruned, a PodSet deleted or given a new template).
//
// What share returns must never be written to: the revision transform
// hands it out as a ControllerRevision's data (a []byte), and a write there
// would change the PodSets' templates too (their seal would then fail, and
// the cache would read them as the short form). Cached objects are
// read-only, and every read of a revision through the client copies it but
// claimRevisions' UnsafeDisableDeepCopy list, which only reads (decoding
// JSON into a revision's data, in particular, reuses its buffer).
type sharedTemplates struct {
	mu     sync.Mutex
	byHash map[uint64][]sharedCopy
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
	return &sharedTemplates{byHash: map[uint64][]sharedCopy{}}
}

// share returns the shared copy of b, as a string, making one when there
// is none.
func (t *sharedTemplates) share(b []byte) string {
	if len(b) < minSharedTemplate {
		return string(b)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	key := h.Sum64()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.byHash[key] {
		if p := c.first.Value(); p != nil && c.n == len(b) {
			if s := unsafe.String(p, c.n); s == string(b) {
				return s
			}
		}
	}
	c := make([]byte, len(b))
	copy(c, b)
	t.byHash[key] = append(t.byHash[key], sharedCopy{first: weak.Make(&c[0]), n: len(c)})
	runtime.AddCleanup(&c[0], t.forget, key)
	return unsafe.String(&c[0], len(c))
}

// forget drops the copies of key that no object holds any longer.
func (t *sharedTemplates) forget(key uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.byHash[key][:0]
	for _, c := range t.byHash[key] {
		if c.first.Value() != nil {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		delete(t.byHash, key)
		return
	}
	t.byHash[key] = live
}

// size is how many copies the table points to (for tests).
func (t *sharedTemplates) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, cs := range t.byHash {
		n += len(cs)
	}
	return n
}

// bytesOf is s as a []byte without a copy, for the fields that hold bytes
// (a ControllerRevision's data): it must never be written to.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
