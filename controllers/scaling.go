package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/slimpod"
)

// DefaultBurstReplicas caps the pods created or deleted in one reconcile, as
// the ReplicaSet controller's burst of 500 does: a large scale-up proceeds in
// several reconciles, each waiting for the previous one's pods to be seen.
const DefaultBurstReplicas = 500

// Event reasons.
const (
	EventSuccessfulCreate = "SuccessfulCreate"
	EventSuccessfulDelete = "SuccessfulDelete"
	EventFailedCreate     = appv1alpha1.ReasonFailedCreate
	EventFailedDelete     = appv1alpha1.ReasonFailedDelete
)

// scalePods creates, deletes and updates in place pods so that
// spec.replicas live pods run the update revision (partition of them the old
// one), within the update strategy's bounds: see rolloutstate.State.Step for what
// one step does. It acts only when every write of the previous reconcile has
// been observed in the cache; otherwise the cache may still lack pods just
// created (or still hold pods just deleted, or show pods as they were before
// a patch) and acting on it would overshoot, and not when the pod cache
// check decided to hold the pods as they are. It returns how soon an
// in-place update's grace period ends, when one waits for it.
func (r *PodSetReconciler) scalePods(ctx context.Context, s *podSetScope, podCache cacheVerdict) (time.Duration, error) {
	if s.podSet.DeletionTimestamp != nil {
		return 0, nil
	}
	// Deletes an earlier step sent in the background failed: reported and
	// retried (after the backoff) as if that step had waited for them.
	if err := s.record.background.TakeFailure(); err != nil {
		s.outcome.Attempted = true
		s.outcome.Err, s.outcome.FailureReason = err, appv1alpha1.ReasonFailedDelete
		return 0, err
	}
	if s.expectationsWait > 0 || podCache.hold || s.revisions.Update == nil || s.record.namespaceTerminating.Load() ||
		s.record.podPatches.behind(s.pods, time.Now()) {
		return 0, nil
	}
	s.outcome.Attempted = true

	// A template no pod can be made from rolls nothing: not one pod of the
	// revisions that run is deleted or updated for it.
	if err := r.templateRefusal(s.podSet, s.revisions.UpdateTemplate, s.revisions.UpdateHash); err != nil {
		err = r.templateRefused(s.podSet, err)
		s.outcome.Err, s.outcome.FailureReason = err, appv1alpha1.ReasonFailedCreate
		return 0, err
	}
	if s.rolloutErr != nil {
		s.outcome.Err, s.outcome.FailureReason = s.rolloutErr, appv1alpha1.ReasonFailedCreate
		return 0, s.rolloutErr
	}
	step := s.rollout.Step(r.burstReplicas())
	// In-place updates change no pod count: they go beside the step's
	// creations and deletions, and the expectations do not wait for them.
	inPlaceWait, inPlaceErr := r.updatePodsInPlace(ctx, s, step.InPlace)
	moving := map[types.UID]bool{}
	for _, mv := range step.InPlace {
		moving[mv.Pod.UID] = true
	}
	if err := r.finishInPlaceUpdates(ctx, s, moving); err != nil {
		inPlaceErr = kerrors.NewAggregate([]error{inPlaceErr, err})
	}
	if inPlaceErr != nil && !errors.Is(inPlaceErr, leaderfence.ErrFenced) {
		s.outcome.Err, s.outcome.FailureReason = inPlaceErr, appv1alpha1.ReasonFailedUpdate
	}
	if err := r.scale(ctx, s, step); err != nil {
		return inPlaceWait, err
	}
	return inPlaceWait, inPlaceErr
}

