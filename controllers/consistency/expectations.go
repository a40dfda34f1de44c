// Package consistency holds what keeps the reconciler from acting on a cache
// that has not caught up with its own writes: the expectations (the pod
// creations and deletions a PodSet waits to see, and whether the events it
// waits for lag), and Unseen, what was written to or read from the API
// server until the cache shows it. It knows nothing of the reconciler; the
// timings are the reconciler's (controllers/timings.go).
package consistency

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Expectations remembers, per PodSet, the pod creations and deletions the
// operator has issued but not yet seen in its informer cache.
//
// The cache lags the API server. A reconcile that ran right after creating
// pods would list too few of them and create more; one that ran right after
// deleting would delete again. So after issuing writes a PodSet is left alone
// (Satisfied returns false) until every write has been observed through a
// pod event, or the timeout has passed.
//
// Creations are counted, since a generated pod name is only known once the
// create returns, possibly after its watch event. Deletions are tracked by
// pod UID, so that the two events one deletion can produce (deletionTimestamp
// set, then the object gone) are observed only once.
type Expectations struct {
	timeouts Timeouts
	now      func() time.Time

	mu    sync.Mutex
	items map[string]*expectation
	// settled holds, per key, the pods Resolve found already there: their
	// creation events may still be on their way to the handler, and must
	// not count towards the creations of a later step (see Resolve).
	settled map[string]sets.Set[types.UID]
	// watches is, per namespace, how far the pod informer's watch has
	// delivered events (PodEventSeen).
	watches map[string]watchPosition
}

// watchPosition is the newest resourceVersion of a pod event the handler
// saw in a namespace, and when it last saw one.
type watchPosition struct {
	resourceVersion string
	at              time.Time
}

type expectation struct {
	creations int
	deletions sets.Set[types.UID]
	setAt     time.Time
	// progressAt is when the writes last showed progress: set, returned
	// (WritesReturned), or one of them observed.
	progressAt time.Time
	// lagReported is set once TakeLagging has reported the writes; any
	// progress clears it.
	lagReported bool
	// uncertainUntil, when set, is the earlier moment the wait ends: some
	// creations failed in a way that leaves open whether the API server
	// made the pod (see CreationUncertain).
	uncertainUntil time.Time
	// createdVersion is the newest resourceVersion the step's creates
	// returned (CreationReturned).
	createdVersion string
	// deletedVersion is the newest resourceVersion the step's deletes
	// returned (DeletionReturned); unversioned is set when one returned
	// none.
	deletedVersion string
	unversioned    bool
}

// pending reports whether some expected write has not been observed yet.
func (exp *expectation) pending() bool {
	return exp.creations > 0 || exp.deletions.Len() > 0
}

// Timeouts are the expectations' timings.
type Timeouts struct {
	// Expectations bounds how long a PodSet waits for the events of its
	// writes, should one be lost.
	Expectations time.Duration
	// UncertainCreation bounds the wait for a pod whose create failed
	// without saying whether the pod was made (CreationUncertain).
	UncertainCreation time.Duration
	// LagThreshold is how long the awaited events may lag the writes'
	// last progress before the PodSet is Lagging.
	LagThreshold time.Duration
}

// Option configures Expectations.
type Option func(*Expectations)

// WithClock makes the expectations read the time from now.
func WithClock(now func() time.Time) Option {
	return func(e *Expectations) { e.now = now }
}

// Key identifies one PodSet in the expectations: by UID as well as name, so
// that a PodSet deleted and recreated under the same name never inherits,
// nor is satisfied by, its predecessor's pending writes.
func Key(namespace, name string, uid types.UID) string {
	return namespace + "/" + name + "/" + string(uid)
}

// PodSetOfKey is the PodSet of a Key (names hold no '/').
func PodSetOfKey(key string) (types.NamespacedName, bool) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: parts[0], Name: parts[1]}, true
}

// NewExpectations returns empty Expectations with the given timings.
func NewExpectations(timeouts Timeouts, opts ...Option) *Expectations {
	e := &Expectations{timeouts: timeouts, now: time.Now, items: map[string]*expectation{}, settled: map[string]sets.Set[types.UID]{},
		watches: map[string]watchPosition{}}
	for _, o := range opts {
		o(e)
	}
	return e
}

// ExpectCreations records that n pods are about to be created for key,
// replacing whatever was expected before.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.Expect(key, n, nil)
}

// ExpectDeletions records that the pods with these UIDs are about to be
// deleted for key, replacing whatever was expected before.
func (e *Expectations) ExpectDeletions(key string, uids []types.UID) {
	e.Expect(key, 0, uids)
}

