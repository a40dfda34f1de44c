package controllers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/podwrites"
)

// startBackground gives r running background deletions, stopped (and
// waited for) at the end of the test.
func startBackground(t *testing.T, r *PodSetReconciler) *podwrites.Background {
	t.Helper()
	b := &podwrites.Background{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = b.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	NewWithT(t).Eventually(b.Context).ShouldNot(BeNil())
	r.background = b
	return b
}

// heldDeletes makes r's pod deletes wait until free is called, failing
// those of the pods named in fail; sent counts the deletes that arrived.
type heldDeletes struct {
	release chan struct{}
	once    sync.Once
	sent    atomic.Int32
	fail    map[string]bool
}

// free lets the held deletes go.
func (h *heldDeletes) free() { h.once.Do(func() { close(h.release) }) }

// holdDeletes holds r's pod deletes until free is called, or the test ends
// (a test that failed first must not leave its cleanup waiting for them).
func holdDeletes(t *testing.T, r *PodSetReconciler, fail ...string) *heldDeletes {
	h := &heldDeletes{release: make(chan struct{}), fail: map[string]bool{}}
	t.Cleanup(h.free)
	for _, name := range fail {
		h.fail[name] = true
	}
	interceptPodWrites(r, podControlFuncs{delete: func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error {
		h.sent.Add(1)
		<-h.release
		if h.fail[pod.Name] {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("denied by a webhook"))
		}
		return next.DeletePod(ctx, pod)
	}})
	return h
}

// reconcileReturns runs one reconcile and fails the test unless it returns
// within a few seconds.
func reconcileReturns(g Gomega, r *PodSetReconciler, ps *appv1alpha1.PodSet) error {
	var (
		once sync.Once
		err  error
	)
	done := make(chan struct{})
	go func() {
		_, e := reconcileOnce(r, ps)
		once.Do(func() { err = e })
		close(done)
	}()
	g.Eventually(done, 5*time.Second).Should(BeClosed(), "the reconcile did not return")
	return err
}

// A step that only deletes frees its worker before its deletes are
// answered; the expectations keep the PodSet from acting until they are
// seen, and the answers are recorded when they come.
func TestAStepThatOnlyDeletesDoesNotWaitForItsDeletes(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	pods := ownedPods(ps, 5)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	b := startBackground(t, r)
	held := holdDeletes(t, r)

	g.Expect(reconcileReturns(g, r, ps)).To(Succeed())

	g.Eventually(held.sent.Load).Should(BeEquivalentTo(3))
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	g.Expect(r.Expectations.ExpiresIn(key)).To(BeNumerically(">", 0), "the three deletions are expected")
	g.Expect(r.Expectations.Lagging(key)).To(BeFalse())

	held.free()
	b.Wait()
	g.Expect(podsIn(g, c)).To(HaveLen(2))
	g.Expect(r.Recorder.(*events.FakeRecorder).Events).To(Receive(ContainSubstring("Deleted 3 pods")))
	g.Consistently(r.wakeUps.Events, 100*time.Millisecond).ShouldNot(Receive(), "nothing failed, nothing was held back")
}

// A step that also creates still waits for its deletes, so that its
// creations never push the live pods past replicas + maxSurge.
func TestAStepThatAlsoCreatesWaitsForItsDeletes(t *testing.T) {
	g := NewWithT(t)
	// A new image, no surge: a rolling step deletes an old pod and
	// creates its replacement.
	ps, pods := rollingPodSet(4, 1)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	startBackground(t, r)
	held := holdDeletes(t, r)
	done := make(chan struct{})
	go func() {
		_, _ = reconcileOnce(r, ps)
		close(done)
	}()

	g.Eventually(held.sent.Load).Should(BeEquivalentTo(1))
	g.Consistently(done, 200*time.Millisecond).ShouldNot(BeClosed(), "the reconcile returned before its delete was answered")
	held.free()
	g.Eventually(done).Should(BeClosed())
	g.Expect(podsIn(g, c)).To(HaveLen(4), "an old pod deleted, its replacement created")
}

