package podcache

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// podIndexWith builds a PodIndex with one pod informer per slice of pods, as
// the manager does for each watched namespace, and fills their stores
// without starting them.
func podIndexWith(t *testing.T, stores ...[]*slimpod.Pod) *PodIndex {
	t.Helper()
	x := NewPodIndex()
	for _, pods := range stores {
		informer := x.NewInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for _, pod := range pods {
			if err := informer.GetStore().Add(pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	return x
}

func TestPodIndexCandidates(t *testing.T) {
	ps := unitPodSet(3) // "web" in unitNamespace
	owned := unitPod("owned", controlledByPodSet("web"), withPodLabels(operand.Labels(ps)))
	ownedRelabelled := unitPod("owned-relabelled", controlledByPodSet("web"), withPodLabels(map[string]string{"app": "other"}))
	orphan := unitPod("orphan", withPodLabels(operand.Labels(ps)))
	othersLabelled := unitPod("others", controlledBy("apps/v1", "ReplicaSet", "web"), withPodLabels(operand.Labels(ps)))
	namesakeElsewhere := unitPod("elsewhere", withPodLabels(operand.Labels(ps)))
	namesakeElsewhere.Namespace = "other-ns"
	otherPodSet := unitPod("other-podset", controlledByPodSet("api"), withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "api"}))
	// A pod in another namespace whose author wrote the PodSet's UID into
	// its controller reference.
	foreignOwnerRef := unitPod("foreign-ref", controlledByPodSet("web"))
	foreignOwnerRef.Namespace = "other-ns"

	tests := []struct {
		name   string
		stores [][]*slimpod.Pod
		want   []*slimpod.Pod
	}{
		{
			name:   "controlled pods, whatever their labels, and pods labelled for the PodSet",
			stores: [][]*slimpod.Pod{{owned, ownedRelabelled, orphan, othersLabelled, otherPodSet}},
			want:   []*slimpod.Pod{owned, ownedRelabelled, orphan, othersLabelled},
		},
		{
			name:   "a labelled pod in another namespace is not a candidate",
			stores: [][]*slimpod.Pod{{owned, namesakeElsewhere}},
			want:   []*slimpod.Pod{owned},
		},
		{
			name:   "one informer per namespace: every one is asked",
			stores: [][]*slimpod.Pod{{owned}, {orphan, otherPodSet}, {namesakeElsewhere}},
			want:   []*slimpod.Pod{owned, orphan},
		},
		{
			name:   "a pod in another namespace claiming the PodSet as controller is not a candidate",
			stores: [][]*slimpod.Pod{{owned, foreignOwnerRef}},
			want:   []*slimpod.Pod{owned},
		},
		{
			name:   "no pods",
			stores: [][]*slimpod.Pod{{otherPodSet}},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			x := podIndexWith(t, tt.stores...)

			got, err := x.Candidates(ps.Namespace, ps.Name, ps.UID)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(ConsistOf(identicalTo(tt.want)...), "each pod once, and the cached object itself")
		})
	}
}

// identicalTo matches each element by pointer identity: the index must hand
// out the cached objects, not copies.
func identicalTo(pods []*slimpod.Pod) []any {
	out := make([]any, 0, len(pods))
	for _, p := range pods {
		out = append(out, BeIdenticalTo(p))
	}
	return out
}

func TestPodIndexBeforeTheCacheStarts(t *testing.T) {
	g := NewWithT(t)
	_, err := NewPodIndex().Candidates("ns", "web", "uid")
	g.Expect(err).To(MatchError(errPodCacheNotStarted))
}

func TestPodIndexLeavesOtherInformersAlone(t *testing.T) {
	g := NewWithT(t)
	x := NewPodIndex()

	informer := x.NewInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})

	g.Expect(informer.GetIndexer().GetIndexers()).To(HaveLen(1), "only controller-runtime's namespace index")
	_, err := x.Candidates("ns", "web", "uid")
	g.Expect(err).To(MatchError(errPodCacheNotStarted), "a ConfigMap informer is not a pod informer")
}

func TestPodIndexReplacesTheNamespaceIndex(t *testing.T) {
	g := NewWithT(t)
	x := NewPodIndex()
	other := func(any) ([]string, error) { return nil, nil }

	informer := x.NewInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "field:other": other})

	g.Expect(informer.GetIndexer().GetIndexers()).To(HaveKey(podSetIndex))
	g.Expect(informer.GetIndexer().GetIndexers()).To(HaveKey("field:other"), "an index registered with the cache is kept")
	g.Expect(informer.GetIndexer().GetIndexers()).NotTo(HaveKey(toolscache.NamespaceIndex), "nothing lists pods through the cache")
}

func TestPodIndexIndexesEachPodUnderEveryPodSetItMayBelongTo(t *testing.T) {
	tests := []struct {
		name string
		pod  *slimpod.Pod
		want []string
	}{
		{"controlled and labelled by one PodSet: one key", unitPod("a", controlledByPodSet("web"), withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "web"})), []string{unitNamespace + "/web"}},
		{"relabelled for another PodSet: both", unitPod("a", controlledByPodSet("web"), withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "api"})), []string{unitNamespace + "/api", unitNamespace + "/web"}},
		{"an orphan: its label", unitPod("a", withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "web"})), []string{unitNamespace + "/web"}},
		{"controlled by a ReplicaSet: its label only", unitPod("a", controlledBy("apps/v1", "ReplicaSet", "rs"), withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "web"})), []string{unitNamespace + "/web"}},
		{"neither", unitPod("a", controlledBy("apps/v1", "ReplicaSet", "rs")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := indexPodByPodSet(tt.pod)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(ConsistOf(tt.want))
		})
	}
}

func TestPodIndexCandidatesLeaveANamesakesRelabelledPod(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	// Controlled by an earlier PodSet "web" (another UID), and labelled
	// for "api" since: indexed under "web", but not the new web's.
	namesakes := unitPod("namesakes", controlledByPodSet("web"), withPodLabels(map[string]string{appv1alpha1.LabelPodSet: "api"}))
	namesakes.OwnerReferences[0].UID = "an-earlier-web"
	owned := unitPod("owned", controlledByPodSet("web"), withPodLabels(operand.Labels(ps)))
	x := podIndexWith(t, []*slimpod.Pod{namesakes, owned})

	got, err := x.Candidates(ps.Namespace, ps.Name, ps.UID)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveExactElements(BeIdenticalTo(owned)))
}

// A cache built without the pod transform stores full pods: the index still
// finds them (slimmed on the way out), rather than seeing no pods at all.
func TestPodIndexCandidatesFromFullPods(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(3)
	owned := unitPod("owned", controlledByPodSet("web"), withPodLabels(operand.Labels(ps)))
	orphan := unitPod("orphan", withPodLabels(operand.Labels(ps)))
	x := NewPodIndex()
	informer := x.NewInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, pod := range []*slimpod.Pod{owned, orphan} {
		g.Expect(informer.GetStore().Add(&corev1.Pod{ObjectMeta: pod.ObjectMeta})).To(Succeed())
	}

	got, err := x.Candidates(ps.Namespace, ps.Name, ps.UID)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(2))
	g.Expect([]string{got[0].Name, got[1].Name}).To(ConsistOf("owned", "orphan"))
}
