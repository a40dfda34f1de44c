package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
)

func TestWrittenStatusIsKeptUntilTheCacheHasIt(t *testing.T) {
	written := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10"}, Status: appv1alpha1.PodSetStatus{Replicas: 3}}
	cached := func(resourceVersion string) *appv1alpha1.PodSet {
		return &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{ResourceVersion: resourceVersion}, Status: appv1alpha1.PodSetStatus{Replicas: 5}}
	}
	for _, tc := range []struct {
		name         string
		cached       string
		wantRestored bool
	}{
		{"the cache behind the write", "9", true},
		{"the cache has the write", "10", false},
		{"the cache past the write", "11", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := &podSetRecord{}
			rec.statusWritten(written)
			ps := cached(tc.cached)
			g.Expect(rec.restoreWrittenStatus(ps)).To(Equal(tc.wantRestored))
			if tc.wantRestored {
				g.Expect(ps.Status).To(Equal(written.Status))
				g.Expect(ps.ResourceVersion).To(Equal(tc.cached))
			} else {
				g.Expect(ps.Status.Replicas).To(BeEquivalentTo(5))
			}
			other := cached(tc.cached)
			g.Expect((&podSetRecord{}).restoreWrittenStatus(other)).To(BeFalse())
			g.Expect(other.Status.Replicas).To(BeEquivalentTo(5))
		})
	}

	t.Run("a write the cache has caught up with is forgotten", func(t *testing.T) {
		g := NewWithT(t)
		rec := &podSetRecord{}
		rec.statusWritten(written)
		g.Expect(rec.restoreWrittenStatus(cached("10"))).To(BeFalse())
		g.Expect(rec.restoreWrittenStatus(cached("9"))).To(BeFalse())
	})
	t.Run("the restored status is a copy", func(t *testing.T) {
		g := NewWithT(t)
		rec := &podSetRecord{}
		rec.statusWritten(written)
		ps := cached("9")
		rec.restoreWrittenStatus(ps)
		ps.Status.Replicas = 7
		again := cached("9")
		rec.restoreWrittenStatus(again)
		g.Expect(again.Status.Replicas).To(BeEquivalentTo(3))
	})
}

// A reconcile brought by a pod event may read the PodSet from a cache that
// does not have the operator's last status write yet. Computed against that
// stale status, the status looked new again (here: progress on a spec whose
// observedGeneration the stale copy lacks, so a new lastProgressTime) and
// was patched a second time. Computed against the status written, it is
// the same, and nothing is sent.
func TestReconcileDoesNotRewriteAStatusTheCacheHasNotSeen(t *testing.T) {
	for _, tc := range []struct {
		name       string
		remember   bool
		wantWrites int
	}{
		{"with the writes remembered", true, 0},
		{"without (the status written again)", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ps := unitPodSet(0)
			r, c := unitReconciler(t, nil, nil, ps)
			_, err := reconcileOnce(r, ps)
			g.Expect(err).NotTo(HaveOccurred())
			// A spec change: the copy the cache will still hold.
			stale := &appv1alpha1.PodSet{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ps), stale)).To(Succeed())
			stale.Spec.MinReadySeconds = 5
			stale.Generation = 2
			g.Expect(c.Update(ctx, stale)).To(Succeed())
			g.Expect(stale.Status.ObservedGeneration).To(BeEquivalentTo(1))
			// The operator writes the status of the new spec.
			_, err = reconcileOnce(r, ps)
			g.Expect(err).NotTo(HaveOccurred())
			fresh := &appv1alpha1.PodSet{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ps), fresh)).To(Succeed())
			g.Expect(fresh.Status.ObservedGeneration).To(BeEquivalentTo(2))
			if !tc.remember {
				r.records.lookup(client.ObjectKeyFromObject(ps)).writtenStatus = consistency.Unseen[*appv1alpha1.PodSetStatus]{}
			}

			// The next reconcile reads the stale copy.
			writes := 0
			r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if p, ok := obj.(*appv1alpha1.PodSet); ok {
						stale.DeepCopyInto(p)
						return nil
					}
					return cl.Get(ctx, key, obj, opts...)
				},
				SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					writes++
					return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
			_, err = reconcileOnce(r, ps)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(writes).To(Equal(tc.wantWrites))
		})
	}
}
