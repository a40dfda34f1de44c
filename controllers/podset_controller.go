// Package controllers holds the PodSet reconciler. Reconcile runs one
// PodSet through the phases it lists, and the files beside it hold one
// concern each. What the reconciler remembers about a PodSet between
// reconciles is its record (podset_record.go); its timings are in
// timings.go.
//
// The packages under it hold what needs no reconciler, and never import it:
//
//   - consistency: the expectations, and what was written or read until the
//     cache shows it;
//   - podcache: what the manager caches, and whether its watches deliver;
//   - podwrites: how pod writes are sent, and what a failed one says about
//     the API server;
//   - status: the status and its conditions, when a changed one is written,
//     and its patch;
//   - operand: what a PodSet's pods are (labels, template, state, deletion
//     rank);
//   - revision and rollout, both pure: what a revision holds, and one step
//     of a rolling update;
//   - leaderfence: what keeps a leader resumed after a pause from acting;
//   - metrics: the podset_* gauges and the operator's counters.
//
// docs/architecture.md maps each concern to its files, and .golangci.yml
// (depguard) enforces the import direction.
package controllers

import (
	"cmp"
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/status"
)

// DefaultMaxConcurrentReconciles is the default of --max-concurrent-reconciles.
// A reconcile spends nearly all its time waiting for the API server (a pod
// create, a status patch), not computing, so the workers bound how many
// PodSets wait for it at once. With the ReplicaSet controller's 5, a
// thousand PodSets created together queued a median 8 s for a worker before
// their first pod (docs/benchmarks.md, "Workers"); 16 cut the time to create all
// their pods by a quarter, with the API server's CPU as the bound. A PodSet
// is never reconciled by two workers at once, whatever the count.
const DefaultMaxConcurrentReconciles = 16

// PodSetReconciler keeps each PodSet's pods at spec.replicas and reports what
// it observes.
type PodSetReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	client.Client
	// APIReader reads from the API server directly, for the few decisions a
	// stale cache must not make (adoption).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Expectations is shared with the pod event handler.
	Expectations *consistency.Expectations
	// Pods finds the PodSet's pods in the manager's cache; it must be the
	// PodIndex given to CacheOptions.
	Pods *podcache.PodIndex
	// WatchGaps tells while the pod or PodSet watches are down (nil: never);
	// it must be the WatchGaps given to CacheOptions.
	WatchGaps *podcache.WatchGaps
	// DefaultImage is the operand image of PodSets that name none.
	DefaultImage string
	// BurstReplicas caps the pods created or deleted per reconcile;
	// DefaultBurstReplicas when 0.
	BurstReplicas int
	// MaxConcurrentReconciles is how many PodSets are reconciled at once;
	// DefaultMaxConcurrentReconciles when 0.
	MaxConcurrentReconciles int
	// StatusWriteInterval is the shortest time between two status writes
	// of a PodSet that is still converging; 0 writes every change.
	StatusWriteInterval time.Duration
	// PodEventBatchPeriod is how long a pod event waits before it queues
	// its PodSet, so that a burst of events brings one reconcile; 0 queues
	// at once.
	PodEventBatchPeriod time.Duration
	// Fence, when set, stops a leader that was paused from acting until it
	// has renewed its lease (see leaderfence.Fence).
	Fence *leaderfence.Fence
	// PodControl, when set, creates and deletes the pods instead of
	// Client (under Fence): a test's stand-in for the API server's answers.
	PodControl podwrites.PodControl

	// records holds what the reconciler remembers about each PodSet
	// (podset_record.go).
	records *podSetRecords
	// wakeUps queues the PodSets that no watch event will bring.
	wakeUps       *wakeUps
	podWriteSlots podwrites.Slots
	// background sends the deletes of steps that only delete, without
	// holding a worker; nil sends them all in the reconcile.
	background *podwrites.Background
}

