package controllers

import (
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
// PodSets (docs/architecture.md, "Status writes the cache has not seen"). A
// condition's transition time could move the same way.
//
// So the PodSet's record keeps each status written until the cache has it
// (podSetRecord.writtenStatus), and a reconcile whose cached PodSet is older
// than the write starts from the written status instead: that is what the
// API server holds (a status patch applies to the newest PodSet, whatever
// the spec). What it computes is then compared with, and patched against,
// the status really stored. The write's own event still comes; it changes
// the cached status, so it brings a reconcile (statusChangedPredicate),
// which finds nothing left to write.

// statusWritten records the PodSet a status write returned.
func (rec *podSetRecord) statusWritten(written *appv1alpha1.PodSet) {
	rec.writtenStatus.Hold(written.ResourceVersion, written.Status.DeepCopy())
}

// restoreWrittenStatus gives ps, read from the cache or the API server, the
// status last written when that copy does not have the write yet, and
// reports whether it did.
func (rec *podSetRecord) restoreWrittenStatus(ps *appv1alpha1.PodSet) bool {
	written, ok := rec.writtenStatus.NewerThan(ps.ResourceVersion)
	if ok {
		ps.Status = *written.DeepCopy()
	}
	return ok
}
