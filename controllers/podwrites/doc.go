// Package podwrites holds how the reconciler sends pod writes: the bound on
// writes in flight across all PodSets (Slots), creates sent in batches that
// double while they succeed (SlowStart), a rolling step's creations sent as
// its deletions make room (SurgeRoom), and what a failed write says about
// the API server (IsTransient, MayHaveReachedServer). PodControl sends the
// creates and deletes themselves, under the leader fence, and lets tests
// stand in for the API server; Background sends the deletes of a step that
// only deletes without holding a worker. It knows no PodSet.
package podwrites
