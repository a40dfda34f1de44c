// Package rollout is the arithmetic of one reconcile step of a PodSet: how
// many pods of the update revision and of the old revision to create, and how
// many to delete from each, for a given strategy. It counts pods; it never
// sees one. controllers/rolling_update.go turns a Plan into pods to create and
// pods to delete (chosen by the deletion ranking) and makes the API calls.
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
//     template, but scaling goes on and fills the revision that is short.
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
	// Paused stops replacements and surge; scaling goes on.
	Paused bool
	// MaxSurge and MaxUnavailable are pod counts.
	MaxSurge, MaxUnavailable int
	// Partition is how many pods stay on the old revision.
	Partition int
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
}

// Input is what a step is planned from.
type Input struct {
	Replicas int
	Strategy Strategy
	// Updated and Old are the live pods of the update revision and of every
	// older one.
	Updated, Old Group
	// CanCreateOld is false when no old revision is known to create pods
	// from (a new PodSet, or pods older than revisions): partition then
	// keeps old pods that exist but cannot add any.
	CanCreateOld bool
}

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
// while pods are being replaced.
func (in Input) maxLive() int {
	if in.Strategy.replacing() {
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
func Headroom(in Input) int {
	return in.maxLive() - in.Updated.Live - in.Old.Live
}

// Step plans one reconcile step.
func Step(in Input) Plan {
	var p Plan
	replicas, s, upd, old := in.Replicas, in.Strategy, in.Updated, in.Old
	wantUpd, wantOld := Targets(in)
	replacing := s.replacing()
	maxLive := in.maxLive()
	minAvailable := max(replicas-s.MaxUnavailable, 0)

	// 1. Above replicas + surge (a scale-down, or surge left over from a
	// step that is no longer needed), pods go now, whatever the
	// availability, as a ReplicaSet scales down: from the groups above
	// their target, old revisions first.
	excess := max(upd.Live+old.Live-maxLive, 0)
	take := func(g *Group, d *Deletions, want, n int) int {
		n = min(n, max(g.Live-want, 0))
		unavailable := min(n, g.Live-g.Available)
		d.Unavailable += unavailable
		d.Available += n - unavailable
		g.Live -= n
		g.Available -= n - unavailable
		return n
	}
	excess -= take(&old, &p.DeleteOld, wantOld, excess)
	take(&upd, &p.DeleteUpdated, wantUpd, excess)

	// 2. Replacement: pods of a group above its target go, unavailable
	// ones freely, available ones only while enough others stay available.
	if replacing {
		for _, x := range []struct {
			g    *Group
			d    *Deletions
			want int
		}{{&old, &p.DeleteOld, wantOld}, {&upd, &p.DeleteUpdated, wantUpd}} {
			surplus := max(x.g.Live-x.want, 0)
			unavailable := min(surplus, x.g.Live-x.g.Available)
			x.d.Unavailable += unavailable
			x.g.Live -= unavailable
			budget := max(upd.Available+old.Available-minAvailable, 0)
			available := min(surplus-unavailable, budget)
			x.d.Available += available
			x.g.Live -= available
			x.g.Available -= available
		}
	}

	// 3. Creations fill the groups below their target, up to
	// replicas + surge live pods.
	room := max(maxLive-upd.Live-old.Live, 0)
	p.CreateUpdated = min(max(wantUpd-upd.Live, 0), room)
	room -= p.CreateUpdated
	p.CreateOld = min(max(wantOld-old.Live, 0), room)
	return p
}

// Complete reports whether nothing is left to do: each group at its target
// (with OnDelete, the right number of pods, whatever their revision) and
// every pod available.
func Complete(in Input) bool {
	live := in.Updated.Live + in.Old.Live
	allAvailable := in.Updated.Available+in.Old.Available == in.Replicas && live == in.Replicas
	if in.Strategy.OnDelete {
		return allAvailable
	}
	wantUpd, wantOld := Targets(in)
	return allAvailable && in.Updated.Live == wantUpd && in.Old.Live == wantOld
}
