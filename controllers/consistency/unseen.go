package consistency

import "k8s.io/apimachinery/pkg/util/resourceversion"

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
