package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/revision"
)

// BenchmarkCachedPodSet reports the heap that one PodSet holds in the
// operator's cache (B/PodSet): its JSON as the API server sends it,
// decoded as the informer decodes it and passed through the cache's
// transform, with a status of ten pods; (B/PodSet-untransformed) as
// decoded, before the transform; and (B/PodSet+revision) with the
// ControllerRevision it runs, both cached. Each PodSet has a name, a UID
// and a template of its own (a label of its name), as two PodSets have;
// the revision's owner reference, which in a cluster its pods share,
// counts here in full. Run it with
// -benchtime=1x:
//
//	go test ./test/bench/ -run '^$' -bench CachedPodSet -benchtime=1x
func BenchmarkCachedPodSet(b *testing.B) {
	scheme := k8sruntime.NewScheme()
	if err := appv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := appsv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	decoder := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})
	var transform, revisionTransform func(any) (any, error)
	for obj, byObject := range podcache.CacheOptions(nil, podcache.NewPodIndex(), nil, nil).ByObject {
		switch obj.(type) {
		case *appv1alpha1.PodSet:
			transform = byObject.Transform
		case *appsv1.ControllerRevision:
			revisionTransform = byObject.Transform
		}
	}
	if transform == nil || revisionTransform == nil {
		b.Fatal("no transform of cached PodSets or revisions")
	}
	for _, c := range []struct {
		name      string
		template  *corev1.PodTemplateSpec
		kubectlCA bool
	}{
		{name: "short-form"},
		{name: "realistic", template: realisticTemplate()},
		{name: "realistic-kubectl-apply", template: realisticTemplate(), kubectlCA: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			// The n-th PodSet and its revision, as the API server sends
			// them.
			fixture := func() (podSet, rev []byte) {
				n++
				ps := cachedPodSetFixture(c.template, c.kubectlCA)
				ps.Name, ps.UID = fmt.Sprintf("shop-web-%05d", n), types.UID(fmt.Sprintf("0f3c7c2e-6a55-4c1e-9a55-%012d", n))
				ps.Status.Selector = operand.Selector(ps).String()
				if ps.Spec.Template != nil {
					ps.Spec.Template.Labels = map[string]string{"app.kubernetes.io/instance": ps.Name}
				}
				data, err := revision.Encode(operand.TemplateOf(ps))
				if err != nil {
					b.Fatal(err)
				}
				// As the operator writes it (newRevision), and the
				// API server returns it.
				cr := &appsv1.ControllerRevision{
					TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
					ObjectMeta: metav1.ObjectMeta{
						Name: ps.Status.UpdateRevision, Namespace: ps.Namespace,
						UID: "5b0c4a8e-2f1d-4c3b-9e7a-0123456789ab", ResourceVersion: "123450", CreationTimestamp: ps.CreationTimestamp,
						Labels: map[string]string{
							appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue,
							appv1alpha1.LabelRevisionHash: "5d8f9c7b6",
						},
						OwnerReferences: []metav1.OwnerReference{{
							APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: ps.Name, UID: ps.UID,
							Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
						}},
					},
					Data: data, Revision: 1,
				}
				return must(json.Marshal(ps)), must(json.Marshal(cr))
			}
			decode := func(raw []byte) any {
				obj, _, err := decoder.Decode(raw, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				return obj
			}
			cache := func(transform func(any) (any, error), raw []byte) any {
				obj, err := transform(decode(raw))
				if err != nil {
					b.Fatal(err)
				}
				return obj
			}
			podSetOnly := func() any {
				ps, _ := fixture()
				return cache(transform, ps)
			}
			untransformed := func() any {
				ps, _ := fixture()
				return decode(ps)
			}
			withRevision := func() any {
				ps, cr := fixture()
				return [2]any{cache(transform, ps), cache(revisionTransform, cr)}
			}
			var perPodSet, perUntransformed, perPair float64
			for b.Loop() {
				perPodSet, perUntransformed, perPair = retainedBytes(5000, podSetOnly), retainedBytes(5000, untransformed), retainedBytes(5000, withRevision)
			}
			ps, _ := fixture()
			b.ReportMetric(perPodSet, "B/PodSet")
			b.ReportMetric(perUntransformed, "B/PodSet-untransformed")
			b.ReportMetric(perPair, "B/PodSet+revision")
			b.ReportMetric(float64(len(ps)), "JSON-bytes")
		})
	}
}