// podSetScope is what one reconcile of one PodSet knows and has done.
type podSetScope struct {
	podSet *appv1alpha1.PodSet
	// record is what the reconciler remembers about the PodSet.
	record *podSetRecord
	// key is the PodSet's key in the expectations.
	key string
	// expectationsWait is how long the PodSet's earlier writes may still be
	// waited for; 0 means it may act. It is read before the pods are listed:
	// an event observed after the list would otherwise count as seen in a
	// list that lacks it.
	expectationsWait time.Duration
	// pods are the pods the PodSet controls and whose labels match, terminating
	// and terminated ones included.
	pods []*corev1.Pod
	// liveConfirmed, once set, is what this reconcile's read before
	// adopting found (confirmLive): whether the PodSet may adopt pods and
	// revisions. It saves the second read when both need it.
	liveConfirmed *bool
	// revisions are the PodSet's pod template revisions.
	revisions revisionState
	// firstRevision, when set, reports the create of a new PodSet's first
	// revision, issued beside its first pods (startFirstRevision).
	firstRevision <-chan error
	// outcome is what the scaling phase did, which the status reports.
	outcome status.Outcome
}

// RBAC: exactly what this code uses. PodSets are read through the cache
// (list, watch) and once directly before adopting (get); status is written by
// merge patch only. podsets/finalizers update is what the
// OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift)
// demands for setting blockOwnerDeletion in a pod's controller reference.
// Pods are cached (list, watch), created, deleted, patched to adopt or
// release them or to label their revision, and read directly (get) when one
// may have left the cache by losing its managed-by label (stray_pods.go). Events go through the events.k8s.io API, which patches a
// repeated event's series instead of creating a new one.
// +kubebuilder:rbac:groups=app.example.com,resources=podsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.example.com,resources=podsets/status,verbs=patch
// +kubebuilder:rbac:groups=app.example.com,resources=podsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Revisions are cached (list, watch), created, renumbered on rollback
// (patch), pruned (delete), and read directly (get) when a create finds the
// name taken, to tell a stale cache from a hash collision.
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete
// ResourceQuotas are only watched: a change that makes room wakes the PodSets
// whose creates were refused (quota_wakeups.go).
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list;watch

