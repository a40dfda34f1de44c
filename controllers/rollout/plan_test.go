package rollout

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		replicas                  int
		maxSurge, maxUnavailable  *intstr.IntOrString
		wantSurge, wantUnavailble int
	}{
		{"defaults: 25% each, surge rounds up, unavailability down", 10, nil, nil, 3, 2},
		{"defaults on one pod", 1, nil, nil, 1, 0},
		{"absolute numbers", 10, ptr.To(intstr.FromInt32(4)), ptr.To(intstr.FromInt32(1)), 4, 1},
		{"both resolve to 0: one pod may be unavailable", 3, ptr.To(intstr.FromString("10%")), ptr.To(intstr.FromString("10%")), 1, 0},
		{"both 0 percent resolve like the Deployment's", 3, ptr.To(intstr.FromString("0%")), ptr.To(intstr.FromString("0%")), 0, 1},
		{"unavailability capped at replicas", 2, ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromInt32(5)), 0, 2},
		{"100% unavailable", 4, ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromString("100%")), 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := Resolve(tc.replicas, false, false, tc.maxSurge, tc.maxUnavailable, 0)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.MaxSurge).To(Equal(tc.wantSurge), "maxSurge")
			g.Expect(s.MaxUnavailable).To(Equal(tc.wantUnavailble), "maxUnavailable")
		})
	}
}

func TestResolveRefusesBadPercentages(t *testing.T) {
	_, err := Resolve(3, false, false, ptr.To(intstr.FromString("lots")), nil, 0)
	NewWithT(t).Expect(err).To(HaveOccurred())
}

