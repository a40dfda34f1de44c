package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/slimpod"
)

// ownedPods are n pods of ps's update revision, controlled by it, Ready.
func ownedPods(ps *appv1alpha1.PodSet, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := newPodFromSpec(ps, "")
		p.GenerateName = ""
		p.Name = ps.Name + "-" + string(rune('a'+i))
		p.UID = types.UID(p.Name + "-uid")
		operandtest.Apply(p, controlledByPodSet(ps.Name), readySince(unitNow))
		pods = append(pods, p)
	}
	return pods
}

func asObjects(ps *appv1alpha1.PodSet, pods []*corev1.Pod) []client.Object {
	return append([]client.Object{ps}, podObjects(pods)...)
}

func podObjects(pods []*corev1.Pod) []client.Object {
	var objs []client.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	return objs
}

// statusOf is the status the API server holds for ps.
func statusOf(g Gomega, c client.Client, ps *appv1alpha1.PodSet) appv1alpha1.PodSetStatus {
	got := &appv1alpha1.PodSet{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(ps), got)).To(Succeed())
	return got.Status
}

// Creations whose connection broke are waited for only
// UncertainCreationTimeout. If the cache is still behind when that wait ends
// (its relist waits out client-go's backoff), the PodSet must not act on it:
// the fault matrix saw 62 pods for 50 that way. It acts on the API server's
// pods instead, which hold the uncertain creations' outcome.
func TestReconcileActsOnTheAPIServerWhenTheCacheIsBehindUncertainCreations(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	// The API server made all three pods; the cache has seen one.
	r, c := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	clock := time.Now()
	r.Expectations = newExpectations(consistency.WithClock(func() time.Time { return clock }))
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	r.Expectations.ExpectCreations(key, 3)
	r.Expectations.CreationObserved(key)
	r.Expectations.CreationUncertain(key)
	clock = clock.Add(UncertainCreationTimeout)

	res, err := reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods were created from a cache that lacks two the API server has")
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))
	g.Expect(r.Expectations.Doubtful(key)).To(BeFalse(), "the API server's pods answered the doubt")
	g.Expect(statusOf(g, c, ps).Replicas).To(Equal(int32(3)), "the status counts the API server's pods, not the cache's")

	// Still behind at the next look, expectations or not: the PodSet
	// lists again rather than acting, or reporting, on the cache.
	r.Expectations.ExpectCreations(key, 1)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
	g.Expect(statusOf(g, c, ps).Replicas).To(Equal(int32(3)))

	// The cache catches up: nothing is created, and nothing is listed
	// from the API server any more.
	r.Pods = podIndexWith(t, pods)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
	g.Expect(r.Expectations.Satisfied(key)).To(BeTrue())
	r.APIReader = nil // any uncached read would now panic
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
}

// When the uncertain creations did not happen, the cache matches the API
// server, and the PodSet creates the missing pods after the short wait.
func TestReconcileCreatesWhatUncertainCreationsDidNotMake(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 1)
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	clock := time.Now()
	r.Expectations = newExpectations(consistency.WithClock(func() time.Time { return clock }))
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	r.Expectations.ExpectCreations(key, 3)
	r.Expectations.CreationObserved(key)
	r.Expectations.CreationUncertain(key)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(1), "waits while the outcome is uncertain")

	clock = clock.Add(UncertainCreationTimeout)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}

// pausedFence is a fence that noticed a pause and saw the lease renewed
// after it.
func pausedFence(g Gomega) *leaderfence.Fence {
	clock := unitNow
	f := leaderfence.New(2*time.Second, leaderfence.WithClock(func() time.Time { return clock }))
	clock = clock.Add(20 * time.Second) // paused
	g.Expect(f.Allow()).To(MatchError(leaderfence.ErrFenced))
	clock = clock.Add(time.Second)
	renewLease(g, f)
	return f
}

