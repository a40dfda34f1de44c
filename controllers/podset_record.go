package controllers

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/slimpod"
	"github.com/example/podset-operator/controllers/status"
)

// podSetRecord is what the reconciler remembers about one PodSet from one
// reconcile to the next. A reconcile acts on its cache, and the cache lags
// the API server: each field keeps something the cache cannot tell yet,
// and says when it stops mattering.
//
// A record belongs to one PodSet object: it is found by namespace/name and
// started afresh when a namesake with another UID takes that name, so a
// re-created PodSet never inherits its predecessor's memory. When the
// PodSet is gone, forgetting its record forgets all of it at once.
//
// Only the reconcile of its PodSet uses a record, and controller-runtime
// never runs two reconciles of one PodSet at once, so the fields a
// reconcile reads and writes itself need no lock. Those that goroutines
// started by a reconcile may set after it returned (namespaceTerminating,
// recentRevision, background), strays, which the pod event handler
// records, and fenced, which the lease renewal clears, guard themselves.
type podSetRecord struct {
	name types.NamespacedName
	uid  types.UID

	// statusPacing spaces the PodSet's progress writes (status.Pacing).
	statusPacing status.Pacing
	// writtenStatus is the last status the reconciler wrote, until the
	// cache shows that write (statusWritten, below).
	writtenStatus consistency.Unseen[*appv1alpha1.PodSetStatus]
	// podSetRead is the PodSet as read from the API server while the
	// PodSet watch was down, until the cache shows it; podSetReadAfter is
	// the count of PodSet watch failures it was read after
	// (podset_cache_check.go).
	podSetRead      consistency.Unseen[*appv1alpha1.PodSet]
	podSetReadAfter uint64
	// podCache is what the last checks of the PodSet's pod cache found
	// (pod_cache_check.go).
	podCache consistency.CacheCheck
	// recentRevision is the revision the reconciler created last, until the
	// cache shows it (below; read by syncRevisions).
	recentRevision recentRevision
	// namespaceTerminating is set once a create found the PodSet's
	// namespace being deleted: it creates nothing more (scaling.go).
	namespaceTerminating atomic.Bool
	// fenced is set while the PodSet waits for the lease's renewal, the
	// leader fence having refused its reconcile (podset_controller.go).
	fenced atomic.Bool
	// strays are the PodSet's pods that left the cache by losing their
	// app.example.com/podset label, recorded by the pod event handler (claims.go).
	strays strayPods
	// background is what the PodSet's deletes sent in the background left
	// for its reconciles (podwrites.Background).
	background podwrites.BackgroundSteps
	// podPatches are the in-place updates' pod patches until the cache
	// shows them (in_place_updates.go).
	podPatches unseenPodPatches
	// failureWatch is what auto-rollback remembers of the containers of
	// the revision on trial (below; read by decideRollback).
	failureWatch failureWatch
	// rollback is the rollback auto-rollback decided last, for a reconcile
	// that reads a status without it (its write failed).
	rollback *appv1alpha1.AutoRollbackStatus
	// invalidRetry is the app.example.com/rollout-retry value that did not
	// parse and was said in an event, so that it is said once;
	// invalidPromote the same for app.example.com/rollout-promote.
	invalidRetry   string
	invalidPromote string
	// canary is where the canary's steps stood after the last reconcile,
	// for a reconcile that reads a status without it (its write failed,
	// or was paced): the measurements it holds are not taken again
	// (canary_steps.go).
	canary *appv1alpha1.CanaryStatus
	// namedSeen are the pods seen as the PodSet's while
	// spec.scaleStrategy.podsToDelete lists names, so that a named pod gone
	// before the next look is not reported as unknown; only the names
	// still listed are kept (pods_to_delete.go).
	namedSeen sets.Set[string]
	// brokenWhenNamed are the live pods, not named, that were unavailable
	// and failing when spec.scaleStrategy.podsToDelete was first seen
	// listing names, by UID, until the list is empty
	// (unavailableBeforeNamed).
	brokenWhenNamed sets.Set[types.UID]
}

