package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
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

// podSetDriver writes PodSets. With no template they take the short form
// with no image: the operator's default operand, the same as the
// ReplicaSets' template.
type podSetDriver struct {
	dc       dynamic.Interface
	template *corev1.PodTemplateSpec
	// distinct, with a template, labels each PodSet's template with its
	// own release (instanceLabel), as a chart installed once per
	// application does: no two PodSets then hold the same template, and
	// the operator cannot share one copy among them.
	distinct bool
}

// instanceLabel is the label a chart sets to its release's name.
const instanceLabel = "app.kubernetes.io/instance"

func (d podSetDriver) create(ctx context.Context, ns string, owners, replicas, width int) error {
	spec := map[string]any{"replicas": int64(replicas)}
	if d.template != nil {
		t, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d.template)
		if err != nil {
			return err
		}
		spec["template"] = t
	}
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		ps := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "app.example.com/v1alpha1",
			"kind":       "PodSet",
			"metadata":   map[string]any{"name": ownerName(i), "namespace": ns},
			"spec":       runtime.DeepCopyJSONValue(spec),
		}}
		if d.template != nil && d.distinct {
			if err := unstructured.SetNestedField(ps.Object, ownerName(i), "spec", "template", "metadata", "labels", instanceLabel); err != nil {
				return err
			}
		}
		_, err := d.dc.Resource(podSetGVR).Namespace(ns).Create(ctx, ps, metav1.CreateOptions{})
		return err
	})
}

// realisticTemplate is a pod template of the size a chart's web service
// ships: an application and a log-shipping sidecar, both with probes,
// ports, resources and mounts; env from a ConfigMap and the downward API;
// a ConfigMap, an emptyDir and a projected volume; a preStop hook; the
// chart's labels and a config checksum. It says nothing of security: the
// operator fills what the restricted profile needs. The memory scenario
// with -rss-template realistic measures what such templates cost the
// operator beside their pods.
func realisticTemplate() *corev1.PodTemplateSpec {
	probe := func(path, port string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(port)}},
			PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 2,
		}
	}
	resources := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				"app.kubernetes.io/name": "shop", "app.kubernetes.io/component": "web",
				"app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "1.4.2",
			},
			Annotations: map[string]string{
				"checksum/config":      "5f2b9c1e0d8a7b6c5f4e3d2c1b0a99887766554433221100ffeeddccbbaa9988",
				"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
			},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example.com/shop/web:1.4.2",
				Args:  []string{"--config=/etc/shop/config.yaml", "--listen=:8080", "--metrics=:9090"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "shop-env"}, Optional: ptr.To(true),
				}}},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
				},
				ReadinessProbe: probe("/ready", "http"),
				LivenessProbe:  probe("/healthz", "http"),
				StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, FailureThreshold: 30},
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}}},
				Resources:      resources("250m", "256Mi"),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/shop", ReadOnly: true},
					{Name: "cache", MountPath: "/var/cache/shop"},
					{Name: "podinfo", MountPath: "/etc/podinfo", ReadOnly: true},
				},
			}, {
				Name:           "log-shipper",
				Image:          "registry.example.com/shop/log-shipper:0.9.1",
				Args:           []string{"--input=/var/cache/shop/logs", "--output=http://logs.observability:9880"},
				Ports:          []corev1.ContainerPort{{Name: "shipper", ContainerPort: 2020}},
				ReadinessProbe: probe("/api/v1/health", "shipper"),
				LivenessProbe:  probe("/api/v1/health", "shipper"),
				Resources:      resources("50m", "64Mi"),
				VolumeMounts:   []corev1.VolumeMount{{Name: "cache", MountPath: "/var/cache/shop", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}, Optional: ptr.To(true),
				}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
				{Name: "podinfo", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
						{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
					}}},
				}}}},
			},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "shop"}},
			}},
		},
	}
}

// sampleTemplate is the pod template of the sample PodSet at path
// (config/samples), the template users start from.
func sampleTemplate(path string) (*corev1.PodTemplateSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the sample: %w", err)
	}
	var ps appv1alpha1.PodSet
	if err := yaml.UnmarshalStrict(data, &ps); err != nil {
		return nil, fmt.Errorf("reading the sample %s: %w", path, err)
	}
	if ps.Spec.Template == nil {
		return nil, fmt.Errorf("the sample %s has no spec.template", path)
	}
	return ps.Spec.Template, nil
}

// renderedTemplate is the pod template of a ReplicaSet whose pods are those
// the operator makes of a PodSet with template: its pod spec and
// annotations as operand.NewPod renders them (the restricted profile's
// fields, the operand image's user, the operator's defaults), and the
// template's own labels with the caller's. The operator's labels stay off:
// its informer would hold the ReplicaSet's pods too.
func renderedTemplate(template *corev1.PodTemplateSpec, labels map[string]string) corev1.PodTemplateSpec {
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "bench"},
		Spec:       appv1alpha1.PodSetSpec{Template: template.DeepCopy()},
	}
	pod := operand.NewPod(ps, operand.TemplateOf(ps), "bench", operandImage, operand.OperatorPicksIDs)
	merged := map[string]string{}
	for k, v := range template.Labels {
		merged[k] = v
	}
	for k, v := range labels {
		merged[k] = v
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: merged, Annotations: pod.Annotations},
		Spec:       pod.Spec,
	}
}

func (d podSetDriver) scale(ctx context.Context, ns string, owners, replicas, width int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		_, err := d.dc.Resource(podSetGVR).Namespace(ns).Patch(ctx, ownerName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// replicaSetDriver writes ReplicaSets whose pods are the PodSets' pods:
// with no template the short form's (podTemplate), otherwise template as
// the operator renders it (renderedTemplate).
type replicaSetDriver struct {
	cs       kubernetes.Interface
	template *corev1.PodTemplateSpec
}

func (d replicaSetDriver) create(ctx context.Context, ns string, owners, replicas, width int) error {
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		labels := map[string]string{ownerLabel: ownerName(i)}
		tmpl := ownerPodTemplate(labels, d.template)
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: ownerName(i), Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(int32(replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: tmpl,
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
func createPodsDirectly(ctx context.Context, cs kubernetes.Interface, ns, prefix string, pods int, template *corev1.PodTemplateSpec) error {
	tmpl := ownerPodTemplate(map[string]string{ownerLabel: "direct"}, template)
	return parallel(ctx, pods, clientParallelism, func(ctx context.Context, i int) error {
		pod := directPod(fmt.Sprintf("%s-%05d", prefix, i), tmpl)
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// createOwnedPodsDirectly creates s.owners ConfigMaps, each followed by its
// s.replicas pods (at once) with an ownerReference to it: what a controller
// with nothing to decide would send for shape s.
func createOwnedPodsDirectly(ctx context.Context, cs kubernetes.Interface, ns string, s shape, template *corev1.PodTemplateSpec) error {
	tmpl := ownerPodTemplate(map[string]string{ownerLabel: "direct"}, template)
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
				pod := directPod(fmt.Sprintf("%s-%03d", owner.Name, j), tmpl)
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

// ownerPodTemplate is the pod template of the ReplicaSets', the
// Deployments' and the direct client's pods: with no template the short
// form's (podTemplate), otherwise template as the operator renders it
// (renderedTemplate), the pods a PodSet of the same template makes.
func ownerPodTemplate(labels map[string]string, template *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	if template != nil {
		return renderedTemplate(template, labels)
	}
	return podTemplate(labels)
}

// directPod is the benchmark's pod of tmpl, named name, as a client without
// a controller creates it.
func directPod(name string, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	tmpl = *tmpl.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = name
	return pod
}
