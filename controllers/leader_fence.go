package controllers

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrFenced is returned by a reconcile of a replica that may no longer lead.
var ErrFenced = errors.New("this replica may have lost its leader lease while it was paused; waiting for a lease renewal")

// DefaultFenceThreshold is the longest gap between two ticks of a
// LeaderFence that is not taken for a pause of the whole process.
const DefaultFenceThreshold = 2 * time.Second

// LeaderFence stops a leader that was paused (SIGSTOP, a frozen VM, a
// stalled node) from acting on what it knew before the pause.
//
// Leader election alone does not prevent it: the paused leader's lease
// expires and another replica takes over, but once resumed, the old leader's
// workers run at once, from a cache that missed everything that happened
// meanwhile, until its next renewal attempt fails (up to the retry period,
// 2 s) and it exits. The fault matrix caught exactly that: a resumed leader
// created 15 pods beyond spec.replicas, acting on its stale cache at the same
// time as the new leader acted on a fresh one.
//
// The fence notices a pause as a gap in its own clock ticks, and from then on
// refuses every reconcile until this replica has renewed its lease again, a
// renewal that happens only if it still leads. It costs nothing while no
// pause is seen: no API call, one mutex.
type LeaderFence struct {
	threshold time.Duration
	tick      time.Duration
	now       func() time.Time

	mu sync.Mutex
	// lastTick is when the fence last saw the clock move on.
	lastTick time.Time
	// suspectSince is when a pause was noticed; zero when none is pending.
	suspectSince time.Time
	// lastRenew is this replica's last successful lease write.
	lastRenew time.Time
	// trips counts the pauses noticed.
	trips uint64
}

// NewLeaderFence returns a fence that takes a gap longer than threshold for
// a pause.
func NewLeaderFence(threshold time.Duration) *LeaderFence {
	f := &LeaderFence{threshold: threshold, tick: threshold / 10, now: time.Now}
	f.lastTick = f.now()
	return f
}

// Start ticks until ctx ends. It runs in every replica, leader or not (a
// manager.Runnable that does not need leader election).
func (f *LeaderFence) Start(ctx context.Context) error {
	t := time.NewTicker(f.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			f.observe()
		}
	}
}

// NeedLeaderElection makes the ticking run in standby replicas too.
func (f *LeaderFence) NeedLeaderElection() bool { return false }

// observe records a tick, and a pause if the clock jumped.
func (f *LeaderFence) observe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observeLocked()
}

func (f *LeaderFence) observeLocked() {
	now := f.now()
	if now.Sub(f.lastTick) > f.threshold && f.suspectSince.IsZero() {
		f.suspectSince = now
		f.trips++
	}
	f.lastTick = now
}

// Allow returns ErrFenced while a pause has been noticed and the lease not
// renewed since. It looks at the clock itself too: right after a resume,
// a worker may run before the ticking goroutine does.
func (f *LeaderFence) Allow() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observeLocked()
	switch {
	case f.suspectSince.IsZero():
		return nil
	case f.lastRenew.After(f.suspectSince):
		f.suspectSince = time.Time{}
		return nil
	default:
		return ErrFenced
	}
}

// Trips is the number of pauses noticed so far. After each, the cache of
// every PodSet is checked against the API server before it acts again: the
// lease tells this replica it still leads, not that its cache has caught up.
func (f *LeaderFence) Trips() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observeLocked()
	return f.trips
}

func (f *LeaderFence) renewed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastRenew = f.now()
}

// Wrap returns lock, reporting each successful lease write (acquisition and
// renewal) to the fence.
func (f *LeaderFence) Wrap(lock resourcelock.Interface) resourcelock.Interface {
	return &fencedLock{Interface: lock, fence: f}
}

type fencedLock struct {
	resourcelock.Interface
	fence *LeaderFence
}

func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	if err == nil {
		l.fence.renewed()
	}
	return err
}

func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	if err == nil {
		l.fence.renewed()
	}
	return err
}