func TestStep(t *testing.T) {
	rolling := Strategy{MaxSurge: 1, MaxUnavailable: 1}
	for _, tc := range []struct {
		name     string
		replicas int
		s        Strategy
		upd, old Group
		canOld   bool
		// inPlace is the part of old that can be updated in place.
		inPlace Group
		want    Plan
	}{
		{
			name:     "scale up from nothing: only the update revision, no surge",
			replicas: 5, s: rolling,
			want: Plan{CreateUpdated: 5},
		},
		{
			name:     "steady: nothing to do",
			replicas: 3, s: rolling, upd: Group{3, 3},
			want: Plan{},
		},
		{
			name:     "rollout start: surge one, and one available old pod may go",
			replicas: 4, s: rolling, old: Group{4, 4},
			want: Plan{CreateUpdated: 2, DeleteOld: Deletions{Available: 1}},
		},
		{
			name:     "no unavailability allowed: surge only",
			replicas: 4, s: Strategy{MaxSurge: 1}, old: Group{4, 4},
			want: Plan{CreateUpdated: 1},
		},
		{
			name:     "no surge: delete first, then refill",
			replicas: 4, s: Strategy{MaxUnavailable: 2}, old: Group{4, 4},
			want: Plan{CreateUpdated: 2, DeleteOld: Deletions{Available: 2}},
		},
		{
			name:     "new pods not yet available: wait",
			replicas: 4, s: rolling, upd: Group{2, 0}, old: Group{3, 3},
			want: Plan{},
		},
		{
			name:     "unavailable old pods go freely, available ones only above replicas - maxUnavailable",
			replicas: 4, s: rolling, upd: Group{1, 1}, old: Group{3, 1},
			want: Plan{CreateUpdated: 3, DeleteOld: Deletions{Unavailable: 2}},
		},
		{
			name:     "partition keeps old pods",
			replicas: 4, s: Strategy{MaxSurge: 1, MaxUnavailable: 1, Partition: 3}, upd: Group{1, 1}, old: Group{3, 3},
			want: Plan{},
		},
		{
			name:     "partition raised: updated pods are rolled back",
			replicas: 4, s: Strategy{MaxSurge: 1, MaxUnavailable: 1, Partition: 2}, upd: Group{4, 4}, canOld: true,
			want: Plan{CreateOld: 2, DeleteUpdated: Deletions{Available: 1}},
		},
		{
			name:     "partition with no old revision to create from",
			replicas: 4, s: Strategy{MaxSurge: 1, MaxUnavailable: 1, Partition: 2}, upd: Group{2, 2},
			want: Plan{CreateUpdated: 2},
		},
		{
			name:     "paused: no replacement, no surge, but scale up",
			replicas: 5, s: Strategy{MaxSurge: 2, MaxUnavailable: 2, Paused: true}, upd: Group{1, 1}, old: Group{3, 3},
			want: Plan{CreateUpdated: 1},
		},
		{
			name:     "paused scale-down: old revision first",
			replicas: 2, s: Strategy{MaxSurge: 2, MaxUnavailable: 2, Paused: true}, upd: Group{1, 1}, old: Group{3, 3},
			want: Plan{DeleteOld: Deletions{Available: 2}},
		},
		{
			name:     "OnDelete never replaces",
			replicas: 3, s: Strategy{OnDelete: true, MaxSurge: 1, MaxUnavailable: 1}, old: Group{3, 3},
			want: Plan{},
		},
		{
			name:     "OnDelete refills with the update revision",
			replicas: 3, s: Strategy{OnDelete: true}, old: Group{2, 2}, canOld: true,
			want: Plan{CreateUpdated: 1},
		},
		{
			name:     "scale down mid-rollout: down to replicas + surge at once, then replace",
			replicas: 4, s: rolling, upd: Group{4, 4}, old: Group{6, 6},
			want: Plan{DeleteOld: Deletions{Available: 6}},
		},
		{
			name:     "scale down beyond availability: a scale-down is not a rollout",
			replicas: 2, s: rolling, upd: Group{6, 6},
			want: Plan{DeleteUpdated: Deletions{Available: 4}},
		},
		{
			name:     "scale up mid-rollout: fill first, too few available to replace",
			replicas: 8, s: Strategy{MaxSurge: 2, MaxUnavailable: 2}, upd: Group{2, 2}, old: Group{2, 2},
			want: Plan{CreateUpdated: 6},
		},
		{
			name:     "in place: available old pods move within maxUnavailable, and no surge pod is made",
			replicas: 4, s: rolling, old: Group{4, 4}, inPlace: Group{4, 4},
			want: Plan{UpdateInPlace: Deletions{Available: 1}},
		},
		{
			name:     "in place: unavailable old pods move freely, and none is replaced",
			replicas: 4, s: rolling, old: Group{4, 2}, inPlace: Group{4, 2},
			want: Plan{UpdateInPlace: Deletions{Unavailable: 2}},
		},
		{
			name:     "in place: moved pods are unavailable until done, and spend the budget",
			replicas: 4, s: rolling, upd: Group{1, 0}, old: Group{3, 3}, inPlace: Group{3, 3},
			want: Plan{},
		},
		{
			name:     "in place where possible: the others are replaced, with surge",
			replicas: 4, s: rolling, old: Group{4, 4}, inPlace: Group{2, 2},
			want: Plan{CreateUpdated: 1, UpdateInPlace: Deletions{Available: 1}},
		},
		{
			name:     "InPlaceOnly keeps the old pods that cannot be updated in place",
			replicas: 3, s: Strategy{MaxUnavailable: 1, InPlaceOnly: true}, old: Group{3, 3}, inPlace: Group{1, 1},
			want: Plan{UpdateInPlace: Deletions{Available: 1}},
		},
		{
			name:     "InPlaceOnly with nothing left to move: nothing to do",
			replicas: 3, s: Strategy{MaxUnavailable: 1, InPlaceOnly: true}, upd: Group{1, 1}, old: Group{2, 2},
			want: Plan{},
		},
		{
			name:     "InPlaceOnly still scales up, with the update revision",
			replicas: 5, s: Strategy{MaxUnavailable: 1, InPlaceOnly: true}, upd: Group{1, 1}, old: Group{2, 2},
			want: Plan{CreateUpdated: 2},
		},
		{
			name:     "in place, paused: nothing moves",
			replicas: 3, s: Strategy{MaxUnavailable: 1, Paused: true}, old: Group{3, 3}, inPlace: Group{3, 3},
			want: Plan{},
		},
		{
			name:     "in place within a partition",
			replicas: 4, s: Strategy{MaxUnavailable: 2, Partition: 3}, old: Group{4, 4}, inPlace: Group{4, 4}, canOld: true,
			want: Plan{UpdateInPlace: Deletions{Available: 1}},
		},
		{
			name:     "in place, scaling down: the excess goes first, then pods move",
			replicas: 2, s: rolling, old: Group{4, 4}, inPlace: Group{4, 4},
			want: Plan{DeleteOldInPlace: Deletions{Available: 1}, UpdateInPlace: Deletions{Available: 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Replicas: tc.replicas, Strategy: tc.s, Updated: tc.upd, Old: tc.old, CanCreateOld: tc.canOld, OldInPlace: tc.inPlace}
			NewWithT(t).Expect(Step(in)).To(Equal(tc.want))
		})
	}
}

