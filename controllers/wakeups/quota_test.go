package wakeups

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// quotaLimit is one resource of a quota's status; an empty used is unset.
type quotaLimit struct {
	name       corev1.ResourceName
	hard, used string
}

func quotaStatus(limits ...quotaLimit) corev1.ResourceQuotaStatus {
	st := corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{}, Used: corev1.ResourceList{}}
	for _, l := range limits {
		st.Hard[l.name] = resource.MustParse(l.hard)
		if l.used != "" {
			st.Used[l.name] = resource.MustParse(l.used)
		}
	}
	return st
}

func TestQuotaRoomGrew(t *testing.T) {
	pods := func(hard, used string) quotaLimit { return quotaLimit{corev1.ResourcePods, hard, used} }
	cpu := func(hard, used string) quotaLimit { return quotaLimit{corev1.ResourceRequestsCPU, hard, used} }
	for _, tc := range []struct {
		name     string
		old, new corev1.ResourceQuotaStatus
		want     bool
	}{
		{"hard raised", quotaStatus(pods("5", "5")), quotaStatus(pods("1000", "5")), true},
		{"a pod deleted", quotaStatus(pods("5", "5")), quotaStatus(pods("5", "4")), true},
		{"a limit removed", quotaStatus(pods("5", "5"), cpu("1", "1")), quotaStatus(pods("5", "5")), true},
		{"one of two limits raised", quotaStatus(pods("5", "5"), cpu("1", "1")), quotaStatus(pods("5", "5"), cpu("2", "1")), true},
		{"usage filled in for the first time", quotaStatus(pods("5", "")), quotaStatus(pods("5", "0")), false},
		{"hard lowered", quotaStatus(pods("1000", "5")), quotaStatus(pods("5", "5")), false},
		{"a pod created", quotaStatus(pods("5", "4")), quotaStatus(pods("5", "5")), false},
		{"raised and filled alike", quotaStatus(pods("5", "4")), quotaStatus(pods("6", "5")), false},
		{"a limit added", quotaStatus(pods("5", "5")), quotaStatus(pods("5", "5"), cpu("1", "0")), false},
		{"the same", quotaStatus(pods("5", "5")), quotaStatus(pods("5", "5")), false},
		{"in other units", quotaStatus(cpu("1", "500m")), quotaStatus(cpu("1500m", "500m")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(quotaRoomGrew(&tc.old, &tc.new)).To(Equal(tc.want))
			old := &corev1.ResourceQuota{Status: tc.old}
			updated := &corev1.ResourceQuota{Status: tc.new}
			g.Expect(QuotaMadeRoom().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated})).To(Equal(tc.want))
		})
	}
}

func TestQuotaMadeRoomOnDeletionOnly(t *testing.T) {
	g := NewWithT(t)
	q := &corev1.ResourceQuota{Status: quotaStatus(quotaLimit{corev1.ResourcePods, "0", "0"})}
	g.Expect(QuotaMadeRoom().Delete(event.DeleteEvent{Object: q})).To(BeTrue())
	g.Expect(QuotaMadeRoom().Create(event.CreateEvent{Object: q})).To(BeFalse())
	g.Expect(QuotaMadeRoom().Generic(event.GenericEvent{Object: q})).To(BeFalse())
}

func TestPodSetsRefusedInWakesOnlyFailingPodSetsOfTheQuotaNamespace(t *testing.T) {
	g := NewWithT(t)
	withFailure := func(ns, name string, failing metav1.ConditionStatus) *appv1alpha1.PodSet {
		ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if failing != "" {
			ps.Status.Conditions = []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: failing, Reason: "r"}}
		}
		return ps
	}
	reader := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(
		withFailure("a", "refused", metav1.ConditionTrue),
		withFailure("a", "fine", metav1.ConditionFalse),
		withFailure("a", "new", ""),
		withFailure("b", "refused-elsewhere", metav1.ConditionTrue),
	).Build()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "q"}}

	requests := podSetsRefusedIn(reader)(context.Background(), quota)
	g.Expect(requests).To(HaveLen(1))
	g.Expect(requests[0].NamespacedName).To(Equal(types.NamespacedName{Namespace: "a", Name: "refused"}))
}

// A PodSet refused for a while has a long backoff; the quota's wake must
// start it again, or a create the API server refuses once more (its quota
// cache behind the operator's) would wait out that backoff.
func TestWakeRefusedPodSetsRestartsTheBackoff(t *testing.T) {
	g := NewWithT(t)
	refused := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "refused"}}
	refused.Status.Conditions = []metav1.Condition{{Type: appv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue, Reason: "r"}}
	reader := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(refused).Build()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "q"}}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "refused"}}
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

	for name, wake := range map[string]func(handler.EventHandler, queue){
		"raised": func(h handler.EventHandler, q queue) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: quota, ObjectNew: quota}, q)
		},
		"deleted": func(h handler.EventHandler, q queue) {
			h.Delete(context.Background(), event.DeleteEvent{Object: quota}, q)
		},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		for range 12 {
			q.AddRateLimited(req)
		}
		g.Expect(q.NumRequeues(req)).To(Equal(12), name)

		wake(RefusedPodSets(reader), q)
		g.Expect(q.NumRequeues(req)).To(BeZero(), name)
		g.Expect(q.Len()).To(Equal(1), name)
		q.ShutDown()
	}
}

// scheme knows the PodSets the fake client holds.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := appv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