// unavailableBeforeNamed is how many of the live pods that st counts, not
// named, were unavailable already, and failing (operand.IsFailing: not
// starting, nor updated in place), when spec.scaleStrategy.podsToDelete was
// first seen listing names, and still are unavailable (rollout.Input's
// UnavailableBeforeNamed). It takes that snapshot at the first look, and
// drops it once the list is empty. A pod still starting then (a rollout's,
// a replacement's) is not in it, so it holds a named pod back until it is
// available; nor is one that fails later, a replacement that crashes
// included.
func (rec *podSetRecord) unavailableBeforeNamed(ps *appv1alpha1.PodSet, st *rolloutstate.State) int {
	if len(ps.Spec.PodsToDelete()) == 0 {
		rec.brokenWhenNamed = nil
		return 0
	}
	first := rec.brokenWhenNamed == nil
	if first {
		rec.brokenWhenNamed = sets.New[types.UID]()
	}
	n := 0
	for _, pod := range slices.Concat(st.Updated, st.Old) {
		if st.Named[pod.UID] || st.Available(pod) {
			continue
		}
		if first && operand.IsFailing(pod) && !inplace.Pending(pod) {
			rec.brokenWhenNamed.Insert(pod.UID)
		}
		if rec.brokenWhenNamed.Has(pod.UID) {
			n++
		}
	}
	return n
}

// podSetRecords holds the record of every PodSet the reconciler has seen
// and not yet found gone.
type podSetRecords struct {
	mu     sync.Mutex
	byName map[types.NamespacedName]*podSetRecord
}

func newPodSetRecords() *podSetRecords {
	return &podSetRecords{byName: map[types.NamespacedName]*podSetRecord{}}
}

// of returns ps's record, a new one when none is kept or when the one kept
// was a namesake's.
func (rs *podSetRecords) of(ps *appv1alpha1.PodSet) *podSetRecord {
	nn := types.NamespacedName{Namespace: ps.Namespace, Name: ps.Name}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, ok := rs.byName[nn]
	if !ok || rec.uid != ps.UID {
		rec = &podSetRecord{name: nn, uid: ps.UID}
		rs.byName[nn] = rec
	}
	return rec
}

// lookup returns the record kept for namespace/name, or nil.
func (rs *podSetRecords) lookup(nn types.NamespacedName) *podSetRecord {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.byName[nn]
}

// ofOwner returns the record of the PodSet nn of UID uid, as a pod's
// controller reference names it, for an event handler: a new one when none
// is kept (the PodSet not reconciled yet since the operator started), and
// nil when the one kept is a namesake's. The pod then belongs to a PodSet
// that is gone, or that this replica has not seen yet; either way, its next
// reconcile decides.
func (rs *podSetRecords) ofOwner(nn types.NamespacedName, uid types.UID) *podSetRecord {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, ok := rs.byName[nn]
	switch {
	case !ok:
		rec = &podSetRecord{name: nn, uid: uid}
		rs.byName[nn] = rec
	case rec.uid != uid:
		return nil
	}
	return rec
}

// forget drops the record of the PodSet namespace/name, which is gone.
func (rs *podSetRecords) forget(nn types.NamespacedName) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.byName, nn)
}

// strayPods are, in the PodSet's record, the pods that left the pod cache
// while still controlled by the PodSet and not being deleted (see
// claims.go). The pod event handler adds them; the reconciles release
// them.
type strayPods struct {
	mu    sync.Mutex
	byUID map[types.UID]types.NamespacedName
}

// add records that pod (uid) left the cache without being deleted.
func (s *strayPods) add(pod types.NamespacedName, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byUID == nil {
		s.byUID = map[types.UID]types.NamespacedName{}
	}
	s.byUID[uid] = pod
}

// list returns the strays recorded.
func (s *strayPods) list() map[types.UID]types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.byUID)
}

// done forgets one stray, released or no longer stray.
func (s *strayPods) done(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
}

// recentRevision is, in the PodSet's record, the revision this operator
// created last, until the cache shows it. Revisions and pods come on
// different watches: the events of a new PodSet's first pods often wake it
// before its revision reaches the cache, and that reconcile would create
// the revision again, paying a refused create and a direct read to learn it
// exists (at 1000x1, 0.6 requests per pod in a benchmark run). The create
// of a new PodSet's first revision may return after its reconcile did, so
// it is guarded by a lock.
type recentRevision struct {
	mu sync.Mutex
	cr *appsv1.ControllerRevision
	at time.Time
}

// created records cr, the revision just created at now.
func (rr *recentRevision) created(cr *appsv1.ControllerRevision, now time.Time) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.cr, rr.at = cr, now
}

