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
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/revision"
)

// BenchmarkCachedPods reports the heap that one running pod holds in the
// operator's pod informer (B/pod): its JSON as the API server sends it
// once the kubelet has reported it Ready, decoded, passed through the
// cache's transform and added to an informer store with the operator's
// index, 5,000 pods in PodSets of ten. Run it with -benchtime=1x:
//
//	go test ./test/bench/ -run '^$' -bench CachedPods -benchtime=1x
func BenchmarkCachedPods(b *testing.B) {
	scheme := k8sruntime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	decoder := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})
	// The transform's tables start empty in each measure.
	newTransform := func() func(any) (any, error) {
		for obj, byObject := range podcache.CacheOptions(nil, podcache.NewPodIndex(), nil, nil).ByObject {
			if _, ok := obj.(*corev1.Pod); ok {
				return byObject.Transform
			}
		}
		b.Fatal("no transform of cached pods")
		return nil
	}
	for _, c := range []struct {
		name     string
		template *corev1.PodTemplateSpec
	}{
		{name: "short-form"},
		{name: "realistic", template: realisticTemplate()},
	} {
		b.Run(c.name, func(b *testing.B) {
			const n = 5000
			raws := make([][]byte, n)
			for i := range raws {
				raws[i] = must(json.Marshal(runningPodFixture(c.template, i)))
			}
			// A pod of another PodSet.
			warmRaw := must(json.Marshal(runningPodFixture(c.template, n)))
			var perPod float64
			for b.Loop() {
				x := podcache.NewPodIndex()
				informer := x.NewInformer(nil, &corev1.Pod{}, 0, toolscache.Indexers{})
				store := informer.GetStore()
				transform := newTransform()
				// What the first pod costs once (the decoder's
				// caches of the types, the tables' first entries) is
				// not counted.
				decoded, _, err := decoder.Decode(warmRaw, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				warm, err := transform(decoded)
				if err != nil {
					b.Fatal(err)
				}
				var before, after runtime.MemStats
				settledHeap(&before)
				for _, raw := range raws {
					obj, _, err := decoder.Decode(raw, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					slim, err := transform(obj)
					if err != nil {
						b.Fatal(err)
					}
					if err := store.Add(slim); err != nil {
						b.Fatal(err)
					}
				}
				settledHeap(&after)
				if got := len(store.ListKeys()); got != n {
					b.Fatalf("the store holds %d pods, want %d", got, n)
				}
				runtime.KeepAlive(store)
				runtime.KeepAlive(warm)
				perPod = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
			}
			b.ReportMetric(perPod, "B/pod")
			b.ReportMetric(float64(len(raws[0])), "JSON-bytes")
		})
	}
}

// runningPodFixture is the i-th pod of PodSets of ten made from template
// (nil for the short form), as the API server returns it once the kubelet
// has started its containers and reported it Ready: fifty pods turn Ready
// in each second, as in the benchmark's memory scenario.
func runningPodFixture(template *corev1.PodTemplateSpec, i int) *corev1.Pod {
	ps := cachedPodSetFixture(template, false)
	ps.Name = fmt.Sprintf("shop-web-%05d", i/10)
	ps.UID = types.UID(fmt.Sprintf("0f3c7c2e-6a55-4c1e-9a55-%012d", i/10))
	if template != nil {
		ps.Spec.Template.Labels["app.kubernetes.io/instance"] = ps.Name
	}
	tmpl := revision.FromPodSet(ps)
	pod := operand.NewPod(ps, tmpl, "5d8f9c7b6", "registry.example.com/shop/web:1.4.2", operand.UserIDs{})
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.Name = fmt.Sprintf("%s%05x", pod.GenerateName, i)
	pod.UID = types.UID(fmt.Sprintf("7a1d2c3e-0b4f-4e6a-8c9d-%012d", i))
	pod.ResourceVersion = fmt.Sprint(100000 + 3*i)
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 20 * time.Millisecond)
	pod.CreationTimestamp = metav1.NewTime(created)
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: ps.Name, UID: ps.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	pod.Spec.NodeName = fmt.Sprintf("kwok-node-%d", i%10)
	started := metav1.NewTime(created.Add(time.Second).Truncate(time.Second))
	ready := metav1.NewTime(created.Add(2 * time.Second).Truncate(time.Second))
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
		HostIP: "10.0.0.1", HostIPs: []corev1.HostIP{{IP: "10.0.0.1"}},
		PodIP: fmt.Sprintf("10.244.%d.%d", i/250, i%250), StartTime: &started,
	}
	pod.Status.PodIPs = []corev1.PodIP{{IP: pod.Status.PodIP}}
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		at := ready
		if t == corev1.PodScheduled || t == corev1.PodInitialized {
			at = metav1.NewTime(created.Truncate(time.Second))
		}
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at})
	}
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image + "@sha256:5f2b9c1e0d8a7b6c5f4e3d2c1b0a99887766554433221100ffeeddccbbaa9988",
			ContainerID: fmt.Sprintf("containerd://%064x", i), Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		})
	}
	return pod
}
