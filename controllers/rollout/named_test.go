package rollout

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestStepNamedPods(t *testing.T) {
	surgeOnly := Strategy{MaxSurge: 1}
	unavailableOnly := Strategy{MaxUnavailable: 1}
	for _, tc := range []struct {
		name string
		in   Input
		want Plan
	}{
		{
			name: "scale-down: the named pod is the one removed, and not replaced",
			in:   Input{Replicas: 4, Strategy: Strategy{MaxSurge: 1, MaxUnavailable: 1}, Updated: Group{5, 5}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
		{
			name: "scale-down: the named pod goes though it is available and others are not",
			in:   Input{Replicas: 2, Strategy: surgeOnly, Updated: Group{4, 2}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, DeleteUpdated: Deletions{Unavailable: 1}},
		},
		{
			name: "scale-down mid-rollout: the named pod of the update revision goes before any old pod",
			in:   Input{Replicas: 3, Strategy: unavailableOnly, Updated: Group{2, 2}, Old: Group{2, 2}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, DeleteOld: Deletions{Available: 1}, CreateUpdated: 1},
		},
		{
			name: "scale-down with maxUnavailable 0: a pod broken before the names were listed does not hold the named pod",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{4, 3}, NamedUpdated: Group{1, 1}, UnavailableBeforeNamed: 1},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
		{
			name: "the same counts, the unavailable pod a replacement made since: it holds the named pod",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{4, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{},
		},
		{
			name: "replacement with a pod broken before: created first, the named pod kept meanwhile",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{3, 2}, NamedUpdated: Group{1, 1}, UnavailableBeforeNamed: 1},
			want: Plan{CreateUpdated: 1},
		},
		{
			name: "replacement with a pod broken before: the named pod goes once its replacement is available",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{4, 3}, NamedUpdated: Group{1, 1}, UnavailableBeforeNamed: 1},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
		{
			name: "maxUnavailable 0: the replacement is created first",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{3, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{CreateUpdated: 1},
		},
		{
			name: "maxUnavailable 0: the named pod goes once its replacement is available",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{4, 4}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
		{
			name: "maxUnavailable 0: not while the replacement is unavailable",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{4, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{},
		},
		{
			name: "no surge: the named pod goes first, and its replacement follows",
			in:   Input{Replicas: 3, Strategy: unavailableOnly, Updated: Group{3, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, CreateUpdated: 1},
		},
		{
			name: "an unavailable named pod goes freely",
			in:   Input{Replicas: 3, Strategy: surgeOnly, Updated: Group{3, 2}, NamedUpdated: Group{1, 0}},
			want: Plan{DeleteNamed: Deletions{Unavailable: 1}, CreateUpdated: 1},
		},
		{
			name: "two named pods, one pod of budget: one at a time",
			in:   Input{Replicas: 4, Strategy: unavailableOnly, Updated: Group{4, 4}, NamedUpdated: Group{2, 2}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, CreateUpdated: 1},
		},
		{
			name: "OnDelete: replaced with surge, by the update revision, and no old pod with it",
			in:   Input{Replicas: 3, Strategy: Strategy{OnDelete: true, MaxSurge: 2}, Old: Group{3, 3}, NamedOld: Group{1, 1}},
			want: Plan{CreateUpdated: 1},
		},
		{
			name: "paused: replaced, though the rollout is not",
			in:   Input{Replicas: 4, Strategy: Strategy{Paused: true, MaxSurge: 1, MaxUnavailable: 1}, Updated: Group{2, 2}, Old: Group{2, 2}, NamedOld: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, CreateUpdated: 1},
		},
		{
			name: "paused scale-down: the named pod first, the rest above replicas after it is gone",
			in:   Input{Replicas: 3, Strategy: Strategy{Paused: true, MaxSurge: 1, MaxUnavailable: 1}, Updated: Group{5, 5}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
		{
			name: "partition: a named old pod is replaced by an old one",
			in:   Input{Replicas: 4, Strategy: Strategy{MaxSurge: 1, Partition: 2}, Updated: Group{2, 2}, Old: Group{2, 2}, NamedOld: Group{1, 1}, CanCreateOld: true},
			want: Plan{CreateOld: 1},
		},
		{
			name: "a named old pod that could move in place is replaced, not moved",
			in:   Input{Replicas: 2, Strategy: Strategy{MaxUnavailable: 1, InPlaceOnly: true}, Old: Group{2, 2}, OldInPlace: Group{1, 1}, NamedOld: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, CreateUpdated: 1},
		},
		{
			name: "TerminationComplete: the replacement waits for the bound",
			in:   Input{Replicas: 3, Strategy: Strategy{MaxSurge: 1, WaitForTermination: true}, Updated: Group{3, 3}, NamedUpdated: Group{1, 1}, Terminating: 1},
			want: Plan{},
		},
		{
			name: "Recreate: the named pods go at once and are replaced",
			in:   Input{Replicas: 3, Strategy: Recreate(3), Updated: Group{3, 3}, NamedUpdated: Group{2, 1}},
			want: Plan{DeleteNamed: Deletions{Unavailable: 1, Available: 1}, CreateUpdated: 2},
		},
		{
			name: "Recreate mid-rollout: a named old pod goes with the others, nothing is created",
			in:   Input{Replicas: 3, Strategy: Recreate(3), Old: Group{3, 3}, NamedOld: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}, DeleteOld: Deletions{Available: 2}},
		},
		{
			name: "Recreate under TerminationComplete: the replacement waits for the named pod to be gone",
			in:   Input{Replicas: 3, Strategy: Strategy{Recreate: true, MaxUnavailable: 3, WaitForTermination: true}, Updated: Group{3, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
		{
			name: "Recreate stopped (a rollback that stopped): named pods stay, none could be replaced",
			in:   Input{Replicas: 3, Strategy: Strategy{Recreate: true, MaxUnavailable: 3, Paused: true}, Updated: Group{1, 1}, Old: Group{2, 2}, NamedUpdated: Group{1, 1}},
			want: Plan{},
		},
		{
			name: "Recreate stopped, scaled down: the named pods are the ones removed, no other",
			in:   Input{Replicas: 1, Strategy: Strategy{Recreate: true, MaxUnavailable: 1, Paused: true}, Updated: Group{3, 3}, NamedUpdated: Group{2, 2}},
			want: Plan{DeleteNamed: Deletions{Available: 2}},
		},
		{
			name: "Recreate stopped, no old pod left: a named pod kept is not replaced beside it",
			in:   Input{Replicas: 3, Strategy: Strategy{Recreate: true, MaxUnavailable: 3, Paused: true}, Updated: Group{3, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{},
		},
		{
			name: "Recreate scale-down: the named pod is the one removed",
			in:   Input{Replicas: 2, Strategy: Recreate(2), Updated: Group{3, 3}, NamedUpdated: Group{1, 1}},
			want: Plan{DeleteNamed: Deletions{Available: 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Step(tc.in)).To(Equal(tc.want))
		})
	}
}

func TestNamedPodsKeepTheRolloutIncomplete(t *testing.T) {
	g := NewWithT(t)
	in := Input{Replicas: 3, Strategy: Strategy{MaxSurge: 1}, Updated: Group{3, 3}}
	g.Expect(Complete(in)).To(BeTrue())
	in.NamedUpdated = Group{1, 1}
	g.Expect(Complete(in)).To(BeFalse(), "a named pod is still to be replaced")
}

func TestHeadroomWithNamedPods(t *testing.T) {
	g := NewWithT(t)
	// Paused and OnDelete surge for no template, but do for a named pod.
	in := Input{Replicas: 3, Strategy: Strategy{Paused: true, MaxSurge: 1}, Updated: Group{3, 3}}
	g.Expect(Headroom(in)).To(Equal(0))
	in.NamedUpdated = Group{1, 1}
	g.Expect(Headroom(in)).To(Equal(1))
	// Under TerminationComplete, the terminating pods count.
	in.Strategy.WaitForTermination, in.Terminating = true, 1
	g.Expect(Headroom(in)).To(Equal(0))
}

// Pods named for deletion, in random strategies, with or without a
// scale-down by as many, and sometimes beside a pod that was broken before
// and never recovers: step after step, no pod that is not named is
// deleted, live pods stay within replicas + maxSurge, available ones
// within maxUnavailable of replicas (less the broken pod), a scale-down
// creates nothing, and the steps end with every named pod gone.
func TestNamedPodsLeaveWithinTheBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		replicas := rng.IntN(12) + 1
		named := rng.IntN(replicas) + 1
		broken := 0
		if named < replicas && rng.IntN(2) == 0 {
			broken = 1
		}
		scaleDown := rng.IntN(3) == 0
		surge := intstr.FromInt32(int32(rng.IntN(3)))
		unavailable := intstr.FromString(fmt.Sprintf("%d%%", rng.IntN(60)))
		kind := rng.IntN(4)
		s, err := Resolve(replicas, kind == 1, kind == 2, &surge, &unavailable, 0)
		if err != nil {
			t.Fatal(err)
		}
		if kind == 3 {
			s = Recreate(replicas)
		}
		want := replicas
		if scaleDown {
			want -= named
			if kind == 3 {
				s = Recreate(want)
			} else if s, err = Resolve(want, kind == 1, kind == 2, &surge, &unavailable, 0); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(fmt.Sprintf("%d: replicas=%d named=%d broken=%d scaleDown=%v strategy=%+v", trial, replicas, named, broken, scaleDown, s), func(t *testing.T) {
			g := NewWithT(t)
			// Each pod is (named, available, broken for good); all run
			// the update revision.
			type pod struct{ named, available, broken bool }
			pods := make([]pod, replicas)
			for i := range pods {
				isBroken := i >= named && i < named+broken
				pods[i] = pod{named: i < named, available: !isBroken, broken: isBroken}
			}
			count := func() (all, namedPods Group) {
				for _, p := range pods {
					all.Live++
					if p.available {
						all.Available++
					}
					if p.named {
						namedPods.Live++
						if p.available {
							namedPods.Available++
						}
					}
				}
				return all, namedPods
			}
			for steps := 0; ; steps++ {
				g.Expect(steps).To(BeNumerically("<", 100), "the named pods never leave")
				all, namedPods := count()
				in := Input{Replicas: want, Strategy: s, Updated: all, NamedUpdated: namedPods, CanCreateOld: true, UnavailableBeforeNamed: broken}
				if namedPods.Live == 0 && all.Live == want {
					return
				}
				availableBefore := all.Available
				plan := Step(in)
				g.Expect(plan.DeleteUpdated.Total()+plan.DeleteOld.Total()).To(BeZero(), "a pod that is not named deleted")
				if scaleDown {
					g.Expect(plan.CreateUpdated).To(BeZero(), "a pod created by a scale-down that names its pods")
				}
				remove := func(available bool, n int) {
					for i := 0; i < len(pods) && n > 0; {
						if pods[i].named && pods[i].available == available {
							pods = append(pods[:i], pods[i+1:]...)
							n--
							continue
						}
						i++
					}
					g.Expect(n).To(BeZero(), "the plan deletes named pods that do not exist")
				}
				remove(false, plan.DeleteNamed.Unavailable)
				remove(true, plan.DeleteNamed.Available)
				after, _ := count()
				if !scaleDown && !s.Recreate {
					g.Expect(after.Available).To(BeNumerically(">=", min(availableBefore, want-s.MaxUnavailable-broken)),
						"available pods fell below replicas - maxUnavailable")
				}
				for range plan.CreateUpdated {
					pods = append(pods, pod{})
				}
				g.Expect(len(pods)).To(BeNumerically("<=", replicas+s.MaxSurge), "live pods above replicas + maxSurge")
				for i := range pods {
					if !pods[i].available && !pods[i].broken && rng.IntN(2) == 0 {
						pods[i].available = true
					}
				}
			}
		})
	}
}
