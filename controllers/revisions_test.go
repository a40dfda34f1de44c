package controllers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/revision"
)

func revisionsIn(g Gomega, c client.Client) []appsv1.ControllerRevision {
	var list appsv1.ControllerRevisionList
	g.Expect(c.List(context.Background(), &list)).To(Succeed())
	return list.Items
}

// A new PodSet's first revision is stored beside its first pods, not before
// them: the revision's create waits here until a pod's has begun, which
// deadlocks (and fails after a few seconds) if the pods wait for it.
func TestNewPodSetStoresItsFirstRevisionBesideItsPods(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, c := unitReconciler(t, nil, nil, ps)
	podCreated := make(chan struct{})
	var once sync.Once
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			switch obj.(type) {
			case *corev1.Pod:
				once.Do(func() { close(podCreated) })
			case *appsv1.ControllerRevision:
				select {
				case <-podCreated:
				case <-time.After(5 * time.Second):
					return errors.New("the revision's create waited for a pod's that never came")
				}
			}
			return cl.Create(ctx, obj, opts...)
		},
	})

	_, err := reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	revs := revisionsIn(g, c)
	g.Expect(revs).To(HaveLen(1))
	pods := podsIn(g, c)
	g.Expect(pods).To(HaveLen(3))
	for _, pod := range pods {
		g.Expect(pod.Labels[appv1alpha1.LabelRevisionHash]).To(Equal(revision.HashOf(&revs[0])))
	}
}

// A revision of the PodSet's name left by a deleted namesake takes the name
// the new PodSet's template hashes to. Seen in the cache, it sends the first
// revision the careful way, before any pod: the collision is resolved first,
// and the pods carry the hash of the revision that is theirs.
func TestNamesakesLeftoverRevisionIsResolvedBeforeThePodsAreCreated(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	tmpl := revision.FromPodSet(ps)
	hash := revision.Hash(tmpl, nil)
	data, err := revision.Encode(tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	leftover := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      revision.Name(ps.Name, hash),
			Namespace: ps.Namespace,
			Labels:    map[string]string{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue, appv1alpha1.LabelRevisionHash: hash},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: ps.Name,
				UID: "the-deleted-namesake", Controller: ptr.To(true),
			}},
		},
		Data:     data,
		Revision: 1,
	}
	r, c := unitReconciler(t, nil, nil, ps, leftover)

	_, err = reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	var ours *appsv1.ControllerRevision
	for i, cr := range revisionsIn(g, c) {
		if ref := metav1.GetControllerOf(&cr); ref != nil && ref.UID == ps.UID {
			ours = &revisionsIn(g, c)[i]
		}
	}
	g.Expect(ours).NotTo(BeNil())
	g.Expect(revision.HashOf(ours)).NotTo(Equal(hash))
	pods := podsIn(g, c)
	g.Expect(pods).To(HaveLen(3))
	for _, pod := range pods {
		g.Expect(pod.Labels[appv1alpha1.LabelRevisionHash]).To(Equal(revision.HashOf(ours)))
	}
	stored := &appv1alpha1.PodSet{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(ps), stored)).To(Succeed())
	g.Expect(stored.Status.CollisionCount).To(HaveValue(BeEquivalentTo(1)))
}

// When the first revision's create fails, the reconcile says so and is
// retried; the retry stores the revision under the name the pods' hash
// already gives.
func TestFailedFirstRevisionIsStoredByTheRetry(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, c := unitReconciler(t, nil, nil, ps)
	fail := true
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, isRevision := obj.(*appsv1.ControllerRevision); isRevision && fail {
				return apierrors.NewInternalError(errors.New("etcd hiccup"))
			}
			return cl.Create(ctx, obj, opts...)
		},
	})

	_, err := reconcileOnce(r, ps)
	g.Expect(err).To(MatchError(ContainSubstring("etcd hiccup")))
	g.Expect(revisionsIn(g, c)).To(BeEmpty())
	pods := podsIn(g, c)
	g.Expect(pods).To(HaveLen(3))

	fail = false
	_, err = reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	revs := revisionsIn(g, c)
	g.Expect(revs).To(HaveLen(1))
	g.Expect(revision.HashOf(&revs[0])).To(Equal(pods[0].Labels[appv1alpha1.LabelRevisionHash]))
	g.Expect(podsIn(g, c)).To(HaveLen(3), "the retry created pods again")
}

// Revisions and pods come on different watches: a reconcile woken by a new
// PodSet's pod events can run before its revision has reached the cache. It
// takes the revision it has just created for stored, rather than create it
// again (a refused create and a direct read, per PodSet).
func TestRevisionCreatedButNotYetCachedIsNotCreatedAgain(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, c := unitReconciler(t, nil, nil, ps)
	var revisionCreates atomic.Int32
	var cacheBehind atomic.Bool
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, isRevision := obj.(*appsv1.ControllerRevision); isRevision {
				revisionCreates.Add(1)
			}
			return cl.Create(ctx, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, revisions := list.(*appsv1.ControllerRevisionList); revisions && cacheBehind.Load() {
				return nil
			}
			return cl.List(ctx, list, opts...)
		},
	})

	_, err := reconcileOnce(r, ps)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revisionCreates.Load()).To(BeEquivalentTo(1))

	// The pods' events have reached the cache; the revision's has not.
	var cached []*corev1.Pod
	for _, pod := range podsIn(g, c) {
		cached = append(cached, &pod)
	}
	r.Pods = podIndexWith(t, cached)
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	for range cached {
		r.Expectations.CreationObserved(key)
	}
	cacheBehind.Store(true)
	_, err = reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revisionCreates.Load()).To(BeEquivalentTo(1), "the revision was created again")
	g.Expect(revisionsIn(g, c)).To(HaveLen(1))
	g.Expect(podsIn(g, c)).To(HaveLen(3))
}
