package podwrites

import (
	"context"
	"errors"
	"sync"
)

// A rolling step that deletes old pods and creates their replacements sends
// each creation as soon as there is room for it under replicas + maxSurge,
// not once every deletion of the step is answered.
//
// The creations a step plans fit once all its deletions are answered; some
// fit at once (the headroom: the surge not yet used), and each of the others
// needs one deletion answered first. Waiting for the whole set of answers
// cost a rollout the slowest delete's round trip at every step: in a 1x1000
// rollout, steps of 150–250 deletes spent about 0.3 s each with nothing sent
// (docs/architecture.md, "Creations sent as deletions make room"). The bound
// holds at every moment either way: a creation sent after a deletion was
// answered lands after it in the API server's order, so no watcher ever sees
// more live pods than replicas + maxSurge.
//
// SurgeRoom counts that room. A delete that fails frees none: the creations
// that waited for it are not sent, and the step reports the failure as one
// that waited for all its deletes would have.
type SurgeRoom struct {
	mu sync.Mutex
	// room is how many creations may still start; negative while the
	// live pods are above the bound.
	room int
	// answered is set once every deletion is answered: room grows no
	// more.
	answered bool
	// changed is closed, and replaced, whenever room or answered changes.
	changed chan struct{}
}

// ErrNoRoom stops the creations of a step whose deletions have all been
// answered without making room for them (one failed). It is not a failure
// of the creations: the caller reports the deletion's.
var ErrNoRoom = errors.New("no room under replicas + maxSurge: a deletion the creation waited for failed")

func NewSurgeRoom(headroom int) *SurgeRoom {
	return &SurgeRoom{room: headroom, changed: make(chan struct{})}
}

// Take waits until one creation may start, and counts it. It returns
// ErrNoRoom when none ever will, or ctx's error. A nil SurgeRoom always has
// room (a step without deletions).
func (g *SurgeRoom) Take(ctx context.Context) error {
	if g == nil {
		return nil
	}
	for {
		g.mu.Lock()
		if g.room > 0 {
			g.room--
			g.mu.Unlock()
			return nil
		}
		if g.answered {
			g.mu.Unlock()
			return ErrNoRoom
		}
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Freed records one deletion answered: its pod is no longer live.
func (g *SurgeRoom) Freed() {
	if g == nil {
		return
	}
	g.update(func() { g.room++ })
}

// AllAnswered records that no more deletions will be answered.
func (g *SurgeRoom) AllAnswered() {
	if g == nil {
		return
	}
	g.update(func() { g.answered = true })
}

func (g *SurgeRoom) update(change func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	change()
	close(g.changed)
	g.changed = make(chan struct{})
}
