package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a lease lock whose writes succeed or fail on demand.
type fakeLock struct {
	resourcelock.Interface
	fail bool
}

func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	if l.fail {
		return errors.New("the lease is held by another replica")
	}
	return nil
}

func TestLeaderFence(t *testing.T) {
	g := NewWithT(t)
	clock := unitNow
	f := NewLeaderFence(2 * time.Second)
	f.now = func() time.Time { return clock }
	f.lastTick = clock
	lock := &fakeLock{}
	wrapped := f.Wrap(lock)
	advance := func(d time.Duration) { clock = clock.Add(d) }

	// Ticking along: allowed, without any renewal.
	for range 30 {
		advance(100 * time.Millisecond)
		f.observe()
	}
	g.Expect(f.Allow()).To(Succeed())

	// Paused for 20 s: the first worker to run after the resume is refused,
	// even before the ticker saw the gap.
	advance(20 * time.Second)
	g.Expect(f.Allow()).To(MatchError(ErrFenced))
	advance(100 * time.Millisecond)
	f.observe()
	g.Expect(f.Allow()).To(MatchError(ErrFenced), "still refused: no renewal yet")

	// The lease is another's now: the renewal fails, the fence holds.
	lock.fail = true
	g.Expect(wrapped.Update(context.Background(), resourcelock.LeaderElectionRecord{})).NotTo(Succeed())
	g.Expect(f.Allow()).To(MatchError(ErrFenced))

	// Still the leader after all: a successful renewal lifts the fence.
	lock.fail = false
	advance(time.Second)
	g.Expect(wrapped.Update(context.Background(), resourcelock.LeaderElectionRecord{})).To(Succeed())
	g.Expect(f.Allow()).To(Succeed())
	advance(100 * time.Millisecond)
	g.Expect(f.Allow()).To(Succeed())
}
