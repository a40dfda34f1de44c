package inplace_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/inplace/inplacetest"
	"github.com/example/podset-operator/controllers/revision"
)

func TestClassify(t *testing.T) {
	for _, tc := range inplacetest.ClassifyCases {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			got := inplace.Classify(tc.From, tc.To, "default:1", inplace.ServerRules{})
			g.Expect(got).To(Equal(tc.Want))
			g.Expect(got.InPlace()).To(Equal(tc.Want.NotInPlace == ""))
			g.Expect(got.Restarts()).To(Equal(tc.Want.Image || tc.Want.ResizeRestarts))
		})
	}
}

func TestQOSClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *appv1alpha1.Resources
		want corev1.PodQOSClass
	}{
		{"nothing", nil, corev1.PodQOSBestEffort},
		{"only ephemeral-storage", inplacetest.Res(map[corev1.ResourceName]string{corev1.ResourceEphemeralStorage: "1Gi"}, nil), corev1.PodQOSBestEffort},
		{"zero requests", inplacetest.Res(map[corev1.ResourceName]string{corev1.ResourceCPU: "0"}, nil), corev1.PodQOSBestEffort},
		{"a request", inplacetest.Res(map[corev1.ResourceName]string{corev1.ResourceCPU: "1"}, nil), corev1.PodQOSBurstable},
		{"limits only: requests default to them", inplacetest.Res(nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1Gi"}), corev1.PodQOSGuaranteed},
		{"requests equal limits", inplacetest.Res(map[corev1.ResourceName]string{corev1.ResourceCPU: "1000m", corev1.ResourceMemory: "1Gi"}, map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1024Mi"}), corev1.PodQOSGuaranteed},
		{"a request below its limit", inplacetest.Res(map[corev1.ResourceName]string{corev1.ResourceCPU: "500m"}, map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1Gi"}), corev1.PodQOSBurstable},
		{"a zero request beside its limit does not count: Burstable", inplacetest.Res(map[corev1.ResourceName]string{corev1.ResourceCPU: "0"}, map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1Gi"}), corev1.PodQOSBurstable},
		{"memory unlimited", inplacetest.Res(nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "1"}), corev1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r corev1.ResourceRequirements
			if tc.r != nil {
				r = corev1.ResourceRequirements{Requests: tc.r.Requests, Limits: tc.r.Limits}
			}
			NewWithT(t).Expect(inplace.QOSClass(r)).To(Equal(tc.want))
		})
	}
}

func TestATemplateChangeNamesTheFirstFieldThatDiffers(t *testing.T) {
	g := NewWithT(t)
	pts := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "web", Image: "web:1"},
			{Name: "metrics", Image: "exporter:1", Ports: []corev1.ContainerPort{{ContainerPort: 9100}}},
		}}}
	}
	from := revision.Template{Template: pts()}
	g.Expect(inplace.Classify(from, revision.Template{Template: pts()}, "", inplace.ServerRules{}).None()).To(BeTrue())

	to := revision.Template{Template: pts()}
	to.Template.Spec.Containers[1].Ports[0].ContainerPort = 9101
	c := inplace.Classify(from, to, "", inplace.ServerRules{})
	g.Expect(c.InPlace()).To(BeFalse())
	g.Expect(c.NotInPlace).To(HavePrefix("spec.template.spec.containers[1].ports[0].containerPort: "))

	to = revision.Template{Template: pts()}
	to.Template.Annotations = map[string]string{appv1alpha1.AnnotationRestartedAt: "now"}
	g.Expect(inplace.Classify(from, to, "", inplace.ServerRules{}).NotInPlace).To(HavePrefix("spec.template.metadata.annotations[kubectl.kubernetes.io/restartedAt]: "))

	// From the short form to a template of its own.
	g.Expect(inplace.Classify(revision.Template{Image: "web:1"}, from, "", inplace.ServerRules{}).NotInPlace).To(HavePrefix("spec.template.spec.automountServiceAccountToken: "))
}

