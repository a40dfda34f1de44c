package controllers

import (
	"cmp"
	"context"
	"errors"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/analysis"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/ownership"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/status"
	"github.com/example/podset-operator/controllers/wakeups"
)

// RBAC: exactly what this code uses. PodSets are read through the cache
// (list, watch) and once directly before adopting (get); status is written by
// merge patch only. podsets/finalizers update is what the
// OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift)
// demands for setting blockOwnerDeletion in a pod's controller reference.
// Pods are cached (list, watch), created, deleted, patched to adopt or
// release them, to label their revision or to update them in place, and
// read directly (get) when one may have left the cache by losing its
// app.example.com/podset label (claims.go). An in-place update also patches a pod's
// status (the condition of its readiness gate) and resizes it
// (in_place_updates.go). Events go through the events.k8s.io API, which
// patches a repeated event's series instead of creating a new one. A
// PodSet's own spec is patched for one field: the names its pods no longer
// have are removed from spec.scaleStrategy.podsToDelete (pods_to_delete.go).
// +kubebuilder:rbac:groups=app.example.com,resources=podsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=app.example.com,resources=podsets/status,verbs=patch
// +kubebuilder:rbac:groups=app.example.com,resources=podsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=pods/status;pods/resize,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Revisions are cached (list, watch), created, renumbered on rollback
// (patch), pruned (delete), and read directly (get) when a create finds the
// name taken, to tell a stale cache from a hash collision.
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete
// ResourceQuotas are only watched: a change that makes room wakes the PodSets
// whose creates were refused (wakeups.RefusedPodSets).
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=list;watch
// Pod metrics are never read from the API server: the tenancy port of
// OpenShift's Thanos querier, which canary analyses may query, authorizes
// a query for a namespace by a SubjectAccessReview of get on
// pods.metrics.k8s.io there (docs/canary-analysis.md).
// +kubebuilder:rbac:groups=metrics.k8s.io,resources=pods,verbs=get
// Namespaces' metadata is cached (list, watch) for one annotation: whether
// the platform allocates the namespace's user IDs (operand.UserIDs).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

