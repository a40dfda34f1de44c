package operand

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/podset-operator/controllers/slimpod"
)

// AnnotationPodDeletionCost is the annotation users set on a pod to say how
// much its deletion costs, as for ReplicaSets: on scale-down, pods with a
// lower cost go first. Absent or invalid, it is 0.
const AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// deletionCost is a pod's pod-deletion-cost, an int32; 0 when absent or not
// a valid int32, as the ReplicaSet controller reads it.
func deletionCost(pod *slimpod.Pod) int32 {
	v, ok := pod.Annotations[AnnotationPodDeletionCost]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// ToDelete picks the n pods whose loss hurts least, in the order the
// ReplicaSet controller uses: a pod that is not yet scheduled goes before a
// scheduled one, pending before unknown before running, not ready before
// ready, the lower controller.kubernetes.io/pod-deletion-cost before the
// higher, the one Ready for a shorter time before the one Ready longer, the
// one with more container restarts first, and the newer before the older.
func ToDelete(pods []*slimpod.Pod, n int) []*slimpod.Pod {
	if n <= 0 {
		return nil
	}
	ranked := append([]*slimpod.Pod(nil), pods...)
	sort.SliceStable(ranked, func(i, j int) bool { return lessValuable(ranked[i], ranked[j]) })
	return ranked[:min(n, len(ranked))]
}

// phaseRank orders pod phases from least to most valuable to keep.
var phaseRank = map[corev1.PodPhase]int{
	corev1.PodPending: 0,
	corev1.PodUnknown: 1,
	corev1.PodRunning: 2,
}

// lessValuable reports whether a should be deleted before b.
func lessValuable(a, b *slimpod.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	readyA, readyB := IsReady(a), IsReady(b)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if readyA {
		// Both ready: the one that became ready more recently has proven
		// itself less.
		ta, tb := ReadyCondition(a).LastTransitionTime, ReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return tb.Before(&ta)
		}
	}
	if ra, rb := RestartCount(a), RestartCount(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	// Fully tied: any fixed order keeps the choice deterministic.
	return a.Name > b.Name
}
