package controllers

// A PodSet deleted with `kubectl delete --cascade=orphan` and created again
// adopts the pods and revisions it left behind, as the ReplicaSet,
// Deployment and StatefulSet controllers do: it is how users move a
// workload between owners or re-create an object without downtime.

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

func TestIntegrationRecreatedPodSetAdoptsItsPodsAndRevision(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	ps := createPodSet(t, ns, "cs", 2, nil)
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, 2)
	before := sortedPodUIDs(listLivePods(g, ps))
	rev := getPodSet(g, ps).Status.UpdateRevision

	deleteOrphaningDependents(g, ps)
	again := createPodSet(t, ns, "cs", 2, nil)
	waitForRolledOut(g, again, 2)

	// No pod created or deleted: the same two pods, now the new PodSet's.
	g.Consistently(func(g Gomega) {
		g.Expect(sortedPodUIDs(listLivePods(g, again))).To(Equal(before))
	}, 2*time.Second, poll).Should(Succeed())
	g.Expect(createdPodCount(g, again, ns)).To(Equal(2), "no pod was created besides the first two")
	st := getPodSet(g, again).Status
	g.Expect(st.UpdateRevision).To(Equal(rev), "the adopted revision is the update revision")
	g.Expect(st.CurrentRevision).To(Equal(rev))
	g.Expect(ptr.Deref(st.CollisionCount, 0)).To(BeZero(), "adopting is no collision")
	g.Expect(revisionNumbers(g, again)).To(Equal(map[string]int64{rev: 1}), "one revision, the adopted one, still number 1")
	g.Expect(revisionsInNamespace(g, ns)).To(HaveLen(1), "no revision left behind")
}

func TestIntegrationRecreatedPodSetWithANewTemplateRollsItsAdoptedPods(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newTestNamespace(t, nil)
	const replicas, surge, unavailable = 4, 1, 1
	spec := func(image string) func(*appv1alpha1.PodSet) {
		return func(ps *appv1alpha1.PodSet) {
			ps.Spec.Image = image
			ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
				MaxSurge: ptr.To(intstr.FromInt32(surge)), MaxUnavailable: ptr.To(intstr.FromInt32(unavailable)),
			}
		}
	}
	ps := createPodSet(t, ns, "cs", replicas, spec("registry.example.com/web:1"))
	startFakeKubelet(ctx, t, ns)
	waitForRolledOut(g, ps, replicas)
	old := getPodSet(g, ps).Status.UpdateRevision

	deleteOrphaningDependents(g, ps)
	bounds := watchBounds(ctx, t, ns, "cs")
	again := createPodSet(t, ns, "cs", replicas, spec("registry.example.com/web:2"))
	waitForRolledOut(g, again, replicas)

	st := getPodSet(g, again).Status
	g.Expect(st.UpdateRevision).NotTo(Equal(old))
	for _, pod := range listLivePods(g, again) {
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example.com/web:2"))
	}
	maxLive, minReady := bounds()
	t.Logf("most live pods %d (bound %d), fewest ready %d (bound %d)", maxLive, replicas+surge, minReady, replicas-unavailable)
	g.Expect(maxLive).To(BeNumerically("<=", replicas+surge), "more than replicas + maxSurge live pods")
	g.Expect(minReady).To(BeNumerically(">=", replicas-unavailable), "fewer than replicas - maxUnavailable ready pods")
	g.Expect(revisionNumbers(g, again)).To(Equal(map[string]int64{old: 1, st.UpdateRevision: 2}),
		"the old revision is adopted, and the new one numbered after it")
	g.Expect(ptr.Deref(st.CollisionCount, 0)).To(BeZero())
	g.Expect(revisionsInNamespace(g, ns)).To(HaveLen(2), "no revision left behind")
}

// A revision that carries the PodSet's labels but has another controller is
// never touched, even when it takes the name of the PodSet's template: that
// name counts as a collision.
func TestIntegrationRevisionsOfAnotherControllerAreLeftAlone(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newTestNamespace(t, nil)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	g.Expect(k8sClient.Create(ctx, owner)).To(Succeed())
	spec := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "fx", Namespace: ns}}
	sameName := storedRevision(g, spec, revision.FromPodSet(spec), owner)
	other := spec.DeepCopy()
	other.Spec.Image = "registry.example.com/other:1"
	otherName := storedRevision(g, spec, revision.FromPodSet(other), owner)
	waitForCachedRevisions(g, ns, sameName.Name, otherName.Name)

	ps := createPodSet(t, ns, "fx", 1, nil)
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.UpdateRevision).NotTo(BeEmpty())
		g.Expect(st.UpdateRevision).NotTo(Equal(sameName.Name))
		g.Expect(st.CollisionCount).To(Equal(ptr.To(int32(1))))
		g.Expect(revisionNames(g, ps)).To(ConsistOf(st.UpdateRevision))
	}, eventually, poll).Should(Succeed())
	for _, cr := range []*appsv1.ControllerRevision{sameName, otherName} {
		stored := &appsv1.ControllerRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cr), stored)).To(Succeed())
		g.Expect(stored.OwnerReferences).To(Equal(cr.OwnerReferences), "revision %s was touched", cr.Name)
		g.Expect(stored.ResourceVersion).To(Equal(cr.ResourceVersion), "revision %s was touched", cr.Name)
	}
}

