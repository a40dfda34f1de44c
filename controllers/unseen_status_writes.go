package controllers

import (
	"sync"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// A status write's own watch event can reach the PodSet informer after the
// events of pods that changed later: on a loaded API server the informers
// lag by up to a second, and not by the same amount. A reconcile brought by
// such a pod event reads the PodSet as it was before the write. Computed
// against that stale status, the new one differs from it, so it was written
// again: at best a patch that changes nothing (the API server holds that
// status already), often one that moves lastProgressTime on by a second,
// since the stale copy's observedGeneration makes the written progress look
// new once more. Either is a whole custom-resource write to decode, patch and
// validate: the 1000x1 benchmark's scale-down sent 132–162 of them for 1000
// PodSets (docs/benchmarks.md, "Status writes the cache has not seen"). A
// condition's transition time could move the same way.
//
// unseenStatusWrites remembers each status written until the cache has it,
// and a reconcile whose cached PodSet is older than the write starts from
// the written status instead: that is what the API server holds (a status
// patch applies to the newest PodSet, whatever the spec). What it computes
// is then compared with, and patched against, the status really stored. The
// write's own event still comes; it changes the cached status, so it brings
// a reconcile (statusChangedPredicate), which finds nothing left to write.
type unseenStatusWrites struct {
	mu     sync.Mutex
	writes map[string]statusWrite
}

// statusWrite is a status as the API server stored it, and the
// resourceVersion its write returned.
type statusWrite struct {
	resourceVersion string
	status          *appv1alpha1.PodSetStatus
}

func newUnseenStatusWrites() *unseenStatusWrites {
	return &unseenStatusWrites{writes: map[string]statusWrite{}}
}

// wrote records the PodSet a status write returned.
func (u *unseenStatusWrites) wrote(key string, written *appv1alpha1.PodSet) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.writes[key] = statusWrite{resourceVersion: written.ResourceVersion, status: written.Status.DeepCopy()}
}

// restore gives the cached PodSet ps the status last written for key when
// the cache does not have that write yet, and reports whether it did. A
// write the cache has caught up with is forgotten.
func (u *unseenStatusWrites) restore(key string, ps *appv1alpha1.PodSet) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	w, ok := u.writes[key]
	if !ok {
		return false
	}
	if !newerVersion(w.resourceVersion, ps.ResourceVersion) {
		delete(u.writes, key)
		return false
	}
	ps.Status = *w.status.DeepCopy()
	return true
}

// forget drops what is recorded for the PodSet namespace/name, whatever its
// UID, once it is gone.
func (u *unseenStatusWrites) forget(namespacedName string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	deletePodSetKeys(u.writes, namespacedName)
}
