package podwrites

import (
	"context"
	"sync"
)

// slowStartInitialBatch is the size of the first batch of pod creations.
const slowStartInitialBatch = 1

// slowStartBatch calls fn count times, in batches of growing size (1, 2, 4,
// ...), the calls of a batch running in parallel. It stops after the first
// batch in which any call fails and returns how many calls succeeded and the
// first error.
//
// When every create is going to fail (a quota is exhausted, admission refuses
// the pod), this costs one failed request instead of count; when they all
// succeed, it costs only log2(count) round trips.
//
// Each call holds one of slots while it runs (see DefaultPodWritesInFlight);
// a call that cannot get one before ctx ends is not made, and counts as
// failed with ctx's error.
func SlowStart(ctx context.Context, count int, slots Slots, fn func() error) (int, error) {
	successes := 0
	for remaining, batch := count, min(count, slowStartInitialBatch); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			if err := slots.Take(ctx); err != nil {
				errs <- err
				continue
			}
			wg.Go(func() {
				defer slots.Give()
				if err := fn(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		successes += batch - len(errs)
		if err, failed := <-errs; failed {
			return successes, err
		}
		remaining -= batch
	}
	return successes, nil
}
