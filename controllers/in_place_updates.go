package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/slimpod"
)

// EventUpdatedInPlace is the event reason of pods updated in place.
const EventUpdatedInPlace = "UpdatedInPlace"

// updatePodsInPlace moves the given pods to the update revision in place,
// each as far as it can go now, in parallel under the pod write slots. It
// returns how soon a pod's grace period ends, when one has not.
func (r *PodSetReconciler) updatePodsInPlace(ctx context.Context, s *podSetScope, moves []rolloutstate.Move) (time.Duration, error) {
	if len(moves) == 0 {
		return 0, nil
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		wait    time.Duration
		updated int
		errs    []error
	)
	for _, mv := range moves {
		if err := r.podWriteSlots.Take(ctx); err != nil {
			errs = append(errs, err)
			break
		}
		wg.Go(func() {
			defer r.podWriteSlots.Give()
			w, err := r.updatePodInPlace(ctx, s, mv)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && w == 0:
				updated++
			case err == nil:
				wait = earliest(wait, w)
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				// The pod changed or went since the cache showed it:
				// its event brings the next decision.
			default:
				errs = append(errs, fmt.Errorf("updating pod %s in place: %w", mv.Pod.Name, err))
			}
		})
	}
	wg.Wait()
	if updated > 0 {
		logf.FromContext(ctx).V(1).Info("updated pods in place", "count", updated)
		r.Recorder.Eventf(s.podSet, nil, corev1.EventTypeNormal, EventUpdatedInPlace, "Update", "Updated %d pods in place to revision %s", updated, s.revisions.Update.Name)
	}
	return wait, kerrors.NewAggregate(errs)
}

// updatePodInPlace takes one pod as far towards the update revision as it
// can go now. Each write is one the next reconcile can repeat, so an
// operator stopped between two of them resumes where it was:
//
//  1. a change that restarts the container first takes the pod out of
//     service (the gate's condition False) and, when gracePeriodSeconds is
//     set, waits that long for the endpoints to drop it;
//  2. one patch sets the image, the annotations, the revision label and the
//     update's state, which records the container as it was before any
//     restart: from then on the pod is the update revision's, and the
//     kubelet's report says when it is done (finishInPlaceUpdates);
//  3. a resize goes through pods/resize, after the state that awaits it,
//     and is sent again while the kubelet shows neither it nor a resize
//     under way (finishInPlaceUpdates), so that one lost in between is not
//     waited for forever.
func (r *PodSetReconciler) updatePodInPlace(ctx context.Context, s *podSetScope, mv rolloutstate.Move) (time.Duration, error) {
	pod, rs, now := mv.Pod.DeepCopy(), &s.revisions, time.Now()
	template := !mv.From.IsShortForm() || !rs.UpdateTemplate.IsShortForm()
	st := inplace.State{Revision: rs.UpdateHash, Restart: mv.Change.Restarts(), Resize: mv.Change.Resources}
	// The containers the kubelet runs now, before any write of this update
	// can restart them.
	if template {
		st.Template, st.Containers = true, inplace.NewContainerUpdates(mv.Pod, mv.Change.Containers)
	} else if cs := inplace.ContainerStatus(mv.Pod); cs != nil {
		st.Restarts = ptr.To(cs.RestartCount)
		if st.Restart {
			st.ContainerID = cs.ContainerID
		}
	}
	if st.Restart {
		gate := operand.InPlaceGateCondition(pod)
		since := now
		if gate != nil && gate.Status == corev1.ConditionFalse && gate.Reason == appv1alpha1.ReasonInPlaceUpdating {
			since = gate.LastTransitionTime.Time
		} else if err := r.patchPod(ctx, s, pod, "status", inplace.GatePatch(pod, corev1.ConditionFalse, appv1alpha1.ReasonInPlaceUpdating,
			"updating in place to revision "+rs.Update.Name, now)); err != nil {
			return 0, err
		}
		if left := since.Add(inPlaceGracePeriod(s.podSet)).Sub(now); left > 0 {
			return left, nil
		}
	}
	var update []byte
	if template {
		update = inplace.TemplateUpdatePatch(pod, mv.From, rs.UpdateTemplate, rs.UpdateHash, st, mv.Change, r.DefaultImage)
	} else {
		if st.Resize {
			want := inplace.WantedResources(rs.UpdateTemplate, r.DefaultImage)
			st.Resources = &want
		}
		update = inplace.UpdatePatch(pod, mv.From, rs.UpdateTemplate, rs.UpdateHash, st, r.DefaultImage)
	}
	if err := r.patchPod(ctx, s, pod, "", update); err != nil {
		return 0, err
	}
	if st.Resize {
		return 0, r.resize(ctx, s, pod, st)
	}
	return 0, nil
}

