// Package wakeups brings a PodSet to the reconciler when no watch event of
// its own will: a channel that the reconciler's phases feed, and a
// ResourceQuota that made room for the PodSets it refused.
package wakeups

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// Queue queues PodSets that must be reconciled again although no watch
// event will say so: a lease renewal after the fence refused them, pod
// events that lag their writes, background deletes that failed or that a cache
// check waited for (podwrites.Background). It is one channel source of
// the controller; the queue merges a PodSet woken twice before its
// reconcile into one.
type Queue struct {
	// Events is the channel the controller watches (Source).
	Events chan event.GenericEvent
}

// Buffer is how many wake-ups may wait for the controller to take
// them before a sender blocks.
const Buffer = 1024

// New is an empty queue.
func New() *Queue {
	return &Queue{Events: make(chan event.GenericEvent, Buffer)}
}

// Source is what the controller watches (SetupWithManager).
func (w *Queue) Source() source.Source {
	return source.Channel(w.Events, &handler.EnqueueRequestForObject{})
}

// Wake queues the PodSet nn, waiting while the buffer is full until ctx
// ends; it reports false when ctx ended first.
func (w *Queue) Wake(ctx context.Context, nn types.NamespacedName) bool {
	select {
	case w.Events <- podSetEvent(nn):
		return true
	case <-ctx.Done():
		return false
	}
}

// WakeAll queues the PodSets nns without blocking its caller: when the
// buffer is full, the sends wait in a goroutine of their own.
func (w *Queue) WakeAll(nns []types.NamespacedName) {
	if len(nns) == 0 {
		return
	}
	go func() {
		for _, nn := range nns {
			w.Wake(context.Background(), nn)
		}
	}()
}

// podSetEvent is the event that queues the PodSet nn.
func podSetEvent(nn types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}}
}
