package revision

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

func podSet(mutate func(*appv1alpha1.PodSetSpec)) *appv1alpha1.PodSet {
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: appv1alpha1.PodSetSpec{
			Replicas: ptr.To(int32(3)),
			Image:    "registry.example.com/web:1",
			Env:      []appv1alpha1.EnvVar{{Name: "A", Value: "1"}},
		},
	}
	if mutate != nil {
		mutate(&ps.Spec)
	}
	return ps
}

func TestHashChangesWithTheTemplateOnly(t *testing.T) {
	base := Hash(FromPodSet(podSet(nil)), nil)
	for _, tc := range []struct {
		name    string
		mutate  func(*appv1alpha1.PodSetSpec)
		changes bool
	}{
		{"replicas", func(s *appv1alpha1.PodSetSpec) { s.Replicas = ptr.To(int32(9)) }, false},
		{"minReadySeconds", func(s *appv1alpha1.PodSetSpec) { s.MinReadySeconds = 30 }, false},
		{"strategy", func(s *appv1alpha1.PodSetSpec) {
			s.UpdateStrategy = appv1alpha1.UpdateStrategy{Type: appv1alpha1.OnDeleteStrategyType}
		}, false},
		{"revisionHistoryLimit and progressDeadlineSeconds", func(s *appv1alpha1.PodSetSpec) {
			s.RevisionHistoryLimit, s.ProgressDeadlineSeconds = ptr.To(int32(1)), ptr.To(int32(5))
		}, false},
		{"an empty list is an absent one", func(s *appv1alpha1.PodSetSpec) { s.Args = []string{} }, false},
		{"image", func(s *appv1alpha1.PodSetSpec) { s.Image = "registry.example.com/web:2" }, true},
		{"command", func(s *appv1alpha1.PodSetSpec) { s.Command = []string{"run"} }, true},
		{"args", func(s *appv1alpha1.PodSetSpec) { s.Args = []string{"--fast"} }, true},
		{"env", func(s *appv1alpha1.PodSetSpec) { s.Env[0].Value = "2" }, true},
		{"resources", func(s *appv1alpha1.PodSetSpec) {
			s.Resources = &appv1alpha1.Resources{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
		}, true},
		{"podAnnotations", func(s *appv1alpha1.PodSetSpec) {
			s.PodAnnotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-23T10:00:00Z"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Hash(FromPodSet(podSet(tc.mutate)), nil)
			if tc.changes {
				NewWithT(t).Expect(got).NotTo(Equal(base))
			} else {
				NewWithT(t).Expect(got).To(Equal(base))
			}
		})
	}
}

func TestHashIsStableAndCollisionCountMatters(t *testing.T) {
	g := NewWithT(t)
	tmpl := FromPodSet(podSet(func(s *appv1alpha1.PodSetSpec) {
		s.PodAnnotations = map[string]string{"b": "2", "a": "1", "c": "3"}
	}))
	first := Hash(tmpl, nil)
	for range 20 {
		g.Expect(Hash(tmpl, nil)).To(Equal(first), "map order must not change the hash")
	}
	g.Expect(Hash(tmpl, ptr.To(int32(0)))).NotTo(Equal(first))
	g.Expect(Hash(tmpl, ptr.To(int32(1)))).NotTo(Equal(Hash(tmpl, ptr.To(int32(0)))))
	g.Expect(first).To(MatchRegexp(`^[bcdfghjklmnpqrstvwxz2456789]+$`), "label-safe, no vowels")
	g.Expect(Name("web", first)).To(Equal("web-" + first))
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	g := NewWithT(t)
	tmpl := FromPodSet(podSet(func(s *appv1alpha1.PodSetSpec) {
		s.Command = []string{"sleep"}
		s.Resources = &appv1alpha1.Resources{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	}))
	data, err := Encode(tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Data: data}

	back, err := Decode(cr)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(SameTemplate(back, tmpl)).To(BeTrue())
	g.Expect(string(data.Raw)).To(ContainSubstring(`"image":"registry.example.com/web:1"`),
		"the data uses the spec's field names, so it is also the rollback patch")

	_, err = Decode(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "empty"}})
	g.Expect(err).To(MatchError(ContainSubstring("empty")))
}

func stored(name string, number int64, tmpl Template) *appsv1.ControllerRevision {
	data, err := Encode(tmpl)
	if err != nil {
		panic(err)
	}
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: number, Data: data}
}

func TestFindEqualAndNextNumber(t *testing.T) {
	g := NewWithT(t)
	v1 := FromPodSet(podSet(nil))
	v2 := FromPodSet(podSet(func(s *appv1alpha1.PodSetSpec) { s.Image = "registry.example.com/web:2" }))
	v3 := FromPodSet(podSet(func(s *appv1alpha1.PodSetSpec) { s.Image = "registry.example.com/web:3" }))
	revs := []*appsv1.ControllerRevision{stored("web-a", 1, v1), stored("web-b", 4, v2)}

	g.Expect(FindEqual(revs, v1)).To(Equal(revs[0]), "a rollback finds its old revision")
	g.Expect(FindEqual(revs, v2)).To(Equal(revs[1]))
	g.Expect(FindEqual(revs, v3)).To(BeNil())
	g.Expect(NextNumber(revs)).To(Equal(int64(5)))
	g.Expect(NextNumber(nil)).To(Equal(int64(1)))
}

func TestToPrune(t *testing.T) {
	revs := []*appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "r2"}, Revision: 2},
		{ObjectMeta: metav1.ObjectMeta{Name: "r3"}, Revision: 3},
		{ObjectMeta: metav1.ObjectMeta{Name: "r4"}, Revision: 4},
		{ObjectMeta: metav1.ObjectMeta{Name: "r5"}, Revision: 5},
	}
	names := func(crs []*appsv1.ControllerRevision) []string {
		var out []string
		for _, cr := range crs {
			out = append(out, cr.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		keep  map[string]bool
		limit int
		want  []string
	}{
		{"under the limit", map[string]bool{"r5": true}, 10, nil},
		{"oldest first", map[string]bool{"r5": true}, 2, []string{"r1", "r2"}},
		{"limit 0 keeps only what is in use", map[string]bool{"r5": true, "r4": true}, 0, []string{"r1", "r2", "r3"}},
		{"a revision pods still run is never pruned, nor counted", map[string]bool{"r5": true, "r1": true}, 1, []string{"r2", "r3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(names(ToPrune(revs, tc.keep, tc.limit))).To(Equal(tc.want))
		})
	}
}
