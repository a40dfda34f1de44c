package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// wakeUps queues PodSets that must be reconciled again although no watch
// event will say so: a lease renewal after the fence refused them
// (fenced_podsets.go), pod events that lag their writes
// (lagging_podsets.go), background deletes that failed or that a cache
// check waited for (podwrites.Background). It is one channel source of
// the controller; the queue merges a PodSet woken twice before its
// reconcile into one.
type wakeUps struct {
	ch chan event.GenericEvent
}

// wakeUpBuffer is how many wake-ups may wait for the controller to take
// them before a sender blocks.
const wakeUpBuffer = 1024

func newWakeUps() *wakeUps {
	return &wakeUps{ch: make(chan event.GenericEvent, wakeUpBuffer)}
}

// source is what the controller watches (SetupWithManager).
func (w *wakeUps) source() source.Source {
	return source.Channel(w.ch, &handler.EnqueueRequestForObject{})
}

// wake queues the PodSet nn, waiting while the buffer is full until ctx
// ends; it reports false when ctx ended first.
func (w *wakeUps) wake(ctx context.Context, nn types.NamespacedName) bool {
	select {
	case w.ch <- podSetEvent(nn):
		return true
	case <-ctx.Done():
		return false
	}
}

// wakeAll queues the PodSets nns without blocking its caller: when the
// buffer is full, the sends wait in a goroutine of their own.
func (w *wakeUps) wakeAll(nns []types.NamespacedName) {
	if len(nns) == 0 {
		return
	}
	go func() {
		for _, nn := range nns {
			w.wake(context.Background(), nn)
		}
	}()
}

// podSetEvent is the event that queues the PodSet nn.
func podSetEvent(nn types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}}
}
