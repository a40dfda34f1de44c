package operand

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/controllers/revision"
)

// AnnotationUIDRange is the namespace annotation through which OpenShift
// allocates each namespace its own range of user IDs ("1000660000/10000").
// Its SecurityContextConstraints admission assigns a pod that sets no user
// the first of them, and refuses a user outside them (the default SCC,
// restricted-v2, runs every pod under MustRunAsRange).
const AnnotationUIDRange = "openshift.io/sa.scc.uid-range"

// UserIDs says who picks the user and group IDs of the pods whose image is
// the operator's own: the short form's, and a template's containers that run
// the operand image and set no user. Every other image's user is the
// template's, or the image's own USER.
type UserIDs int

const (
	// OperatorPicksIDs runs them as UID, GID and fsGroup 65532 (UID): the
	// operand image declares no user, so the kubelet refuses it under
	// runAsNonRoot without one. This is plain Kubernetes.
	OperatorPicksIDs UserIDs = iota
	// NamespacePicksIDs sets no user, group or fsGroup: the platform
	// assigns them from the namespace's range, and one picked by the
	// operator would fall outside it and be refused. This is a namespace
	// that carries AnnotationUIDRange (OpenShift).
	NamespacePicksIDs
)

// UserIDsOf is who picks the IDs in a namespace with these annotations.
func UserIDsOf(namespaceAnnotations map[string]string) UserIDs {
	if _, ok := namespaceAnnotations[AnnotationUIDRange]; ok {
		return NamespacePicksIDs
	}
	return OperatorPicksIDs
}

// String names the choice in logs and test messages.
func (u UserIDs) String() string {
	if u == NamespacePicksIDs {
		return "the namespace's range"
	}
	return "the operator's 65532"
}

// applyUserIDs makes spec, a pod of tmpl after Restrict, follow ids.
func applyUserIDs(spec *corev1.PodSpec, tmpl revision.Template, defaultImage string, ids UserIDs) {
	if tmpl.Template == nil {
		// The short form's pod: restrictedPodSecurityContext set the
		// operator's IDs.
		if ids == NamespacePicksIDs {
			spec.SecurityContext.RunAsUser = nil
			spec.SecurityContext.RunAsGroup = nil
			spec.SecurityContext.FSGroup = nil
		}
		return
	}
	// A Windows pod may set no Linux user at all; the API server refuses
	// runAsUser there.
	if ids != OperatorPicksIDs || spec.SecurityContext.RunAsUser != nil || (spec.OS != nil && spec.OS.Name == corev1.Windows) {
		return
	}
	operandImages := []string{DefaultOperandImage, defaultImage}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			c := &containers[i]
			if !slices.Contains(operandImages, c.Image) || (c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil) {
				continue
			}
			if c.SecurityContext == nil {
				c.SecurityContext = &corev1.SecurityContext{}
			}
			c.SecurityContext.RunAsUser = ptr.To(UID)
		}
	}
}
