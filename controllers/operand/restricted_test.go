package operand

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
)

// webTemplate is a pod template of the kind charts ship: two containers,
// a probe on a named port, a ConfigMap volume, a preStop hook, labels of
// its own, and no security context at all.
func webTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			appv1alpha1.LabelName:     "web",
			appv1alpha1.LabelInstance: "shop",
			"tier":                    "frontend",
		}, Annotations: map[string]string{"prometheus.io/scrape": "true"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](20),
			Containers: []corev1.Container{
				{
					Name:  "web",
					Image: "registry.example.com/web:1.4",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
					}},
					Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
						Sleep: &corev1.SleepAction{Seconds: 5},
					}},
					VolumeMounts: []corev1.VolumeMount{{Name: "content", MountPath: "/srv"}},
				},
				{Name: "metrics", Image: "registry.example.com/exporter:0.9"},
			},
			Volumes: []corev1.Volume{{Name: "content", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-content"}},
			}}},
		},
	}
}

func templatePodSet(pts *corev1.PodTemplateSpec) *appv1alpha1.PodSet {
	ps := operandtest.PodSet(2)
	ps.Spec.Template = pts
	return ps
}

func TestNewPodFromATemplateMeetsRestrictedAndAddsNothingElse(t *testing.T) {
	g := NewWithT(t)
	ps := templatePodSet(webTemplate())
	tmpl := TemplateOf(ps)
	g.Expect(tmpl.IsShortForm()).To(BeFalse())

	pod := NewPod(ps, tmpl, "h1", managerDefaultImage, OperatorPicksIDs)

	g.Expect(RestrictedRefusal(pod)).To(BeEmpty())
	psc := pod.Spec.SecurityContext
	g.Expect(psc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(psc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	g.Expect(psc.RunAsUser).To(BeNil(), "an image's own non-root USER must keep working")
	g.Expect(psc.FSGroup).To(BeNil())
	for _, c := range pod.Spec.Containers {
		g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(BeNil(), "a read-only root belongs to the short form's pod")
		g.Expect(c.VolumeMounts).NotTo(ContainElement(HaveField("MountPath", "/tmp")))
	}
	g.Expect(pod.Spec.Volumes).To(HaveLen(1))
	g.Expect(pod.Spec.AutomountServiceAccountToken).To(BeNil())
	g.Expect(pod.Spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds).To(BeEquivalentTo(5))
	g.Expect(ps.Spec.Template.Spec.SecurityContext).To(BeNil(), "the PodSet's template must not be written to")

	g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelName, "web"), "the template's own name label wins")
	g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelInstance, "shop"))
	g.Expect(pod.Labels).To(HaveKeyWithValue("tier", "frontend"))
	g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelManagedBy, appv1alpha1.ManagedByValue))
	g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelRevisionHash, "h1"))
	g.Expect(Selector(ps).Matches(labels.Set(pod.Labels))).To(BeTrue())
	g.Expect(ManagedSelector().Matches(labels.Set(pod.Labels))).To(BeTrue())
	g.Expect(pod.Annotations).To(Equal(map[string]string{"prometheus.io/scrape": "true"}))
}

func TestNewPodFromATemplateKeepsTheUsersSettings(t *testing.T) {
	g := NewWithT(t)
	pts := webTemplate()
	pts.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("web.json")}}
	pts.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	pts.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	ps := templatePodSet(pts)
	ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{PodUpdatePolicy: appv1alpha1.InPlaceIfPossiblePodUpdatePolicy}

	pod := NewPod(ps, TemplateOf(ps), "h1", managerDefaultImage, OperatorPicksIDs)

	g.Expect(RestrictedRefusal(pod)).To(BeEmpty())
	g.Expect(pod.Spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(1000)))
	g.Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeLocalhost))
	caps := pod.Spec.Containers[0].SecurityContext.Capabilities
	g.Expect(caps.Add).To(ConsistOf(corev1.Capability("NET_BIND_SERVICE")))
	g.Expect(caps.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(pod.Spec.ReadinessGates).To(ConsistOf(
		corev1.PodReadinessGate{ConditionType: "example.com/ready"},
		corev1.PodReadinessGate{ConditionType: appv1alpha1.PodConditionInPlaceUpdateReady}))
}

// A setting that breaks the profile is never overridden: the pod is
// refused, in the Pod Security admission's own words, naming the field.
func TestRestrictedRefusalNamesWhatBreaksTheProfile(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   string
	}{
		{"privileged", func(s *corev1.PodSpec) {
			s.Containers[1].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, `privileged`},
		{"host network", func(s *corev1.PodSpec) { s.HostNetwork = true }, "hostNetwork=true"},
		{"root", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
		}, "runAsUser=0"},
		{"runAsNonRoot false", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}
		}, "runAsNonRoot"},
		{"an added capability", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}, "NET_ADMIN"},
		{"a drop list without ALL", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}
		}, `drop=["ALL"]`},
		{"Unconfined seccomp", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}, "Unconfined"},
		{"hostPath", func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, "hostPath"},
		{"an unsafe sysctl", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
		}, "kernel.msgmax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pts := webTemplate()
			tt.mutate(&pts.Spec)
			ps := templatePodSet(pts)
			g.Expect(RestrictedRefusal(NewPod(ps, TemplateOf(ps), "h", "", OperatorPicksIDs))).To(ContainSubstring(tt.want))
		})
	}
}

// The short form stands for one pod template; that template, written out,
// is the same revision, so a PodSet moved between the forms keeps its pods.
func TestTheTemplateOfAShortFormIsTheSameRevision(t *testing.T) {
	shortForms := []revision.Template{
		{Image: "app:1"},
		{Image: "app:1", Command: []string{"/app"}, Args: []string{"serve"}, Env: []appv1alpha1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}}},
		{Image: "app:1", Resources: &appv1alpha1.Resources{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		}, PodAnnotations: map[string]string{"a": "b"}, ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}},
	}
	for _, short := range shortForms {
		g := NewWithT(t)
		pts := PodTemplate(short, "")
		written := revision.Template{Template: revision.NormalizePodTemplate(&pts)}
		canonical := Canonical(written)
		g.Expect(canonical.IsShortForm()).To(BeTrue(), "%+v", short)
		g.Expect(revision.Hash(canonical, nil)).To(Equal(revision.Hash(short, nil)))
		g.Expect(revision.SameTemplate(canonical, short)).To(BeTrue())

		// Anything the short form cannot say makes it a template of
		// its own.
		for _, change := range []func(*corev1.PodTemplateSpec){
			func(p *corev1.PodTemplateSpec) { p.Labels = map[string]string{"tier": "web"} },
			func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Name = "app" },
			func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = nil },
			func(p *corev1.PodTemplateSpec) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} },
			func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "P", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
			},
		} {
			other := PodTemplate(short, "")
			change(&other)
			g.Expect(Canonical(revision.Template{Template: &other}).IsShortForm()).To(BeFalse())
		}
	}
	// The short form without an image runs the operator's default image,
	// which may change with the operator: a template that names today's is
	// the short form that names it, another revision.
	pts := PodTemplate(revision.Template{}, managerDefaultImage)
	canonical := Canonical(revision.Template{Template: &pts})
	NewWithT(t).Expect(canonical.Image).To(Equal(managerDefaultImage))
	NewWithT(t).Expect(revision.SameTemplate(canonical, revision.Template{})).To(BeFalse())
}
