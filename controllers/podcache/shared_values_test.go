package podcache

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
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
	stringMapKey := func(m map[string]string) string { return string(appendStringMapKey(nil, m)) }
	g.Expect(stringMapKey(map[string]string{"a": "bc"})).NotTo(Equal(stringMapKey(map[string]string{"ab": "c"})))
	g.Expect(stringMapKey(map[string]string{"a": "b", "c": "d"})).To(Equal(stringMapKey(map[string]string{"c": "d", "a": "b"})), "map order")
	ref := metav1.OwnerReference{Kind: "PodSet", Name: "web", UID: "u"}
	controller := ref
	controller.Controller = ptr.To(true)
	g.Expect(appendOwnerReferencesKey(nil, []metav1.OwnerReference{ref})).NotTo(Equal(appendOwnerReferencesKey(nil, []metav1.OwnerReference{controller})))
	waiting := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	g.Expect(appendContainerStatusesKey(nil, []corev1.ContainerStatus{{Name: "a"}})).NotTo(Equal(appendContainerStatusesKey(nil, []corev1.ContainerStatus{waiting})),
		"waiting for no reason is not running")
	g.Expect(appendConditionsKey(nil, []corev1.PodCondition{{Type: "Ready"}})).NotTo(Equal(appendConditionsKey(nil, []corev1.PodCondition{{Type: "Ready", ObservedGeneration: 1}})))
}

// The tables hold hashes: values with one hash are told apart by their
// keys. An unequal value with the hash of one in the current generation is
// left its own; one with the hash of a value of the generation before,
// which nothing has asked for since, takes its place. An equal value with
// the hash is shared.
func TestValuesWithOneHash(t *testing.T) {
	for _, c := range []struct {
		name string
		// rotated: the first value is of the generation before.
		rotated bool
		// firstShared: the fourth pod shares the first's labels;
		// secondShared: the third shares the second's.
		firstShared, secondShared bool
	}{
		{name: "in the current generation, the second stays its own", firstShared: true},
		{name: "of the generation before, the second takes its place", rotated: true, secondShared: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			v := newSharedValues(func() time.Time { return now })
			v.stringMaps.hash = func([]byte) uint64 { return 7 }
			first, second, third, fourth := decodedPod("web-a"), decodedPod("web-b"), decodedPod("web-c"), decodedPod("web-d")
			first.Labels["hash"], fourth.Labels["hash"] = "other", "other"
			want := second.DeepCopy()

			v.sharePod(first, false)
			if c.rotated {
				now = now.Add(sharedValuesPeriod)
			}
			v.sharePod(second, false)
			v.sharePod(third, false)
			v.sharePod(fourth, false)

			g.Expect(second).To(Equal(want), "the second keeps its own labels")
			g.Expect(same(first.Labels, second.Labels)).To(BeFalse())
			g.Expect(same(second.Labels, third.Labels)).To(Equal(c.secondShared))
			g.Expect(same(first.Labels, fourth.Labels)).To(Equal(c.firstShared))
		})
	}
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

// transformsOf are the cache's transforms of pods, PodSets and revisions,
// which share one table of values.
func transformsOf(g Gomega) (pods, podSets, revisions toolscache.TransformFunc) {
	for obj, byObject := range CacheOptions(nil, NewPodIndex(), nil, nil).ByObject {
		switch obj.(type) {
		case *corev1.Pod:
			pods = byObject.Transform
		case *appv1alpha1.PodSet:
			podSets = byObject.Transform
		case *appsv1.ControllerRevision:
			revisions = byObject.Transform
		}
	}
	g.Expect([]toolscache.TransformFunc{pods, podSets, revisions}).NotTo(ContainElement(BeNil()))
	return pods, podSets, revisions
}

// decoded is obj as the API server's decoder hands it to a transform:
// every string, map and slice its own allocation.
func decoded[T any](g Gomega, obj T) T {
	var out T
	g.Expect(json.Unmarshal(must(json.Marshal(obj)), &out)).To(Succeed())
	return out
}