// A replica resumed after a pause renews its lease, which says it still
// leads, not that its cache saw what happened meanwhile (pods another
// replica created while this one was paused). Its first reconcile of each
// PodSet compares the cache with the API server.
func TestReconcileAfterAPauseDoesNotActOnACacheBehind(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, c := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	f := pausedFence(g)
	r.Fence = f

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods were created from a cache that missed the pause")
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))

	// Caught up, and checked once per pause: a later reconcile lists
	// nothing from the API server.
	r.Pods = podIndexWith(t, pods)
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podCacheOf(r, ps).UpToDate(consistency.Doubts{Pauses: f.Trips()})).To(BeTrue())
	r.APIReader = nil // any uncached read would now panic
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}

// A replica paused right after creating a pod, which someone deleted before
// the replica's relist: the creation's event never comes. Once its cache
// matches the API server again, the PodSet acts at once instead of waiting
// out the expectation's 5-minute timeout.
func TestReconcileAfterAPauseDropsExpectationsTheCacheAnswers(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 2)
	// Cache and API server agree: two pods. The third was created before
	// the pause and deleted during it.
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods)...)
	clock := unitNow
	f := leaderfence.New(2*time.Second, leaderfence.WithClock(func() time.Time { return clock }))
	r.Fence = f
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	r.Expectations.ExpectCreations(key, 1)

	clock = clock.Add(20 * time.Second) // paused
	g.Expect(f.Allow()).To(MatchError(leaderfence.ErrFenced))
	clock = clock.Add(time.Second)
	renewLease(g, f)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "the PodSet waited for a creation whose pod is gone")
	g.Expect(podCacheOf(r, ps).UpToDate(consistency.Doubts{Pauses: f.Trips()})).To(BeTrue())
}

// The broken watch of the fault matrix: the leader was paused, pods were
// deleted, and its watch will relist only after client-go's backoff. The
// API server's pods say what is missing: the PodSet replaces them at once
// instead of waiting seconds for the relist.
func TestReconcileAfterAPauseReplacesPodsItsCacheStillHolds(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	// The cache holds all three; the API server, one.
	r, c := unitReconciler(t, pods, nil, asObjects(ps, pods[:1])...)
	r.Fence = pausedFence(g)
	r.StatusWriteInterval = 0

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "the two pods deleted during the pause were not replaced")
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval), "the PodSet must look again until its cache has caught up")

	// Its cache still holds the deleted pods and lacks the new ones: the
	// next look lists again, creates nothing more, and reports the API
	// server's pods. The new pods are not available yet: the PodSet still
	// converges, and keeps looking every second rather than backing off.
	for range 3 {
		res, err = reconcileOnce(r, ps)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(Equal(PodCacheRecheckInterval))
	}
	g.Expect(podsIn(g, c)).To(HaveLen(3))
	st := statusOf(g, c, ps)
	g.Expect(st.Replicas).To(Equal(int32(3)))
	g.Expect(st.PodNames).To(ContainElement(pods[0].Name))
	g.Expect(st.PodNames).NotTo(ContainElement(pods[1].Name), "a pod deleted during the pause is reported")
}

// A settled PodSet (every pod there and available) has nothing to do on the
// API server's pods while its cache is behind: it looks again less and less
// often, so that a thousand of them do not list their pods every second.
func TestReconcileSettledWithACacheBehindBacksOff(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	r, _ := unitReconciler(t, pods[:1], nil, asObjects(ps, pods)...)
	r.Fence = pausedFence(g)

	var waits []time.Duration
	for range 3 {
		res, err := reconcileOnce(r, ps)
		g.Expect(err).NotTo(HaveOccurred())
		waits = append(waits, res.RequeueAfter)
	}
	g.Expect(waits).To(Equal([]time.Duration{PodCacheRecheckInterval, 2 * PodCacheRecheckInterval, 4 * PodCacheRecheckInterval}))
}

// The pods are only half of what the PodSet acts on: when its spec changed
// during the pause too, the cached spec is stale, and acting on it with the
// API server's pods could create pods for replicas it no longer has. The
// PodSet waits for its cache.
func TestReconcileAfterAPauseWaitsWhenTheSpecChangedToo(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	server := ps.DeepCopy()
	server.Spec.Replicas = ptr.To(int32(1))
	server.Generation = 2
	apiServer := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(asObjects(server, pods[:1])...).Build()
	r, c := unitReconciler(t, pods, apiServer, asObjects(ps, pods[:1])...)
	r.Fence = pausedFence(g)

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(1), "pods were created for a spec the PodSet no longer has")
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))
}