// Expect records that n pods are about to be created and the pods with these
// UIDs deleted for key, in one step of a rolling update, replacing whatever
// was expected before.
func (e *Expectations) Expect(key string, creations int, deletions []types.UID) {
	e.set(key, &expectation{creations: creations, deletions: sets.New(deletions...)})
}

func (e *Expectations) set(key string, exp *expectation) {
	exp.setAt = e.now()
	exp.progressAt = exp.setAt
	e.mu.Lock()
	defer e.mu.Unlock()
	e.items[key] = exp
}

// PodCreationObserved records that the pod with this UID of key appeared
// in the cache. It reports whether this was the last write key waited for.
// A pod that Resolve already found there counts for nothing.
func (e *Expectations) PodCreationObserved(key string, uid types.UID) (fulfilled bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if seen := e.settled[key]; seen.Has(uid) {
		seen.Delete(uid)
		return false
	}
	return e.creationObservedLocked(key)
}

// CreationObserved records that one pod of key was created, or that a
// creation will not happen (it failed, or it was skipped). It reports
// whether this was the last write key waited for.
func (e *Expectations) CreationObserved(key string) (fulfilled bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.creationObservedLocked(key)
}

func (e *Expectations) creationObservedLocked(key string) (fulfilled bool) {
	if exp, ok := e.items[key]; ok && exp.creations > 0 {
		exp.creations--
		e.progressedLocked(exp)
		return !exp.pending()
	}
	return false
}

// CreationUncertain records that one expected creation of key failed in a
// way that leaves open whether the pod exists: it stays expected, so that a
// cache that has not seen it yet does not make the PodSet create it again,
// but for at most Timeouts.UncertainCreation.
func (e *Expectations) CreationUncertain(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.items[key]; ok && exp.uncertainUntil.IsZero() {
		exp.uncertainUntil = e.now().Add(e.timeouts.UncertainCreation)
	}
}

// DeletionObserved records that the pod with this UID is gone or going, or
// that its deletion will not happen. It reports whether this was the last
// write key waited for.
func (e *Expectations) DeletionObserved(key string, uid types.UID) (fulfilled bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.items[key]; ok && exp.deletions.Has(uid) {
		exp.deletions.Delete(uid)
		e.progressedLocked(exp)
		return !exp.pending()
	}
	return false
}

func (e *Expectations) progressedLocked(exp *expectation) {
	exp.progressAt = e.now()
	exp.lagReported = false
}

// CreationReturned records the resourceVersion of a pod key's step created:
// its event comes after every event of an older version.
func (e *Expectations) CreationReturned(key, version string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.items[key]; ok && NewerVersion(version, exp.createdVersion) {
		exp.createdVersion = version
	}
}

// DeletionReturned records the resourceVersion a pod delete of key's step
// returned: the version of the deletion's last event (the pod marked for
// graceful deletion, or removed). An empty version (a delete whose
// answer was not read) makes the step's events lag as soon as they are
// late (see eventsOnTheirWayLocked).
func (e *Expectations) DeletionReturned(key, version string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.items[key]
	switch {
	case !ok:
	case version == "":
		exp.unversioned = true
	case NewerVersion(version, exp.deletedVersion):
		exp.deletedVersion = version
	}
}

// PodEventSeen records that the pod informer delivered an event of a pod of
// namespace at version.
func (e *Expectations) PodEventSeen(namespace, version string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.watches[namespace]
	if NewerVersion(version, w.resourceVersion) {
		w.resourceVersion = version
	}
	w.at = e.now()
	e.watches[namespace] = w
}

// WritesReturned records that every write of key's current step has
// returned: the wait for their events starts now. A step's writes may take
// seconds on a loaded API server, and their events only lag from the moment
// each write returned.
func (e *Expectations) WritesReturned(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.items[key]; ok {
		e.progressedLocked(exp)
	}
}

// Lagging reports whether key waits for writes that have shown no progress
// for Timeouts.LagThreshold: every write returned, and none of the
// events still awaited came since. Events normally follow their write within
// milliseconds; when they do not, the pod watch is likely broken, and the
// PodSet compares its cache with the API server rather than wait for a
// relist that client-go may put off for a minute (the reconciler's pod cache check).
func (e *Expectations) Lagging(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.items[key]
	return ok && e.laggingLocked(key, exp, e.now())
}

func (e *Expectations) laggingLocked(key string, exp *expectation, now time.Time) bool {
	return exp.pending() && now.Sub(exp.progressAt) >= e.timeouts.LagThreshold && now.Sub(exp.setAt) < e.timeouts.Expectations &&
		!e.eventsOnTheirWayLocked(key, exp, now)
}

