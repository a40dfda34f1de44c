package operand

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

const (
	// DefaultOperandImage runs when neither spec.image nor the manager's
	// RELATED_IMAGE_PODSET environment variable names an image.
	DefaultOperandImage = "docker.io/library/busybox:1.37.0"

	// ContainerName is the name of the single container of every pod.
	ContainerName = "podset"

	// UID is the user (and group) operand containers run as. The
	// restricted profile only demands runAsNonRoot, but images such as
	// busybox declare no user and would run as root, which the kubelet then
	// refuses; an explicit non-root UID makes them start everywhere. 65532 is
	// the conventional "nonroot" user of distroless images.
	UID int64 = 65532
)

// defaultOperandCommand is what the default operand does: nothing, for an hour,
// after which the kubelet restarts it, and it ends at once on SIGTERM. The
// shell is there for that: PID 1 of a container gets no default signal
// action, so `sleep` alone would ignore SIGTERM and hold every deleted pod
// for its whole grace period (30 s) until the kubelet's SIGKILL.
// The InPlaceOnly admission policy (internal/admission/inplaceonly.yaml)
// repeats it, to tell the command a template runs.
var defaultOperandCommand = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}

// DefaultCommand is the command of the default operand image, when a
// template sets neither image nor command.
func DefaultCommand() []string { return slices.Clone(defaultOperandCommand) }

// formerDefaultOperandCommand is what the default operand ran up to 0.4.0.
// Pods made by those versions keep it: the revision hash is the spec's, so
// an upgrade replaces none of them, and MatchesTemplate still recognises
// them as the template's.
var formerDefaultOperandCommand = []string{"sleep", "3600"}

// NewPod builds a pod of ps from the pod template of one of its revisions,
// labelled with that revision's hash. The caller sets the controller
// reference.
//
// Pods of a PodSet that updates them in place (InPlaceUpdates) carry the
// readiness gate PodConditionInPlaceUpdateReady: a pod's gates are fixed at
// its creation, and the operator keeps a pod out of service through it while
// the kubelet restarts its container with a new image.
//
// Every pod runs under the Pod Security Standard "restricted" profile, so
// that it is admitted in namespaces enforcing it: the short form's pod sets
// it whole, and a template gets what the profile needs where it leaves a
// field unset (Restrict). ids says who picks the user IDs of the operand
// image's containers (UserIDs). The update strategy shapes when pods are
// replaced, never what they look like.
func NewPod(ps *appv1alpha1.PodSet, tmpl revision.Template, hash, defaultImage string, ids UserIDs) *corev1.Pod {
	pts := PodTemplate(tmpl, defaultImage)
	labels := pts.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range Labels(ps) {
		if _, set := labels[k]; !set || k == appv1alpha1.LabelPodSet {
			labels[k] = v
		}
	}
	labels[appv1alpha1.LabelRevisionHash] = hash
	spec := pts.Spec
	Restrict(&spec)
	applyUserIDs(&spec, tmpl, defaultImage, ids)
	if InPlaceUpdates(ps) {
		spec.ReadinessGates = append(spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appv1alpha1.PodConditionInPlaceUpdateReady})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ps.Name + "-",
			Namespace:    ps.Namespace,
			Labels:       labels,
			Annotations:  pts.Annotations,
		},
		Spec: spec,
	}
}

// PodTemplate is the pod template tmpl stands for, a copy that shares no
// memory with it: spec.template itself, or the one-container template of
// the short form.
func PodTemplate(tmpl revision.Template, defaultImage string) corev1.PodTemplateSpec {
	if tmpl.Template != nil {
		return *tmpl.Template.DeepCopy()
	}
	var annotations map[string]string
	if len(tmpl.PodAnnotations) > 0 {
		annotations = maps.Clone(tmpl.PodAnnotations)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{Container(tmpl, defaultImage)},
			SecurityContext: restrictedPodSecurityContext(),
			RestartPolicy:   corev1.RestartPolicyAlways,
			// The operand does not talk to the API server; do not hand it
			// a token it could leak.
			AutomountServiceAccountToken: ptr.To(false),
			Volumes: []corev1.Volume{{
				Name:         "tmp",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
			}},
		},
	}
}