// scale makes the step's creations and deletions.
func (r *PodSetReconciler) scale(ctx context.Context, s *podSetScope, step rolloutstate.Step) error {
	creations := step.CreateUpdated + step.CreateOld
	if creations > 0 || len(step.Victims) > 0 {
		logf.FromContext(ctx).V(1).Info("scaling step", "pods", len(s.pods), "create", creations, "delete", len(step.Victims))
	}
	if r.Expectations.Expired(s.key) {
		metrics.ExpectationsExpired.Inc()
	}
	// Expect the writes before issuing them: their watch events can arrive
	// before the calls return.
	r.Expectations.Expect(s.key, creations, operand.UIDs(step.Victims))
	if creations == 0 && len(step.Victims) > 0 {
		if bg := r.background.Context(); bg != nil {
			r.deletePodsInBackground(ctx, bg, s, step.Victims)
			return nil
		}
	}
	// Their events lag from the moment the last of them returned.
	defer r.Expectations.WritesReturned(s.key)

	if step.DeletionsCapped {
		// The burst cut the deletions short; creations planned on the
		// assumption that they all happened wait for the next step.
		step.CreateUpdated, step.CreateOld = 0, 0
	}
	// Deletions go first, and a creation that needs the room one of them
	// frees waits for its answer (podwrites.SurgeRoom), so that a step's
	// creations never push the live pods past replicas + maxSurge, not
	// even briefly.
	var room *podwrites.SurgeRoom
	if len(step.Victims) > 0 {
		room = podwrites.NewSurgeRoom(step.Headroom)
	}
	deletesAnswered := r.deletePods(ctx, s, step.Victims, room)
	rs := &s.revisions
	created, err := r.createPods(ctx, s, rs.UpdateTemplate, rs.UpdateHash, step.CreateUpdated, room)
	if err == nil {
		var n int
		n, err = r.createPods(ctx, s, rs.CurrentTemplate, rs.CurrentHash, step.CreateOld, room)
		created += n
	}
	// No event will ever come for a pod that was not created: one refused,
	// one a failed deletion left no room for, one the burst held back, or
	// one never attempted because an earlier batch failed.
	r.creationsSkipped(s, creations-created)
	if created > 0 {
		logf.FromContext(ctx).V(1).Info("created pods", "count", created)
		r.Recorder.Eventf(s.podSet, nil, corev1.EventTypeNormal, EventSuccessfulCreate, "Create", "Created %d pods", created)
	}
	if deleteErr := deletesAnswered(); deleteErr != nil {
		s.outcome.Err, s.outcome.FailureReason = deleteErr, appv1alpha1.ReasonFailedDelete
		return deleteErr
	}
	if err != nil && !errors.Is(err, podwrites.ErrNoRoom) {
		s.outcome.Err, s.outcome.FailureReason = err, appv1alpha1.ReasonFailedCreate
		return err
	}
	return nil
}

// burstReplicas caps the pods one reconcile creates or deletes.
func (r *PodSetReconciler) burstReplicas() int {
	if r.BurstReplicas > 0 {
		return r.BurstReplicas
	}
	return DefaultBurstReplicas
}

// creationsSkipped tells the expectations that n expected creations will not
// happen.
func (r *PodSetReconciler) creationsSkipped(s *podSetScope, n int) {
	for range n {
		r.Expectations.CreationObserved(s.key)
	}
}

// errNamespaceTerminating stops a slow start in a namespace being deleted.
// Counting those refusals as successes, as the ReplicaSet controller does,
// sent every create of the step: a PodSet of 1000 pods whose namespace was
// being deleted, woken by its pods' deletions, sent 1000 creates the API
// server refused (the 2100 POSTs for 1000 pods of an earlier benchmark run).
var errNamespaceTerminating = errors.New("the namespace is being deleted")