// lookup returns the revision named name if it was created less than
// recentRevisionsTTL before now, or nil.
func (rr *recentRevision) lookup(name string, now time.Time) *appsv1.ControllerRevision {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	switch {
	case rr.cr == nil:
		return nil
	case now.Sub(rr.at) > recentRevisionsTTL:
		rr.cr = nil
		return nil
	case rr.cr.Name != name:
		return nil
	}
	return rr.cr
}

// forget drops the revision recorded: the cache shows it.
func (rr *recentRevision) forget() {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.cr = nil
}

// unseenPodPatches are the in-place updates' pod patches until the cache
// shows them: until then the cache would show a pod moved (or taken out of
// service) as it was, and the next step would count it available again
// and move another in its place.
type unseenPodPatches struct {
	mu     sync.Mutex
	writes consistency.UnseenWrites
}

func (u *unseenPodPatches) hold(uid types.UID, resourceVersion string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.writes.Hold(uid, resourceVersion, now)
}

// behind reports whether the cached pods still lack a patch.
func (u *unseenPodPatches) behind(pods []*slimpod.Pod, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.writes.Holding() {
		// Every reconcile asks; most PodSets never patched a pod.
		return false
	}
	cached := make(map[types.UID]string, len(pods))
	for _, pod := range pods {
		cached[pod.UID] = pod.ResourceVersion
	}
	return u.writes.Behind(cached, now, UnseenPodPatchMaxWait)
}

// failureWatch is, in a PodSet's record, what the pod cache cannot tell of
// the containers of the revision on trial: since when each has waited in a
// reason of each trigger (first seen; the kubelet alternates ErrImagePull
// and ImagePullBackOff, and a crash loop runs between its back-offs), and,
// for a pod updated in place, how many of its restarts are not the
// revision's. It starts afresh when the revision on trial changes.
type failureWatch struct {
	hash string
	pods map[types.UID]map[string]watchedContainer
}

type watchedContainer struct {
	since       map[retreat.Trigger]time.Time
	restartBase int32
}

// observe returns the classifier's view at now of the live pods of
// revision hash made at or after since (or updated to it in place), and
// how long until the first of their waits reaches grace (0 when none
// will); it forgets the pods no longer among them.
func (w *failureWatch) observe(hash string, pods []*slimpod.Pod, since time.Time, grace time.Duration, now time.Time) ([]retreat.Pod, time.Duration) {
	if w.hash != hash {
		*w = failureWatch{hash: hash}
	}
	seen := make(map[types.UID]map[string]watchedContainer, len(w.pods))
	var out []retreat.Pod
	var next time.Duration
	for _, pod := range pods {
		if !operand.IsLive(pod) || pod.Labels[appv1alpha1.LabelRevisionHash] != hash {
			continue
		}
		st, inPlace := inplace.StateOf(pod)
		inPlace = inPlace && st.Revision == hash
		if !inPlace && pod.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			continue
		}
		before := w.pods[pod.UID]
		// Init containers and sidecars, whose statuses slimpod keeps
		// with the others, fail as the others do: a crash loop in one
		// keeps the pod from ever turning Ready.
		statuses := pod.Status.ContainerStatuses
		containers := make(map[string]watchedContainer, len(statuses))
		p := retreat.Pod{Name: pod.Name}
		for i := range statuses {
			cs := &statuses[i]
			c, known := before[cs.Name]
			if !known {
				c.since = map[retreat.Trigger]time.Time{}
				if inPlace {
					c.restartBase = st.RestartsBefore(cs)
					if !since.IsZero() {
						// On trial since a rollback: the pod may have
						// been updated to the revision long before, and
						// restarted since; count from now at the least.
						c.restartBase = max(c.restartBase, cs.RestartCount)
					}
				}
			}
			rc := retreat.Container{Name: cs.Name, RestartsSinceRevision: max(0, cs.RestartCount-c.restartBase)}
			if cs.State.Waiting != nil {
				if trigger, ok := retreat.WaitingTrigger(cs.State.Waiting.Reason); ok {
					first, ok := c.since[trigger]
					if !ok {
						first = now
						c.since[trigger] = now
					}
					rc.WaitingReason, rc.WaitingSince = cs.State.Waiting.Reason, first
					if left := first.Add(grace).Sub(now); left > 0 && (next == 0 || left < next) {
						next = left
					}
				}
			}
			containers[cs.Name] = c
			p.Containers = append(p.Containers, rc)
		}
		seen[pod.UID] = containers
		out = append(out, p)
	}
	w.pods = seen
	return out, next
}

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
