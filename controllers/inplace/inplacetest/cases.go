// Package inplacetest holds the template changes that both inplace's table
// test and the admission policy's envtest run.
package inplacetest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
)

// Res is a template's resources from quantities written as strings.
func Res(requests, limits map[corev1.ResourceName]string) *appv1alpha1.Resources {
	r := &appv1alpha1.Resources{}
	for name, q := range requests {
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = resource.MustParse(q)
	}
	for name, q := range limits {
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = resource.MustParse(q)
	}
	return r
}

// The resource names the cases use.
const cpu, memory, storage = corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage

// ClassifyCases are template changes and what they take, for
// inplace.Classify's table test and for the envtest of the InPlaceOnly
// admission policy (internal/admission), which holds the policy to the same
// table.
var ClassifyCases = []struct {
	Name     string
	From, To revision.Template
	Want     inplace.Change
}{
	{"nothing", revision.Template{Image: "a:1"}, revision.Template{Image: "a:1"}, inplace.Change{}},
	{"image", revision.Template{Image: "a:1"}, revision.Template{Image: "a:2"}, inplace.Change{Image: true}},
	{"image with a command", revision.Template{Image: "a:1", Command: []string{"run"}}, revision.Template{Image: "b", Command: []string{"run"}}, inplace.Change{Image: true}},
	{
		"image set, from the default one that runs its own command",
		revision.Template{}, revision.Template{Image: "a:1"},
		inplace.Change{NotInPlace: "spec.image: setting or unsetting it changes the command the container runs"},
	},
	{
		"image set with the default command spelled out: the container runs the same command",
		revision.Template{}, revision.Template{Image: "a:1", Command: operand.DefaultCommand()},
		inplace.Change{Image: true},
	},
	{
		"the default command spelled out, then dropped: the same command",
		revision.Template{Command: operand.DefaultCommand()}, revision.Template{},
		inplace.Change{},
	},
	{"image set, with a command", revision.Template{Command: []string{"run"}}, revision.Template{Image: "a:1", Command: []string{"run"}}, inplace.Change{Image: true}},
	{"command", revision.Template{Command: []string{"a"}}, revision.Template{Command: []string{"b"}}, inplace.Change{NotInPlace: "spec.command"}},
	{"args", revision.Template{Args: []string{"a"}}, revision.Template{}, inplace.Change{NotInPlace: "spec.args"}},
	{"env", revision.Template{}, revision.Template{Env: []appv1alpha1.EnvVar{{Name: "A", Value: "1"}}}, inplace.Change{NotInPlace: "spec.env"}},
	{
		"env in another order: the same variables, as the API server compares them",
		revision.Template{Env: []appv1alpha1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}},
		revision.Template{Env: []appv1alpha1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}},
		inplace.Change{},
	},
	{
		"an empty value written out: the same variable",
		revision.Template{Env: []appv1alpha1.EnvVar{{Name: "A"}}},
		revision.Template{Env: []appv1alpha1.EnvVar{{Name: "A", Value: ""}}},
		inplace.Change{},
	},
	{
		"limits only, raised: the requests the API server filled in follow, and Guaranteed stays",
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "2", memory: "1Gi"})},
		inplace.Change{Resources: true},
	},
	{
		"resizePolicy", revision.Template{},
		revision.Template{ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: cpu, RestartPolicy: corev1.RestartContainer}}},
		inplace.Change{NotInPlace: "spec.resizePolicy"},
	},
	{"annotations", revision.Template{PodAnnotations: map[string]string{"a": "1"}}, revision.Template{PodAnnotations: map[string]string{"b": "2"}}, inplace.Change{Annotations: true}},
	{"an AppArmor annotation", revision.Template{PodAnnotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/podset": "runtime/default"}}, revision.Template{},
		inplace.Change{NotInPlace: "spec.podAnnotations[container.apparmor.security.beta.kubernetes.io/podset]: the AppArmor annotations of a running pod cannot change"}},
	{
		"the restart annotation asks for new pods",
		revision.Template{}, revision.Template{PodAnnotations: map[string]string{appv1alpha1.AnnotationRestartedAt: "now"}},
		inplace.Change{NotInPlace: "spec.podAnnotations[kubectl.kubernetes.io/restartedAt]: it asks for new pods"},
	},
	{
		"cpu and memory, Burstable stays Burstable",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", memory: "64Mi"}, nil)},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "200m", memory: "128Mi"}, map[corev1.ResourceName]string{memory: "256Mi"})},
		inplace.Change{Resources: true},
	},
	{
		"Guaranteed stays Guaranteed",
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "2", memory: "2Gi"})},
		inplace.Change{Resources: true},
	},
	{
		"Guaranteed to Burstable",
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "500m"}, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		inplace.Change{NotInPlace: "spec.resources: the QoS class would change from Guaranteed to Burstable"},
	},
	{
		"Guaranteed to a cpu request of 0: Burstable, as a zero request does not count",
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "0"}, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		inplace.Change{NotInPlace: "spec.resources: the QoS class would change from Guaranteed to Burstable"},
	},
	{
		"BestEffort to Burstable",
		revision.Template{}, revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, nil)},
		inplace.Change{NotInPlace: "spec.resources: the QoS class would change from BestEffort to Burstable"},
	},
	{
		"a request removed",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", memory: "64Mi"}, nil)},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, nil)},
		inplace.Change{NotInPlace: "spec.resources: memory cannot be removed in place"},
	},
	{
		"ephemeral-storage",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", storage: "1Gi"}, nil)},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", storage: "2Gi"}, nil)},
		inplace.Change{NotInPlace: "spec.resources: ephemeral-storage cannot change in place"},
	},
	{
		"requests equal to their limits dropped: the API server fills them in again, so nothing changes",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"}, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "1", memory: "1Gi"})},
		inplace.Change{},
	},
	{
		"a limit removed",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, map[corev1.ResourceName]string{memory: "256Mi"})},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", memory: "256Mi"}, nil)},
		inplace.Change{NotInPlace: "spec.resources: memory cannot be removed in place"},
	},
	{
		"a memory limit added, Burstable stays Burstable",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, nil)},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, map[corev1.ResourceName]string{memory: "256Mi"})},
		inplace.Change{Resources: true},
	},
	{
		"a memory request added to a cpu limit: Burstable stays Burstable, as memory is not limited",
		revision.Template{Resources: Res(nil, map[corev1.ResourceName]string{cpu: "1"})},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{memory: "1Gi"}, map[corev1.ResourceName]string{cpu: "1"})},
		inplace.Change{Resources: true},
	},
	{
		"ephemeral-storage written another way: the same quantity",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", storage: "1Gi"}, nil)},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m", storage: "1024Mi"}, nil)},
		inplace.Change{},
	},
	{
		"ephemeral-storage added",
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, nil)},
		revision.Template{Resources: Res(map[corev1.ResourceName]string{cpu: "100m"}, map[corev1.ResourceName]string{storage: "1Gi"})},
		inplace.Change{NotInPlace: "spec.resources: ephemeral-storage cannot be added in place"},
	},
	{
		"a resize that restarts, with the image",
		revision.Template{
			Image: "a:1", Resources: Res(map[corev1.ResourceName]string{memory: "64Mi"}, nil),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: memory, RestartPolicy: corev1.RestartContainer}},
		},
		revision.Template{
			Image: "a:2", Resources: Res(map[corev1.ResourceName]string{memory: "128Mi"}, nil),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: memory, RestartPolicy: corev1.RestartContainer}},
		},
		inplace.Change{Image: true, Resources: true, ResizeRestarts: true},
	},
	{
		"a resize of a resource whose policy does not restart",
		revision.Template{
			Resources:    Res(map[corev1.ResourceName]string{cpu: "100m", memory: "64Mi"}, nil),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: memory, RestartPolicy: corev1.RestartContainer}},
		},
		revision.Template{
			Resources:    Res(map[corev1.ResourceName]string{cpu: "200m", memory: "64Mi"}, nil),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: memory, RestartPolicy: corev1.RestartContainer}},
		},
		inplace.Change{Resources: true},
	},
}
