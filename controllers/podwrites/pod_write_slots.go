package podwrites

import "context"

// DefaultPodWritesInFlight is how many pod creates and deletes the operator
// has in flight at once, across all its workers.
//
// Each worker sends the calls of a slow-start batch at once, up to
// --burst-replicas (500) of them, as the ReplicaSet controller does. With 16
// workers that is up to 8000 requests in flight, each holding its pod, its
// encoded body and its response: the memory scenario of the benchmark (ten
// PodSets of 1000 pods created together) peaked at 279 MiB, against 167 MiB
// with 5 workers. Past a few dozen requests in flight the API server is the
// bound, not the client (the benchmark's direct client reaches it with 32),
// so a bound this size makes no PodSet slower; it only stops batches of
// several PodSets from stacking up in the operator's memory. It is at least
// a whole batch of one PodSet (--burst-replicas' default), so that one
// PodSet alone sends each batch at once, as before.
const DefaultPodWritesInFlight = 500

// Slots bounds the pod writes in flight: a call takes a slot before it
// starts (before its goroutine and its pod even exist) and gives it back
// when its request is answered. A nil Slots bounds nothing.
type Slots chan struct{}

func NewSlots(n int) Slots { return make(Slots, n) }

// take waits for a free slot, or for ctx to end.
func (s Slots) Take(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give frees a slot taken by take.
func (s Slots) Give() {
	if s != nil {
		<-s
	}
}
