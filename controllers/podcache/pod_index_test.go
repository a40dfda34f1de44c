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

func TestPodIndexKeepsControllerRuntimesIndexes(t *testing.T) {
	g := NewWithT(t)
	x := NewPodIndex()

	informer := x.NewInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})

	g.Expect(informer.GetIndexer().GetIndexers()).To(HaveKey(toolscache.NamespaceIndex))
	g.Expect(informer.GetIndexer().GetIndexers()).To(HaveKey(podControllerUIDIndex))
	g.Expect(informer.GetIndexer().GetIndexers()).To(HaveKey(podSetLabelIndex))
}

// staleIndexer answers each index from its own fixed list, as an informer's
// indexer can when the pod changes between two lookups.
type staleIndexer struct {
	toolscache.Indexer
	byIndex map[string][]any
}

func (s staleIndexer) ByIndex(name, _ string) ([]any, error) { return s.byIndex[name], nil }

func TestPodIndexCandidatesAcrossAChangeBetweenLookups(t *testing.T) {
	ps := unitPodSet(3)
	orphan := unitPod("a", withPodLabels(operand.Labels(ps)))
	adopted := orphan.DeepCopy()
	controlledByPodSet("web")(adopted)
	adopted.ResourceVersion = "2"

	tests := []struct {
		name            string
		owned, labelled []any
		want            *slimpod.Pod
	}{
		{"adopted between the lookups: seen by the label lookup only", nil, []any{adopted}, adopted},
		{"released between the lookups: once, as the owned lookup saw it", []any{adopted}, []any{orphan}, adopted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			x := NewPodIndex()
			x.add(staleIndexer{byIndex: map[string][]any{podControllerUIDIndex: tt.owned, podSetLabelIndex: tt.labelled}})

			got, err := x.Candidates(ps.Namespace, ps.Name, ps.UID)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(HaveExactElements(BeIdenticalTo(tt.want)))
		})
	}
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
