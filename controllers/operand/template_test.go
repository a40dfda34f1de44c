package operand

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

const managerDefaultImage = "registry.example.com/operand@sha256:0123"

func TestNewPodMetadata(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(3)

	ps.Spec.PodAnnotations = map[string]string{"example.com/team": "web"}

	pod := NewPod(ps, revision.FromPodSet(ps), "abc123", managerDefaultImage, OperatorPicksIDs)

	want := Labels(ps)
	want[appv1alpha1.LabelRevisionHash] = "abc123"
	g.Expect(pod.Labels).To(Equal(want))
	g.Expect(pod.Annotations).To(Equal(map[string]string{"example.com/team": "web"}))
	ps.Spec.PodAnnotations["example.com/team"] = "changed"
	g.Expect(pod.Annotations).To(HaveKeyWithValue("example.com/team", "web"), "the pod must not share the PodSet's map")
	g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelPodSet, "web"))
	g.Expect(Selector(ps).Matches(labels.Set(pod.Labels))).To(BeTrue())
	g.Expect(ManagedSelector().Matches(labels.Set(pod.Labels))).To(BeTrue(),
		"the manager caches only pods its selector matches")
	g.Expect(pod.GenerateName).To(Equal("web-"))
	g.Expect(pod.Name).To(BeEmpty())
	g.Expect(pod.Namespace).To(Equal(operandtest.Namespace))
	g.Expect(pod.OwnerReferences).To(BeEmpty(), "the caller sets the controller reference")
}

func TestNewPodImageAndCommand(t *testing.T) {
	tests := []struct {
		name         string
		image        string
		command      []string
		defaultImage string
		wantImage    string
		wantCommand  []string
	}{
		{
			name:         "neither: the default image sleeps",
			defaultImage: managerDefaultImage,
			wantImage:    managerDefaultImage,
			wantCommand:  []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
		},
		{
			name:        "neither, and no manager default: the built-in image sleeps",
			wantImage:   DefaultOperandImage,
			wantCommand: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
		},
		{
			name:         "image only: its own entrypoint",
			image:        "quay.io/example/app:2",
			defaultImage: managerDefaultImage,
			wantImage:    "quay.io/example/app:2",
			wantCommand:  nil,
		},
		{
			name:         "command only: run by the default image",
			command:      []string{"/bin/sh", "-c", "echo hi"},
			defaultImage: managerDefaultImage,
			wantImage:    managerDefaultImage,
			wantCommand:  []string{"/bin/sh", "-c", "echo hi"},
		},
		{
			name:        "command only, and no manager default",
			command:     []string{"/bin/true"},
			wantImage:   DefaultOperandImage,
			wantCommand: []string{"/bin/true"},
		},
		{
			name:         "both",
			image:        "quay.io/example/app:2",
			command:      []string{"/app", "serve"},
			defaultImage: managerDefaultImage,
			wantImage:    "quay.io/example/app:2",
			wantCommand:  []string{"/app", "serve"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(1)
			ps.Spec.Image = tt.image
			ps.Spec.Command = tt.command

			pod := newPodFromSpec(ps, tt.defaultImage)

			g.Expect(pod.Spec.Containers).To(HaveLen(1))
			c := pod.Spec.Containers[0]
			g.Expect(c.Image).To(Equal(tt.wantImage))
			if tt.wantCommand == nil {
				g.Expect(c.Command).To(BeNil())
			} else {
				g.Expect(c.Command).To(Equal(tt.wantCommand))
			}
		})
	}
}

func TestNewPodCopiesEnvArgsAndResources(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(1)
	ps.Spec.Args = []string{"--port", "8080"}
	ps.Spec.Env = []appv1alpha1.EnvVar{{Name: "A", Value: "1"}, {Name: "EMPTY"}}
	ps.Spec.Resources = &appv1alpha1.Resources{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}

	pod := newPodFromSpec(ps, managerDefaultImage)

	c := pod.Spec.Containers[0]
	g.Expect(c.Args).To(Equal([]string{"--port", "8080"}))
	g.Expect(c.Env).To(Equal([]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "EMPTY"}}))
	g.Expect(c.Resources.Requests).To(HaveLen(1))
	g.Expect(c.Resources.Requests.Cpu().Equal(resource.MustParse("100m"))).To(BeTrue())
	g.Expect(c.Resources.Limits).To(HaveLen(1))
	g.Expect(c.Resources.Limits.Memory().Equal(resource.MustParse("64Mi"))).To(BeTrue())

	ps.Spec.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
	ps.Spec.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
	g.Expect(c.Resources.Requests).NotTo(HaveKey(corev1.ResourceMemory), "requests must be a copy, not the PodSet's map")
	g.Expect(c.Resources.Limits).NotTo(HaveKey(corev1.ResourceCPU), "limits must be a copy, not the PodSet's map")
}

