// Package ownership is how a PodSet claims the objects it owns, its pods
// and its ControllerRevisions, the way the kube controllers'
// ControllerRefManager does: an object belongs to the PodSet only while
// both its controller reference and its labels say so. Matching orphans
// are adopted, once the PodSet is known to be live; owned objects whose
// labels stopped matching are released; objects controlled by anything
// else are never touched.
package ownership

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Claims sorts the objects a PodSet may claim, by their controller
// reference and labels.
type Claims[T metav1.Object] struct {
	// Owned are controlled by the PodSet and match its selector,
	// terminating ones included.
	Owned []T
	// Orphans match the selector, have no controller and are not being
	// deleted: the PodSet may adopt them.
	Orphans []T
	// Unmatched are controlled by the PodSet but no longer match its
	// selector, and are not being deleted: the PodSet releases them.
	Unmatched []T
}

// Sort sorts candidates for the PodSet of UID owner and selector. Objects
// controlled by anything else are in none of the lists.
func Sort[T metav1.Object](candidates []T, owner types.UID, selector labels.Selector) Claims[T] {
	var c Claims[T]
	for _, obj := range candidates {
		matches := selector.Matches(labels.Set(obj.GetLabels()))
		ref := metav1.GetControllerOfNoCopy(obj)
		live := obj.GetDeletionTimestamp() == nil
		switch {
		case ref != nil && ref.UID != owner:
		case ref != nil && matches:
			c.Owned = append(c.Owned, obj)
		case ref != nil && live:
			c.Unmatched = append(c.Unmatched, obj)
		case ref == nil && matches && live:
			c.Orphans = append(c.Orphans, obj)
		}
	}
	return c
}
