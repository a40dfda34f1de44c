// Package leaderfence keeps a leader that was paused (SIGSTOP, a frozen VM,
// a stalled node) from acting on what it knew before the pause, until it has
// renewed its lease: the fence itself, the lease lock that reports renewals
// to it, and the HTTP transport that refuses writes while it is closed.
package leaderfence

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrFenced is returned by a reconcile of a replica that may no longer lead.
var ErrFenced = errors.New("this replica may have lost its leader lease while it was paused; waiting for a lease renewal")

// DefaultThreshold is the longest gap between two ticks of a
// Fence that is not taken for a pause of the whole process.
const DefaultThreshold = 2 * time.Second

// Fence stops a leader that was paused (SIGSTOP, a frozen VM, a
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
type Fence struct {
	threshold time.Duration
	tick      time.Duration
	now       func() time.Time

	mu sync.Mutex
	// lastTick is when the fence last saw the clock move on.
	lastTick time.Time
	// suspectSince is when a pause was noticed, or the lease was seen held
	// by another replica; zero when neither is pending.
	suspectSince time.Time
	// lastRenew is this replica's last successful lease write.
	lastRenew time.Time
	// trips counts the pauses noticed.
	trips uint64
	// onRenewal is called after each successful lease write.
	onRenewal func()
}

// OnRenewal sets a function called (outside the fence's lock) after each
// successful lease write: what the fence refused may go on from then.
func (f *Fence) OnRenewal(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onRenewal = fn
}

// New returns a fence that takes a gap longer than threshold for
// a pause.
func New(threshold time.Duration, opts ...Option) *Fence {
	f := &Fence{threshold: threshold, tick: threshold / 10, now: time.Now}
	for _, opt := range opts {
		opt(f)
	}
	f.lastTick = f.now()
	return f
}

// Option configures a Fence.
type Option func(*Fence)

// WithClock makes the fence read the time from now instead of the wall
// clock, so that the tests of code that asks the fence can stage a pause.
func WithClock(now func() time.Time) Option {
	return func(f *Fence) { f.now = now }
}

// Start ticks until ctx ends. It runs in every replica, leader or not (a
// manager.Runnable that does not need leader election).
func (f *Fence) Start(ctx context.Context) error {
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
func (f *Fence) NeedLeaderElection() bool { return false }

// observe records a tick, and a pause if the clock jumped.
func (f *Fence) observe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observeLocked()
}

func (f *Fence) observeLocked() {
	now := f.now()
	if now.Sub(f.lastTick) > f.threshold && f.suspectSince.IsZero() {
		f.suspectSince = now
		f.trips++
	}
	f.lastTick = now
}

// Allow returns ErrFenced while a pause has been noticed and the lease not
// renewed since. It looks at the clock itself too: right after a resume,
// a worker may run before the ticking goroutine does. A nil Fence (a
// replica run without one) allows everything.
func (f *Fence) Allow() error {
	if f == nil {
		return nil
	}
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
// A nil Fence notices none.
func (f *Fence) Trips() uint64 {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observeLocked()
	return f.trips
}

// renewed records a successful lease write that was sent at sent. The
// sending time counts, not the answer's: a write sent just before a pause
// is answered after the resume, and proves only that this replica led
// before the pause. Taken as a renewal after it, it opened the fence of a
// replica whose lease a successor already held, and the two acted side by
// side (the fault matrix: 84 live pods for a bound of 63).
func (f *Fence) renewed(sent time.Time) {
	f.mu.Lock()
	if sent.After(f.lastRenew) {
		f.lastRenew = sent
	}
	notify := f.onRenewal
	f.mu.Unlock()
	if notify != nil {
		notify()
	}
}

// sendTime is the moment a lease write leaves, as the fence's clock has it.
func (f *Fence) sendTime() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now()
}

// sawOtherHolder records that the lease was read held by another replica.
// A leader learns it lost its lease that way, but client-go lets it go on
// as leader until its renew deadline (10 s) has passed: the fence refuses
// from now on, until this replica writes the lease again.
func (f *Fence) sawOtherHolder() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.now(); f.suspectSince.IsZero() || f.lastRenew.After(f.suspectSince) {
		f.suspectSince = now
	}
}

// Wrap returns lock, reporting each successful lease write (acquisition and
// renewal) to the fence.
func (f *Fence) Wrap(lock resourcelock.Interface) resourcelock.Interface {
	return &fencedLock{Interface: lock, fence: f}
}

type fencedLock struct {
	resourcelock.Interface
	fence *Fence

	mu sync.Mutex
	// lastHolder is the holder of the lease as last read.
	lastHolder string
}

// errNotTheHolder refuses a release of a lease another replica holds.
var errNotTheHolder = errors.New("not releasing the lease: another replica holds it")

func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	record, raw, err := l.Interface.Get(ctx)
	if err == nil && record != nil {
		l.mu.Lock()
		l.lastHolder = record.HolderIdentity
		l.mu.Unlock()
		if record.HolderIdentity != "" && record.HolderIdentity != l.Identity() {
			l.fence.sawOtherHolder()
		}
	}
	return record, raw, err
}

func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.fence.sendTime()
	err := l.Interface.Create(ctx, ler)
	if err == nil {
		l.fence.renewed(sent)
	}
	return err
}

// Update writes the lease, except a release (an empty holder) of a lease
// last read as another replica's. client-go's release checks whether this
// replica leads against what it knew before that read: a leader paused past
// its lease, resumed, and exiting after its failed renewal, "released" the
// lease its successor had just taken. The replica started in its place then
// took the free lease at once, while the successor still led: two leaders
// for ten seconds, and 100 pods for a bound of 63 in the fault matrix.
func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		l.mu.Lock()
		holder := l.lastHolder
		l.mu.Unlock()
		if holder != l.Identity() {
			return errNotTheHolder
		}
	}
	sent := l.fence.sendTime()
	err := l.Interface.Update(ctx, ler)
	if err == nil {
		l.fence.renewed(sent)
	}
	return err
}