func TestNewPodWithoutEnvOrResources(t *testing.T) {
	g := NewWithT(t)

	c := newPodFromSpec(operandtest.PodSet(1), managerDefaultImage).Spec.Containers[0]

	g.Expect(c.Env).To(BeNil())
	g.Expect(c.Args).To(BeNil())
	g.Expect(c.Resources.Requests).To(BeNil())
	g.Expect(c.Resources.Limits).To(BeNil())
}

func TestNewPodRunsUnderTheRestrictedProfile(t *testing.T) {
	g := NewWithT(t)
	ps := operandtest.PodSet(1)

	pod := newPodFromSpec(ps, managerDefaultImage)

	psc := pod.Spec.SecurityContext
	g.Expect(psc).NotTo(BeNil())
	g.Expect(psc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(psc.RunAsUser).To(HaveValue(BeNumerically(">", 0)))
	g.Expect(psc.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))
	g.Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))

	g.Expect(pod.Spec.Containers).To(HaveLen(1))
	csc := pod.Spec.Containers[0].SecurityContext
	g.Expect(csc).NotTo(BeNil())
	g.Expect(csc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(csc.Capabilities).NotTo(BeNil())
	g.Expect(csc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(csc.Capabilities.Add).To(BeEmpty())
	g.Expect(csc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(csc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))
	g.Expect(csc.RunAsNonRoot).To(Or(BeNil(), HaveValue(BeTrue())), "must not override the pod's runAsNonRoot")
	g.Expect(csc.RunAsUser).To(Or(BeNil(), HaveValue(BeNumerically(">", 0))), "must not override the pod's runAsUser")
}

// The field checks above say what the profile is meant to be; this asks the
// admission plugin's own code whether it is enough, for every kind of spec.
func TestNewPodPassesPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}

	tests := []struct {
		name   string
		mutate func(*appv1alpha1.PodSet)
	}{
		{name: "defaults", mutate: func(*appv1alpha1.PodSet) {}},
		{name: "image and command", mutate: func(ps *appv1alpha1.PodSet) {
			ps.Spec.Image = "quay.io/example/app:2"
			ps.Spec.Command = []string{"/app"}
		}},
		{name: "everything", mutate: func(ps *appv1alpha1.PodSet) {
			ps.Spec.Image = "quay.io/example/app:2"
			ps.Spec.Command = []string{"/app"}
			ps.Spec.Args = []string{"serve"}
			ps.Spec.Env = []appv1alpha1.EnvVar{{Name: "A", Value: "1"}}
			ps.Spec.Resources = &appv1alpha1.Resources{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(1)
			tt.mutate(ps)

			pod := newPodFromSpec(ps, managerDefaultImage)

			results := evaluator.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec)
			g.Expect(results).NotTo(BeEmpty())
			for _, r := range results {
				g.Expect(r.Allowed).To(BeTrue(), "%s: %s", r.ForbiddenReason, r.ForbiddenDetail)
			}
		})
	}
}

// newPodFromSpec builds a pod from ps's spec, as the reconciler does for its
// update revision.
func newPodFromSpec(ps *appv1alpha1.PodSet, defaultImage string) *corev1.Pod {
	return NewPod(ps, revision.FromPodSet(ps), revision.Hash(revision.FromPodSet(ps), nil), defaultImage, OperatorPicksIDs)
}

// A pod of an earlier operator runs the default operand's former command
// (`sleep 3600`): it is still the default template's pod, and only that
// template's.
func TestMatchesTemplateKnowsTheFormerDefaultCommand(t *testing.T) {
	g := NewWithT(t)
	ps := &appv1alpha1.PodSet{}
	ps.Name, ps.Namespace = "web", "default"
	pod := NewPod(ps, revision.Template{}, "h", managerDefaultImage, OperatorPicksIDs)
	g.Expect(MatchesTemplate(slimpod.From(pod), revision.Template{}, managerDefaultImage)).To(BeTrue())

	pod.Spec.Containers[0].Command = []string{"sleep", "3600"}
	g.Expect(MatchesTemplate(slimpod.From(pod), revision.Template{}, managerDefaultImage)).To(BeTrue(), "the former default command")
	g.Expect(MatchesTemplate(slimpod.From(pod), revision.Template{Command: []string{"sleep", "60"}}, managerDefaultImage)).To(BeFalse())

	pod.Spec.Containers[0].Command = []string{"sleep", "infinity"}
	g.Expect(MatchesTemplate(slimpod.From(pod), revision.Template{}, managerDefaultImage)).To(BeFalse())
}