// TestStepKeepsBoundsUntilDone rolls many PodSets to completion, with pods
// that turn available at random, and checks after every step what an outside
// observer would: never more than replicas + maxSurge live pods, never fewer
// than replicas - maxUnavailable available ones once there were that many,
// and the end reached. Every other trial updates a random part of the old
// pods in place.
func TestStepKeepsBoundsUntilDone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		replicas := rng.IntN(30) + 1
		surge := intstr.FromInt32(int32(rng.IntN(4)))
		unavailable := intstr.FromString(fmt.Sprintf("%d%%", rng.IntN(60)))
		partition := 0
		if rng.IntN(4) == 0 {
			partition = rng.IntN(replicas + 2)
		}
		s, err := Resolve(replicas, false, false, &surge, &unavailable, partition)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%d: replicas=%d surge=%d unavailable=%d partition=%d", trial, replicas, s.MaxSurge, s.MaxUnavailable, partition), func(t *testing.T) {
			g := NewWithT(t)
			// Each pod is (updated, available, can be updated in place).
			type pod struct{ updated, available, inPlace bool }
			pods := make([]pod, replicas)
			for i := range pods {
				pods[i].available = true
				pods[i].inPlace = trial%2 == 1 && rng.IntN(3) > 0
			}
			count := func() (upd, old, oldInPlace Group) {
				for _, p := range pods {
					g := &old
					if p.updated {
						g = &upd
					}
					g.Live++
					if p.available {
						g.Available++
					}
					if !p.updated && p.inPlace {
						oldInPlace.Live++
						if p.available {
							oldInPlace.Available++
						}
					}
				}
				return upd, old, oldInPlace
			}
			replaceable, created := 0, 0
			for _, p := range pods {
				if !p.inPlace {
					replaceable++
				}
			}
			for steps := 0; ; steps++ {
				g.Expect(steps).To(BeNumerically("<", 1000), "the rollout never completes")
				upd, old, oldInPlace := count()
				in := Input{Replicas: replicas, Strategy: s, Updated: upd, Old: old, OldInPlace: oldInPlace, CanCreateOld: true}
				if Complete(in) {
					wantOld := min(partition, replicas)
					g.Expect(old.Live).To(Equal(wantOld))
					if s.MaxUnavailable > 0 {
						g.Expect(created).To(BeNumerically("<=", replaceable), "pods that could be updated in place were replaced")
					}
					return
				}
				plan := Step(in)
				// Creations go as Headroom allows: some at once,
				// the rest one per answered deletion.
				headroom := Headroom(in)
				deletions := plan.DeleteOld.Total() + plan.DeleteOldInPlace.Total() + plan.DeleteUpdated.Total()
				creations := plan.CreateUpdated + plan.CreateOld
				g.Expect(creations).To(BeNumerically("<=", headroom+deletions), "creations that no deletion makes room for")
				g.Expect(upd.Live+old.Live+min(creations, max(headroom, 0))).To(BeNumerically("<=", replicas+s.MaxSurge),
					"creations sent before any deletion is answered push the live pods above replicas + maxSurge")
				// Apply deletions, preferring unavailable pods, as
				// pickVictims does.
				remove := func(updated, available, inPlace bool, n int) {
					for i := 0; i < len(pods) && n > 0; {
						if pods[i].updated == updated && pods[i].available == available && (updated || pods[i].inPlace == inPlace) {
							pods = append(pods[:i], pods[i+1:]...)
							n--
							continue
						}
						i++
					}
					g.Expect(n).To(BeZero(), "the plan deletes pods that do not exist")
				}
				remove(false, false, false, plan.DeleteOld.Unavailable)
				remove(false, true, false, plan.DeleteOld.Available)
				remove(false, false, true, plan.DeleteOldInPlace.Unavailable)
				remove(false, true, true, plan.DeleteOldInPlace.Available)
				remove(true, false, false, plan.DeleteUpdated.Unavailable)
				remove(true, true, false, plan.DeleteUpdated.Available)
				// Move pods in place, unavailable ones first, as
				// pickInPlace does.
				move := func(available bool, n int) {
					for i := range pods {
						if n > 0 && !pods[i].updated && pods[i].inPlace && pods[i].available == available {
							pods[i] = pod{updated: true}
							n--
						}
					}
					g.Expect(n).To(BeZero(), "the plan updates in place pods that cannot be")
				}
				move(false, plan.UpdateInPlace.Unavailable)
				move(true, plan.UpdateInPlace.Available)
				updAfter, oldAfter, _ := count()
				g.Expect(updAfter.Available+oldAfter.Available).To(BeNumerically(">=", replicas-s.MaxUnavailable),
					"available pods fell below replicas - maxUnavailable")
				created += plan.CreateUpdated + plan.CreateOld
				for range plan.CreateUpdated {
					pods = append(pods, pod{updated: true})
				}
				for range plan.CreateOld {
					pods = append(pods, pod{})
				}
				g.Expect(len(pods)).To(BeNumerically("<=", replicas+s.MaxSurge), "live pods above replicas + maxSurge")
				// Some new pods turn available before the next step.
				for i := range pods {
					if !pods[i].available && rng.IntN(2) == 0 {
						pods[i].available = true
					}
				}
			}
		})
	}
}

