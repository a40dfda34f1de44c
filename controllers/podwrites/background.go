package podwrites

import (
	"context"
	"sync"
)

// A scaling step that only deletes pods does not wait for its deletes to
// return: it sends them and frees its worker.
//
// Waiting bought nothing. The expectations, set before the first delete
// leaves, already keep the PodSet from acting again until every deletion is
// seen in the cache, and nothing else in the reconcile depends on the
// answers (the status they would change is written by the reconcile their
// watch events bring). But a worker held for the deletes' round trip is a
// worker no other PodSet can have: when a hundred PodSets were scaled down at
// once, each reconcile held its worker for the 0.1–0.2 s a loaded API server
// took to answer its deletes, and the last PodSets waited over a second in
// the queue before their first delete left (docs/architecture.md, "Deletes
// sent without holding a worker"), while a client sending the same deletes
// with nothing to decide was done in a third of the time.
//
// A step that also creates still waits for its deletes: the creations that
// need the room a delete frees are sent as the answers come (SurgeRoom),
// so that they never push the live pods past replicas + maxSurge.
//
// What a waiting step did with the answers, the background does when they
// are in (the caller's done: that the writes returned, the SuccessfulDelete
// event), and it keeps the first failure for the owner's next reconcile,
// woken at once, to report and retry as a step that had waited would have.
// Deletes are still bounded by the pod write slots, taken by the reconcile
// before it lets go of them, so a flood of PodSets cannot pile up requests
// in memory.
//
// Background is the manager runnable that does it. The deletes run under
// its context, which is canceled at shutdown, and it returns only once
// every delete is answered: the manager releases the lease after its
// leader-election runnables have returned, so no delete of this replica is
// still on its way when another replica may start to lead.
type Background struct {
	mu  sync.Mutex
	ctx context.Context
	// stopped is set once Start's context has ended.
	stopped  bool
	inFlight sync.WaitGroup
}

// BackgroundSteps is what one owner's background steps left for its
// reconciles; it belongs in what the reconciler keeps of the owner. The
// goroutine of a step and the reconciles share it. The zero value has
// nothing in flight.
type BackgroundSteps struct {
	mu sync.Mutex
	// sending counts the steps not yet answered, and held is set when a
	// reconcile held back a cache check meanwhile.
	sending int
	held    bool
	// failure is the first error of the last step that failed, not yet
	// reported.
	failure error
}

// Start makes background deletes possible until ctx ends, then waits for
// the ones in flight.
func (b *Background) Start(ctx context.Context) error {
	b.mu.Lock()
	b.ctx = ctx
	b.mu.Unlock()
	<-ctx.Done()
	// No background step starts from now on (Run adds to inFlight
	// under the same lock), so the wait below sees them all.
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.Wait()
	return nil
}

// NeedLeaderElection: only the leader writes.
func (b *Background) NeedLeaderElection() bool { return true }

// Wait returns once every step in flight is answered and done.
func (b *Background) Wait() { b.inFlight.Wait() }

// Context is the context background deletes run under; nil before Start,
// after it ended, or for a nil Background, and then a step waits for its
// deletes as any other does.
func (b *Background) Context() context.Context {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return nil
	}
	return b.ctx
}

// Run calls wait in the background for a step of the owner of steps, and
// then done with its result. The owner is woken (wake, under the
// background's context) when the step failed, or when a cache check was
// held back meanwhile and nothing is in flight any more: no watch event
// will bring it.
func (b *Background) Run(steps *BackgroundSteps, wait func() (int, error), done func(deleted int, err error), wake func(ctx context.Context)) {
	b.mu.Lock()
	if b.stopped {
		// Shutting down: the step waits as any other, its reconcile's
		// context canceled like this one's.
		b.mu.Unlock()
		done(wait())
		return
	}
	steps.mu.Lock()
	steps.sending++
	steps.mu.Unlock()
	b.inFlight.Add(1)
	ctx := b.ctx
	b.mu.Unlock()
	go func() {
		defer b.inFlight.Done()
		deleted, err := wait()
		done(deleted, err)
		steps.mu.Lock()
		steps.sending--
		if err != nil && steps.failure == nil {
			steps.failure = err
		}
		requeue := err != nil || (steps.held && steps.sending == 0)
		if requeue {
			steps.held = false
		}
		steps.mu.Unlock()
		if requeue {
			wake(ctx)
		}
	}()
}

// HoldWhileSending reports whether the owner has background deletes not
// yet answered. Those may not have reached the API server: a list of its
// pods would still show the victims live, and a cache check acting on it
// would delete more. The check is held back, and the owner woken once the
// deletes are answered.
func (s *BackgroundSteps) HoldWhileSending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sending == 0 {
		return false
	}
	s.held = true
	return true
}

// TakeFailure returns, once, the failure of the owner's background
// deletes.
func (s *BackgroundSteps) TakeFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.failure
	s.failure = nil
	return err
}