// As CloneSet: any container's image, any container's cpu and memory, and
// the pod's labels and annotations change in place; the rest does not.
func TestTemplateChangesInPlace(t *testing.T) {
	pts := func(mutate func(*corev1.PodTemplateSpec)) revision.Template {
		p := &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
				Containers: []corev1.Container{
					{Name: "web", Image: "web:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
					{Name: "metrics", Image: "exporter:1", ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
				},
			},
		}
		if mutate != nil {
			mutate(p)
		}
		return revision.Template{Template: p}
	}
	from := pts(nil)
	tests := []struct {
		name   string
		mutate func(*corev1.PodTemplateSpec)
		want   inplace.Change
	}{
		{"the second container's image", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Image = "exporter:2" },
			inplace.Change{Image: true, Containers: []inplace.ContainerChange{{Name: "metrics", Image: "exporter:2", Restarts: true}}}},
		{"labels and annotations", func(p *corev1.PodTemplateSpec) {
			p.Labels["tier"] = "front"
			p.Annotations = map[string]string{"team": "a"}
		}, inplace.Change{Labels: true, Annotations: true}},
		{"cpu of the first container", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}, inplace.Change{Resources: true, Containers: []inplace.ContainerChange{{Name: "web",
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}}}}},
		{"memory whose resizePolicy restarts", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}, inplace.Change{Resources: true, ResizeRestarts: true, Containers: []inplace.ContainerChange{{Name: "metrics", Restarts: true,
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}},
		{"a port", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 9100}}
		},
			inplace.Change{NotInPlace: "spec.template.spec.containers[1].ports: cannot change in place"}},
		{"a sidecar's image", func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[0].Image = "proxy:2" },
			inplace.Change{NotInPlace: "spec.template.spec.initContainers[0].image: cannot change in place"}},
		{"a removed request", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} },
			inplace.Change{NotInPlace: "spec.template.spec.containers[0].resources: cpu cannot be removed in place"}},
		{"a container added", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "x", Image: "x"})
		},
			inplace.Change{NotInPlace: "spec.template.spec.containers: cannot change in place"}},
		{"an image to the operand image, whose user the operator picks", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[1].Image = "docker.io/library/busybox:1.37.0"
		},
			inplace.Change{NotInPlace: "spec.template.spec.containers[1].image: the operator's operand image and other images run as different users (the pod sets none), and a running container keeps its user"}},
		{"an image to the operand image with a user of its own", func(p *corev1.PodTemplateSpec) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
			p.Spec.Containers[1].Image = "docker.io/library/busybox:1.37.0"
		},
			inplace.Change{NotInPlace: "spec.template.spec.securityContext: cannot change in place"}},
		{"a toleration", func(p *corev1.PodTemplateSpec) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		},
			inplace.Change{NotInPlace: "spec.template.spec.tolerations: cannot change in place"}},
	}
	// The operand image from one tag to another keeps its user: in place.
	operandFrom := pts(func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Image = "docker.io/library/busybox:1.36.1" })
	got := inplace.Classify(operandFrom, pts(func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Image = "docker.io/library/busybox:1.37.0" }), "", inplace.ServerRules{})
	NewWithT(t).Expect(got.NotInPlace).To(BeEmpty())
	NewWithT(t).Expect(got.Image).To(BeTrue())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := inplace.Classify(from, pts(tt.mutate), "", inplace.ServerRules{})
			g.Expect(got.NotInPlace).To(Equal(tt.want.NotInPlace))
			g.Expect(got.Image).To(Equal(tt.want.Image))
			g.Expect(got.Resources).To(Equal(tt.want.Resources))
			g.Expect(got.ResizeRestarts).To(Equal(tt.want.ResizeRestarts))
			g.Expect(got.Labels).To(Equal(tt.want.Labels))
			g.Expect(got.Annotations).To(Equal(tt.want.Annotations))
			g.Expect(got.Containers).To(HaveLen(len(tt.want.Containers)))
			for i, w := range tt.want.Containers {
				c := got.Containers[i]
				g.Expect(c.Name).To(Equal(w.Name))
				g.Expect(c.Image).To(Equal(w.Image))
				g.Expect(c.Restarts).To(Equal(w.Restarts))
				if w.Resources == nil {
					g.Expect(c.Resources).To(BeNil())
				} else {
					g.Expect(c.Resources).NotTo(BeNil())
					g.Expect(equality.Semantic.DeepEqual(*c.Resources, *w.Resources)).To(BeTrue(), "%v", c.Resources)
				}
			}
		})
	}
}

func TestPodQOSClass(t *testing.T) {
	g := NewWithT(t)
	guaranteed := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	burstable := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	spec := func(rs ...corev1.ResourceRequirements) *corev1.PodSpec {
		s := &corev1.PodSpec{}
		for _, r := range rs {
			s.Containers = append(s.Containers, corev1.Container{Resources: r})
		}
		return s
	}
	g.Expect(inplace.PodQOSClass(spec(guaranteed, guaranteed))).To(Equal(corev1.PodQOSGuaranteed))
	g.Expect(inplace.PodQOSClass(spec(guaranteed, corev1.ResourceRequirements{}))).To(Equal(corev1.PodQOSBurstable))
	g.Expect(inplace.PodQOSClass(spec(corev1.ResourceRequirements{}, corev1.ResourceRequirements{}))).To(Equal(corev1.PodQOSBestEffort))
	g.Expect(inplace.PodQOSClass(spec(burstable, guaranteed))).To(Equal(corev1.PodQOSBurstable))
}

// The QoS class is the pod's: a request added to one container of a
// BestEffort pod makes it Burstable, which no resize may.
func TestTemplateResizeKeepsThePodsQOSClass(t *testing.T) {
	g := NewWithT(t)
	pts := func(r corev1.ResourceRequirements) revision.Template {
		return revision.Template{Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Image: "a"}, {Name: "b", Image: "b", Resources: r},
		}}}}
	}
	c := inplace.Classify(pts(corev1.ResourceRequirements{}), pts(corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}), "", inplace.ServerRules{})
	g.Expect(c.NotInPlace).To(Equal("spec.template.spec.containers: the QoS class would change from BestEffort to Burstable"))
}