// createPods creates n pods from a revision's template, in slow-start
// batches. It returns how many were created.
func (r *PodSetReconciler) createPods(ctx context.Context, s *podSetScope, tmpl revision.Template, hash string, n int, room *podwrites.SurgeRoom) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	ps := s.podSet
	ids, err := r.userIDs(ctx, ps.Namespace)
	if err != nil {
		return 0, fmt.Errorf("creating pods: %w", err)
	}
	var created, uncertain atomic.Int32
	_, err = podwrites.SlowStart(ctx, n, r.podWriteSlots, func() error {
		if err := room.Take(ctx); err != nil {
			return err
		}
		pod := operand.NewPod(ps, tmpl, hash, r.DefaultImage, ids)
		if err := controllerutil.SetControllerReference(ps, pod, r.Scheme); err != nil {
			return err
		}
		if err := r.podControl().CreatePod(ctx, pod); err != nil {
			if errors.Is(err, leaderfence.ErrFenced) {
				// Not sent: nothing to count or report.
				return err
			}
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// The namespace is going away, and the PodSet with
				// it; every further create would be refused too.
				return errNamespaceTerminating
			}
			if podwrites.MayHaveReachedServer(err) {
				uncertain.Add(1)
				metrics.PodCreates.WithLabelValues("uncertain").Inc()
			} else {
				metrics.PodCreates.WithLabelValues("failed").Inc()
			}
			r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", eventNote("Error creating pod: "+err.Error()))
			return err
		}
		created.Add(1)
		metrics.PodCreates.WithLabelValues("created").Inc()
		r.Expectations.CreationReturned(s.key, pod.ResourceVersion)
		return nil
	})
	s.outcome.Issued += int(created.Load())
	// A create whose connection broke may still have made its pod: it stays
	// expected (for a bounded time), and the caller counts it as made.
	for range uncertain.Load() {
		r.Expectations.CreationUncertain(s.key)
	}
	made := int(created.Load() + uncertain.Load())
	if errors.Is(err, errNamespaceTerminating) {
		// Not a failure to report: the namespace controller deletes
		// the pods and the PodSet. Nor worth another try: every pod it
		// deletes meanwhile would wake the PodSet into one more refused
		// create (a create every 100 ms for seconds, in the benchmark).
		s.record.namespaceTerminating.Store(true)
		return made, nil
	}
	if err != nil {
		logf.FromContext(ctx).V(1).Info("creating pods stopped", "wanted", n, "created", created.Load(), "uncertain", uncertain.Load(), "error", err.Error())
		return made, fmt.Errorf("creating pods: %w", err)
	}
	return made, nil
}

// userIDs is the user of the operand image's pods in namespace ns
// (operand.UserIDs), from the namespace's metadata in the cache
// (namespaceMetadata). A PodSet's namespace exists: one the cache does not
// hold yet is waited for (the reconcile fails and is retried), not taken
// for plain Kubernetes, whose user OpenShift would refuse.
func (r *PodSetReconciler) userIDs(ctx context.Context, ns string) (operand.UserIDs, error) {
	meta := namespaceMetadata()
	if err := r.Get(ctx, client.ObjectKey{Name: ns}, meta); err != nil {
		return operand.UserIDs{}, fmt.Errorf("reading namespace %s from the cache: %w", ns, err)
	}
	return operand.UserIDsOf(meta.Annotations), nil
}

// namespaceMetadata is the cached form of a namespace: its metadata only.
func namespaceMetadata() *metav1.PartialObjectMetadata {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return meta
}

// templateRefusal says why the operator makes no pod from tmpl, or nil.
// The admission policy podsets-template.app.example.com refuses such a
// PodSet where it runs; this is the rest: before Kubernetes 1.30, or a
// PodSet written while the policy was missing. The namespace's Pod
// Security admission may not enforce the profile, but every pod of this
// operator meets it.
func (r *PodSetReconciler) templateRefusal(ps *appv1alpha1.PodSet, tmpl revision.Template, hash string) error {
	if short := ps.Spec.ShortFormFields(); ps.Spec.Template != nil && len(short) > 0 {
		return fmt.Errorf("spec.template: cannot be set beside spec.%s, its short form; a PodSet sets one or the other", strings.Join(short, ", spec."))
	}
	// Who picks the user IDs does not change the profile's verdict: the
	// operator's are not root, and the platform's come from a range that
	// excludes root.
	if why := operand.RestrictedRefusal(operand.NewPod(ps, tmpl, hash, r.DefaultImage, operand.OperatorPicksIDs)); why != "" {
		return fmt.Errorf("the pod template does not meet the Pod Security Standard \"restricted\": %s", why)
	}
	return nil
}

// templateRefused reports a pod template the operator makes no pod from,
// and returns the error that says why. The error is terminal: trying again
// cannot help until the spec changes, and a change of the spec brings a
// reconcile of its own, so the PodSet is not queued again.
func (r *PodSetReconciler) templateRefused(ps *appv1alpha1.PodSet, err error) error {
	r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", eventNote("Error creating pod: "+err.Error()))
	return reconcile.TerminalError(fmt.Errorf("creating pods: %w", err))
}

