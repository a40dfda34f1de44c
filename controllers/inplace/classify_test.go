package inplace_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/inplace/inplacetest"
	"github.com/example/podset-operator/controllers/revision"
)

func TestClassify(t *testing.T) {
	for _, tc := range inplacetest.ClassifyCases {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			got := inplace.Classify(tc.From, tc.To, "default:1")
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
	g.Expect(inplace.Classify(from, revision.Template{Template: pts()}, "").None()).To(BeTrue())

	to := revision.Template{Template: pts()}
	to.Template.Spec.Containers[1].Ports[0].ContainerPort = 9101
	c := inplace.Classify(from, to, "")
	g.Expect(c.InPlace()).To(BeFalse())
	g.Expect(c.NotInPlace).To(HavePrefix("spec.template.spec.containers[1].ports[0].containerPort: "))

	to = revision.Template{Template: pts()}
	to.Template.Annotations = map[string]string{"example.com/team": "web"}
	g.Expect(inplace.Classify(from, to, "").NotInPlace).To(HavePrefix("spec.template.metadata.annotations: "))

	// From the short form to a template of its own.
	g.Expect(inplace.Classify(revision.Template{Image: "web:1"}, from, "").NotInPlace).To(HavePrefix("spec.template.spec.automountServiceAccountToken: "))
}