// A real hash collision, an orphan under the name of the PodSet's template
// that holds another template, still bumps collisionCount.
func TestIntegrationAHashCollisionBumpsCollisionCount(t *testing.T) {
	requireEnvtest(t)
	g := NewWithT(t)
	ns := newTestNamespace(t, nil)
	spec := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "hc", Namespace: ns}}
	other := spec.DeepCopy()
	other.Spec.Image = "registry.example.com/other:1"
	// Stored under the name of spec's template, holding other's.
	collider := newRevisionObject(g, spec, revision.FromPodSet(other), revision.Hash(revision.FromPodSet(spec), nil))
	g.Expect(k8sClient.Create(context.Background(), collider)).To(Succeed())
	waitForCachedRevisions(g, ns, collider.Name)

	ps := createPodSet(t, ns, "hc", 1, nil)
	g.Eventually(func(g Gomega) {
		st := getPodSet(g, ps).Status
		g.Expect(st.CollisionCount).To(Equal(ptr.To(int32(1))))
		g.Expect(st.UpdateRevision).To(Equal(revision.Name(ps.Name, revision.Hash(revision.FromPodSet(spec), ptr.To(int32(1))))))
		pods := listLivePods(g, ps)
		g.Expect(pods).To(HaveLen(1))
		g.Expect(revision.Name(ps.Name, pods[0].Labels[appv1alpha1.LabelRevisionHash])).To(Equal(st.UpdateRevision))
	}, eventually, poll).Should(Succeed())
}

// deleteOrphaningDependents deletes ps as `kubectl delete --cascade=orphan`
// does, and plays the garbage collector that envtest lacks: the API server
// puts the orphan finalizer on the PodSet, the collector takes the PodSet's
// ownerReferences off its dependents and then the finalizer off the PodSet.
// It returns once the manager's cache shows the dependents orphaned, as the
// user's next command finds them after `kubectl delete` waited for the
// deletion.
func deleteOrphaningDependents(g Gomega, ps *appv1alpha1.PodSet) {
	ctx := context.Background()
	g.Expect(k8sClient.Delete(ctx, ps.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	var pods corev1.PodList
	g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(ps.Namespace))).To(Succeed())
	var revs appsv1.ControllerRevisionList
	g.Expect(k8sClient.List(ctx, &revs, client.InNamespace(ps.Namespace))).To(Succeed())
	var dependents []client.Object
	for i := range pods.Items {
		dependents = append(dependents, &pods.Items[i])
	}
	for i := range revs.Items {
		dependents = append(dependents, &revs.Items[i])
	}
	for _, obj := range dependents {
		refs := obj.GetOwnerReferences()
		kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool { return ref.UID == ps.UID })
		if len(kept) == len(refs) {
			continue
		}
		orig := obj.DeepCopyObject().(client.Object)
		obj.SetOwnerReferences(kept)
		g.Expect(k8sClient.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		cur := &appv1alpha1.PodSet{}
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(ps), cur)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == metav1.FinalizerOrphanDependents })
		g.Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(ps), cur))).To(BeTrue())
	}, eventually, poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cached, err := suitePods.Candidates(ps.Namespace, ps.Name, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cached).NotTo(BeEmpty())
		for _, pod := range cached {
			g.Expect(metav1.GetControllerOfNoCopy(pod)).To(BeNil(), "pod %s is still controlled in the cache", pod.Name)
		}
		var revs appsv1.ControllerRevisionList
		g.Expect(suiteCache.List(ctx, &revs, client.InNamespace(ps.Namespace))).To(Succeed())
		g.Expect(revs.Items).NotTo(BeEmpty())
		for _, cr := range revs.Items {
			g.Expect(metav1.GetControllerOf(&cr)).To(BeNil(), "revision %s is still controlled in the cache", cr.Name)
		}
	}, eventually, poll).Should(Succeed())
}

// newRevisionObject is a revision of ps's name and labels holding tmpl,
// named with hash.
func newRevisionObject(g Gomega, ps *appv1alpha1.PodSet, tmpl revision.Template, hash string) *appsv1.ControllerRevision {
	data, err := revision.Encode(tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      revision.Name(ps.Name, hash),
			Namespace: ps.Namespace,
			Labels:    map[string]string{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue, appv1alpha1.LabelRevisionHash: hash},
		},
		Data:     data,
		Revision: 1,
	}
}

// storedRevision creates a revision of ps's name and labels holding tmpl,
// under the name the PodSet would give it, controlled by owner.
func storedRevision(g Gomega, ps *appv1alpha1.PodSet, tmpl revision.Template, owner *corev1.ConfigMap) *appsv1.ControllerRevision {
	cr := newRevisionObject(g, ps, tmpl, revision.Hash(tmpl, nil))
	cr.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}
	g.Expect(k8sClient.Create(context.Background(), cr)).To(Succeed())
	return cr
}

// waitForCachedRevisions waits until the manager's cache holds the named
// revisions, so that the PodSet's first reconcile sees them.
func waitForCachedRevisions(g Gomega, ns string, names ...string) {
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			g.Expect(suiteCache.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &appsv1.ControllerRevision{})).To(Succeed())
		}
	}, eventually, poll).Should(Succeed())
}

func revisionsInNamespace(g Gomega, ns string) []appsv1.ControllerRevision {
	var list appsv1.ControllerRevisionList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func sortedPodUIDs(pods []corev1.Pod) []types.UID {
	uids := make([]types.UID, 0, len(pods))
	for _, pod := range pods {
		uids = append(uids, pod.UID)
	}
	slices.Sort(uids)
	return uids
}