// Reconcile brings one PodSet's pods to spec.replicas and writes its status.
func (r *PodSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ps := &appv1alpha1.PodSet{}
	if err := r.Get(ctx, req.NamespacedName, ps); err != nil {
		if client.IgnoreNotFound(err) == nil {
			// Gone: the garbage collector deletes its pods through their
			// ownerReferences; only our bookkeeping is left to drop.
			r.records.forget(req.NamespacedName)
			r.Expectations.Forget(req.String())
			r.forgetRunsOf(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The cache keeps the pod template encoded; this copy gets it back.
	if err := podcache.RestoreTemplate(ps); err != nil {
		return ctrl.Result{}, err
	}
	// A replica resumed after a pause may no longer lead, and its cache
	// missed what happened meanwhile: nothing until its lease is renewed
	// (or it exits, having lost it). Each write checks again.
	rec := r.records.of(ps)
	if r.Fence.Allow() != nil {
		return ctrl.Result{RequeueAfter: r.waitForRenewal(rec)}, nil
	}
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	// The cache may not have this PodSet's last status write yet; the API
	// server has it, and it is what the new status is computed against.
	rec.restoreWrittenStatus(ps)
	s := &podSetScope{podSet: ps, record: rec, key: key, expectationsWait: r.Expectations.ExpiresIn(key), listedPodNames: ps.Status.PodNames}

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
		r.observeRollout,
		r.advanceCanary,
		r.decideRollback,
	} {
		if err := phase(ctx, s); err != nil {
			return r.retry(ctx, rec, err)
		}
	}
	podCache, err := r.checkPodCache(ctx, s)
	if err != nil {
		return r.retry(ctx, rec, err)
	}
	// A failed scale is reported in the status, then retried with backoff.
	gracePeriodEndsIn, err := r.scalePods(ctx, s, podCache)
	errs := []error{err, r.awaitFirstRevision(s), r.pruneRevisions(ctx, s)}
	statusDueIn, err := r.updateStatus(ctx, s)
	errs = append(errs, err, r.prunePodsToDelete(ctx, s, podCache))
	if err := kerrors.NewAggregate(errs); err != nil {
		return r.retry(ctx, rec, err)
	}
	// Read again: the scaling step may have just expected writes, and the
	// wake-up at their timeout is what recovers a lost watch event.
	s.expectationsWait = r.Expectations.ExpiresIn(key)
	return ctrl.Result{RequeueAfter: nextWakeUp(s, podCache.recheckIn, statusDueIn, gracePeriodEndsIn, s.rollbackCheckIn, s.canaryCheckIn)}, nil
}

// retry hands a failed reconcile to the controller's exponential backoff,
// unless it failed only because the API server was away (see
// TransientRetryAfter) or its admission did not know the PodSet kind yet
// (OwnerMappingRetryAfter), or because the leader fence refused a write (the
// lease renewal queues it again, see waitForRenewal below). A PodSet found gone
// from the API server (errNotOnServer) is looked at again only after
// StalePodSetRecheckInterval: its deletion event normally comes first, and
// what else failed in its reconcile (releasing a pod, say) no longer
// matters.
func (r *PodSetReconciler) retry(ctx context.Context, rec *podSetRecord, err error) (ctrl.Result, error) {
	if errors.Is(err, errNotOnServer) {
		logf.FromContext(ctx).V(1).Info("the cached PodSet is stale: the API server no longer has it", "error", err.Error())
		return ctrl.Result{RequeueAfter: StalePodSetRecheckInterval}, nil
	}
	if errors.Is(err, leaderfence.ErrFenced) {
		return ctrl.Result{RequeueAfter: r.waitForRenewal(rec)}, nil
	}
	if podwrites.IsTransient(err) {
		logf.FromContext(ctx).Info("the API server is unavailable; retrying", "after", TransientRetryAfter, "error", err.Error())
		return ctrl.Result{RequeueAfter: TransientRetryAfter}, nil
	}
	if podwrites.IsOwnerMappingLag(err) {
		logf.FromContext(ctx).Info("the API server's admission does not know the PodSet kind yet; retrying", "after", OwnerMappingRetryAfter, "error", err.Error())
		return ctrl.Result{RequeueAfter: OwnerMappingRetryAfter}, nil
	}
	return ctrl.Result{}, err
}

// nextWakeUp is when the PodSet must be looked at again without any event:
// when a ready pod becomes available, when writes that were never observed
// stop being waited for, when the progress deadline passes, or at the
// soonest of the phases' own waits (a pod cache recheck, a paced status
// write, the end of an in-place update's grace period, a failing
// container's wait reaching auto-rollback's grace period).
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

// statusChangedPredicate passes PodSet updates that change the status.
func statusChangedPredicate() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPS, ok1 := e.ObjectOld.(*appv1alpha1.PodSet)
		newPS, ok2 := e.ObjectNew.(*appv1alpha1.PodSet)
		return ok1 && ok2 && !equality.Semantic.DeepEqual(oldPS.Status, newPS.Status)
	}}
}

// rolloutRetryPredicate passes PodSet updates that change the
// app.example.com/rollout-retry, rollout-promote or rollout-abort
// annotation: none changes the generation or the status.
func rolloutRetryPredicate() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		for _, a := range []string{appv1alpha1.AnnotationRolloutRetry, appv1alpha1.AnnotationRolloutPromote, appv1alpha1.AnnotationRolloutAbort} {
			if e.ObjectOld.GetAnnotations()[a] != e.ObjectNew.GetAnnotations()[a] {
				return true
			}
		}
		return false
	}}
}

