package podcache

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/controllers/slimpod"
)

// decodedPod is a pod as the API server's decoder hands it to the
// transform: every map, slice and string its own allocation; slim, as the
// transform shares its parts after slimPod.
func decodedPod(name string) *slimpod.Pod {
	clone := func(s string) string { return string([]byte(s)) }
	since := metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	return slimpod.From(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: clone("team-a"), GenerateName: clone("web-"), UID: types.UID("uid-" + name),
			Labels:      map[string]string{clone("app"): clone("web"), "podset": clone("web"), "hash": clone("abc")},
			Annotations: map[string]string{clone("note"): clone("x")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clone("app.example.com/v1alpha1"), Kind: "PodSet", Name: "web", UID: "ps-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{NodeName: clone("node-1")},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPhase(clone("Running")),
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: clone("podset"), RestartCount: 0}},
		},
	})
}

// same tells whether two maps or slices are one value, not two equal ones.
func same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == vb.Kind() && va.UnsafePointer() == vb.UnsafePointer()
}

func TestEqualPartsOfPodsAreSharedAndUnchanged(t *testing.T) {
	g := NewWithT(t)
	v := newSharedValues(time.Now)
	a, b := decodedPod("web-a"), decodedPod("web-b")
	wantA, wantB := a.DeepCopy(), b.DeepCopy()

	v.sharePod(a, false)
	v.sharePod(b, false)

	g.Expect(a).To(Equal(wantA), "sharing changes no content")
	g.Expect(b).To(Equal(wantB))
	g.Expect(same(a.Labels, b.Labels)).To(BeTrue(), "labels")
	g.Expect(same(a.Annotations, b.Annotations)).To(BeTrue(), "annotations")
	g.Expect(same(a.OwnerReferences, b.OwnerReferences)).To(BeTrue(), "owner references")
	g.Expect(same(a.Status.Conditions, b.Status.Conditions)).To(BeTrue(), "conditions")
	g.Expect(same(a.Status.ContainerStatuses, b.Status.ContainerStatuses)).To(BeTrue(), "container statuses")
	for _, s := range [][2]string{{a.Namespace, b.Namespace}, {a.GenerateName, b.GenerateName}, {a.Spec.NodeName, b.Spec.NodeName}, {string(a.Status.Phase), string(b.Status.Phase)}} {
		g.Expect(unsafe.StringData(s[0])).To(BeIdenticalTo(unsafe.StringData(s[1])), "string %q", s[0])
	}
}

func TestPartsThatDifferAreNotShared(t *testing.T) {
	g := NewWithT(t)
	v := newSharedValues(time.Now)
	a, b := decodedPod("web-a"), decodedPod("web-b")
	b.Labels["hash"] = "def"
	b.OwnerReferences[0].Controller = ptr.To(false)
	b.Status.Conditions[0].LastTransitionTime = metav1.NewTime(a.Status.Conditions[0].LastTransitionTime.Add(time.Second))
	b.Status.ContainerStatuses[0].RestartCount = 1
	wantB := b.DeepCopy()

	v.sharePod(a, false)
	v.sharePod(b, false)

	g.Expect(b).To(Equal(wantB))
	g.Expect(same(a.Labels, b.Labels)).To(BeFalse())
	g.Expect(same(a.Annotations, b.Annotations)).To(BeTrue(), "the annotations are still equal")
	g.Expect(same(a.OwnerReferences, b.OwnerReferences)).To(BeFalse())
	g.Expect(same(a.Status.Conditions, b.Status.Conditions)).To(BeFalse())
	g.Expect(same(a.Status.ContainerStatuses, b.Status.ContainerStatuses)).To(BeFalse())
}

func TestContainersOfPodsUpdatedInPlaceAreTheirOwn(t *testing.T) {
	g := NewWithT(t)
	v := newSharedValues(time.Now)
	a, b := decodedPod("web-a"), decodedPod("web-b")

	v.sharePod(a, true)
	v.sharePod(b, true)

	g.Expect(same(a.Status.ContainerStatuses, b.Status.ContainerStatuses)).To(BeFalse(),
		"their states and resources tell an in-place update done")
	g.Expect(same(a.Labels, b.Labels)).To(BeTrue())
}

func TestKeysTellApartContentsThatConcatenateAlike(t *testing.T) {
	g := NewWithT(t)
	g.Expect(stringMapKey(map[string]string{"a": "bc"})).NotTo(Equal(stringMapKey(map[string]string{"ab": "c"})))
	g.Expect(stringMapKey(map[string]string{"a": "b", "c": "d"})).To(Equal(stringMapKey(map[string]string{"c": "d", "a": "b"})), "map order")
	ref := metav1.OwnerReference{Kind: "PodSet", Name: "web", UID: "u"}
	controller := ref
	controller.Controller = ptr.To(true)
	g.Expect(ownerReferencesKey([]metav1.OwnerReference{ref})).NotTo(Equal(ownerReferencesKey([]metav1.OwnerReference{controller})))
	waiting := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	g.Expect(containerStatusesKey([]corev1.ContainerStatus{{Name: "a"}})).NotTo(Equal(containerStatusesKey([]corev1.ContainerStatus{waiting})),
		"waiting for no reason is not running")
	g.Expect(conditionsKey([]corev1.PodCondition{{Type: "Ready"}})).NotTo(Equal(conditionsKey([]corev1.PodCondition{{Type: "Ready", ObservedGeneration: 1}})))
}

// TestSharedValuesAreForgottenWhenNoPodAsksForThem: the revisions and nodes
// of the past do not stay in memory; what pods still ask for does.
func TestSharedValuesAreForgottenWhenNoPodAsksForThem(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	v := newSharedValues(func() time.Time { return now })
	asked, idle := decodedPod("asked"), decodedPod("idle")
	idle.Labels["hash"] = "old"
	v.sharePod(asked, false)
	v.sharePod(idle, false)

	for range 3 {
		now = now.Add(sharedValuesPeriod)
		again := decodedPod("again")
		v.sharePod(again, false)
		g.Expect(same(again.Labels, asked.Labels)).To(BeTrue(), "asked for every period")
	}
	g.Expect(v.stringMaps.current).To(HaveLen(2), "the labels asked for, and the annotations")
	g.Expect(v.stringMaps.before).To(HaveLen(2))

	late := decodedPod("late")
	late.Labels["hash"] = "old"
	v.sharePod(late, false)
	g.Expect(same(late.Labels, idle.Labels)).To(BeFalse(), "forgotten after a period without a pod asking")
	g.Expect(late.Labels).To(Equal(idle.Labels))
}