// Container is the single container a template makes.
func Container(tmpl revision.Template, defaultImage string) corev1.Container {
	if defaultImage == "" {
		defaultImage = DefaultOperandImage
	}
	image := tmpl.Image
	command := tmpl.Command
	if image == "" {
		image = defaultImage
		// The default image's own entrypoint (a shell) would exit at once;
		// run the documented default operand unless a command was given.
		if len(command) == 0 {
			command = defaultOperandCommand
		}
	}

	return corev1.Container{
		Name:  ContainerName,
		Image: image,
		// Copies: the pod must not share memory with the cached PodSet.
		Command:         slices.Clone(command),
		Args:            slices.Clone(tmpl.Args),
		Env:             envVars(tmpl.Env),
		Resources:       resources(tmpl.Resources),
		ResizePolicy:    slices.Clone(tmpl.ResizePolicy),
		SecurityContext: restrictedContainerSecurityContext(),
		// The root filesystem is read-only; give programs the scratch space
		// most of them expect.
		VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// sameCommand reports whether a pod's command is the one wanted, the
// default operand's former command counting as the default one.
func sameCommand(got, want []string) bool {
	return slices.Equal(got, want) ||
		slices.Equal(want, defaultOperandCommand) && slices.Equal(got, formerDefaultOperandCommand)
}

// MatchesTemplate reports whether a pod runs what tmpl makes, judged by
// the fields the template sets: image, command, args, env, the requests and
// limits it names (a LimitRange may have added others), and its annotations.
// It is how pods created before revisions existed (operator v0.1.0, which
// labelled no revision) are recognised as current after an upgrade, instead
// of being rolled.
func MatchesTemplate(pod *slimpod.Pod, tmpl revision.Template, defaultImage string) bool {
	if !tmpl.IsShortForm() {
		// Pods without a revision label predate spec.template.
		return false
	}
	want := Container(tmpl, defaultImage)
	var got *corev1.Container
	containers := pod.Containers()
	for i := range containers {
		if containers[i].Name == ContainerName {
			got = &containers[i]
		}
	}
	if got == nil || len(containers) != 1 || got.Image != want.Image || !sameCommand(got.Command, want.Command) ||
		!slices.Equal(got.Args, want.Args) || !slices.Equal(got.Env, want.Env) {
		return false
	}
	for _, pair := range [][2]corev1.ResourceList{{want.Resources.Requests, got.Resources.Requests}, {want.Resources.Limits, got.Resources.Limits}} {
		for name, q := range pair[0] {
			if have, ok := pair[1][name]; !ok || have.Cmp(q) != 0 {
				return false
			}
		}
	}
	for k, v := range tmpl.PodAnnotations {
		if pod.Annotations[k] != v {
			return false
		}
	}
	return true
}

// InPlaceUpdates reports whether ps updates its pods in place when it can
// (podUpdatePolicy InPlaceIfPossible or InPlaceOnly).
func InPlaceUpdates(ps *appv1alpha1.PodSet) bool {
	ru := ps.Spec.UpdateStrategy.RollingUpdateSettings()
	if ru == nil {
		return false
	}
	return ru.PodUpdatePolicy == appv1alpha1.InPlaceIfPossiblePodUpdatePolicy || ru.PodUpdatePolicy == appv1alpha1.InPlaceOnlyPodUpdatePolicy
}

// HasInPlaceGate reports whether pod carries the readiness gate of in-place
// updates, without which it is never updated in place: its Ready condition
// could not be held False while its container restarts.
func HasInPlaceGate(pod *slimpod.Pod) bool {
	for _, g := range pod.ReadinessGates() {
		if g.ConditionType == appv1alpha1.PodConditionInPlaceUpdateReady {
			return true
		}
	}
	return false
}

// InPlaceGateCondition returns the pod's condition of the in-place gate, or
// nil.
func InPlaceGateCondition(pod *slimpod.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == appv1alpha1.PodConditionInPlaceUpdateReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func restrictedPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(UID),
		RunAsGroup:     ptr.To(UID),
		FSGroup:        ptr.To(UID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func envVars(env []appv1alpha1.EnvVar) []corev1.EnvVar {
	if len(env) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(env))
	for _, e := range env {
		out = append(out, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	return out
}

func resources(r *appv1alpha1.Resources) corev1.ResourceRequirements {
	if r == nil {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: r.Requests.DeepCopy(), Limits: r.Limits.DeepCopy()}
}