func TestHeadroom(t *testing.T) {
	rolling := Strategy{MaxSurge: 2, MaxUnavailable: 1}
	for _, tc := range []struct {
		name string
		in   Input
		want int
	}{
		{"rollout start: the surge", Input{Replicas: 4, Strategy: rolling, Old: Group{4, 4}}, 2},
		{"at the bound: every creation waits for a deletion", Input{Replicas: 4, Strategy: rolling, Updated: Group{2, 1}, Old: Group{4, 4}}, 0},
		{"above the bound: deletions free no room at first", Input{Replicas: 2, Strategy: rolling, Updated: Group{1, 1}, Old: Group{4, 4}}, -1},
		{"paused: no surge", Input{Replicas: 4, Strategy: Strategy{MaxSurge: 2, Paused: true}, Old: Group{3, 3}}, 1},
		{"OnDelete: no surge", Input{Replicas: 4, Strategy: Strategy{MaxSurge: 2, OnDelete: true}, Updated: Group{4, 4}}, 0},
		{"scale up from nothing", Input{Replicas: 5, Strategy: rolling}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Headroom(tc.in)).To(Equal(tc.want))
		})
	}
}

func TestComplete(t *testing.T) {
	rolling := Strategy{MaxSurge: 1, MaxUnavailable: 1}
	for _, tc := range []struct {
		name string
		in   Input
		want bool
	}{
		{"all updated and available", Input{Replicas: 3, Strategy: rolling, Updated: Group{3, 3}}, true},
		{"one not available", Input{Replicas: 3, Strategy: rolling, Updated: Group{3, 2}}, false},
		{"an old pod left", Input{Replicas: 3, Strategy: rolling, Updated: Group{3, 3}, Old: Group{1, 1}}, false},
		{"partition reached", Input{Replicas: 3, Strategy: Strategy{MaxSurge: 1, Partition: 1}, Updated: Group{2, 2}, Old: Group{1, 1}, CanCreateOld: true}, true},
		{"OnDelete with old pods", Input{Replicas: 3, Strategy: Strategy{OnDelete: true}, Updated: Group{1, 1}, Old: Group{2, 2}}, true},
		{"zero replicas", Input{Replicas: 0, Strategy: rolling}, true},
		{"a pod updated in place that the kubelet has not finished", Input{Replicas: 3, Strategy: rolling, Updated: Group{3, 3}, UpdatedPending: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Complete(tc.in)).To(Equal(tc.want))
		})
	}
}

func TestInPlaceResolvesARoundedZeroToOne(t *testing.T) {
	g := NewWithT(t)
	s, err := Resolve(3, false, false, nil, nil, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.MaxUnavailable).To(BeZero(), "25% of 3 rounds down")
	g.Expect(s.InPlace(true, false, 3).MaxUnavailable).To(Equal(1))
	g.Expect(s.InPlace(false, true, 3).MaxUnavailable).To(BeZero(), "0 asked for stays 0")
	g.Expect(s.InPlace(true, false, 3).InPlaceOnly).To(BeTrue())
	g.Expect(Step(Input{Replicas: 3, Strategy: s.InPlace(true, false, 3), Old: Group{3, 3}, OldInPlace: Group{3, 3}})).
		To(Equal(Plan{UpdateInPlace: Deletions{Available: 1}}), "InPlaceOnly with the default bounds on three pods moves one")
}

