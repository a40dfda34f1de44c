package podwrites_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/podwrites"
)

func pod(uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: uid}}
}

func TestAPIPodControlWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	pc := podwrites.APIPodControl{Client: c}

	created := pod("")
	g.Expect(pc.CreatePod(ctx, created)).To(Succeed())
	g.Expect(created.ResourceVersion).NotTo(BeEmpty(), "the pod holds what the API server stored")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(created), &corev1.Pod{})).To(Succeed())

	g.Expect(pc.DeletePod(ctx, created)).To(Succeed())
	err := c.Get(ctx, client.ObjectKeyFromObject(created), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the pod was not deleted: %v", err)
}

// A delete names the pod by its UID, so that the API server refuses it for
// a namesake that replaced the pod (the fake client does not check
// preconditions: the test reads what was sent).
func TestAPIPodControlDeletesOnlyThePodItWasGiven(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var sent client.DeleteOptions
	c := interceptor.NewClient(fake.NewClientBuilder().WithObjects(pod("uid-1")).Build(), interceptor.Funcs{
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			sent.ApplyOptions(opts)
			return cl.Delete(ctx, obj, opts...)
		},
	})
	pc := podwrites.APIPodControl{Client: c}

	g.Expect(pc.DeletePod(ctx, pod("uid-1"))).To(Succeed())

	g.Expect(sent.Preconditions).NotTo(BeNil())
	g.Expect(sent.Preconditions.UID).To(HaveValue(Equal(types.UID("uid-1"))))
}

// A replica whose fence refuses writes sends none.
func TestAPIPodControlAsksTheFence(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Now()
	fence := leaderfence.New(2*time.Second, leaderfence.WithClock(func() time.Time { return now }))
	now = now.Add(20 * time.Second) // a pause the fence notices
	existing := pod("uid-1")
	c := fake.NewClientBuilder().WithObjects(existing).Build()
	pc := podwrites.APIPodControl{Client: c, Fence: fence}

	g.Expect(pc.CreatePod(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-b"}})).To(MatchError(leaderfence.ErrFenced))
	g.Expect(pc.DeletePod(ctx, existing)).To(MatchError(leaderfence.ErrFenced))
	var pods corev1.PodList
	g.Expect(c.List(ctx, &pods)).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Name).To(Equal("web-a"))
}
