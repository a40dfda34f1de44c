package consistency

import (
	"context"
	"time"
)

// LagScan looks at the expectations every Interval and hands Queue the keys
// whose awaited events lag (TakeLagging), so that their owners compare their
// cache with the API server instead of waiting for a relist. Waking every
// owner a moment after each of its writes would cost a reconcile per write
// for the many whose events came in time; the scan costs one pass over the
// keys that wait. It is a manager runnable, and runs on the leader only,
// the one replica that writes.
type LagScan struct {
	Expectations *Expectations
	Interval     time.Duration
	// Queue wakes the owner of a lagging key; it returns false when ctx
	// ended first.
	Queue func(ctx context.Context, key string) bool
}

// Start scans every Interval until ctx ends.
func (s *LagScan) Start(ctx context.Context) error {
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if !s.Scan(ctx) {
				return nil
			}
		}
	}
}

// Scan hands Queue each key that has become lagging since the last scan; it
// reports false when ctx ended first.
func (s *LagScan) Scan(ctx context.Context) bool {
	for _, key := range s.Expectations.TakeLagging() {
		if !s.Queue(ctx, key) {
			return false
		}
	}
	return true
}
