// Package rolloutstate is where one PodSet's rollout stands, computed once
// from its pods and revisions: which live pods run the revision the rollout
// moves to and which an older one, which of the old ones can take the new
// template in place (and why the others cannot), the rollout arithmetic's
// input, and so whether the rollout is complete. The reconciler computes it
// once per reconcile (again only when what it is computed from changes: a
// rollback points the rollout elsewhere, or the pods are read from the API
// server instead of the cache), and each phase reads it: the rollout step
// (Step), auto-rollback's judgment of the revision on trial, the pod cache
// check, and the status.
//
// It sees pods, and makes no API call; the arithmetic itself, which only
// counts, is the rollout package's.
package rolloutstate

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Cluster is what the operator knows of where it runs that decides which
// template changes a pod can take in place; the same for every PodSet.
type Cluster struct {
	// DefaultImage is the operand image of templates that name none.
	DefaultImage string
	// ResizeRules are what the API server allows of an in-place resize.
	ResizeRules inplace.ServerRules
}

// State is where a PodSet's rollout stands, at one moment.
type State struct {
	// Input is the rollout arithmetic's input: the strategy resolved for
	// the PodSet's replicas, and the live and available pods of each
	// revision group.
	Input rollout.Input
	// Updated are the live pods of the revision the rollout moves to, Old
	// those of every other revision.
	Updated, Old []*slimpod.Pod
	// Named are the live pods, of either group, that
	// spec.scaleStrategy.podsToDelete names, by UID.
	Named map[types.UID]bool
	// Moves are the old pods that can take the update revision in place,
	// by UID; kept says, for each other old pod of a PodSet that updates
	// in place, why it cannot.
	Moves map[types.UID]Move
	kept  map[types.UID]string
	// minReady and now are what availability was judged by.
	minReady time.Duration
	now      time.Time
}

// Of is where the rollout of ps to revisions.Update stands at now, for the
// pods the PodSet controls (terminating ones included; they count for
// nothing). It fails only when the update strategy does not resolve, and
// then names the field.
func Of(ps *appv1alpha1.PodSet, revisions *revision.State, cluster Cluster, pods []*slimpod.Pod, now time.Time) (State, error) {
	s, err := Strategy(ps)
	if err != nil {
		return State{}, err
	}
	if revisions.RollingBack {
		s.Partition = 0
		s.Paused = s.Paused || revisions.RollbackStopped
	}
	st := State{minReady: operand.MinReady(ps), now: now}
	terminating, oldTerminating := 0, 0
	var names sets.Set[string]
	if listed := ps.Spec.PodsToDelete(); len(listed) > 0 {
		names = sets.New(listed...)
	}
	for _, pod := range pods {
		if names.Has(pod.Name) && operand.IsLive(pod) {
			if st.Named == nil {
				st.Named = map[types.UID]bool{}
			}
			st.Named[pod.UID] = true
		}
		switch {
		case !operand.IsLive(pod):
			if !operand.IsTerminating(pod) {
				break
			}
			terminating++
			if pod.Labels[appv1alpha1.LabelRevisionHash] != revisions.UpdateHash {
				oldTerminating++
			}
		case pod.Labels[appv1alpha1.LabelRevisionHash] == revisions.UpdateHash:
			st.Updated = append(st.Updated, pod)
		default:
			st.Old = append(st.Old, pod)
		}
	}
	// A named pod is replaced, never moved in place.
	st.Moves, st.kept = movesOf(ps, revisions, cluster, st.unnamed(st.Old))
	st.Input = rollout.Input{
		Replicas:       int(ps.DesiredReplicas()),
		Strategy:       s,
		Updated:        st.count(st.Updated, nil),
		Old:            st.count(st.Old, nil),
		OldInPlace:     st.count(st.Old, st.movable),
		CanCreateOld:   revisions.CanCreateOld(),
		Terminating:    terminating,
		OldTerminating: oldTerminating,
		NamedUpdated:   st.count(st.Updated, st.named),
		NamedOld:       st.count(st.Old, st.named),
	}
	for _, pod := range st.Updated {
		if inplace.Pending(pod) {
			st.Input.UpdatedPending++
		}
	}
	return st, nil
}

