package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/podset-operator/controllers/leaderfence"
)

// queuedNames drains what the fence's channel source would queue within a
// short wait.
func queuedNames(ch <-chan event.GenericEvent) []string {
	var names []string
	timeout := time.After(time.Second)
	for {
		select {
		case e := <-ch:
			names = append(names, e.Object.GetNamespace()+"/"+e.Object.GetName())
			timeout = time.After(100 * time.Millisecond)
		case <-timeout:
			return names
		}
	}
}

// A reconcile the fence refuses is no failure to back off from: the replica
// resumed after a pause receives every event it missed, each refused, and a
// backoff grown meanwhile kept PodSets waiting seconds after the lease was
// renewed. The refused PodSet is queued at the renewal instead.
func TestReconcileRefusedByTheFenceIsQueuedAtTheRenewal(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, c := unitReconciler(t, nil, nil, ps)
	clock := unitNow
	f := leaderfence.New(2*time.Second, leaderfence.WithClock(func() time.Time { return clock }))
	f.OnRenewal(r.releaseFenced)
	r.Fence = f
	clock = clock.Add(20 * time.Second) // paused

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred(), "an error would send the PodSet to the exponential backoff")
	g.Expect(res.RequeueAfter).To(Equal(FencedRecheckInterval))
	g.Expect(podsIn(g, c)).To(BeEmpty())
	g.Expect(queuedNames(r.wakeUps.Events)).To(BeEmpty(), "queued before the lease was renewed")

	clock = clock.Add(time.Second)
	renewLease(g, f)
	g.Expect(queuedNames(r.wakeUps.Events)).To(Equal([]string{client.ObjectKeyFromObject(ps).String()}))

	renewLease(g, f)
	g.Expect(queuedNames(r.wakeUps.Events)).To(BeEmpty(), "queued once per refusal")
}

// The renewal can come between the fence's refusal and the PodSet's being
// recorded: it must not be left waiting for the next pause.
func TestWaitForRenewalAfterTheRenewalQueuesAtOnce(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, _ := unitReconciler(t, nil, nil, ps)
	r.Fence = leaderfence.New(2 * time.Second) // allows: no pause seen
	r.Fence.OnRenewal(r.releaseFenced)

	r.waitForRenewal(r.records.of(ps))

	g.Expect(queuedNames(r.wakeUps.Events)).To(Equal([]string{client.ObjectKeyFromObject(ps).String()}))
}

// renewLease has f's lease lock write the lease, as client-go's leader
// election does at each renewal.
func renewLease(g Gomega, f *leaderfence.Fence) {
	g.Expect(f.Wrap(heldLease{}).Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
}

// heldLease is a lease lock of replica "me" whose writes succeed.
type heldLease struct{ resourcelock.Interface }

func (heldLease) Update(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (heldLease) Identity() string                                                { return "me" }
