package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/podcache"
)

// BenchmarkCachedPodSet reports the heap that one PodSet holds in the
// operator's cache (B/PodSet): its JSON as the API server sends it,
// decoded as the informer decodes it and passed through the cache's
// transform, with a status of ten pods; and (B/PodSet-untransformed) as
// decoded, before the transform. Run it with -benchtime=1x:
//
//	go test ./test/bench/ -run '^$' -bench CachedPodSet -benchtime=1x
func BenchmarkCachedPodSet(b *testing.B) {
	scheme := k8sruntime.NewScheme()
	if err := appv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	decoder := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})
	var transform func(any) (any, error)
	for obj, byObject := range podcache.CacheOptions(nil, podcache.NewPodIndex(), nil, nil).ByObject {
		if _, ok := obj.(*appv1alpha1.PodSet); ok {
			transform = byObject.Transform
		}
	}
	if transform == nil {
		b.Fatal("no transform of cached PodSets")
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
			raw, err := json.Marshal(cachedPodSetFixture(c.template, c.kubectlCA))
			if err != nil {
				b.Fatal(err)
			}
			decode := func() any {
				obj, _, err := decoder.Decode(raw, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				return obj
			}
			cached := func() any {
				obj, err := transform(decode())
				if err != nil {
					b.Fatal(err)
				}
				return obj
			}
			var perPodSet, untransformed float64
			for b.Loop() {
				perPodSet, untransformed = retainedBytes(5000, cached), retainedBytes(5000, decode)
			}
			b.ReportMetric(perPodSet, "B/PodSet")
			b.ReportMetric(untransformed, "B/PodSet-untransformed")
			b.ReportMetric(float64(len(raw)), "JSON-bytes")
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
	ps.Status.CurrentRevision, ps.Status.UpdateRevision = "shop-web-5d8f9c7b6", "shop-web-5d8f9c7b6"
	return ps
}

// retainedBytes is the heap that n objects made by mk hold, per object.
func retainedBytes(n int, mk func() any) float64 {
	keep := make([]any, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = mk()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
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
