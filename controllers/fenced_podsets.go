package controllers

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// FencedRecheckInterval is when a PodSet whose reconcile the fence refused
// is looked at again if no lease renewal has queued it sooner. Normally the
// renewal does (fencedPodSets); this only bounds the wait should a renewal
// be missed.
const FencedRecheckInterval = 5 * time.Second

// fencedPodSets are the PodSets whose reconcile the leader fence refused.
// They are queued again the moment this replica renews its lease.
//
// A refused reconcile used to fail, and so went to the controller's
// exponential backoff: the many events that reach a replica resumed after a
// pause (a relist delivers every change it missed) failed a PodSet's
// reconcile again and again while the fence held, and once the lease was
// renewed the PodSet waited out a backoff grown to seconds, with no event
// left to wake it.
type fencedPodSets struct {
	mu      sync.Mutex
	waiting sets.Set[types.NamespacedName]
	// wake is the channel source that queues a PodSet (SetupWithManager).
	wake chan event.GenericEvent
}

func newFencedPodSets() *fencedPodSets {
	return &fencedPodSets{waiting: sets.New[types.NamespacedName](), wake: make(chan event.GenericEvent, 1024)}
}

// add records a PodSet the fence refused.
func (f *fencedPodSets) add(nn types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting.Insert(nn)
}

// release queues every PodSet the fence refused. It never blocks its
// caller (the lease renewal): the sends wait in a goroutine of their own
// when the channel is full.
func (f *fencedPodSets) release() {
	f.mu.Lock()
	waiting := f.waiting.UnsortedList()
	f.waiting = sets.New[types.NamespacedName]()
	f.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	go func() {
		for _, nn := range waiting {
			f.wake <- event.GenericEvent{Object: &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}}
		}
	}()
}

// waitForRenewal is the result of a reconcile the fence refused: the PodSet
// is queued again when the lease is renewed, with no backoff.
func (r *PodSetReconciler) waitForRenewal(nn types.NamespacedName) time.Duration {
	r.fenced.add(nn)
	// The renewal may have come between the refusal and add, and found
	// nothing to release: look again now that the PodSet is recorded.
	if r.fenceAllows() == nil {
		r.fenced.release()
	}
	return FencedRecheckInterval
}
