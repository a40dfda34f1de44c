package consistency

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Unseen holds an object (or part of one) that the reconciler wrote to or
// read from the API server, with the resourceVersion it had there, until
// the cache shows that version or a later one. Until then it is newer than
// what the cache holds, and a reconcile starts from it instead. The zero
// value holds nothing.
type Unseen[T any] struct {
	resourceVersion string
	value           T
	held            bool
}

// Hold keeps value, which the API server holds at resourceVersion.
func (u *Unseen[T]) Hold(resourceVersion string, value T) {
	*u = Unseen[T]{resourceVersion: resourceVersion, value: value, held: true}
}

// NewerThan returns the value held if the cache's version cached is older,
// and drops it once the cache has caught up.
func (u *Unseen[T]) NewerThan(cached string) (T, bool) {
	if u.held && !NewerVersion(u.resourceVersion, cached) {
		*u = Unseen[T]{}
	}
	return u.value, u.held
}

// NewerVersion reports whether resourceVersion a is newer than b, a version
// that is not an integer (none is, or b is empty) being never newer.
// Versions compare by number since Kubernetes 1.35 (KEP-5504), for objects
// of one resource.
func NewerVersion(a, b string) bool {
	if b == "" {
		return a != ""
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// UnseenWrites holds, for each object (by UID) the reconciler patched, the
// resourceVersion the patch returned, until the cache shows that version or
// a later one, the object is gone from it, or MaxWait has passed (a lost
// event must not hold the owner forever; a patch sent on a stale object
// carries its resourceVersion, and the API server refuses it). The zero
// value holds nothing.
type UnseenWrites struct {
	versions map[types.UID]string
	since    time.Time
}

// Hold records that the object uid is at resourceVersion after a write
// made at now.
func (u *UnseenWrites) Hold(uid types.UID, resourceVersion string, now time.Time) {
	if u.versions == nil {
		u.versions = map[types.UID]string{}
	}
	if len(u.versions) == 0 {
		u.since = now
	}
	if NewerVersion(resourceVersion, u.versions[uid]) {
		u.versions[uid] = resourceVersion
	}
}

// Holding reports whether some write is held.
func (u *UnseenWrites) Holding() bool { return len(u.versions) > 0 }

// Behind reports whether the cache, which holds the objects cached (by
// UID, their resourceVersion), still lacks a held write, and drops those
// it has caught up with.
func (u *UnseenWrites) Behind(cached map[types.UID]string, now time.Time, maxWait time.Duration) bool {
	if len(u.versions) == 0 {
		return false
	}
	if now.Sub(u.since) > maxWait {
		clear(u.versions)
		return false
	}
	for uid, want := range u.versions {
		if have, ok := cached[uid]; !ok || !NewerVersion(want, have) {
			delete(u.versions, uid)
		}
	}
	return len(u.versions) > 0
}