// Reconcile brings one PodSet's pods to spec.replicas and writes its status.
func (r *PodSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ps := &appv1alpha1.PodSet{}
	if err := r.Get(ctx, req.NamespacedName, ps); err != nil {
		if client.IgnoreNotFound(err) == nil {
			// Gone: the garbage collector deletes its pods through their
			// ownerReferences; only our bookkeeping is left to drop.
			r.records.forget(req.NamespacedName)
			r.Expectations.Forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A replica resumed after a pause may no longer lead, and its cache
	// missed what happened meanwhile: nothing until its lease is renewed
	// (or it exits, having lost it). Each write checks again.
	rec := r.records.of(ps)
	if r.fenceAllows() != nil {
		return ctrl.Result{RequeueAfter: r.waitForRenewal(rec)}, nil
	}
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	// The cache may not have this PodSet's last status write yet; the API
	// server has it, and it is what the new status is computed against.
	rec.restoreWrittenStatus(ps)
	s := &podSetScope{podSet: ps, record: rec, key: key, expectationsWait: r.Expectations.ExpiresIn(key)}

	// Without knowing which pods are the PodSet's and which pod template
	// is current, neither scaling nor status can be right: stop here and
	// retry.
	for _, phase := range []func(context.Context, *podSetScope) error{
		r.readPodSetWhileItsWatchIsDown,
		r.releaseStrays,
		r.claimPods,
		r.claimRevisions,
		r.syncRevisions,
		r.labelUnrevisionedPods,
	} {
		if err := phase(ctx, s); err != nil {
			return r.retry(ctx, rec, err)
		}
	}
	cache, err := r.checkPodCache(ctx, s)
	if err != nil {
		return r.retry(ctx, rec, err)
	}
	// A failed scale is reported in the status, then retried with backoff.
	errs := []error{r.scalePods(ctx, s, cache), r.awaitFirstRevision(s), r.pruneRevisions(ctx, s)}
	statusDueIn, err := r.updateStatus(ctx, s)
	if err := kerrors.NewAggregate(append(errs, err)); err != nil {
		return r.retry(ctx, rec, err)
	}
	// Read again: the scaling step may have just expected writes, and the
	// wake-up at their timeout is what recovers a lost watch event.
	s.expectationsWait = r.Expectations.ExpiresIn(key)
	return ctrl.Result{RequeueAfter: nextWakeUp(s, cache.recheckIn, statusDueIn)}, nil
}

// retry hands a failed reconcile to the controller's exponential backoff,
// unless it failed only because the API server was away (see
// TransientRetryAfter), or because the leader fence refused a write (the
// lease renewal queues it again, see fenced_podsets.go). A PodSet found gone
// from the API server ends the reconcile with no retry (errNotOnServer).
func (r *PodSetReconciler) retry(ctx context.Context, rec *podSetRecord, err error) (ctrl.Result, error) {
	if errors.Is(err, errNotOnServer) {
		logf.FromContext(ctx).V(1).Info("the cached PodSet is stale: the API server no longer has it")
		return ctrl.Result{}, nil
	}
	if errors.Is(err, leaderfence.ErrFenced) {
		return ctrl.Result{RequeueAfter: r.waitForRenewal(rec)}, nil
	}
	if podwrites.IsTransient(err) {
		logf.FromContext(ctx).Info("the API server is unavailable; retrying", "after", TransientRetryAfter, "error", err.Error())
		return ctrl.Result{RequeueAfter: TransientRetryAfter}, nil
	}
	return ctrl.Result{}, err
}

// nextWakeUp is when the PodSet must be looked at again without any event:
// when a ready pod becomes available, when writes that were never observed
// stop being waited for, when the progress deadline passes, or at the
// soonest of the phases' own waits (a pod cache recheck, a paced status
// write).
func nextWakeUp(s *podSetScope, phaseWaits ...time.Duration) time.Duration {
	now := time.Now()
	next := status.NextAvailabilityCheck(s.pods, operand.MinReady(s.podSet), now)
	for _, w := range append(phaseWaits, s.expectationsWait, status.ProgressDeadlineIn(s.podSet, s.podSet.Status, now)) {
		if w > 0 && (next == 0 || w < next) {
			next = w
		}
	}
	return next
}

// updateStatus writes the status computed from the observed pods, when it
// differs from what the PodSet already reports and is worth a write now (see
// status.WriteIsUrgent, status.WriteCanWait and status.Pacing). When the
// pacer holds a write back, it returns how long until that write is due.
func (r *PodSetReconciler) updateStatus(ctx context.Context, s *podSetScope) (time.Duration, error) {
	now := time.Now()
	pacing, interval := &s.record.statusPacing, r.StatusWriteInterval
	computed := status.Compute(s.podSet, s.pods, observed(s.podSet, &s.revisions, s.pods, now), s.outcome, now)
	switch {
	case equality.Semantic.DeepEqual(computed, s.podSet.Status):
		return 0, nil
	case status.WriteIsUrgent(s.podSet.Status, computed, s.podSet.DesiredReplicas(), s.outcome):
	case pacing.Overdue(interval, now):
		// Held back for a whole interval already: churn must not starve it.
	case status.WriteCanWait(s.podSet.Status, computed, s.outcome):
		pacing.Scaled(interval, now)
		metrics.StatusWritesSkipped.WithLabelValues("scaling").Inc()
		return 0, nil
	default:
		if due := pacing.Wait(interval, now); due > 0 {
			pacing.Held(interval, now)
			metrics.StatusWritesSkipped.WithLabelValues("paced").Inc()
			return due, nil
		}
	}
	if err := r.fenceAllows(); err != nil {
		return 0, err
	}
	orig := s.podSet.DeepCopy()
	s.podSet.Status = computed
	patch, err := status.Patch(orig, s.podSet)
	if err != nil {
		return 0, err
	}
	if err := r.Status().Patch(ctx, s.podSet, patch); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	pacing.Wrote(interval, now)
	s.record.statusWritten(s.podSet)
	if status.DeadlineJustExceeded(orig.Status, computed) {
		r.Recorder.Eventf(s.podSet, nil, corev1.EventTypeWarning, appv1alpha1.ReasonProgressDeadlineExceeded, "Rollout", "%s",
			eventNote(meta.FindStatusCondition(computed.Conditions, appv1alpha1.ConditionProgressing).Message))
	}
	return 0, nil
}

// observed is what the status is computed from besides the pods: the
// PodSet's revisions, once syncRevisions found them, and the rollout
// arithmetic's input for the pods, as the scaling phase sees it.
func observed(ps *appv1alpha1.PodSet, rs *revisionState, pods []*corev1.Pod, now time.Time) status.Observed {
	o := status.Observed{UpdateHash: rs.updateHash}
	if rs.update != nil {
		o.UpdateRevision, o.CurrentRevision, o.CollisionCount = rs.update.Name, rs.current.Name, rs.collisionCount
	}
	if in, _, _, err := rolloutInput(ps, rs, pods, now); err == nil {
		o.Rollout = &in
	}
	return o
}

// statusChangedPredicate passes PodSet updates that change the status.
func statusChangedPredicate() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPS, ok1 := e.ObjectOld.(*appv1alpha1.PodSet)
		newPS, ok2 := e.ObjectNew.(*appv1alpha1.PodSet)
		return ok1 && ok2 && !equality.Semantic.DeepEqual(oldPS.Status, newPS.Status)
	}}
}