func TestRecreateStep(t *testing.T) {
	for _, tc := range []struct {
		name        string
		replicas    int
		upd, old    Group
		terminating int
		want        Plan
	}{
		{"rollout start: every old pod goes at once, nothing is created", 4, Group{}, Group{4, 3}, 0,
			Plan{DeleteOld: Deletions{Unavailable: 1, Available: 3}}},
		{"old pods terminating: nothing is created", 4, Group{}, Group{}, 2, Plan{}},
		{"an old pod live and others terminating: it goes, nothing is created", 4, Group{}, Group{1, 1}, 3,
			Plan{DeleteOld: Deletions{Available: 1}}},
		{"the old pods are gone: the update revision is filled", 4, Group{}, Group{}, 0, Plan{CreateUpdated: 4}},
		{"a scale-up while old pods terminate waits for them", 6, Group{}, Group{}, 1, Plan{}},
		{"a scale-down while old pods terminate deletes updated pods above replicas", 2, Group{3, 1}, Group{}, 1,
			Plan{DeleteUpdated: Deletions{Unavailable: 1}}},
		{"steady: a lost pod is replaced", 3, Group{2, 2}, Group{}, 0, Plan{CreateUpdated: 1}},
		{"steady: nothing to do", 3, Group{3, 3}, Group{}, 0, Plan{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Replicas: tc.replicas, Strategy: Recreate(tc.replicas), Updated: tc.upd, Old: tc.old, OldTerminating: tc.terminating, CanCreateOld: true}
			NewWithT(t).Expect(Step(in)).To(Equal(tc.want))
		})
	}
}

// TestRecreateNeverRunsTwoRevisions runs Recreate rollouts step by step, as
// the reconciler would, with deleted pods terminating for a few steps and
// replicas changed on the way, and checks what an observer of the pods
// would: no pod of the update revision is created while a pod of an older
// one is live or terminating, live pods never exceed replicas once the
// old ones are gone, and the rollout ends with replicas available pods of
// the update revision.
func TestRecreateNeverRunsTwoRevisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		replicas := rng.IntN(20) + 1
		t.Run(fmt.Sprintf("%d: replicas=%d", trial, replicas), func(t *testing.T) {
			g := NewWithT(t)
			// A pod: its revision, whether it is available, and, once
			// deleted, how many more steps it terminates for (-1: live).
			type pod struct {
				updated, available bool
				terminating        int
			}
			pods := make([]pod, rng.IntN(2*replicas)+1)
			for i := range pods {
				pods[i] = pod{available: rng.IntN(4) > 0, terminating: -1}
			}
			for steps := 0; ; steps++ {
				g.Expect(steps).To(BeNumerically("<", 1000), "the rollout never completes")
				if rng.IntN(10) == 0 {
					replicas = rng.IntN(20) + 1
				}
				// Now and then the template changes again: every pod
				// is of an older revision.
				if steps < 30 && rng.IntN(15) == 0 {
					for i := range pods {
						pods[i].updated = false
					}
				}
				var in Input
				in.Replicas, in.Strategy, in.CanCreateOld = replicas, Recreate(replicas), true
				oldLeft := 0
				for _, p := range pods {
					grp := &in.Old
					if p.updated {
						grp = &in.Updated
					}
					switch {
					case p.terminating >= 0 && !p.updated:
						in.OldTerminating++
					case p.terminating < 0:
						grp.Live++
						if p.available {
							grp.Available++
						}
					}
					if !p.updated {
						oldLeft++
					}
				}
				if Complete(in) {
					g.Expect(oldLeft).To(BeZero())
					g.Expect(in.Updated.Available).To(Equal(replicas))
					return
				}
				plan := Step(in)
				if plan.CreateUpdated+plan.CreateOld > 0 {
					g.Expect(oldLeft).To(BeZero(), "pods created while %d old pods are live or terminating", oldLeft)
					g.Expect(plan.CreateOld).To(BeZero(), "old pods created under Recreate")
				}
				// Deleted pods terminate for 0 to 2 more steps.
				remove := func(updated, available bool, n int) {
					for i := range pods {
						if n > 0 && pods[i].terminating < 0 && pods[i].updated == updated && pods[i].available == available {
							pods[i].terminating = rng.IntN(3)
							n--
						}
					}
					g.Expect(n).To(BeZero(), "the plan deletes pods that do not exist")
				}
				remove(false, false, plan.DeleteOld.Unavailable)
				remove(false, true, plan.DeleteOld.Available)
				remove(true, false, plan.DeleteUpdated.Unavailable)
				remove(true, true, plan.DeleteUpdated.Available)
				g.Expect(plan.DeleteOldInPlace.Total()).To(BeZero())
				for range plan.CreateUpdated {
					pods = append(pods, pod{updated: true, terminating: -1})
				}
				live := 0
				kept := pods[:0]
				for _, p := range pods {
					if p.terminating < 0 {
						live++
					}
					if p.terminating != 0 {
						if p.terminating > 0 {
							p.terminating--
						}
						kept = append(kept, p)
					}
				}
				pods = kept
				if oldLeft == 0 {
					g.Expect(live).To(BeNumerically("<=", replicas), "live pods above replicas")
				}
				for i := range pods {
					if !pods[i].available && rng.IntN(2) == 0 {
						pods[i].available = true
					}
				}
			}
		})
	}
}