// resize sends the resize st awaits. A cluster that does not serve
// pods/resize (before Kubernetes 1.33) answers NotFound without naming the
// pod.
func (r *PodSetReconciler) resize(ctx context.Context, s *podSetScope, pod *slimpod.Pod, st inplace.State) error {
	err := r.patchPod(ctx, s, pod, "resize", inplace.ResizePatchOf(st))
	var status apierrors.APIStatus
	if apierrors.IsNotFound(err) && errors.As(err, &status) && (status.Status().Details == nil || status.Status().Details.Name == "") {
		return fmt.Errorf("resizing pod %s: the API server does not serve pods/resize (Kubernetes 1.33 or later does): %w", pod.Name, err)
	}
	return err
}

// inPlaceGracePeriod is spec.updateStrategy.rollingUpdate.inPlace.gracePeriodSeconds.
func inPlaceGracePeriod(ps *appv1alpha1.PodSet) time.Duration {
	if ru := ps.Spec.UpdateStrategy.RollingUpdateSettings(); ru != nil && ru.InPlace != nil {
		return time.Duration(ru.InPlace.GracePeriodSeconds) * time.Second
	}
	return 0
}

// patchPod sends one patch of an in-place update and holds the PodSet's
// next decision until the cache shows it. On success pod holds what the API
// server stored, so that a next patch carries its resourceVersion: pod is
// the reconcile's copy, never the cache's object.
func (r *PodSetReconciler) patchPod(ctx context.Context, s *podSetScope, pod *slimpod.Pod, subresource string, patch []byte) error {
	stored := pod.MetadataOnly()
	if err := r.podControl().PatchPod(ctx, stored, subresource, patch); err != nil {
		return err
	}
	*pod = *slimpod.From(stored)
	s.record.podPatches.hold(pod.UID, pod.ResourceVersion, time.Now())
	return nil
}

// finishInPlaceUpdates does what is left of in-place updates once their
// patch is in: it sends again a resize the kubelet shows neither done nor
// under way (one lost when the operator stopped right after its update
// patch), and it puts back in service the pods whose gate condition is not
// True and that no in-place update holds out of it: pods just created (a
// gate's condition cannot be set at creation), pods whose update the
// kubelet has finished, and pods that waited for a grace period that is no
// longer part of a move (the rollout was paused, say). The pods being moved
// now (moving) are left alone.
func (r *PodSetReconciler) finishInPlaceUpdates(ctx context.Context, s *podSetScope, moving map[types.UID]bool) error {
	var errs []error
	now := time.Now()
	for _, pod := range s.pods {
		if !operand.IsLive(pod) || !operand.HasInPlaceGate(pod) || moving[pod.UID] {
			continue
		}
		if inplace.Pending(pod) {
			if st, _ := inplace.StateOf(pod); inplace.ResizeLost(pod, st) {
				if err := r.resize(ctx, s, pod.DeepCopy(), st); err != nil && !apierrors.IsConflict(err) {
					errs = append(errs, err)
				}
			}
			continue
		}
		if gate := operand.InPlaceGateCondition(pod); gate != nil && gate.Status == corev1.ConditionTrue {
			continue
		}
		settled := pod.DeepCopy()
		err := r.patchPod(ctx, s, settled, "status", inplace.GatePatch(settled, corev1.ConditionTrue, appv1alpha1.ReasonInPlaceUpdateReady, "", now))
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("putting pod %s back in service: %w", pod.Name, err))
		}
	}
	return kerrors.NewAggregate(errs)
}

// earliest is the sooner of two waits, 0 being none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
