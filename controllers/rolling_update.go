package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/rollout"
)

// step is what one reconcile does to the pods: the rollout package's counts,
// turned into pods to delete and templates to create from.
type step struct {
	createUpdated, createOld int
	victims                  []*corev1.Pod
	// deletionsCapped is true when the burst limit cut the planned
	// deletions short; the creations then wait for the next step.
	deletionsCapped bool
	// headroom is how many creations may go before any of victims'
	// deletes is answered; each further one waits for an answer
	// (rollout.Headroom).
	headroom int
}

// strategy resolves the PodSet's update strategy for its replicas.
func strategy(ps *appv1alpha1.PodSet) (rollout.Strategy, error) {
	us := ps.Spec.UpdateStrategy
	ru := us.RollingUpdate
	if ru == nil {
		ru = &appv1alpha1.RollingUpdate{}
	}
	s, err := rollout.Resolve(int(ps.DesiredReplicas()), us.Type == appv1alpha1.OnDeleteStrategyType, ru.Paused,
		ru.MaxSurge, ru.MaxUnavailable, int(ptr.Deref(ru.Partition, 0)))
	if err != nil {
		return s, fmt.Errorf("spec.updateStrategy.rollingUpdate: %w", err)
	}
	return s, nil
}

// revisionGroups splits the live pods into those of the update revision and
// the rest, and counts the available ones in each.
func revisionGroups(pods []*corev1.Pod, updateHash string, minReady time.Duration, now time.Time) (updated, old []*corev1.Pod, upd, oldCounts rollout.Group) {
	for _, pod := range pods {
		if !operand.IsLive(pod) {
			continue
		}
		available := operand.IsAvailable(pod, minReady, now)
		if pod.Labels[appv1alpha1.LabelRevisionHash] == updateHash {
			updated = append(updated, pod)
			upd.Live++
			if available {
				upd.Available++
			}
		} else {
			old = append(old, pod)
			oldCounts.Live++
			if available {
				oldCounts.Available++
			}
		}
	}
	return updated, old, upd, oldCounts
}

// rolloutInput is what the rollout arithmetic is given for ps's pods.
func rolloutInput(ps *appv1alpha1.PodSet, rs *revisionState, pods []*corev1.Pod, now time.Time) (rollout.Input, []*corev1.Pod, []*corev1.Pod, error) {
	s, err := strategy(ps)
	if err != nil {
		return rollout.Input{}, nil, nil, err
	}
	updated, old, upd, oldCounts := revisionGroups(pods, rs.updateHash, operand.MinReady(ps), now)
	return rollout.Input{
		Replicas:     int(ps.DesiredReplicas()),
		Strategy:     s,
		Updated:      upd,
		Old:          oldCounts,
		CanCreateOld: rs.canCreateOld(),
	}, updated, old, nil
}

// planStep plans one reconcile's creations and deletions, at most burst of
// each.
func planStep(ps *appv1alpha1.PodSet, rs *revisionState, pods []*corev1.Pod, now time.Time, burst int) (step, error) {
	in, updated, old, err := rolloutInput(ps, rs, pods, now)
	if err != nil {
		return step{}, err
	}
	plan := rollout.Step(in)
	minReady := operand.MinReady(ps)
	// Old revisions go first, then the update revision's pods, each group
	// in the deletion ranking's order.
	victims := append(pickVictims(old, plan.DeleteOld, minReady, now), pickVictims(updated, plan.DeleteUpdated, minReady, now)...)
	st := step{victims: victims, headroom: rollout.Headroom(in)}
	if len(victims) > burst {
		st.victims, st.deletionsCapped = victims[:burst], true
	}
	st.createUpdated = min(plan.CreateUpdated, burst)
	st.createOld = min(plan.CreateOld, burst-st.createUpdated)
	return st, nil
}

// pickVictims picks from one group the pods a step deletes: d.Unavailable of
// its unavailable pods and d.Available of its available ones, each in the
// deletion ranking's order.
func pickVictims(group []*corev1.Pod, d rollout.Deletions, minReady time.Duration, now time.Time) []*corev1.Pod {
	if d.Total() == 0 {
		return nil
	}
	var victims []*corev1.Pod
	unavailable, available := d.Unavailable, d.Available
	for _, pod := range operand.ToDelete(group, len(group)) {
		if operand.IsAvailable(pod, minReady, now) {
			if available > 0 {
				victims = append(victims, pod)
				available--
			}
		} else if unavailable > 0 {
			victims = append(victims, pod)
			unavailable--
		}
	}
	return victims
}