func TestRecreateStepPaused(t *testing.T) {
	paused := Recreate(3)
	paused.Paused = true
	g := NewWithT(t)
	g.Expect(Step(Input{Replicas: 3, Strategy: paused, Old: Group{3, 3}})).To(Equal(Plan{}), "a stopped rollback leaves the old pods")
	g.Expect(Step(Input{Replicas: 3, Strategy: paused, Updated: Group{1, 1}, Old: Group{3, 3}})).
		To(Equal(Plan{DeleteOld: Deletions{Available: 1}}), "above replicas, old pods go first")
	g.Expect(Step(Input{Replicas: 3, Strategy: paused, Old: Group{2, 2}})).To(Equal(Plan{}), "no pod is created while old ones are left")
	g.Expect(Step(Input{Replicas: 3, Strategy: paused, Updated: Group{2, 2}})).To(Equal(Plan{CreateUpdated: 1}))
}

func TestWaitForTermination(t *testing.T) {
	wait := Strategy{MaxSurge: 1, MaxUnavailable: 1, WaitForTermination: true}
	for _, tc := range []struct {
		name        string
		replicas    int
		s           Strategy
		upd, old    Group
		terminating int
		want        Plan
	}{
		{"the last old pod terminates: the surge is still the bound", 4, wait, Group{3, 3}, Group{}, 1, Plan{}},
		{"a deleted pod is replaced once it is gone", 3, Strategy{MaxUnavailable: 1, WaitForTermination: true}, Group{2, 2}, Group{}, 1, Plan{}},
		{"without the policy it is replaced at once", 3, Strategy{MaxUnavailable: 1}, Group{2, 2}, Group{}, 1, Plan{CreateUpdated: 1}},
		{"rollout start: the surge only, the deleted pod's room waits", 4, wait, Group{}, Group{4, 4}, 0,
			Plan{CreateUpdated: 1, DeleteOld: Deletions{Available: 1}}},
		{"rollout: the deleted pod terminates, nothing more is created", 4, wait, Group{1, 0}, Group{3, 3}, 1, Plan{}},
		{"a partition's rollback without unavailability surges with an old pod", 4, Strategy{MaxSurge: 1, Partition: 4, WaitForTermination: true}, Group{2, 2}, Group{2, 2}, 0,
			Plan{CreateOld: 1}},
		{"rollout: it is gone, its room is used", 4, wait, Group{1, 1}, Group{3, 3}, 0,
			Plan{CreateUpdated: 1, DeleteOld: Deletions{Available: 1}}},
		{"a scale-up waits for the terminating pods", 5, wait, Group{3, 3}, Group{}, 2, Plan{}},
		{"a scale-up uses the room they leave", 5, wait, Group{3, 3}, Group{}, 1, Plan{CreateUpdated: 1}},
		{"Recreate waits for new pods terminating too", 3, func() Strategy { s := Recreate(3); s.WaitForTermination = true; return s }(), Group{2, 2}, Group{}, 1, Plan{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Replicas: tc.replicas, Strategy: tc.s, Updated: tc.upd, Old: tc.old, Terminating: tc.terminating, CanCreateOld: true}
			if tc.old.Live > 0 {
				// The terminating pods are old ones.
				in.OldTerminating = tc.terminating
			}
			plan := Step(in)
			g := NewWithT(t)
			g.Expect(plan).To(Equal(tc.want))
			if tc.s.WaitForTermination {
				g.Expect(plan.CreateUpdated+plan.CreateOld).To(BeNumerically("<=", max(Headroom(in), 0)), "creations that wait for a deletion to be answered")
			}
		})
	}
}

