// Package rollout is the arithmetic of one reconcile step of a PodSet: how
// many pods of the update revision and of the old revision to create, and how
// many to delete from each, for a given strategy. It counts pods; it never
// sees one. controllers/rolloutstate turns a Plan into pods to create and
// pods to delete (chosen by the deletion ranking); the reconciler makes the
// API calls.
//
// The model is the Deployment controller's rolling update, applied to pods
// owned directly as OpenKruise's CloneSet does:
//
//   - live pods never exceed replicas + maxSurge, and surge pods are created
//     only while some pod still has to be replaced;
//   - a pod that is available is deleted only while at least
//     replicas - maxUnavailable available pods remain;
//   - partition pods stay on the old revision (raising it rolls pods back);
//   - paused, and the OnDelete strategy, never replace a pod for its
//     template, but scaling goes on and fills the revision that is short;
//   - the Recreate strategy, as the Deployment's, deletes every old pod at
//     once and creates no pod while any old one is live or terminating;
//   - pods named for deletion (spec.scaleStrategy.podsToDelete) go before
//     any other in a scale-down, and are otherwise replaced in every
//     strategy, within maxSurge and maxUnavailable: surge first where no
//     pod may be unavailable;
//   - under an in-place pod update policy, old pods that can take the update
//     revision as they are move to it instead of being replaced: they stay
//     live (no surge) and are unavailable until the kubelet is done, so
//     they spend the maxUnavailable budget as deletions do. Under
//     InPlaceOnly, old pods that cannot are kept.
//
// Deletions are planned before creations, and a creation that needs the
// room a deletion frees is sent only once that deletion is answered
// (Headroom), so that the surge bound holds at every moment, not only at
// the end of a step.
package rollout

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults of the rolling update, as the Deployment's.
var (
	DefaultMaxSurge       = intstr.FromString("25%")
	DefaultMaxUnavailable = intstr.FromString("25%")
)

// Strategy is a PodSet's update strategy, with maxSurge and maxUnavailable
// resolved against replicas.
type Strategy struct {
	// OnDelete: a pod takes the new template only when it is replaced for
	// another reason.
	OnDelete bool
	// Recreate: every old pod goes at once, and the update revision's
	// pods are created once no old pod is left, terminating ones included.
	Recreate bool
	// WaitForTermination (podReplacementPolicy TerminationComplete): a pod
	// being deleted counts against replicas (plus maxSurge) until it is
	// gone, so a replacement comes only once the pod it replaces is gone.
	WaitForTermination bool
	// Paused stops replacements and surge; scaling goes on.
	Paused bool
	// MaxSurge and MaxUnavailable are pod counts.
	MaxSurge, MaxUnavailable int
	// Partition is how many pods stay on the old revision.
	Partition int
	// InPlaceOnly keeps old pods that cannot be updated in place, instead
	// of replacing them.
	InPlaceOnly bool
}