// cachedPodSetFixture is a PodSet of ten pods as the API server returns it
// once the operator has written its status: template (nil for the short
// form), and, with kubectlApply, the annotation kubectl apply writes.
func cachedPodSetFixture(template *corev1.PodTemplateSpec, kubectlApply bool) *appv1alpha1.PodSet {
	ps := &appv1alpha1.PodSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: "shop"},
		Spec:       appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](10), Template: template},
	}
	if template == nil {
		ps.Spec.Image = "registry.example.com/shop/web:1.4.2"
	}
	if kubectlApply {
		applied, err := json.Marshal(ps)
		if err != nil {
			panic(err)
		}
		ps.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: string(applied) + "\n"}
	}
	ps.UID, ps.ResourceVersion, ps.Generation = "0f3c7c2e-6a55-4c1e-9a55-1234567890ab", "123456", 1
	ps.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for i := range 10 {
		ps.Status.PodNames = append(ps.Status.PodNames, fmt.Sprintf("shop-web-7c9f8d%d", i))
	}
	for _, t := range []string{appv1alpha1.ConditionAvailable, appv1alpha1.ConditionProgressing, appv1alpha1.ConditionReplicaFailure} {
		ps.Status.Conditions = append(ps.Status.Conditions, metav1.Condition{
			Type: t, Status: metav1.ConditionTrue, Reason: "AllPodsReady", Message: "10 of 10 pods are ready",
			LastTransitionTime: ps.CreationTimestamp, ObservedGeneration: 1,
		})
	}
	ps.Status.Replicas, ps.Status.ReadyReplicas, ps.Status.AvailableReplicas, ps.Status.UpdatedReplicas = 10, 10, 10, 10
	ps.Status.CurrentRevision, ps.Status.UpdateRevision, ps.Status.LastCompletedRevision = "shop-web-5d8f9c7b6", "shop-web-5d8f9c7b6", "shop-web-5d8f9c7b6"
	return ps
}

// retainedBytes is the heap that n objects made by mk hold, per object.
// One object is made first, so that what the first costs once (the JSON
// decoder's caches of the types, the tables' first entries) is not
// counted.
func retainedBytes(n int, mk func() any) float64 {
	keep := make([]any, n)
	warm := mk()
	var before, after runtime.MemStats
	settledHeap(&before)
	for i := range keep {
		keep[i] = mk()
	}
	settledHeap(&after)
	runtime.KeepAlive(keep)
	runtime.KeepAlive(warm)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// settledHeap reads the memory statistics after two collections: the
// first moves the sync.Pools' objects (the deflate and inflate buffers of
// the template cache, hundreds of kilobytes each) to their victim caches,
// the second frees them, so that whether a pool held one at either end
// does not count as the objects' heap.
func settledHeap(stats *runtime.MemStats) {
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(stats)
}

// BenchmarkReadCachedPodSet is what a reconcile pays to read a PodSet with
// the chart-sized template from the cache: the client's copy, and the
// template decoded back (podcache.RestoreTemplate); "decoded" is the copy
// of a PodSet cached with its template decoded, for comparison.
func BenchmarkReadCachedPodSet(b *testing.B) {
	var transform func(any) (any, error)
	for obj, byObject := range podcache.CacheOptions(nil, podcache.NewPodIndex(), nil, nil).ByObject {
		if _, ok := obj.(*appv1alpha1.PodSet); ok {
			transform = byObject.Transform
		}
	}
	decoded := cachedPodSetFixture(realisticTemplate(), false)
	out, err := transform(decoded.DeepCopy())
	if err != nil {
		b.Fatal(err)
	}
	cached := out.(*appv1alpha1.PodSet)
	b.Run("encoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ps := cached.DeepCopy()
			if err := podcache.RestoreTemplate(ps); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = decoded.DeepCopy()
		}
	})
}