// TestWaitForTerminationKeepsTheBound runs rollouts, scale-ups and
// scale-downs step by step under WaitForTermination, with deleted pods (by
// the plan, and by someone else) terminating for a few steps, and checks
// that live and terminating pods together never exceed replicas + maxSurge
// once the step's creations are made, and that every rollout ends.
func TestWaitForTerminationKeepsTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		replicas := rng.IntN(20) + 1
		surge := intstr.FromInt32(int32(rng.IntN(4)))
		unavailable := intstr.FromString(fmt.Sprintf("%d%%", rng.IntN(60)))
		partition := 0
		t.Run(fmt.Sprintf("%d: replicas=%d", trial, replicas), func(t *testing.T) {
			g := NewWithT(t)
			type pod struct {
				updated, available bool
				terminating        int
			}
			pods := make([]pod, rng.IntN(replicas+3))
			for i := range pods {
				pods[i] = pod{available: true, terminating: -1}
			}
			for steps := 0; ; steps++ {
				g.Expect(steps).To(BeNumerically("<", 1000), "the rollout never completes")
				if steps < 20 && rng.IntN(8) == 0 {
					replicas = rng.IntN(20) + 1
				}
				// A partition raised now and then rolls pods back.
				if steps < 20 && rng.IntN(8) == 0 {
					partition = rng.IntN(replicas + 1)
				}
				s, err := Resolve(replicas, false, false, &surge, &unavailable, partition)
				g.Expect(err).NotTo(HaveOccurred())
				s.WaitForTermination = true
				in := Input{Replicas: replicas, Strategy: s, CanCreateOld: true}
				for _, p := range pods {
					grp := &in.Old
					if p.updated {
						grp = &in.Updated
					}
					if p.terminating >= 0 {
						in.Terminating++
						if !p.updated {
							in.OldTerminating++
						}
						continue
					}
					grp.Live++
					if p.available {
						grp.Available++
					}
				}
				if Complete(in) && in.Terminating == 0 {
					if steps >= 20 {
						return
					}
					continue
				}
				plan := Step(in)
				if creations := plan.CreateUpdated + plan.CreateOld; creations > 0 {
					bound := replicas
					wantUpd, wantOld := Targets(in)
					if in.Old.Live > wantOld || in.Updated.Live > wantUpd || in.OldTerminating > 0 {
						bound += s.MaxSurge
					}
					g.Expect(in.Updated.Live+in.Old.Live+in.Terminating+creations).To(BeNumerically("<=", bound),
						"live and terminating pods above replicas (+ maxSurge in a rollout)")
				}
				for range plan.CreateOld {
					g.Expect(partition).To(BeNumerically(">", 0), "old pods created without a partition")
				}
				remove := func(updated, available bool, n int) {
					for i := range pods {
						if n > 0 && pods[i].terminating < 0 && pods[i].updated == updated && pods[i].available == available {
							pods[i].terminating = rng.IntN(3)
							n--
						}
					}
					g.Expect(n).To(BeZero(), "the plan deletes pods that do not exist")
				}
				remove(false, false, plan.DeleteOld.Unavailable)
				remove(false, true, plan.DeleteOld.Available)
				remove(true, false, plan.DeleteUpdated.Unavailable)
				remove(true, true, plan.DeleteUpdated.Available)
				for range plan.CreateUpdated {
					pods = append(pods, pod{updated: true, terminating: -1})
				}
				for range plan.CreateOld {
					pods = append(pods, pod{terminating: -1})
				}
				// Someone deletes a live pod now and then.
				if steps < 20 && len(pods) > 0 && rng.IntN(6) == 0 {
					if i := rng.IntN(len(pods)); pods[i].terminating < 0 {
						pods[i].terminating = rng.IntN(3)
					}
				}
				kept := pods[:0]
				for _, p := range pods {
					if p.terminating != 0 {
						if p.terminating > 0 {
							p.terminating--
						}
						kept = append(kept, p)
					}
				}
				pods = kept
				for i := range pods {
					if !pods[i].available && rng.IntN(2) == 0 {
						pods[i].available = true
					}
				}
			}
		})
	}
}