// eventsOnTheirWayLocked reports whether the events key waits for are only
// late, not lost, so that checking its cache against the API server would
// gain nothing: each creation and deletion it waits for returned its
// resourceVersion, and the pod watch of its namespace is alive (it
// delivered an event within Timeouts.LagThreshold) but has not yet
// delivered one as new as the newest of them. A watch delivers in the
// order of resourceVersions, so those events are still to come in it.
//
// On two busy cores the operator's pod informer fell hundreds of events
// behind the API server in the memory scenario; every PodSet then found
// its events lagging, and each listed its thousand pods from the API
// server every second until its cache caught up: the operator's highest
// heap, and load on an API server that was the bottleneck already
// (docs/architecture.md, "Cache checks"). A watch that broke delivers nothing
// until its relist, and one that relisted past a creation whose pod was
// deleted meanwhile delivers newer versions without it: both still count
// as lagging.
func (e *Expectations) eventsOnTheirWayLocked(key string, exp *expectation, now time.Time) bool {
	if !exp.uncertainUntil.IsZero() || exp.unversioned ||
		(exp.creations > 0 && exp.createdVersion == "") || (exp.deletions.Len() > 0 && exp.deletedVersion == "") {
		return false
	}
	newest := exp.createdVersion
	if NewerVersion(exp.deletedVersion, newest) {
		newest = exp.deletedVersion
	}
	namespace, _, _ := strings.Cut(key, "/")
	w, ok := e.watches[namespace]
	return ok && now.Sub(w.at) < e.timeouts.LagThreshold && NewerVersion(newest, w.resourceVersion)
}

// TakeLagging returns the keys that have become Lagging since they were
// last returned (or last progressed). Each lag is reported once: the
// reconcile it brings either resolves the expectations or finds the cache
// behind, and then looks again on its own.
func (e *Expectations) TakeLagging() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	var keys []string
	for key, exp := range e.items {
		if !exp.lagReported && e.laggingLocked(key, exp, now) {
			exp.lagReported = true
			keys = append(keys, key)
		}
	}
	return keys
}

// Satisfied reports whether key may be acted on: nothing is pending, or what
// is pending has waited longer than the timeout.
func (e *Expectations) Satisfied(key string) bool {
	return e.ExpiresIn(key) == 0
}

// ExpiresIn is how long key's pending writes may still be waited for: 0 when
// nothing is pending or the wait is over. A PodSet left alone for that long
// must look again by itself, since the event it waits for may never come.
func (e *Expectations) ExpiresIn(key string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.items[key]
	if !ok || !exp.pending() {
		return 0
	}
	now := e.now()
	wait := e.timeouts.Expectations - now.Sub(exp.setAt)
	if !exp.uncertainUntil.IsZero() {
		wait = min(wait, exp.uncertainUntil.Sub(now))
	}
	return max(0, wait)
}

// Expired reports whether key's writes are still pending after the whole
// timeout: a watch event was lost, and the PodSet is about to act anyway.
func (e *Expectations) Expired(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.items[key]
	if !ok || !exp.pending() {
		return false
	}
	return e.now().Sub(exp.setAt) >= e.timeouts.Expectations
}

// Doubtful reports whether key's wait ended only because creations whose
// outcome is unknown (CreationUncertain) stopped being waited for: the
// cache may still lack pods the API server made, and must be checked
// against it before the PodSet acts (the reconciler's pod cache check).
func (e *Expectations) Doubtful(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.items[key]
	if !ok || exp.uncertainUntil.IsZero() || !exp.pending() {
		return false
	}
	now := e.now()
	return !now.Before(exp.uncertainUntil) && now.Sub(exp.setAt) < e.timeouts.Expectations
}

// Resolve drops what key waits for: the pods the API server has (seen)
// were found, so nothing it waits for is still to come.
//
// Their creation events may still be on their way: the informer updates
// its store before its handlers run, and a relist hands them every pod
// that appeared meanwhile. Counted, such a late event would stand for a
// pod of the next step, whose expectations would then be met one event
// early, and the PodSet would act on a cache that lacks that pod. So the
// seen pods are remembered, and their creation events ignored.
func (e *Expectations) Resolve(key string, seen ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.items, key)
	e.settled[key] = sets.New(seen...)
}

// Forget drops everything recorded for the PodSet namespace/name, whatever
// its UID, once it is gone.
func (e *Expectations) Forget(namespacedName string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	deletePodSetKeys(e.items, namespacedName)
	deletePodSetKeys(e.settled, namespacedName)
}

// deletePodSetKeys deletes the entries of the PodSet namespace/name, whatever
// its UID, from a map keyed by Key.
func deletePodSetKeys[V any](m map[string]V, namespacedName string) {
	for key := range m {
		if strings.HasPrefix(key, namespacedName+"/") {
			delete(m, key)
		}
	}
}
