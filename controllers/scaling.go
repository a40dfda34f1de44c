package controllers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultBurstReplicas caps the pods created or deleted in one reconcile, as
// the ReplicaSet controller's burst of 500 does: a large scale-up proceeds in
// several reconciles, each waiting for the previous one's pods to be seen.
const DefaultBurstReplicas = 500

// Event reasons.
const (
	EventSuccessfulCreate = "SuccessfulCreate"
	EventSuccessfulDelete = "SuccessfulDelete"
	EventFailedCreate     = ReasonFailedCreate
	EventFailedDelete     = ReasonFailedDelete
)

// scalePods creates or deletes pods so that the live ones number
// spec.replicas. It acts only when every write of the previous reconcile has
// been observed in the cache; otherwise the cache may still lack pods just
// created (or still hold pods just deleted) and acting on it would overshoot.
func (r *PodSetReconciler) scalePods(ctx context.Context, s *podSetScope) error {
	if s.podSet.DeletionTimestamp != nil || s.expectationsWait > 0 {
		return nil
	}
	s.outcome.attempted = true

	var live []*corev1.Pod
	for _, pod := range s.pods {
		if isPodLive(pod) {
			live = append(live, pod)
		}
	}
	diff := len(live) - int(s.podSet.DesiredReplicas())
	switch {
	case diff < 0:
		s.outcome.err = r.createPods(ctx, s, min(-diff, r.burstReplicas()))
		s.outcome.failureReason = ReasonFailedCreate
	case diff > 0:
		s.outcome.err = r.deletePods(ctx, s, podsToDelete(live, min(diff, r.burstReplicas())))
		s.outcome.failureReason = ReasonFailedDelete
	}
	return s.outcome.err
}

func (r *PodSetReconciler) createPods(ctx context.Context, s *podSetScope, n int) error {
	ps := s.podSet
	// Expect the pods before creating them: their watch events can arrive
	// before the create calls return.
	r.Expectations.ExpectCreations(s.key, n)
	var created atomic.Int32
	_, err := slowStartBatch(n, func() error {
		pod := newPod(ps, r.DefaultImage)
		if err := controllerutil.SetControllerReference(ps, pod, r.Scheme); err != nil {
			return err
		}
		if err := r.Create(ctx, pod); err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // the namespace is going away, and the PodSet with it
			}
			r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", eventNote("Error creating pod: "+err.Error()))
			return err
		}
		created.Add(1)
		return nil
	})
	// No event will ever come for a pod that was not created: one refused, or
	// never attempted because an earlier batch failed.
	for range n - int(created.Load()) {
		r.Expectations.CreationObserved(s.key)
	}
	s.outcome.issued += int(created.Load())
	if c := created.Load(); c > 0 {
		logf.FromContext(ctx).V(1).Info("created pods", "count", c)
		r.Recorder.Eventf(ps, nil, corev1.EventTypeNormal, EventSuccessfulCreate, "Create", "Created %d pods", c)
	}
	if err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	return nil
}

func (r *PodSetReconciler) deletePods(ctx context.Context, s *podSetScope, victims []*corev1.Pod) error {
	ps := s.podSet
	uids := make([]types.UID, len(victims))
	for i, pod := range victims {
		uids[i] = pod.UID
	}
	r.Expectations.ExpectDeletions(s.key, uids)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		deleted int
		errs    []error
	)
	for _, pod := range victims {
		wg.Go(func() {
			// The UID precondition keeps a namesake created meanwhile safe.
			err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				deleted++
			case apierrors.IsNotFound(err):
				// Already gone: its event may have come before we expected it.
				r.Expectations.DeletionObserved(s.key, pod.UID)
			default:
				r.Expectations.DeletionObserved(s.key, pod.UID)
				r.Recorder.Eventf(ps, nil, corev1.EventTypeWarning, EventFailedDelete, "Delete", "%s", eventNote("Error deleting pod "+pod.Name+": "+err.Error()))
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	s.outcome.issued += deleted
	if deleted > 0 {
		logf.FromContext(ctx).V(1).Info("deleted pods", "count", deleted)
		r.Recorder.Eventf(ps, nil, corev1.EventTypeNormal, EventSuccessfulDelete, "Delete", "Deleted %d pods", deleted)
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting pods: %w", errs[0])
	}
	return nil
}

// maxEventNote is the longest note the events.k8s.io API accepts.
const maxEventNote = 1024

// eventNote cuts a note to what the API accepts: a long admission webhook
// denial would otherwise make the event itself fail.
func eventNote(note string) string {
	if len(note) <= maxEventNote {
		return note
	}
	const ellipsis = "..."
	cut := maxEventNote - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}
