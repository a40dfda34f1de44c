// Package podcache holds what the manager caches for the reconciler
// (CacheOptions): PodSets, and only the operator's own pods, as slim pods with what
// the reconciler reads and indexed by controller and PodSet label (PodIndex),
// and whether the pod and PodSet informers' watches deliver (WatchGaps).
package podcache
