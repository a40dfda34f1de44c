package controllers

import (
	"time"

	"github.com/example/podset-operator/controllers/consistency"
)

// The reconciler's timings, in one place. Each says what it bounds and why
// it has its value; the file named beside each is where it is used. The
// leader fence's pause threshold is leaderfence.DefaultThreshold, and a
// PodSet's own timings (minReadySeconds, progressDeadlineSeconds) are in
// its spec.

// What users can set (flags of the manager).

// DefaultStatusWriteInterval is the default of --status-write-interval.
//
// Used in status_update.go (updateStatus), for status.Pacing.
const DefaultStatusWriteInterval = time.Second

// DefaultPodEventBatchPeriod is the default of --pod-event-batch-period.
//
// Used in pod_events.go.
const DefaultPodEventBatchPeriod = 100 * time.Millisecond

// DefaultExpectationsTimeout bounds how long a PodSet waits for the informer
// to report the pods it created or deleted. It only matters when a watch
// event is lost; the ReplicaSet controller uses the same five minutes.
//
// Used by the expectations (package consistency, see newExpectations).
const DefaultExpectationsTimeout = 5 * time.Minute

// How long a PodSet waits for its own writes to show in the cache.

// UnseenPodPatchMaxWait bounds how long a PodSet that patched pods for an
// in-place update waits for the cache to show the patches before its next
// step. They normally show within milliseconds; a lost event must not stop
// the rollout, and a patch sent on a stale pod carries its resourceVersion,
// which the API server then refuses.
//
// Used in in_place_updates.go.
const UnseenPodPatchMaxWait = 30 * time.Second

// UncertainCreationTimeout bounds the blind wait for a pod whose create
// failed without saying whether the pod was made (the connection broke, the
// request timed out). If it was made, its event comes with the next watch or
// relist; if not, no event ever comes, and the PodSet must not wait the
// whole expectations timeout for it. Once it has passed, the PodSet compares
// its cached pods with the API server's before it acts
// (pod_cache_check.go), so the wait can be short: the relist after an API
// server restart may take a minute (client-go's reflector backoff), and a
// fixed wait long enough for it would hold every such PodSet that long.
//
// Used by the expectations (package consistency, see newExpectations).
const UncertainCreationTimeout = 3 * time.Second

// ExpectationsLagThreshold is how long a PodSet's awaited pod events may lag
// behind its last progress before it checks its cache against the API
// server (Lagging). The events of a healthy watch come within milliseconds,
// tens of them under the benchmark's load; a watch broken while the writes
// were made delivers them only with its relist, seconds to a minute later.
//
// Used by the expectations (package consistency, see newExpectations).
const ExpectationsLagThreshold = time.Second

// LagCheckInterval is how often the expectations are scanned for PodSets
// whose awaited pod events lag (Expectations.TakeLagging).
//
// Used in pod_cache_check.go.
const LagCheckInterval = 250 * time.Millisecond

// recentRevisionsTTL is how long a created revision that the cache does not
// show yet is taken to exist. A cache minutes behind has lost its watch, and
// then the careful way (a create refused as a duplicate, and a direct read)
// is the right one.
//
// Used in podset_record.go (recentRevision), read by revisions.go.
const recentRevisionsTTL = time.Minute

// When a PodSet looks again by itself.

// StalePodSetRecheckInterval is when a PodSet is looked at again after a
// read from the API server found no PodSet of its UID while the cache still
// shows it (errNotOnServer). Its deletion event, or its namesake's, normally
// comes first; the look is for the event that never comes: after a relist,
// a namesake whose generation and status equal the stale copy's passes no
// predicate of the PodSet watch. Each look costs at most one read.
//
// Used in podset_controller.go (retry).
const StalePodSetRecheckInterval = 10 * time.Second

// PodCacheRecheckInterval is how soon a PodSet whose cache was found behind
// the API server looks again; each further look that finds it still behind
// and the PodSet with nothing left to do waits twice as long, up to
// MaxPodCacheRecheckInterval. A cache behind is one whose watch is broken,
// and client-go's reflector may take up to a minute to relist: a thousand
// settled PodSets listing their pods every second meanwhile would load the
// API server for nothing. A PodSet that still converges (pods to replace, a
// rollout step to take) looks every PodCacheRecheckInterval: each look acts.
//
// Used in pod_cache_check.go.
const (
	PodCacheRecheckInterval    = time.Second
	MaxPodCacheRecheckInterval = 16 * time.Second
)

// FencedRecheckInterval is when a PodSet whose reconcile the fence refused
// is looked at again if no lease renewal has queued it sooner. Normally the
// renewal does (podset_controller.go); this only bounds the wait should a renewal
// be missed.
//
// Used in podset_controller.go.
const FencedRecheckInterval = 5 * time.Second

// TransientRetryAfter is when a reconcile that failed only because the API
// server could not be reached, or answered that it is overloaded or
// unavailable, is tried again.
//
// Such a failure says nothing about the PodSet, and the controller's
// exponential backoff is made for failures that do (a quota that refuses
// pods): during an API server restart of 20 s, a PodSet fails its retries
// every few milliseconds, then seconds, and its next retry lands tens of
// seconds after the server is back. No event wakes it earlier: after a
// relist, unchanged pods bring no event. The fault matrix saw PodSets wait
// minutes that way. Retrying at a fixed, short interval costs one refused
// connection per PodSet per interval while the server is away.
//
// Used in podset_controller.go (retry), for what podwrites.IsTransient says.
const TransientRetryAfter = 2 * time.Second

// OwnerMappingRetryAfter is how soon a reconcile is tried again when every
// write it failed was refused only because the API server's admission
// (OwnerReferencesPermissionEnforcement, on in OpenShift) could not map
// the PodSet kind yet (podwrites.IsOwnerMappingLag): a PodSet applied right
// after its CRD. kube-apiserver refreshes that mapping every 30 s; retried
// at this fixed interval rather than the doubling backoff, the first pods
// come within a second of the refresh, for one refused create per PodSet
// each second until then.
//
// Used in podset_controller.go (retry).
const OwnerMappingRetryAfter = 1 * time.Second

// newExpectations returns the reconciler's expectations, with the timings
// above.
func newExpectations(opts ...consistency.Option) *consistency.Expectations {
	return consistency.NewExpectations(consistency.Timeouts{
		Expectations:      DefaultExpectationsTimeout,
		UncertainCreation: UncertainCreationTimeout,
		LagThreshold:      ExpectationsLagThreshold,
	}, opts...)
}
