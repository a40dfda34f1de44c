package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

const (
	// DefaultOperandImage runs when neither spec.image nor the manager's
	// RELATED_IMAGE_PODSET environment variable names an image.
	DefaultOperandImage = "docker.io/library/busybox:1.37.0"

	// operandContainerName is the name of the single container of every pod.
	operandContainerName = "podset"

	// operandUID is the user (and group) operand containers run as. The
	// restricted profile only demands runAsNonRoot, but images such as
	// busybox declare no user and would run as root, which the kubelet then
	// refuses; an explicit non-root UID makes them start everywhere. 65532 is
	// the conventional "nonroot" user of distroless images.
	operandUID int64 = 65532
)

// defaultOperandCommand is what the default operand does: nothing, for an hour,
// after which the kubelet restarts it.
var defaultOperandCommand = []string{"sleep", "3600"}

// newPod builds a pod for ps. The caller sets the controller reference.
//
// Nothing in the PodSet's spec reaches the security context: every pod runs
// under the Pod Security Standard "restricted" profile, so that the operand
// is admitted in namespaces enforcing it.
func newPod(ps *appv1alpha1.PodSet, defaultImage string) *corev1.Pod {
	if defaultImage == "" {
		defaultImage = DefaultOperandImage
	}
	image := ps.Spec.Image
	command := ps.Spec.Command
	if image == "" {
		image = defaultImage
		// The default image's own entrypoint (a shell) would exit at once;
		// run the documented default operand unless a command was given.
		if len(command) == 0 {
			command = defaultOperandCommand
		}
	}

	container := corev1.Container{
		Name:  operandContainerName,
		Image: image,
		// Copies: the pod must not share memory with the cached PodSet.
		Command:         slices.Clone(command),
		Args:            slices.Clone(ps.Spec.Args),
		Env:             envVars(ps.Spec.Env),
		Resources:       resources(ps.Spec.Resources),
		SecurityContext: restrictedContainerSecurityContext(),
		// The root filesystem is read-only; give programs the scratch space
		// most of them expect.
		VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}

	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ps.Name + "-",
			Namespace:    ps.Namespace,
			Labels:       podLabels(ps),
		},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{container},
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

func restrictedPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(operandUID),
		RunAsGroup:     ptr.To(operandUID),
		FSGroup:        ptr.To(operandUID),
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
