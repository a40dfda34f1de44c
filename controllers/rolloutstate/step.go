package rolloutstate

import (
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Step is what one reconcile does to the pods: the rollout arithmetic's
// counts, turned into pods to delete, templates to create from and pods to
// update in place.
type Step struct {
	// CreateUpdated and CreateOld are how many pods to create of the
	// update revision and of the current one.
	CreateUpdated, CreateOld int
	// Victims are the pods to delete: those spec.scaleStrategy.podsToDelete
	// names first, then old revisions', then the update revision's, each
	// group in the deletion ranking's order.
	Victims []*slimpod.Pod
	// DeletionsCapped is true when the burst limit cut the planned
	// deletions short; the creations then wait for the next step.
	DeletionsCapped bool
	// Headroom is how many creations may go before any of Victims'
	// deletes is answered; each further one waits for an answer
	// (rollout.Headroom).
	Headroom int
	// InPlace are the old pods to move to the update revision in place.
	InPlace []Move
}

// Step plans one reconcile's creations, deletions and in-place updates, at
// most burst of each.
func (s State) Step(burst int) Step {
	plan := rollout.Step(s.Input)
	var named, oldRest, oldInPlace, updated []*slimpod.Pod
	for _, pod := range s.Old {
		switch {
		case s.named(pod):
			named = append(named, pod)
		case s.movable(pod):
			oldInPlace = append(oldInPlace, pod)
		default:
			oldRest = append(oldRest, pod)
		}
	}
	for _, pod := range s.Updated {
		if s.named(pod) {
			named = append(named, pod)
		} else {
			updated = append(updated, pod)
		}
	}
	var victims []*slimpod.Pod
	for _, x := range []struct {
		pods []*slimpod.Pod
		d    rollout.Deletions
	}{{named, plan.DeleteNamed}, {oldRest, plan.DeleteOld}, {oldInPlace, plan.DeleteOldInPlace}, {updated, plan.DeleteUpdated}} {
		victims = append(victims, s.pick(x.pods, x.d)...)
	}
	st := Step{Victims: victims, Headroom: rollout.Headroom(s.Input)}
	if len(victims) > burst {
		st.Victims, st.DeletionsCapped = victims[:burst], true
	}
	st.CreateUpdated = min(plan.CreateUpdated, burst)
	st.CreateOld = min(plan.CreateOld, burst-st.CreateUpdated)
	// The in-place moves come from the pods no deletion took, in the same
	// ranking: those unavailable first.
	deleted := sets.New(operand.UIDs(victims)...)
	var movable []*slimpod.Pod
	for _, pod := range oldInPlace {
		if !deleted.Has(pod.UID) {
			movable = append(movable, pod)
		}
	}
	for _, pod := range s.pick(movable, plan.UpdateInPlace) {
		if len(st.InPlace) < burst {
			st.InPlace = append(st.InPlace, s.Moves[pod.UID])
		}
	}
	return st
}

// pick picks from one group the pods a step deletes (or updates in place):
// d.Unavailable of its unavailable pods and d.Available of its available
// ones, each in the deletion ranking's order.
func (s State) pick(group []*slimpod.Pod, d rollout.Deletions) []*slimpod.Pod {
	if d.Total() == 0 {
		return nil
	}
	var picked []*slimpod.Pod
	unavailable, available := d.Unavailable, d.Available
	for _, pod := range operand.ToDelete(group, len(group)) {
		if operand.IsAvailable(pod, s.minReady, s.now) {
			if available > 0 {
				picked = append(picked, pod)
				available--
			}
		} else if unavailable > 0 {
			picked = append(picked, pod)
			unavailable--
		}
	}
	return picked
}