func (r *PodSetReconciler) burstReplicas() int {
	if r.BurstReplicas > 0 {
		return r.BurstReplicas
	}
	return DefaultBurstReplicas
}

// SetupWithManager registers the reconciler, its pod indexes and its watches.
func (r *PodSetReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Expectations == nil {
		r.Expectations = newExpectations()
	}
	r.records = newPodSetRecords()
	r.wakeUps = newWakeUps()
	if r.Fence != nil {
		r.Fence.OnRenewal(r.releaseFenced)
	}
	if err := mgr.Add(r.newLagScan()); err != nil {
		return err
	}
	r.podWriteSlots = podwrites.NewSlots(podwrites.DefaultPodWritesInFlight)
	r.background = &podwrites.Background{}
	if err := mgr.Add(r.background); err != nil {
		return err
	}
	if r.Pods == nil {
		return errors.New("PodSetReconciler.Pods is nil: pass the PodIndex given to CacheOptions")
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.ControllerRevision{}, revisionPodSetField, indexRevisionByPodSet); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.ControllerRevision{}, revisionControllerField, indexRevisionByController); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		// Spec changes bump the generation. Status changes wake the PodSet
		// too: a reconcile that read a stale cached PodSet may have judged
		// its status current, or patched it against outdated values, and
		// the update event of the last status write is what brings a
		// reconcile that sees the write. That second reconcile computes the
		// same status and writes nothing, so there is no loop. Metadata-only
		// updates (labels, annotations) are ignored.
		For(&appv1alpha1.PodSet{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, statusChangedPredicate()))).
		// Owns(Pod) with the expectations bookkeeping folded in; see
		// podEventHandler.
		Watches(&corev1.Pod{}, &podEventHandler{expectations: r.Expectations, batchPeriod: r.PodEventBatchPeriod, records: r.records}).
		// A revision deleted or changed by hand is recreated or corrected.
		Owns(&appsv1.ControllerRevision{}).
		// A quota that makes room wakes the PodSets it refused, instead of
		// leaving them in the backoff (quota_wakeups.go).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(podSetsRefusedIn(r.Client)),
			builder.WithPredicates(quotaMadeRoom())).
		// The PodSets to look at again that no watch event will bring
		// (wakeups.go).
		WatchesRawSource(r.wakeUps.source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, DefaultMaxConcurrentReconciles)}).
		Named("podset").
		Complete(r)
}
