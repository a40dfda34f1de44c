package rolloutstate_test

import (
	"testing"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Step turns the arithmetic's counts into pods: old revisions are deleted
// first, unavailable pods before available ones (then in the deletion
// ranking's order, which among equals takes the last name first), in-place
// moves come from the pods no deletion took, and burst caps each kind.
func TestStep(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		replicas                 int32
		strategy                 appv1alpha1.RollingUpdate
		pods                     func(w world) []*slimpod.Pod
		burst                    int
		victims, inPlace         string
		createUpdated, createOld int
		capped                   bool
		headroom                 int
		// named is spec.scaleStrategy.podsToDelete.
		named []string
	}{
		{
			name: "no surge: one old pod out, one new pod once it is gone", replicas: 3, strategy: noSurge, burst: 10,
			pods:    func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v1), pod("b", w.v1), pod("c", w.v1)} },
			victims: "c", createUpdated: 1,
		},
		{
			name: "an unavailable old pod goes first", replicas: 3, strategy: noSurge, burst: 10,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v1), pod("b", w.v1, notReady()), pod("c", w.v1)}
			},
			victims: "b", createUpdated: 1,
		},
		{
			name: "scale up from nothing, capped by burst", replicas: 5, strategy: noSurge, burst: 2,
			pods:          func(world) []*slimpod.Pod { return nil },
			createUpdated: 2, headroom: 5,
		},
		{
			name: "scale down, deletions capped by burst", replicas: 1, strategy: noSurge, burst: 2,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v2), pod("c", w.v2), pod("d", w.v2)}
			},
			victims: "d,c", capped: true, headroom: -3,
		},
		{
			name: "in place: gated old pods move instead of being replaced", replicas: 3, strategy: inPlace, burst: 10,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v1, gated()), pod("b", w.v1, gated()), pod("c", w.v1, gated())}
			},
			inPlace: "c", headroom: 1,
		},
		{
			name: "in place: a gated pod moves, and a surge pod comes for the one without the gate", replicas: 3, strategy: inPlace, burst: 10,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v1, gated()), pod("b", w.v1), pod("c", w.v1, gated())}
			},
			inPlace: "c", createUpdated: 1, headroom: 1,
		},
		{
			name: "scale down: the named pod goes, not the one the ranking takes", replicas: 3, strategy: noSurge, burst: 10,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v2), pod("c", w.v2), pod("d", w.v2)}
			},
			named:   []string{"a", "not-a-pod"},
			victims: "a", headroom: -1,
		},
		{
			name: "scale down mid-rollout: a named pod of the update revision before the old ones", replicas: 2, strategy: noSurge, burst: 10,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v1), pod("c", w.v1)}
			},
			named:   []string{"a"},
			victims: "a,c", createUpdated: 1, headroom: -1,
		},
		{
			name: "in place: a named pod is replaced, not moved", replicas: 3, strategy: inPlace, burst: 10,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v1, gated()), pod("b", w.v1, gated()), pod("c", w.v1, gated())}
			},
			named:   []string{"c"},
			victims: "c", createUpdated: 1, headroom: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.replicas, tc.strategy)
			if tc.named != nil {
				w.ps.Spec.ScaleStrategy = &appv1alpha1.ScaleStrategy{PodsToDelete: tc.named}
			}
			st, err := rolloutstate.Of(w.ps, &w.revision, rolloutstate.Cluster{}, tc.pods(w), operandtest.Now)
			if err != nil {
				t.Fatal(err)
			}
			step := st.Step(tc.burst)
			if got := names(step.Victims); got != tc.victims {
				t.Errorf("Victims = %q, want %q", got, tc.victims)
			}
			var moved []*slimpod.Pod
			for _, mv := range step.InPlace {
				moved = append(moved, mv.Pod)
			}
			if got := names(moved); got != tc.inPlace {
				t.Errorf("InPlace = %q, want %q", got, tc.inPlace)
			}
			if step.CreateUpdated != tc.createUpdated || step.CreateOld != tc.createOld {
				t.Errorf("creates = %d updated, %d old; want %d, %d", step.CreateUpdated, step.CreateOld, tc.createUpdated, tc.createOld)
			}
			if step.DeletionsCapped != tc.capped {
				t.Errorf("DeletionsCapped = %v, want %v", step.DeletionsCapped, tc.capped)
			}
			if step.Headroom != tc.headroom {
				t.Errorf("Headroom = %d, want %d", step.Headroom, tc.headroom)
			}
		})
	}
}