// Toward is where the rollout of ps would stand if it moved the pods to
// target, a stored revision, as auto-rollback asks when it judges whether a
// rollback to target is complete: partition does not apply to a revision
// other than the spec's. It reports false when target's template cannot be
// read.
func Toward(ps *appv1alpha1.PodSet, revisions *revision.State, target *appsv1.ControllerRevision, cluster Cluster, pods []*slimpod.Pod, now time.Time) (State, bool) {
	to := *revisions
	if target != revisions.Update && !to.RollBackTo(target, false) {
		return State{}, false
	}
	st, err := Of(ps, &to, cluster, pods, now)
	return st, err == nil
}

// Complete reports whether the rollout has nothing left to do: every pod it
// wants runs the update revision (partition of them an older one), available
// (rollout.Complete).
func (s State) Complete() bool {
	return rollout.Complete(s.Input)
}

// FirstKeptInPlace says why the first (by name) of the old pods that cannot
// be updated in place cannot, for the Progressing condition of a PodSet under
// InPlaceOnly; "" when every old pod can be.
func (s State) FirstKeptInPlace() string {
	var first *slimpod.Pod
	for _, pod := range s.Old {
		if _, ok := s.kept[pod.UID]; ok && (first == nil || pod.Name < first.Name) {
			first = pod
		}
	}
	if first == nil {
		return ""
	}
	return "pod " + first.Name + ": " + s.kept[first.UID]
}

// Available reports whether pod is available, judged as the state's counts
// judge it.
func (s State) Available(pod *slimpod.Pod) bool {
	return operand.IsAvailable(pod, s.minReady, s.now)
}

// named reports whether spec.scaleStrategy.podsToDelete names a live pod.
func (s State) named(pod *slimpod.Pod) bool { return s.Named[pod.UID] }

// unnamed are the pods of pods that are not named.
func (s State) unnamed(pods []*slimpod.Pod) []*slimpod.Pod {
	if len(s.Named) == 0 {
		return pods
	}
	var out []*slimpod.Pod
	for _, pod := range pods {
		if !s.named(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// movable reports whether an old pod can be moved in place.
func (s State) movable(pod *slimpod.Pod) bool {
	_, ok := s.Moves[pod.UID]
	return ok
}

// count is how many of pods are live and available, of those that keep
// (all when keep is nil).
func (s State) count(pods []*slimpod.Pod, keep func(*slimpod.Pod) bool) rollout.Group {
	var c rollout.Group
	for _, pod := range pods {
		if keep != nil && !keep(pod) {
			continue
		}
		c.Live++
		if operand.IsAvailable(pod, s.minReady, s.now) {
			c.Available++
		}
	}
	return c
}

// Strategy resolves the PodSet's update strategy for its replicas, and
// names the field that does not resolve.
func Strategy(ps *appv1alpha1.PodSet) (rollout.Strategy, error) {
	s, err := updateStrategy(ps)
	s.WaitForTermination = ps.Spec.PodReplacementPolicy == appv1alpha1.TerminationCompletePodReplacementPolicy
	return s, err
}

// updateStrategy resolves spec.updateStrategy.
func updateStrategy(ps *appv1alpha1.PodSet) (rollout.Strategy, error) {
	us := ps.Spec.UpdateStrategy
	if us.Recreate != nil && us.Type != appv1alpha1.RecreateStrategyType {
		return rollout.Strategy{}, fmt.Errorf("spec.updateStrategy.recreate may only be set when type is Recreate, not %s", cmp.Or(us.Type, appv1alpha1.RollingUpdateStrategyType))
	}
	if us.Type == appv1alpha1.RecreateStrategyType {
		return rollout.Recreate(int(ps.DesiredReplicas())), nil
	}
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