// deletePods sends the victims' deletes in parallel and returns a function
// that waits for their answers and returns the first failure; each pod
// deleted frees room for one creation (room may be nil when the step
// creates nothing). The caller has expected their deletions.
func (r *PodSetReconciler) deletePods(ctx context.Context, s *podSetScope, victims []*slimpod.Pod, room *podwrites.SurgeRoom) func() error {
	if len(victims) == 0 {
		return func() error { return nil }
	}
	wait := r.sendDeletes(ctx, ctx, s.podSet, s.key, victims, room.Freed)
	var (
		deleted int
		err     error
	)
	done := make(chan struct{})
	// The creations waiting for room must learn when no more will come,
	// while the reconcile is still sending them.
	go func() {
		defer close(done)
		deleted, err = wait()
		room.AllAnswered()
	}()
	return func() error {
		<-done
		s.outcome.Issued += deleted
		r.deletesAnswered(ctx, s.podSet, deleted)
		return err
	}
}

// deletePodsInBackground sends the victims' deletes under ctx bg and returns
// at once (see podwrites.Background); the caller has expected their
// deletions. The step counts as nothing tried for the ReplicaFailure
// condition (the last verdict stands until the deletes are answered), and
// as writes made for status pacing: their events bring the reconcile that
// writes the status.
func (r *PodSetReconciler) deletePodsInBackground(ctx, bg context.Context, s *podSetScope, victims []*slimpod.Pod) {
	bg = logf.IntoContext(bg, logf.FromContext(ctx))
	ps, key := s.podSet, s.key
	wait := r.sendDeletes(ctx, bg, ps, key, victims, nil)
	s.outcome.Attempted = false
	s.outcome.Sent += len(victims)
	rec := s.record
	r.background.Run(&rec.background, wait, func(deleted int, _ error) {
		r.Expectations.WritesReturned(key)
		r.deletesAnswered(bg, ps, deleted)
	}, func(ctx context.Context) { r.wakeUps.Wake(ctx, rec.name) })
}

// sendDeletes takes a pod write slot for each victim under ctx, waiting
// while the operator has DefaultPodWritesInFlight writes out, and sends its
// delete under send; freed, unless nil, is called for each pod the API
// server has no longer live (deleted, or already gone). The returned
// function waits for every answer and returns how many pods were deleted
// and the first failure. A delete that is not sent or fails is no longer
// expected.
func (r *PodSetReconciler) sendDeletes(ctx, send context.Context, ps *appv1alpha1.PodSet, key string, victims []*slimpod.Pod, freed func()) func() (int, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		deleted int
		errs    []error
	)
	for _, pod := range victims {
		if err := r.podWriteSlots.Take(ctx); err != nil {
			// The manager is stopping: this deletion is not sent.
			mu.Lock()
			r.Expectations.DeletionObserved(key, pod.UID)
			errs = append(errs, err)
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			defer r.podWriteSlots.Give()
			victim := pod.MetadataOnly()
			err := r.podControl().DeletePod(send, victim)
			if (err == nil || apierrors.IsNotFound(err)) && freed != nil {
				freed()
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				deleted++
				r.Expectations.DeletionReturned(key, victim.ResourceVersion)
				metrics.PodDeletes.WithLabelValues("deleted").Inc()
			case apierrors.IsNotFound(err):
				// Already gone: its event may have come before we expected it.
				metrics.PodDeletes.WithLabelValues("gone").Inc()
				r.Expectations.DeletionObserved(key, pod.UID)
			default:
				metrics.PodDeletes.WithLabelValues("failed").Inc()
				r.Expectations.DeletionObserved(key, pod.UID)
				r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventFailedDelete, "Delete", "%s", eventNote("Error deleting pod "+pod.Name+": "+err.Error()))
				errs = append(errs, err)
			}
		})
	}
	return func() (int, error) {
		wg.Wait()
		if len(errs) > 0 {
			return deleted, fmt.Errorf("deleting pods: %w", errs[0])
		}
		return deleted, nil
	}
}

// deletesAnswered logs and records the deletes of a step once answered.
func (r *PodSetReconciler) deletesAnswered(ctx context.Context, ps *appv1alpha1.PodSet, deleted int) {
	if deleted > 0 {
		logf.FromContext(ctx).V(1).Info("deleted pods", "count", deleted)
		r.Recorder.Eventf(ps, nil, corev1.EventTypeNormal, EventSuccessfulDelete, "Delete", "Deleted %d pods", deleted)
	}
}
