package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/ownership"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/wakeups"
)

func TestStatusChangedPredicate(t *testing.T) {
	base := unitPodSet(3)
	for _, tc := range []struct {
		name   string
		mutate func(*appv1alpha1.PodSet)
		want   bool
	}{
		{"nothing changed", func(*appv1alpha1.PodSet) {}, false},
		{"only a label changed", func(p *appv1alpha1.PodSet) { p.Labels = map[string]string{"team": "a"} }, false},
		{"status replicas changed", func(p *appv1alpha1.PodSet) { p.Status.Replicas = 2 }, true},
		{"status pod names changed", func(p *appv1alpha1.PodSet) { p.Status.PodNames = []string{"web-x"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.mutate(updated)
			got := statusChangedPredicate().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: updated})
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

// unitReconciler is a reconciler over a fake client holding objs, whose pod
// index holds pods (the informer's view), and whose direct reads (adoption)
// go to apiReader, or to the fake client when nil.
func unitReconciler(t *testing.T, pods []*corev1.Pod, apiReader client.Reader, objs ...client.Object) (*PodSetReconciler, client.Client) {
	t.Helper()
	c := unitClientBuilder(objs...).Build()
	if apiReader == nil {
		apiReader = c
	}
	return &PodSetReconciler{
		Client:              c,
		APIReader:           apiReader,
		Scheme:              testScheme,
		Recorder:            events.NewFakeRecorder(100),
		Expectations:        newExpectations(),
		Pods:                podIndexWith(t, pods),
		StatusWriteInterval: DefaultStatusWriteInterval,
		records:             newPodSetRecords(),
		wakeUps:             wakeups.New(),
	}, c
}

// unitClientBuilder is the fake API server of unitReconciler, holding objs
// and their namespaces, which the reconciler reads (userIDs).
func unitClientBuilder(objs ...client.Object) *fake.ClientBuilder {
	namespaces := map[string]bool{}
	for _, o := range objs {
		namespaces[o.GetNamespace()] = o.GetNamespace() != ""
	}
	for ns, add := range namespaces {
		if add {
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	}
	return fake.NewClientBuilder().WithScheme(testScheme).WithObjects(objs...).
		WithStatusSubresource(&appv1alpha1.PodSet{}).
		WithIndex(&appsv1.ControllerRevision{}, ownership.RevisionPodSetField, ownership.IndexRevisionByPodSet)
}

func reconcileOnce(r *PodSetReconciler, ps *appv1alpha1.PodSet) (ctrl.Result, error) {
	return r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ps)})
}

func podsIn(g Gomega, c client.Client) []corev1.Pod {
	var list corev1.PodList
	g.Expect(c.List(context.Background(), &list)).To(Succeed())
	return list.Items
}

// The reconcile that creates pods expects their events; if those events are
// lost (a watch broken with 410 Gone, the pods deleted before the relist),
// only its own requeue at the expectations' timeout brings the PodSet back.
func TestReconcileThatScalesRequeuesAtTheExpectationsTimeout(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	r, c := unitReconciler(t, nil, nil, ps)

	res, err := reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podsIn(g, c)).To(HaveLen(3))
	g.Expect(res.RequeueAfter).To(BeNumerically(">", DefaultExpectationsTimeout-time.Minute))
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", DefaultExpectationsTimeout))
}

// An orphan makes the reconcile read the PodSet from the API server before
// adopting it. When that read shows the PodSet gone, being deleted or
// replaced, the cached copy is stale and no pod may be created from it.
func TestReconcileCreatesNothingWhenAdoptionFindsThePodSetGone(t *testing.T) {
	orphan := func() *corev1.Pod {
		return operandtest.AsPod(unitPod("orphan", withPodLabels(operand.Labels(unitPodSet(1))), readySince(unitNow)))
	}
	for _, tc := range []struct {
		name  string
		fresh func() client.Object
		// notOnServer: no PodSet of this UID, so no status either (a
		// status patch names the PodSet, and would land on a namesake).
		notOnServer bool
	}{
		{"deleted", func() client.Object { return nil }, true},
		{"being deleted", func() client.Object {
			p := unitPodSet(3)
			p.DeletionTimestamp = ptr.To(metav1.Now())
			p.Finalizers = []string{"example.com/hold"}
			return p
		}, false},
		{"replaced by a namesake", func() client.Object {
			p := unitPodSet(3)
			p.UID = "another-uid"
			return p
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(3)
			builder := fake.NewClientBuilder().WithScheme(testScheme)
			if fresh := tc.fresh(); fresh != nil {
				builder = builder.WithObjects(fresh)
			}
			r, c := unitReconciler(t, []*corev1.Pod{orphan()}, builder.Build(), ps, orphan())

			res, err := reconcileOnce(r, ps)

			g.Expect(err).NotTo(HaveOccurred())
			pods := podsIn(g, c)
			g.Expect(pods).To(HaveLen(1), "pods were created for a PodSet that is gone")
			g.Expect(pods[0].OwnerReferences).To(BeEmpty(), "the orphan was adopted")
			if tc.notOnServer {
				g.Expect(statusOf(g, c, ps)).To(Equal(appv1alpha1.PodSetStatus{}), "a status was written for a PodSet the API server does not have")
				g.Expect(res.RequeueAfter).To(Equal(StalePodSetRecheckInterval), "a stale PodSet must be looked at again, in case no event comes")
			}
		})
	}
}