// A PodSet's revision is owned as its pods are: the cached revision holds
// their owner reference and namespace, and the label keys and the
// managed-by value of every other revision, with its content unchanged. A
// second transform leaves it as it is.
func TestCachedRevisionsShareTheirPodsOwnerReference(t *testing.T) {
	g := NewWithT(t)
	podTransform, _, revisionTransform := transformsOf(g)
	ref := func(ps *appv1alpha1.PodSet) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: ps.Name, UID: ps.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	}
	written := func(ps *appv1alpha1.PodSet, hash string) *appsv1.ControllerRevision {
		data, err := revision.Encode(revision.FromPodSet(ps))
		g.Expect(err).NotTo(HaveOccurred())
		return &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: ps.Name + "-" + hash, Namespace: ps.Namespace, OwnerReferences: []metav1.OwnerReference{ref(ps)},
				Labels: map[string]string{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue, appv1alpha1.LabelRevisionHash: hash},
			},
			Data: data, Revision: 2,
		}
	}
	cachedRevision := func(cr *appsv1.ControllerRevision) *appsv1.ControllerRevision {
		out, err := revisionTransform(decoded(g, cr))
		g.Expect(err).NotTo(HaveOccurred())
		return out.(*appsv1.ControllerRevision)
	}
	web, api := unitPodSet(3), unitPodSet(2)
	web.UID, api.Name, api.UID = "web-uid", "api", "api-uid"
	pod := newPodFromSpec(web, testOperandImage)
	pod.Name, pod.OwnerReferences = web.Name+"-a", []metav1.OwnerReference{ref(web)}
	out, err := podTransform(decoded(g, pod))
	g.Expect(err).NotTo(HaveOccurred())
	cachedPod := out.(*slimpod.Pod)

	webRevision := written(web, "abc")
	cached, other := cachedRevision(webRevision), cachedRevision(written(api, "def"))

	g.Expect(json.Marshal(cached)).To(MatchJSON(must(json.Marshal(webRevision))), "the cached revision reads as written")
	g.Expect(same(cached.OwnerReferences, cachedPod.OwnerReferences)).To(BeTrue(), "owner references")
	g.Expect(sameString(cached.Namespace, cachedPod.Namespace)).To(BeTrue(), "namespace")
	keys := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k := range m {
			out[string([]byte(k))] = k
		}
		return out
	}
	otherKeys := keys(other.Labels)
	for k := range cached.Labels {
		g.Expect(sameString(k, otherKeys[k])).To(BeTrue(), "label key %s", k)
	}
	g.Expect(sameString(cached.Labels[appv1alpha1.LabelManagedBy], other.Labels[appv1alpha1.LabelManagedBy])).To(BeTrue())

	labels, refs := cached.Labels, cached.OwnerReferences
	again, err := revisionTransform(cached)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same(again.(*appsv1.ControllerRevision).Labels, labels)).To(BeTrue(), "a cached revision is not written again")
	g.Expect(same(again.(*appsv1.ControllerRevision).OwnerReferences, refs)).To(BeTrue())
}

// PodSets write their conditions from a few words: the cached PodSets
// share them, and keep their own messages. At rest, a PodSet's update,
// current and last completed revisions are one string.
func TestCachedPodSetsShareTheirConditionsWords(t *testing.T) {
	g := NewWithT(t)
	_, podSetTransform, _ := transformsOf(g)
	cachedPodSet := func(name, message string) *appv1alpha1.PodSet {
		ps := unitPodSet(3)
		ps.Name = name
		ps.Status.Conditions = []metav1.Condition{{Type: appv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue,
			Reason: "AllPodsAvailable", Message: message, LastTransitionTime: metav1.Unix(1, 0)}}
		ps.Status.CurrentRevision, ps.Status.UpdateRevision, ps.Status.LastCompletedRevision = name+"-1", name+"-1", name+"-1"
		out, err := podSetTransform(decoded(g, ps))
		g.Expect(err).NotTo(HaveOccurred())
		return out.(*appv1alpha1.PodSet)
	}
	a, b := cachedPodSet("web", "all 3 pods run revision web-1"), cachedPodSet("api", "all 3 pods run revision api-1")

	g.Expect(a.Status.Conditions[0].Message).To(Equal("all 3 pods run revision web-1"))
	g.Expect(a.Status.UpdateRevision).To(Equal("web-1"))
	g.Expect(sameString(a.Status.UpdateRevision, a.Status.CurrentRevision)).To(BeTrue(), "the revisions at rest are one string")
	g.Expect(sameString(a.Status.LastCompletedRevision, a.Status.CurrentRevision)).To(BeTrue())
	ca, cb := a.Status.Conditions[0], b.Status.Conditions[0]
	for _, pair := range [][2]string{{ca.Type, cb.Type}, {string(ca.Status), string(cb.Status)}, {ca.Reason, cb.Reason}, {a.Namespace, b.Namespace}} {
		g.Expect(sameString(pair[0], pair[1])).To(BeTrue(), "%s is shared", pair[0])
	}
}