// SetupWithManager registers the reconciler, its pod indexes and its watches.
func (r *PodSetReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Expectations == nil {
		r.Expectations = newExpectations()
	}
	r.records = newPodSetRecords()
	r.wakeUps = wakeups.New()
	if r.AnalysisQuerier != nil {
		slots := r.AnalysisQuerySlots
		if slots == 0 {
			slots = DefaultAnalysisQuerySlots
		}
		r.analysisRunner = analysis.NewRunner(ctx, r.AnalysisQuerier, slots,
			func(key string) { r.wakeUps.Wake(ctx, podSetOfRun(key)) },
			func(took time.Duration, m analysis.Measurement) {
				metrics.AnalysisQueryDuration.Observe(took.Seconds())
				metrics.AnalysisMeasurements.WithLabelValues(string(m.Phase)).Inc()
			})
	}
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
	// The namespaces' metadata (userIDs) is cached from the start and
	// synced with the other caches, rather than on a reconcile's first read.
	if _, err := mgr.GetCache().GetInformer(ctx, namespaceMetadata()); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.ControllerRevision{}, ownership.RevisionPodSetField, ownership.IndexRevisionByPodSet); err != nil {
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
			predicate.GenerationChangedPredicate{}, statusChangedPredicate(), rolloutRetryPredicate()))).
		// Owns(Pod) with the expectations bookkeeping folded in; see
		// podEventHandler.
		Watches(&corev1.Pod{}, &podEventHandler{expectations: r.Expectations, batchPeriod: r.PodEventBatchPeriod, records: r.records}).
		// A revision deleted or changed by hand is recreated or corrected.
		Owns(&appsv1.ControllerRevision{}).
		// A quota that makes room wakes the PodSets it refused, instead of
		// leaving them in the backoff (wakeups.RefusedPodSets).
		Watches(&corev1.ResourceQuota{}, wakeups.RefusedPodSets(r.Client),
			builder.WithPredicates(wakeups.QuotaMadeRoom())).
		// The PodSets to look at again that no watch event will bring
		// (controllers/wakeups).
		WatchesRawSource(r.wakeUps.Source()).
		// A standby of leader election fills its caches before it leads,
		// so that a failover waits for the lease alone, not also for a
		// list of every pod (seconds at tens of thousands of pods; see
		// docs/benchmarks.md, "Growth"). Its workers wait for the lease;
		// the price is that a standby holds as much memory as the leader.
		WithOptions(controller.Options{
			MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, DefaultMaxConcurrentReconciles),
			EnableWarmup:            ptr.To(true),
			RateLimiter:             retryRateLimiter(),
		}).
		Named("podset").
		Complete(r)
}

// maxRetryDelay caps the backoff of a PodSet whose reconcile failed.
// controller-runtime's default doubles the delay from 5 ms up to 1000 s,
// but some refusals end on a clock the operator cannot watch: a webhook
// that was down comes back, a quota or an admission policy is changed.
// (The one such refusal it can tell, the API server not mapping the
// PodSet kind yet right after the CRD is installed, is retried at a fixed
// interval instead: OwnerMappingRetryAfter.) After a minute of such
// refusals the doubling would wait minutes more before trying again.
// The cap bounds that to 30 s, for one refused create per PodSet each
// 30 s. A quota that makes room wakes its PodSets at once
// (wakeups.RefusedPodSets).
const maxRetryDelay = 30 * time.Second

// retryRateLimiter is controller-runtime's default rate limiter with the
// per-PodSet backoff capped at maxRetryDelay: the delay doubles from 5 ms,
// and all PodSets together retry at most 10 times a second, in bursts of
// 100.
func retryRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// The PodSets whose reconcile the leader fence refused are marked in their
// records and queued again the moment this replica renews its lease.
//
// A refused reconcile used to fail, and so went to the controller's
// exponential backoff: the many events that reach a replica resumed after a
// pause (a relist delivers every change it missed) failed a PodSet's
// reconcile again and again while the fence held, and once the lease was
// renewed the PodSet waited out a backoff grown to seconds, with no event
// left to wake it.

// releaseFenced queues every PodSet the fence refused. It never blocks its
// caller (the lease renewal).
func (r *PodSetReconciler) releaseFenced() {
	r.wakeUps.WakeAll(r.records.takeFenced())
}

// takeFenced returns the PodSets marked as refused by the fence, and
// unmarks them.
func (rs *podSetRecords) takeFenced() []types.NamespacedName {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var fenced []types.NamespacedName
	for nn, rec := range rs.byName {
		if rec.fenced.CompareAndSwap(true, false) {
			fenced = append(fenced, nn)
		}
	}
	return fenced
}

// waitForRenewal is the result of a reconcile the fence refused: the PodSet
// is queued again when the lease is renewed, with no backoff.
func (r *PodSetReconciler) waitForRenewal(rec *podSetRecord) time.Duration {
	rec.fenced.Store(true)
	// The renewal may have come between the refusal and the mark, and
	// found nothing to release: look again now that the PodSet is marked.
	if r.Fence.Allow() == nil {
		r.releaseFenced()
	}
	return FencedRecheckInterval
}