// The same, with a cache that lacks pods the API server has: acting on the
// cache would create them again, and the API server's pods cannot be acted
// on with a stale spec. The pod cache check holds the pods as they are.
func TestReconcileAfterAPauseHoldsAStaleCacheWhenTheSpecChangedToo(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	server := ps.DeepCopy()
	server.Spec.Image = "example.com/web:2"
	server.Generation = 2
	apiServer := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(asObjects(server, pods)...).Build()
	r, c := unitReconciler(t, pods[:1], apiServer, asObjects(ps, pods)...)
	r.Fence = pausedFence(g)

	res, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3), "pods the cache lacks were created again")
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", PodCacheRecheckInterval))
}

// A PodSet the API server no longer has gets no pods from a stale cache.
func TestReconcileAfterAPauseCreatesNothingForAPodSetGone(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	apiServer := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(podObjects(pods[:1])...).Build()
	r, c := unitReconciler(t, pods, apiServer, asObjects(ps, pods[:1])...)
	r.Fence = pausedFence(g)

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(1))
}

func TestPodCacheDiff(t *testing.T) {
	ps := unitPodSet(3)
	pods := ownedPods(ps, 3)
	gone := pods[2].DeepCopy()
	operandtest.Apply(gone, terminatingSince(unitNow))
	foreign := operandtest.AsPod(unitPod("foreign", controlledBy("apps/v1", "ReplicaSet", "other")))
	server := func(ps ...*corev1.Pod) []metav1.PartialObjectMetadata {
		var out []metav1.PartialObjectMetadata
		for _, p := range ps {
			out = append(out, metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta})
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		cached         []*corev1.Pod
		server         []metav1.PartialObjectMetadata
		missing, extra int
	}{
		{"same", pods, server(pods...), 0, 0},
		{"cache lacks two", pods[:1], server(pods...), 2, 0},
		{"cache holds a deleted one", pods, server(pods[:2]...), 0, 1},
		{"terminating on the server counts as gone", pods, server(pods[0], pods[1], gone), 0, 1},
		{"another controller's pod is ignored", pods, server(append(pods, foreign)...), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var cached []*slimpod.Pod
			for _, p := range tc.cached {
				cached = append(cached, slimpod.From(p))
			}
			missing, extra := podCacheDiff(ps.UID, cached, tc.server)
			g.Expect(missing).To(Equal(tc.missing), "missing")
			g.Expect(extra).To(Equal(tc.extra), "extra")
		})
	}
}

// listRecorder is a reader that records the type of each list read through
// it.
type listRecorder struct {
	client.Reader
	lists []string
}

func (l *listRecorder) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.lists = append(l.lists, fmt.Sprintf("%T", list))
	return l.Reader.List(ctx, list, opts...)
}

// A check compares the pods' metadata, and reads the pods themselves only
// when the cache is found behind: under load most checks find it current,
// and a full list of a large PodSet's pods was the operator's highest heap.
func TestPodCacheCheckReadsThePodsOnlyWhenTheCacheIsBehind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cached int
		lists  []string
	}{
		{"cache current", 3, []string{"*v1.PartialObjectMetadataList"}},
		{"cache behind", 1, []string{"*v1.PartialObjectMetadataList", "*v1.PodList"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(3)
			pods := ownedPods(ps, 3)
			r, c := unitReconciler(t, pods[:tc.cached], nil, asObjects(ps, pods)...)
			recorder := &listRecorder{Reader: c}
			r.APIReader = recorder
			r.Fence = pausedFence(g)

			_, err := reconcileOnce(r, ps)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(recorder.lists).To(Equal(tc.lists))
			g.Expect(podsIn(g, c)).To(HaveLen(3), "no pod created from a cache that lacks some")
		})
	}
}
