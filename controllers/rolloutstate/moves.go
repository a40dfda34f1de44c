package rolloutstate

import (
	"k8s.io/apimachinery/pkg/types"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Move is an old pod that can take the update revision in place, and what
// that takes.
type Move struct {
	Pod *slimpod.Pod
	// From is the template of the revision the pod runs.
	From   revision.Template
	Change inplace.Change
}

// movesOf are, for a PodSet that updates its pods in place, the old pods
// that can take the update revision as they are, by UID: those that carry
// the in-place readiness gate and whose revision's template differs from
// the update revision's only in what changes in place. A pod without the
// gate (made by operator 0.2.0, or before the policy was set) or of an
// unknown revision is replaced, or under InPlaceOnly kept as it is: kept
// says why, by UID.
func movesOf(ps *appv1alpha1.PodSet, revisions *revision.State, cluster Cluster, old []*slimpod.Pod) (moves map[types.UID]Move, kept map[types.UID]string) {
	if !operand.InPlaceUpdates(ps) || revisions.Update == nil {
		return nil, nil
	}
	moves, kept = map[types.UID]Move{}, map[types.UID]string{}
	for _, pod := range old {
		if mv, why := moveInPlace(revisions, cluster, pod); why == "" {
			moves[pod.UID] = mv
		} else {
			kept[pod.UID] = why
		}
	}
	return moves, kept
}

// moveInPlace is what moving an old pod to the update revision in place
// takes, or why it cannot be moved so.
func moveInPlace(revisions *revision.State, cluster Cluster, pod *slimpod.Pod) (Move, string) {
	if !operand.HasInPlaceGate(pod) {
		return Move{}, "made without the in-place readiness gate (by operator 0.2.0, or before the policy was set)"
	}
	from, ok := revisions.Template(pod.Labels[appv1alpha1.LabelRevisionHash])
	if !ok {
		return Move{}, "its revision is not stored"
	}
	c := inplace.Classify(from, revisions.UpdateTemplate, cluster.DefaultImage, cluster.ResizeRules)
	if !c.InPlace() {
		return Move{}, c.NotInPlace
	}
	return Move{Pod: pod, From: from, Change: c}, ""
}
