package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// unitRevision is a stored revision of ps's template with image, numbered n,
// labelled for podSetName and controlled by owner (none when nil).
func unitRevision(t *testing.T, podSetName, image string, n int64, owner *metav1.OwnerReference) *appsv1.ControllerRevision {
	t.Helper()
	ps := unitPodSet(1)
	ps.Spec.Image = image
	tmpl := revision.FromPodSet(ps)
	data, err := revision.Encode(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	hash := revision.Hash(tmpl, nil)
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            revision.Name(podSetName, hash),
			Namespace:       unitNamespace,
			UID:             types.UID("rev-" + hash),
			ResourceVersion: "1",
			Labels:          map[string]string{appv1alpha1.LabelPodSet: podSetName, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue, appv1alpha1.LabelRevisionHash: hash},
		},
		Data:     data,
		Revision: n,
	}
	if owner != nil {
		cr.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return cr
}

func controllerRef(kind string, uid types.UID) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: "owner", UID: uid, Controller: ptr.To(true)}
}

// podSetRef is the controller reference SetControllerReference gives an
// object of ps.
func podSetRef(ps *appv1alpha1.PodSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(ps, appv1alpha1.GroupVersion.WithKind("PodSet"))
}

// claimRevisions sorts the revisions the cache shows under the PodSet's
// name or its UID: its own are kept, orphans with its labels adopted, its
// own that no longer carry its labels released, others left alone.
func TestClaimRevisions(t *testing.T) {
	ps := unitPodSet(1)
	mine := podSetRef(ps)
	own := unitRevision(t, ps.Name, "img:own", 1, mine)
	orphan := unitRevision(t, ps.Name, "img:orphan", 2, nil)
	foreign := unitRevision(t, ps.Name, "img:foreign", 3, controllerRef("ConfigMap", "cm-uid"))
	relabelled := unitRevision(t, ps.Name, "img:relabelled", 4, mine)
	relabelled.Labels[appv1alpha1.LabelPodSet] = "someone-else"
	terminating := unitRevision(t, ps.Name, "img:terminating", 5, nil)
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	terminating.Finalizers = []string{"example.com/hold"}
	otherPodSets := unitRevision(t, "other", "img:other", 6, nil)

	g := NewWithT(t)
	r, c := unitReconciler(t, nil, nil, ps, own, orphan, foreign, relabelled, terminating, otherPodSets)
	s := &podSetScope{podSet: ps, key: consistency.Key(ps.Namespace, ps.Name, ps.UID)}

	g.Expect(r.claimRevisions(context.Background(), s)).To(Succeed())

	var claimed []string
	for _, cr := range s.revisions.All {
		claimed = append(claimed, cr.Name)
	}
	g.Expect(claimed).To(ConsistOf(own.Name, orphan.Name))
	g.Expect(s.revisions.NamesakesCached).To(BeTrue())
	controller := func(cr *appsv1.ControllerRevision) *metav1.OwnerReference {
		stored := &appsv1.ControllerRevision{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(cr), stored)).To(Succeed())
		return metav1.GetControllerOf(stored)
	}
	g.Expect(controller(orphan)).To(HaveField("UID", ps.UID), "the orphan is adopted")
	g.Expect(controller(relabelled)).To(BeNil(), "the relabelled revision is released")
	g.Expect(controller(foreign)).To(HaveField("UID", types.UID("cm-uid")), "another controller's revision is left alone")
	g.Expect(controller(terminating)).To(BeNil(), "a revision being deleted is not adopted")
	g.Expect(controller(otherPodSets)).To(BeNil(), "another PodSet's orphan is not adopted")
}

// Orphaned revisions are adopted only after the API server has shown the
// PodSet live: a stale cached PodSet must not take revisions the garbage
// collector would then delete with it.
func TestClaimRevisionsAdoptsNothingForAPodSetThatIsGone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fresh func() client.Object
		// notOnServer: the reconcile ends (errNotOnServer); otherwise it
		// goes on with the PodSet being deleted, which creates nothing.
		notOnServer bool
	}{
		{"deleted", func() client.Object { return nil }, true},
		{"being deleted", func() client.Object {
			p := unitPodSet(1)
			p.DeletionTimestamp = ptr.To(metav1.Now())
			p.Finalizers = []string{"example.com/hold"}
			return p
		}, false},
		{"replaced by a namesake", func() client.Object {
			p := unitPodSet(1)
			p.UID = "another-uid"
			return p
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := unitPodSet(1)
			orphan := unitRevision(t, ps.Name, "img:1", 1, nil)
			builder := fake.NewClientBuilder().WithScheme(testScheme)
			if fresh := tc.fresh(); fresh != nil {
				builder = builder.WithObjects(fresh)
			}
			r, c := unitReconciler(t, nil, builder.Build(), ps, orphan)
			s := &podSetScope{podSet: ps, record: newPodSetRecords().of(ps), key: consistency.Key(ps.Namespace, ps.Name, ps.UID)}

			err := r.claimRevisions(context.Background(), s)

			g.Expect(s.revisions.All).To(BeEmpty())
			if tc.notOnServer {
				g.Expect(err).To(MatchError(errNotOnServer))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.podSet.DeletionTimestamp).NotTo(BeNil(), "the reconcile goes on with the API server's copy, which is being deleted")
			}
			stored := &appsv1.ControllerRevision{}
			g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(orphan), stored)).To(Succeed())
			g.Expect(stored.OwnerReferences).To(BeEmpty())
		})
	}
}

