package controllers

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
)

// step is what one reconcile does to the pods: the rollout package's counts,
// turned into pods to delete, templates to create from and pods to update in
// place.
type step struct {
	createUpdated, createOld int
	victims                  []*slimpod.Pod
	// deletionsCapped is true when the burst limit cut the planned
	// deletions short; the creations then wait for the next step.
	deletionsCapped bool
	// headroom is how many creations may go before any of victims'
	// deletes is answered; each further one waits for an answer
	// (rollout.Headroom).
	headroom int
	// inPlace are the old pods to move to the update revision in place.
	inPlace []inPlaceMove
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
	if operand.InPlaceUpdates(ps) {
		s = s.InPlace(ru.PodUpdatePolicy == appv1alpha1.InPlaceOnlyPodUpdatePolicy, explicitZero(ru.MaxUnavailable), int(ps.DesiredReplicas()))
	}
	return s, nil
}

// explicitZero reports whether v is 0 or 0%, as written.
func explicitZero(v *intstr.IntOrString) bool {
	return v != nil && ((v.Type == intstr.Int && v.IntVal == 0) || (v.Type == intstr.String && strings.TrimLeft(strings.TrimSuffix(v.StrVal, "%"), "0") == ""))
}

// podGroups are the live pods of the update revision and of older ones,
// and which old ones can be updated in place.
type podGroups struct {
	updated, old []*slimpod.Pod
	moves        map[types.UID]inPlaceMove
}

// firstKeptInPlace says why the first (by name) of the old pods that cannot
// be updated in place cannot, for the Progressing condition of a PodSet
// under InPlaceOnly; "" when every old pod can be.
func (g podGroups) firstKeptInPlace(rs *revisionState) string {
	var first *slimpod.Pod
	for _, pod := range g.old {
		if _, ok := g.moves[pod.UID]; !ok && (first == nil || pod.Name < first.Name) {
			first = pod
		}
	}
	if first == nil {
		return ""
	}
	_, why := moveInPlace(rs, first)
	return "pod " + first.Name + ": " + why
}

// group splits the live pods into those of the update revision and the
// rest.
func group(ps *appv1alpha1.PodSet, rs *revisionState, pods []*slimpod.Pod) podGroups {
	var g podGroups
	for _, pod := range pods {
		if !operand.IsLive(pod) {
			continue
		}
		if pod.Labels[appv1alpha1.LabelRevisionHash] == rs.updateHash {
			g.updated = append(g.updated, pod)
		} else {
			g.old = append(g.old, pod)
		}
	}
	g.moves = inPlaceMoves(ps, rs, g.old)
	return g
}

// countLive is how many of pods are live and available, of those that
// keep.
func countLive(pods []*slimpod.Pod, keep func(*slimpod.Pod) bool, minReady time.Duration, now time.Time) rollout.Group {
	var c rollout.Group
	for _, pod := range pods {
		if !keep(pod) {
			continue
		}
		c.Live++
		if operand.IsAvailable(pod, minReady, now) {
			c.Available++
		}
	}
	return c
}

// rolloutInput is what the rollout arithmetic is given for ps's pods.
func rolloutInput(ps *appv1alpha1.PodSet, rs *revisionState, pods []*slimpod.Pod, now time.Time) (rollout.Input, podGroups, error) {
	s, err := strategy(ps)
	if err != nil {
		return rollout.Input{}, podGroups{}, err
	}
	if rs.rollingBack {
		s.Partition = 0
		s.Paused = s.Paused || rs.rollbackStopped
	}
	g := group(ps, rs, pods)
	minReady := operand.MinReady(ps)
	all := func(*slimpod.Pod) bool { return true }
	in := rollout.Input{
		Replicas:     int(ps.DesiredReplicas()),
		Strategy:     s,
		Updated:      countLive(g.updated, all, minReady, now),
		Old:          countLive(g.old, all, minReady, now),
		OldInPlace:   countLive(g.old, func(p *slimpod.Pod) bool { _, ok := g.moves[p.UID]; return ok }, minReady, now),
		CanCreateOld: rs.canCreateOld(),
	}
	for _, pod := range g.updated {
		if inplace.Pending(pod) {
			in.UpdatedPending++
		}
	}
	return in, g, nil
}

// planStep plans one reconcile's creations, deletions and in-place
// updates, at most burst of each.
func planStep(ps *appv1alpha1.PodSet, rs *revisionState, pods []*slimpod.Pod, now time.Time, burst int) (step, error) {
	in, g, err := rolloutInput(ps, rs, pods, now)
	if err != nil {
		return step{}, err
	}
	plan := rollout.Step(in)
	minReady := operand.MinReady(ps)
	var oldRest, oldInPlace []*slimpod.Pod
	for _, pod := range g.old {
		if _, ok := g.moves[pod.UID]; ok {
			oldInPlace = append(oldInPlace, pod)
		} else {
			oldRest = append(oldRest, pod)
		}
	}
	// Old revisions go first, then the update revision's pods, each group
	// in the deletion ranking's order.
	var victims []*slimpod.Pod
	for _, x := range []struct {
		pods []*slimpod.Pod
		d    rollout.Deletions
	}{{oldRest, plan.DeleteOld}, {oldInPlace, plan.DeleteOldInPlace}, {g.updated, plan.DeleteUpdated}} {
		victims = append(victims, pickVictims(x.pods, x.d, minReady, now)...)
	}
	st := step{victims: victims, headroom: rollout.Headroom(in)}
	if len(victims) > burst {
		st.victims, st.deletionsCapped = victims[:burst], true
	}
	st.createUpdated = min(plan.CreateUpdated, burst)
	st.createOld = min(plan.CreateOld, burst-st.createUpdated)
	// The in-place moves come from the pods no deletion took, in the same
	// ranking: those unavailable first.
	deleted := sets.New(operand.UIDs(victims)...)
	var movable []*slimpod.Pod
	for _, pod := range oldInPlace {
		if !deleted.Has(pod.UID) {
			movable = append(movable, pod)
		}
	}
	for _, pod := range pickVictims(movable, plan.UpdateInPlace, minReady, now) {
		if len(st.inPlace) < burst {
			st.inPlace = append(st.inPlace, g.moves[pod.UID])
		}
	}
	return st, nil
}

// pickVictims picks from one group the pods a step deletes: d.Unavailable of
// its unavailable pods and d.Available of its available ones, each in the
// deletion ranking's order.
func pickVictims(group []*slimpod.Pod, d rollout.Deletions, minReady time.Duration, now time.Time) []*slimpod.Pod {
	if d.Total() == 0 {
		return nil
	}
	var victims []*slimpod.Pod
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
