package podwrites_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"
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
	g.Expect(created.ResourceVersion).To(BeEmpty(), "the answer was not read: the version it was read at is not its deletion's")
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

// With Pods set, a delete goes through it: named by the pod's UID, and the
// answer's version (the deletion's) is written back to the pod.
func TestAPIPodControlDeleteReturnsTheDeletionsVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	answer := pod("uid-1")
	answer.ResourceVersion = "42"
	var (
		sent     *http.Request
		sentBody []byte
	)
	pods := &restfake.RESTClient{
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1",
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: restfake.CreateHTTPClient(func(r *http.Request) (*http.Response, error) {
			sent = r
			sentBody, _ = io.ReadAll(r.Body)
			body, err := json.Marshal(answer)
			if err != nil {
				return nil, err
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
		}),
	}
	pc := podwrites.APIPodControl{Client: fake.NewClientBuilder().Build(), Pods: pods}

	victim := pod("uid-1")
	g.Expect(pc.DeletePod(ctx, victim)).To(Succeed())
	g.Expect(sent.Method).To(Equal(http.MethodDelete))
	g.Expect(sent.URL.Path).To(Equal("/api/v1/namespaces/ns/pods/web-a"))
	var opts metav1.DeleteOptions
	g.Expect(json.Unmarshal(sentBody, &opts)).To(Succeed())
	g.Expect(opts.Preconditions).NotTo(BeNil())
	g.Expect(opts.Preconditions.UID).To(HaveValue(Equal(types.UID("uid-1"))))
	g.Expect(victim.ResourceVersion).To(Equal("42"))
}

// A refused delete (a namesake replaced the pod) fails.
func TestAPIPodControlRefusedDeleteReturnsNoVersion(t *testing.T) {
	g := NewWithT(t)
	pods := &restfake.RESTClient{
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1",
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: restfake.CreateHTTPClient(func(r *http.Request) (*http.Response, error) {
			status := apierrors.NewConflict(corev1.Resource("pods"), "web-a", errors.New("precondition failed: UID in precondition: uid-1, UID in object meta: uid-2")).ErrStatus
			body, err := json.Marshal(&status)
			if err != nil {
				return nil, err
			}
			return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
		}),
	}
	pc := podwrites.APIPodControl{Client: fake.NewClientBuilder().Build(), Pods: pods}

	victim := pod("uid-1")
	err := pc.DeletePod(context.Background(), victim)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
}