// Resolve turns the strategy fields into pod counts for replicas pods:
// maxSurge rounds up, maxUnavailable down, and when both come to 0,
// maxUnavailable is 1 (a rollout must be able to replace a pod), as the
// Deployment controller resolves them. nil fields take the defaults.
func Resolve(replicas int, onDelete, paused bool, maxSurge, maxUnavailable *intstr.IntOrString, partition int) (Strategy, error) {
	if maxSurge == nil {
		maxSurge = &DefaultMaxSurge
	}
	if maxUnavailable == nil {
		maxUnavailable = &DefaultMaxUnavailable
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, replicas, true)
	if err != nil {
		return Strategy{}, err
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, replicas, false)
	if err != nil {
		return Strategy{}, err
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return Strategy{
		OnDelete:       onDelete,
		Paused:         paused,
		MaxSurge:       max(surge, 0),
		MaxUnavailable: min(max(unavailable, 0), replicas),
		Partition:      max(partition, 0),
	}, nil
}

// Recreate is the Recreate strategy for replicas pods: no surge, and every
// pod may be unavailable.
func Recreate(replicas int) Strategy {
	return Strategy{Recreate: true, MaxUnavailable: max(replicas, 0)}
}

// InPlace applies an in-place pod update policy to a strategy resolved for
// replicas pods (only: InPlaceOnly). In-place moves need room below
// replicas - maxUnavailable, so a maxUnavailable that only rounding brought
// to 0 (the default 25% of three pods) becomes 1, as the Deployment makes it
// 1 when both bounds come to 0. One set to 0 explicitly (zeroAsked) stays:
// InPlaceIfPossible then replaces pods with surge, as ReCreate does (the
// API refuses it with InPlaceOnly, which could never move a pod).
func (s Strategy) InPlace(only, zeroAsked bool, replicas int) Strategy {
	s.InPlaceOnly = only
	if s.MaxUnavailable == 0 && !zeroAsked && replicas > 0 {
		s.MaxUnavailable = 1
	}
	return s
}

// Group is what one revision group (the update revision, or every older
// one) has: live pods, and how many of them are available.
type Group struct {
	Live      int
	Available int
}

// Deletions is how many pods to delete from a group: the unavailable ones
// first (they cost no availability), then available ones.
type Deletions struct {
	Unavailable int
	Available   int
}

// Total is the number of pods to delete.
func (d Deletions) Total() int { return d.Unavailable + d.Available }

// Plan is one step.
type Plan struct {
	CreateUpdated, CreateOld int
	DeleteUpdated, DeleteOld Deletions
	// DeleteOldInPlace is how many old pods that could be updated in place
	// to delete all the same; DeleteOld counts the other old pods.
	DeleteOldInPlace Deletions
	// DeleteNamed is how many pods named for deletion (Input.NamedUpdated
	// and NamedOld) to delete; the other Delete fields count none of them.
	DeleteNamed Deletions
	// UpdateInPlace is how many old pods, of those that can, to update in
	// place: the unavailable ones first, then available ones.
	UpdateInPlace Deletions
}

// Input is what a step is planned from.
type Input struct {
	Replicas int
	Strategy Strategy
	// Updated and Old are the live pods of the update revision and of every
	// older one.
	Updated, Old Group
	// OldInPlace is the part of Old that can be updated in place to the
	// update revision (none unless the pod update policy is in place).
	OldInPlace Group
	// UpdatedPending is how many of Updated were updated in place and wait
	// for the kubelet to finish: the rollout is not complete until it has.
	UpdatedPending int
	// CanCreateOld is false when no old revision is known to create pods
	// from (a new PodSet, or pods older than revisions): partition then
	// keeps old pods that exist but cannot add any.
	CanCreateOld bool
	// Terminating is how many pods, of any revision, are being deleted and
	// have not stopped, and OldTerminating how many of them are of older
	// revisions: under Recreate, no pod is created until OldTerminating is
	// 0 and no old pod is live; under WaitForTermination, Terminating
	// counts against the bound.
	Terminating, OldTerminating int
	// NamedUpdated and NamedOld are the parts of Updated and Old named for
	// deletion: they are deleted in every strategy, before any other pod,
	// and replaced unless replicas is lowered. OldInPlace counts none of
	// them.
	NamedUpdated, NamedOld Group
	// UnavailableBeforeNamed is how many live pods, not named, were
	// unavailable already when the names were listed, and still are: a
	// named pod's deletion counts them as available, so that a pod broken
	// before the request (crash-looping, say) does not hold it back, as it
	// would hold a scale-down that names its pods for good, while a
	// replacement made for a named pod, unavailable until it starts, does.
	UnavailableBeforeNamed int
}

// namedParts are NamedUpdated and NamedOld, each within its group.
func (in Input) namedParts() (upd, old Group) {
	within := func(part, g Group) Group {
		live := min(part.Live, g.Live)
		return Group{Live: live, Available: min(part.Available, g.Available, live)}
	}
	return within(in.NamedUpdated, in.Updated), within(in.NamedOld, in.Old)
}

// named is every live pod named for deletion.
func (in Input) named() Group {
	upd, old := in.namedParts()
	return Group{Live: upd.Live + old.Live, Available: upd.Available + old.Available}
}

// OldPodsLeft is how many pods of older revisions are live or terminating.
func (in Input) OldPodsLeft() int { return in.Old.Live + in.OldTerminating }

// Targets is how many live pods each group should have once the rollout is
// done: partition pods (at most replicas) on the old revision, the rest on the
// update revision. With OnDelete every pod is wanted on the update revision,
// though none is replaced to get there.
func Targets(in Input) (updated, old int) {
	if in.Strategy.OnDelete {
		return in.Replicas, 0
	}
	old = min(in.Strategy.Partition, in.Replicas)
	if !in.CanCreateOld {
		old = min(old, in.Old.Live)
	}
	return in.Replicas - old, old
}

// replacing reports whether the strategy replaces pods for their template.
func (s Strategy) replacing() bool { return !s.OnDelete && !s.Paused }

// maxLive is the most live pods a step may leave: replicas, plus maxSurge
// while pods are being replaced (for their template, or because they are
// named for deletion).
func (in Input) maxLive() int {
	if in.Strategy.replacing() || in.named().Live > 0 {
		return in.Replicas + in.Strategy.MaxSurge
	}
	return in.Replicas
}

// Headroom is how many of a step's creations fit under replicas + maxSurge
// before any of its deletions is answered; each further creation must wait
// for one deletion's answer. Negative when the live pods are above the
// bound: that many deletions free no room. Every creation Step plans fits
// once all its deletions are answered (creations <= Headroom + deletions),
// so a step that sends its creations as this allows keeps the bound at
// every moment, not only once all its deletions are answered.
//
// Under WaitForTermination a deletion frees no room until its pod is gone,
// which no answer tells: Step then plans no more creations than Headroom,
// which counts the terminating pods.
func Headroom(in Input) int {
	if in.Strategy.WaitForTermination {
		return in.terminationBound() - in.Updated.Live - in.Old.Live - in.Terminating
	}
	return in.maxLive() - in.Updated.Live - in.Old.Live
}

// terminationBound is, under WaitForTermination, the most live and
// terminating pods together: replicas, plus maxSurge while a rollout
// replaces pods (a revision group is above its target, partition's
// rollback included, or an old pod still terminates) or while a pod named
// for deletion is live, as KEP-5882 bounds a Deployment's.
func (in Input) terminationBound() int {
	wantUpd, wantOld := Targets(in)
	rolling := in.Strategy.replacing() && (in.Old.Live > wantOld || in.Updated.Live > wantUpd || in.OldTerminating > 0)
	if rolling || in.named().Live > 0 {
		return in.Replicas + in.Strategy.MaxSurge
	}
	return in.Replicas
}

// waitedFor is how many terminating pods count against the bound.
func (in Input) waitedFor() int {
	if in.Strategy.WaitForTermination {
		return in.Terminating
	}
	return 0
}

// Step plans one reconcile step.
func Step(in Input) Plan {
	if in.Strategy.Recreate {
		return recreateStep(in)
	}
	var p Plan
	replicas, s := in.Replicas, in.Strategy
	// The pods named for deletion (named), and the others of each
	// revision group: the update revision's (upd), and the old ones, in
	// two parts: those that can be updated in place (inPlace) and the
	// rest, which only replacement moves (rest).
	namedUpd, namedOld := in.namedParts()
	named := in.named()
	upd := Group{Live: in.Updated.Live - namedUpd.Live, Available: max(in.Updated.Available-namedUpd.Available, 0)}
	old := Group{Live: in.Old.Live - namedOld.Live, Available: max(in.Old.Available-namedOld.Available, 0)}
	inPlace := Group{Live: min(in.OldInPlace.Live, old.Live), Available: min(in.OldInPlace.Available, old.Available)}
	rest := Group{Live: old.Live - inPlace.Live, Available: max(old.Available-inPlace.Available, 0)}
	oldLive := func() int { return rest.Live + inPlace.Live }
	wantUpd, wantOld := Targets(in)
	replacing := s.replacing()
	maxLive := in.maxLive()
	minAvailable := max(replicas-s.MaxUnavailable, 0)
	available := func() int { return upd.Available + rest.Available + inPlace.Available + named.Available }
	budget := func() int { return max(available()-minAvailable, 0) }

	// take deletes n pods of g, unavailable ones first, and returns n.
	take := func(g *Group, d *Deletions, n int) int {
		n = min(n, g.Live)
		unavailable := min(n, g.Live-g.Available)
		d.Unavailable += unavailable
		d.Available += n - unavailable
		g.Live -= n
		g.Available -= n - unavailable
		return n
	}

	// replaceWithin deletes up to surplus pods of g: the unavailable ones
	// freely, available ones only while budget allows.
	replaceWithin := func(budget func() int, g *Group, d *Deletions, surplus int) int {
		surplus = min(surplus, g.Live)
		unavailable := take(g, d, min(surplus, g.Live-g.Available))
		available := min(surplus-unavailable, budget())
		g.Live -= available
		g.Available -= available
		d.Available += available
		return unavailable + available
	}
	replace := func(g *Group, d *Deletions, surplus int) int { return replaceWithin(budget, g, d, surplus) }

	// 1. Above replicas + surge (a scale-down, or surge left over from a
	// step that is no longer needed), pods go now, whatever the
	// availability, as a ReplicaSet scales down: the pods named for
	// deletion first, then from the groups above their target, old
	// revisions first, and of those the ones that cannot be updated in
	// place.
	excess := max(upd.Live+oldLive()+named.Live-maxLive, 0)
	excess -= take(&named, &p.DeleteNamed, excess)
	fromOld := min(excess, max(oldLive()-wantOld, 0))
	excess -= fromOld
	fromOld -= take(&rest, &p.DeleteOld, fromOld)
	take(&inPlace, &p.DeleteOldInPlace, fromOld)
	take(&upd, &p.DeleteUpdated, min(excess, max(upd.Live-wantUpd, 0)))

	// 2. The pods named for deletion that are left go in every strategy,
	// before any replacement for the template takes the budget; step 4
	// creates their replacements.
	brokenBefore := min(max(in.UnavailableBeforeNamed, 0), upd.Live-upd.Available+rest.Live-rest.Available+inPlace.Live-inPlace.Available)
	replaceWithin(func() int { return max(available()+brokenBefore-minAvailable, 0) }, &named, &p.DeleteNamed, named.Live)

	// 3a. In place: old pods above their target that can take the update
	// revision move to it, as many as the update revision lacks,
	// unavailable ones freely, available ones only
	// while enough others stay available. They stay live, unavailable.
	// keptOld are the old pods above their target that no step
	// replaces: those a later step updates in place (unless no pod may
	// ever be unavailable: they are then replaced, with surge, as under
	// ReCreate) and, under InPlaceOnly, also those that cannot be.
	var keptOld int
	if replacing {
		surplus := min(max(oldLive()-wantOld, 0), max(wantUpd-upd.Live, 0))
		unavailable := min(surplus, inPlace.Live-inPlace.Available)
		available := min(surplus-unavailable, inPlace.Available, budget())
		p.UpdateInPlace = Deletions{Unavailable: unavailable, Available: available}
		inPlace.Live -= unavailable + available
		inPlace.Available -= available
		upd.Live += unavailable + available
		if s.MaxUnavailable > 0 {
			keptOld = min(inPlace.Live, max(oldLive()-wantOld, 0))
		}
		if s.InPlaceOnly {
			keptOld = max(oldLive()-wantOld, 0)
		}
	}

	// 3b. Replacement: pods of a group above its target go.
	if replacing {
		surplus := max(oldLive()-wantOld-keptOld, 0)
		surplus -= replace(&rest, &p.DeleteOld, surplus)
		replace(&inPlace, &p.DeleteOldInPlace, surplus)
		replace(&upd, &p.DeleteUpdated, max(upd.Live-wantUpd, 0))
	}

	// 4. Creations fill the groups below their target, up to
	// replicas + surge live pods (and terminating ones, under
	// WaitForTermination: those this step deletes among them); the pods
	// kept old are not replaced. Where no pod is replaced for its template,
	// only the pods missing from replicas are created (the named pods'
	// replacements among them).
	room := max(maxLive-upd.Live-oldLive()-named.Live, 0)
	if s.WaitForTermination {
		room = max(min(room, Headroom(in)), 0)
	}
	if !replacing {
		room = min(room, max(replicas-upd.Live-oldLive(), 0))
	}
	p.CreateUpdated = min(max(wantUpd-upd.Live-keptOld, 0), room)
	room -= p.CreateUpdated
	p.CreateOld = min(max(wantOld-oldLive(), 0), room)
	return p
}

// recreateStep plans a step of the Recreate strategy, as the Deployment
// controller's: every old pod goes at once, whatever its availability;
// pods of the update revision above replicas go as in a scale-down; and the
// update revision is filled to replicas only once no old pod is live or
// terminating, so that two revisions never run at once. A pod the old
// revisions lose meanwhile is not replaced, nor is a scale-up made. Paused
// (a rollback that stopped) deletes pods only above replicas, named ones
// first: it could not replace them while old pods stay. Under
// WaitForTermination the creations wait for the pods being deleted to be
// gone (Headroom).
func recreateStep(in Input) Plan {
	var p Plan
	// take is n pods of g, the unavailable ones first.
	take := func(g Group, n int) Deletions {
		n = min(max(n, 0), g.Live)
		unavailable := min(n, max(g.Live-g.Available, 0))
		return Deletions{Unavailable: unavailable, Available: n - unavailable}
	}
	// The pods named for deletion (named), and upd and old, the others of
	// each group.
	namedUpd, namedOld := in.namedParts()
	named := in.named()
	upd := Group{Live: in.Updated.Live - namedUpd.Live, Available: max(in.Updated.Available-namedUpd.Available, 0)}
	old := Group{Live: in.Old.Live - namedOld.Live, Available: max(in.Old.Available-namedOld.Available, 0)}
	inPlace := Group{Live: min(in.OldInPlace.Live, old.Live), Available: min(in.OldInPlace.Available, old.Available)}
	rest := Group{Live: old.Live - inPlace.Live, Available: max(old.Available-inPlace.Available, 0)}
	// The named pods and the old ones all go; but a rollback that stopped
	// (Paused) replaces none, so it deletes only the pods above replicas,
	// the named ones first, then the old ones.
	namedGo, oldGo := named.Live, old.Live
	if in.Strategy.Paused {
		excess := max(named.Live+old.Live+upd.Live-in.Replicas, 0)
		namedGo = min(named.Live, excess)
		oldGo = excess - namedGo
	}
	namedKept := named.Live - namedGo
	p.DeleteNamed = take(named, namedGo)
	p.DeleteOld = take(rest, oldGo)
	p.DeleteOldInPlace = take(inPlace, oldGo-p.DeleteOld.Total())
	p.DeleteUpdated = take(upd, upd.Live+namedKept+old.Live-p.DeleteOld.Total()-p.DeleteOldInPlace.Total()-in.Replicas)
	if in.OldPodsLeft() == 0 {
		p.CreateUpdated = max(in.Replicas-upd.Live-namedKept-in.waitedFor(), 0)
		if in.Strategy.WaitForTermination {
			p.CreateUpdated = min(p.CreateUpdated, max(Headroom(in), 0))
		}
	}
	return p
}

// Complete reports whether nothing is left to do: each group at its target
// (with OnDelete, the right number of pods, whatever their revision) and
// every pod available.
func Complete(in Input) bool {
	live := in.Updated.Live + in.Old.Live
	allAvailable := in.Updated.Available+in.Old.Available == in.Replicas && live == in.Replicas && in.named().Live == 0
	if in.Strategy.OnDelete {
		return allAvailable
	}
	wantUpd, wantOld := Targets(in)
	return allAvailable && in.Updated.Live == wantUpd && in.Old.Live == wantOld && in.UpdatedPending == 0
}