// A background delete that fails wakes its PodSet, whose next reconcile
// reports it (ReplicaFailure) and returns it for the backoff, once.
func TestAFailedBackgroundDeleteIsReportedByTheNextReconcile(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	pods := ownedPods(ps, 5)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	startBackground(t, r)
	held := holdDeletes(t, r, pods[4].Name)
	held.free()

	g.Expect(reconcileReturns(g, r, ps)).To(Succeed())
	g.Eventually(r.wakeUps.Events).Should(Receive())

	err := reconcileReturns(g, r, ps)
	g.Expect(err).To(MatchError(ContainSubstring("denied by a webhook")))
	failure := meta.FindStatusCondition(statusOf(g, c, ps).Conditions, appv1alpha1.ConditionReplicaFailure)
	g.Expect(failure).NotTo(BeNil())
	g.Expect(failure.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(failure.Reason).To(Equal(appv1alpha1.ReasonFailedDelete))
	g.Expect(reconcileReturns(g, r, ps)).To(Succeed(), "the failure is reported once")
}

// While a PodSet's deletes are on their way, its cache check waits: the API
// server may not have them yet, and acting on its list would delete more
// pods. The PodSet is queued again once they are answered.
func TestACacheCheckWaitsForThePodSetsBackgroundDeletes(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	r, lists, clock := scaleDownWithCountedLists(t, ps)
	startBackground(t, r)
	held := holdDeletes(t, r)

	g.Expect(reconcileReturns(g, r, ps)).To(Succeed())
	g.Eventually(held.sent.Load).Should(BeEquivalentTo(3))
	// The deletes take long enough for their events to count as lagging.
	*clock = clock.Add(ExpectationsLagThreshold)
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	g.Expect(r.Expectations.Lagging(key)).To(BeTrue())

	g.Expect(reconcileReturns(g, r, ps)).To(Succeed())
	g.Expect(lists.lists.Load()).To(BeZero(), "the API server's pods were listed while the deletes were on their way")
	g.Expect(held.sent.Load()).To(BeEquivalentTo(3))

	held.free()
	g.Eventually(r.wakeUps.Events).Should(Receive())
	g.Expect(r.Expectations.Lagging(key)).To(BeFalse(), "the answers restart the wait for the events")
}

// Deletes whose answers carry the version of their events are waited for
// while the pod watch still delivers older events: those are late, not lost,
// and the PodSet does not list its pods from the API server for them. A
// delete that returned no version lags as soon as its events are late.
func TestDeletionsBehindALiveWatchAreNotCheckedAgainstTheAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		lagging bool
	}{
		{"the deletes returned their versions", "500", false},
		{"the deletes returned no version", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(2)
			r, lists, clock := scaleDownWithCountedLists(t, ps)
			b := startBackground(t, r)
			interceptPodWrites(r, podControlFuncs{delete: func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error {
				if err := next.DeletePod(ctx, pod); err != nil {
					return err
				}
				pod.ResourceVersion = tc.version
				return nil
			}})

			g.Expect(reconcileReturns(g, r, ps)).To(Succeed())
			b.Wait() // the deletes were answered
			// Long after, the watch still delivers, but older events.
			*clock = clock.Add(2 * ExpectationsLagThreshold)
			r.Expectations.PodEventSeen(ps.Namespace, "400")
			key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
			g.Expect(r.Expectations.ExpiresIn(key)).To(BeNumerically(">", 0), "the deletions are still awaited")
			g.Expect(r.Expectations.Lagging(key)).To(Equal(tc.lagging))

			g.Expect(reconcileReturns(g, r, ps)).To(Succeed())
			if tc.lagging {
				g.Expect(lists.lists.Load()).To(BeNumerically(">", 0), "lagging deletions, and no check of the cache")
			} else {
				g.Expect(lists.lists.Load()).To(BeZero(), "the API server's pods were listed for events still on their way")
			}
		})
	}
}

// scaleDownWithCountedLists is a reconciler of ps (2 replicas) with 5 pods,
// whose pod lists from the API server are counted, and whose expectations
// read the time from the clock it returns.
func scaleDownWithCountedLists(t *testing.T, ps *appv1alpha1.PodSet) (*PodSetReconciler, *countingReader, *time.Time) {
	pods := ownedPods(ps, 5)
	lists := &countingReader{}
	r, c := unitReconciler(t, pods, lists, asObjects(ps, pods)...)
	lists.Reader = c
	clock := time.Now()
	r.Expectations = newExpectations(consistency.WithClock(func() time.Time { return clock }))
	return r, lists, &clock
}

// countingReader counts the pod lists read through it.
type countingReader struct {
	client.Reader
	lists atomic.Int32
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.PodList); ok {
		r.lists.Add(1)
	}
	return r.Reader.List(ctx, list, opts...)
}