// A PodSet re-created over its orphans reconciles once: it adopts its pods
// and its revision, and creates, deletes and relabels nothing.
func TestReconcileOfARecreatedPodSetKeepsItsPods(t *testing.T) {
	g := NewWithT(t)
	ps := unitPodSet(2)
	old := unitRevision(t, ps.Name, "", 1, nil)
	pods := []*corev1.Pod{newPodFromSpec(ps, testOperandImage), newPodFromSpec(ps, testOperandImage)}
	objs := []client.Object{ps, old}
	for i, pod := range pods {
		pod.Name, pod.UID, pod.ResourceVersion = "web-"+string(rune('a'+i)), types.UID("pod-uid-"+string(rune('a'+i))), "1"
		pod.OwnerReferences = nil
		operandtest.Apply(pod, readySince(unitNow))
		objs = append(objs, pod)
	}
	r, c := unitReconciler(t, pods, nil, objs...)

	_, err := reconcileOnce(r, ps)

	g.Expect(err).NotTo(HaveOccurred())
	stored := podsIn(g, c)
	g.Expect(stored).To(HaveLen(2))
	for _, pod := range stored {
		g.Expect(metav1.GetControllerOf(&pod)).To(HaveField("UID", ps.UID))
	}
	revs := revisionsIn(g, c)
	g.Expect(revs).To(HaveLen(1), "no second revision")
	g.Expect(metav1.GetControllerOf(&revs[0])).To(HaveField("UID", ps.UID))
	st := statusOf(g, c, ps)
	g.Expect(st.UpdateRevision).To(Equal(old.Name))
	g.Expect(st.CurrentRevision).To(Equal(old.Name))
	g.Expect(st.CollisionCount).To(BeNil())
}

// currentRevision: what the pods ran before the rollout in progress.
func TestCurrentRevision(t *testing.T) {
	ps := unitPodSet(2)
	mine := podSetRef(ps)
	v1 := unitRevision(t, ps.Name, "img:1", 1, mine)
	v2 := unitRevision(t, ps.Name, "img:2", 2, mine)
	v3 := unitRevision(t, ps.Name, "img:3", 3, mine)
	running := func(crs ...*appsv1.ControllerRevision) []*slimpod.Pod {
		var pods []*slimpod.Pod
		for _, cr := range crs {
			pods = append(pods, unitPod("p-"+cr.Name, withPodLabels(map[string]string{appv1alpha1.LabelRevisionHash: revision.HashOf(cr)})))
		}
		return pods
	}
	for _, tc := range []struct {
		name   string
		status string
		pods   []*slimpod.Pod
		want   *appsv1.ControllerRevision
	}{
		{"every pod runs the update revision", v1.Name, running(v3, v3), v3},
		{"rolling out: the recorded current revision", v1.Name, running(v1, v2, v3), v1},
		{"the recorded revision is the update one", v3.Name, running(v1, v3), v3},
		{"the recorded revision is no longer stored", "web-gone", running(v1, v3), v3},
		{"nothing recorded (a re-created PodSet): the newest that pods run", "", running(v1, v2, v3), v2},
		{"nothing recorded, pods run only unstored revisions", "", running(unitRevision(t, ps.Name, "img:x", 9, nil)), v3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := ps.DeepCopy()
			p.Status.CurrentRevision = tc.status
			tmpl, err := revision.Decode(v3)
			g.Expect(err).NotTo(HaveOccurred())
			rs := &revision.State{All: []*appsv1.ControllerRevision{v1, v2, v3}, Update: v3, UpdateTemplate: tmpl, UpdateHash: revision.HashOf(v3)}

			got, _, hash := currentRevision(p, rs, tc.pods)

			g.Expect(got.Name).To(Equal(tc.want.Name))
			g.Expect(hash).To(Equal(revision.HashOf(tc.want)))
		})
	}
}
