package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The operand both controllers run: what a PodSet without spec.image runs
// (operand.DefaultOperandImage and its default command), under the same
// restricted security context, so that admission, scheduling and the pod
// objects' size cost the same on both sides.
const (
	operandImage = "docker.io/library/busybox:1.37.0"
	operandUID   = int64(65532)
	// ownerLabel selects a ReplicaSet's pods (and a direct run's pods).
	ownerLabel = "bench.podset.example.com/owner"
)

// Parallel clients the benchmark uses to create owners, scale them and, in
// the direct run, create pods. High enough that issuing requests is never
// what a phase waits for: at 1000 owners, 32 in flight is well beyond what
// two cores of API server can serve at once.
const clientParallelism = 32

// podTemplate is the pod a PodSet creates, for the ReplicaSet and the direct
// client; labels are the caller's.
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:    "podset",
				Image:   operandImage,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(operandUID),
				RunAsGroup:     ptr.To(operandUID),
				FSGroup:        ptr.To(operandUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			RestartPolicy:                corev1.RestartPolicyAlways,
			AutomountServiceAccountToken: ptr.To(false),
			Volumes: []corev1.Volume{{
				Name:         "tmp",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
			}},
		},
	}
}

// parallel runs fn(0..n-1) on width goroutines (in order when width is 1)
// and returns the first error.
func parallel(ctx context.Context, n, width int, fn func(ctx context.Context, i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range max(1, min(n, width)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

func ownerName(i int) string { return fmt.Sprintf("o-%04d", i) }

// ownerDriver creates the owners of one phase and scales them, with width
// requests in flight.
type ownerDriver interface {
	create(ctx context.Context, ns string, owners, replicas, width int) error
	scale(ctx context.Context, ns string, owners, replicas, width int) error
}

type podSetDriver struct{ dc dynamic.Interface }

func (d podSetDriver) create(ctx context.Context, ns string, owners, replicas, width int) error {
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		ps := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "app.example.com/v1alpha1",
			"kind":       "PodSet",
			"metadata":   map[string]any{"name": ownerName(i), "namespace": ns},
			// No image: the operator's default operand, the same as the
			// ReplicaSets' template.
			"spec": map[string]any{"replicas": int64(replicas)},
		}}
		_, err := d.dc.Resource(podSetGVR).Namespace(ns).Create(ctx, ps, metav1.CreateOptions{})
		return err
	})
}

func (d podSetDriver) scale(ctx context.Context, ns string, owners, replicas, width int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		_, err := d.dc.Resource(podSetGVR).Namespace(ns).Patch(ctx, ownerName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

type replicaSetDriver struct{ cs kubernetes.Interface }

func (d replicaSetDriver) create(ctx context.Context, ns string, owners, replicas, width int) error {
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		labels := map[string]string{ownerLabel: ownerName(i)}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: ownerName(i), Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(int32(replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: podTemplate(labels),
			},
		}
		_, err := d.cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		return err
	})
}

func (d replicaSetDriver) scale(ctx context.Context, ns string, owners, replicas, width int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		_, err := d.cs.AppsV1().ReplicaSets(ns).Patch(ctx, ownerName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// createPodsDirectly is the physical limit: the same pods, created by a
// client with clientParallelism requests in flight and no controller.
func createPodsDirectly(ctx context.Context, cs kubernetes.Interface, ns, prefix string, pods int, extraLabels map[string]string) error {
	return parallel(ctx, pods, clientParallelism, func(ctx context.Context, i int) error {
		labels := map[string]string{ownerLabel: "direct"}
		for k, v := range extraLabels {
			labels[k] = v
		}
		pod := directPod(fmt.Sprintf("%s-%05d", prefix, i), labels)
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// createOwnedPodsDirectly creates s.owners ConfigMaps, each followed by its
// s.replicas pods (at once) with an ownerReference to it: what a controller
// with nothing to decide would send for shape s.
func createOwnedPodsDirectly(ctx context.Context, cs kubernetes.Interface, ns string, s shape) error {
	return parallel(ctx, s.owners, clientParallelism, func(ctx context.Context, i int) error {
		owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%05d", i)},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
		errs := make(chan error, s.replicas)
		for j := range s.replicas {
			go func() {
				pod := directPod(fmt.Sprintf("%s-%03d", owner.Name, j), map[string]string{ownerLabel: "direct"})
				pod.OwnerReferences = []metav1.OwnerReference{ref}
				_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				errs <- err
			}()
		}
		var first error
		for range s.replicas {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	})
}

// deletePodsDirectly deletes every other pod of createPodsDirectly's, half
// of them, all at once: the 500 deletes of a 1x1000 scale-down leave a
// controller in one step, and no controller can send them sooner.
func deletePodsDirectly(ctx context.Context, cs kubernetes.Interface, ns, prefix string, pods int) error {
	names := make([]string, 0, pods/2)
	for i := 0; i < pods/2; i++ {
		names = append(names, fmt.Sprintf("%s-%05d", prefix, 2*i))
	}
	return deleteAtOnce(ctx, cs, ns, names)
}

// deleteOwnedPodsDirectly writes to each of createOwnedPodsDirectly's owners
// (an annotation: the spec patch a controller would act on) and then deletes
// the pods a scale-down from replicas to replicas/2 deletes, at once,
// clientParallelism owners at a time.
func deleteOwnedPodsDirectly(ctx context.Context, cs kubernetes.Interface, ns string, s shape) error {
	patch := []byte(`{"metadata":{"annotations":{"bench.podset.example.com/scaled":"down"}}}`)
	return parallel(ctx, s.owners, clientParallelism, func(ctx context.Context, i int) error {
		owner := fmt.Sprintf("owner-%05d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, owner, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
		names := make([]string, 0, s.replicas-s.replicas/2)
		for j := 0; j < s.replicas-s.replicas/2; j++ {
			names = append(names, fmt.Sprintf("%s-%03d", owner, j))
		}
		return deleteAtOnce(ctx, cs, ns, names)
	})
}

// deleteAtOnce deletes the named pods, one request each, all in flight at
// once.
func deleteAtOnce(ctx context.Context, cs kubernetes.Interface, ns string, names []string) error {
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() { errs <- cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}) }()
	}
	var first error
	for range names {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// directPod is the benchmark's pod, named name, as a client without a
// controller creates it.
func directPod(name string, labels map[string]string) *corev1.Pod {
	tmpl := podTemplate(labels)
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = name
	return pod
}