// When the quota lets only some pods through, the expectations count only
// those, the failure is reported, and the error brings a retry with backoff.
func TestReconcileWithPartialCreates(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(6)
	r, c := unitReconciler(t, nil, nil, ps)
	var creates atomic.Int32
	interceptPodWrites(r, podControlFuncs{create: func(ctx context.Context, pod *corev1.Pod, next podwrites.PodControl) error {
		if creates.Add(1) > 2 {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x", errors.New("exceeded quota"))
		}
		return next.CreatePod(ctx, pod)
	}})

	_, err := reconcileOnce(r, ps)

	g.Expect(err).To(MatchError(ContainSubstring("exceeded quota")))
	g.Expect(podsIn(g, c)).To(HaveLen(2))
	key := consistency.Key(ps.Namespace, ps.Name, ps.UID)
	g.Expect(r.Expectations.ExpiresIn(key)).To(BeNumerically(">", 0), "the two created pods are still expected")
	r.Expectations.CreationObserved(key)
	g.Expect(r.Expectations.CreationObserved(key)).To(BeTrue(), "only the two created pods were expected")
	stored := &appv1alpha1.PodSet{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(ps), stored)).To(Succeed())
	failure := meta.FindStatusCondition(stored.Status.Conditions, appv1alpha1.ConditionReplicaFailure)
	g.Expect(failure).NotTo(BeNil())
	g.Expect(failure.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(failure.Reason).To(Equal(appv1alpha1.ReasonFailedCreate))
}

func TestTransientErrors(t *testing.T) {
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x", errors.New("exceeded quota"))
	unavailable := apierrors.NewServiceUnavailable("restarting")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"quota", quota, false},
		{"service unavailable", unavailable, true},
		{"connection refused, wrapped", fmt.Errorf("creating pods: %w", refused), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"connection force closed", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/ns/pods", Err: errors.New("http2: client connection force closed via ClientConn.Close")}, true},
		{"fenced: ours, not the server's", leaderfence.ErrFenced, false},
		{"all transient", kerrors.NewAggregate([]error{unavailable, refused}), true},
		{"one is not", kerrors.NewAggregate([]error{unavailable, quota}), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(podwrites.IsTransient(tc.err)).To(Equal(tc.want))
		})
	}
}

// In a namespace being deleted every create is refused: the first refusal
// ends the step, and it is not reported as a failure.
func TestReconcileInATerminatingNamespaceStopsAtTheFirstRefusedCreate(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(100)
	r, _ := unitReconciler(t, nil, nil, ps)
	var creates atomic.Int32
	interceptPodWrites(r, podControlFuncs{create: func(context.Context, *corev1.Pod, podwrites.PodControl) error {
		creates.Add(1)
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}
		return err
	}})

	_, err := reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(creates.Load()).To(BeEquivalentTo(1), "creates sent after the namespace was seen terminating")
	g.Expect(r.Expectations.ExpiresIn(consistency.Key(ps.Namespace, ps.Name, ps.UID))).To(BeZero(), "refused creates are still expected")

	// The namespace controller now deletes the pods, each deletion waking
	// the PodSet: the namespace cannot come back, and no create is sent.
	for range 3 {
		_, err = reconcileOnce(r, ps)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(creates.Load()).To(BeEquivalentTo(1), "creates sent again in a namespace known to be terminating")
}

// A PodSet whose reconciles keep failing is retried with a delay that
// doubles from 5 ms, as controller-runtime's default does, but never waits
// more than maxRetryDelay.
func TestRetryDelayDoublesUpToItsCap(t *testing.T) {
	g := NewWithT(t)
	rl := retryRateLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}}
	var delays []time.Duration
	for range 20 {
		delays = append(delays, rl.When(req))
	}
	g.Expect(delays[:4]).To(Equal([]time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}))
	g.Expect(delays[12]).To(Equal(20480 * time.Millisecond))
	g.Expect(delays[13:]).To(HaveEach(maxRetryDelay))
	rl.Forget(req)
	g.Expect(rl.When(req)).To(Equal(5*time.Millisecond), "a success starts over")
}

// A reconcile whose only failure is the API server's admission not mapping
// the PodSet kind yet (right after the CRD is installed) is tried again at
// a fixed second, not with the backoff; any other refusal beside it keeps
// the backoff.
func TestRetryOfOwnerMappingLag(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(1)
	r, _ := unitReconciler(t, nil, nil, ps)
	lag := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x",
		errors.New(`cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion app.example.com/v1alpha1 Kind PodSet: no matches for kind "PodSet" in version "app.example.com/v1alpha1"`))
	rec := newPodSetRecords().of(ps)

	res, err := r.retry(context.Background(), rec, kerrors.NewAggregate([]error{fmt.Errorf("creating pods: %w", lag)}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(OwnerMappingRetryAfter))

	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x", errors.New("exceeded quota"))
	res, err = r.retry(context.Background(), rec, kerrors.NewAggregate([]error{lag, quota}))
	g.Expect(err).To(HaveOccurred(), "a quota refusal beside it goes to the backoff")
	g.Expect(res.RequeueAfter).To(BeZero())
}
