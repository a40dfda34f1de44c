package operand

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

// Restrict fills in, where spec leaves them unset, the settings that the Pod
// Security Standard "restricted" needs and that no image can supply:
// runAsNonRoot and the RuntimeDefault seccomp profile for the pod, and for
// every container no privilege escalation and all capabilities dropped.
// It sets nothing else (no user id, no read-only root: an image's own
// non-root USER keeps working), and never overrides what spec sets: a
// setting that breaks the profile stays, and RestrictedRefusal names it.
//
// A Windows pod (spec.os.name windows) gets runAsNonRoot only: the API
// server refuses the Linux-only settings on it, and the profile does not
// ask for them there.
func Restrict(spec *corev1.PodSpec) {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	sc := spec.SecurityContext
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = ptr.To(true)
	}
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			restrictContainer(&containers[i])
		}
	}
}

func restrictContainer(c *corev1.Container) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	// The API server refuses allowPrivilegeEscalation false beside
	// privileged or an added CAP_SYS_ADMIN; the profile refuses those
	// anyway, and RestrictedRefusal then says why in its words.
	if sc.AllowPrivilegeEscalation == nil && !ptr.Deref(sc.Privileged, false) && !addsSysAdmin(sc.Capabilities) {
		sc.AllowPrivilegeEscalation = ptr.To(false)
	}
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{}
	}
	if len(sc.Capabilities.Drop) == 0 {
		sc.Capabilities.Drop = []corev1.Capability{"ALL"}
	}
}

func addsSysAdmin(caps *corev1.Capabilities) bool {
	return caps != nil && (slices.Contains(caps.Add, "SYS_ADMIN") || slices.Contains(caps.Add, "CAP_SYS_ADMIN"))
}

// restrictedEvaluator judges pods as the API server's Pod Security
// admission does, with the same library.
var restrictedEvaluator = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("building the Pod Security evaluator: %v", err))
	}
	return e
}()

// RestrictedRefusal says why the Pod Security Standard "restricted", at its
// latest version, refuses pod, or "" when it admits it. The words are the
// API server's own: "allowPrivilegeEscalation != false (container "app"
// must set securityContext.allowPrivilegeEscalation=false)".
func RestrictedRefusal(pod *corev1.Pod) string {
	results := restrictedEvaluator.EvaluatePod(
		psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()},
		&pod.ObjectMeta, &pod.Spec)
	agg := policy.AggregateCheckResults(results)
	if agg.Allowed {
		return ""
	}
	return agg.ForbiddenDetail()
}

// TemplateOf is the template of ps's spec in its canonical form (Canonical).
func TemplateOf(ps *appv1alpha1.PodSet) revision.Template {
	return Canonical(revision.FromPodSet(ps))
}

// Canonical is t with a spec.template that is exactly the pod template of a
// short form (PodTemplate) replaced by that short form. A revision's hash
// and its stored template are the canonical form's, so a PodSet moved from
// the short form to the template it stands for (or back) keeps its
// revision, and its pods.
func Canonical(t revision.Template) revision.Template {
	if t.Template == nil {
		return t
	}
	if short, ok := ShortFormOf(t.Template); ok {
		return short
	}
	return t
}

// ShortFormOf returns the short form whose pod template is exactly pts, if
// there is one. The short form of a template names its image: a short form
// without one runs the operator's default image, which may change with the
// operator, and no template stands for that.
func ShortFormOf(pts *corev1.PodTemplateSpec) (revision.Template, bool) {
	pts = pts.DeepCopy()
	if len(pts.Labels) > 0 || len(pts.Spec.Containers) != 1 || pts.Spec.Containers[0].Image == "" {
		return revision.Template{}, false
	}
	c := pts.Spec.Containers[0]
	short := revision.Template{
		Image:          c.Image,
		Command:        c.Command,
		Args:           c.Args,
		PodAnnotations: pts.Annotations,
		ResizePolicy:   c.ResizePolicy,
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return revision.Template{}, false
		}
		short.Env = append(short.Env, appv1alpha1.EnvVar{Name: e.Name, Value: e.Value})
	}
	if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
		short.Resources = &appv1alpha1.Resources{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
	}
	want := PodTemplate(short, "")
	if !equality.Semantic.DeepEqual(revision.NormalizePodTemplate(&want), revision.NormalizePodTemplate(pts)) {
		return revision.Template{}, false
	}
	return short, true
}
