package operand

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/controllers/revision"
)

// AnnotationUIDRange is the namespace annotation through which OpenShift
// allocates each namespace its own range of user IDs ("1000660000/10000",
// the first and how many). Its SecurityContextConstraints admission runs
// a pod that sets no user as the first of them under the default SCC,
// restricted-v2, and refuses a user outside them.
const AnnotationUIDRange = "openshift.io/sa.scc.uid-range"

// UserIDs is the user the containers of the operator's own image run as:
// the short form's, and a template's containers that run the operand image
// and set no user (the pod sets none either). Every other image's user is
// the template's, or the image's own USER.
type UserIDs struct {
	// uid is that user; 0 sets none.
	uid int64
	// namespaceRange: the platform allocates the namespace's IDs, and
	// assigns the group and fsGroup the short form then leaves unset.
	namespaceRange bool
}

// OperatorPicksIDs runs them as UID 65532 (and the short form's GID and
// fsGroup too): the operand image declares no user, and the kubelet refuses
// to start it as root under runAsNonRoot. This is plain Kubernetes.
var OperatorPicksIDs = UserIDs{uid: UID}

// UserIDsOf is the user in a namespace with these annotations: where
// OpenShift allocates the namespace a range of user IDs, the range's first,
// the one its admission would assign (and 65532 would be refused);
// elsewhere OperatorPicksIDs. The first ID is set rather than left to the
// admission so that it holds under any SCC the pods' ServiceAccount may
// use: anyuid, which OpenShift tries first, assigns no user, and the
// operand image would then run as root.
func UserIDsOf(namespaceAnnotations map[string]string) UserIDs {
	r, ok := namespaceAnnotations[AnnotationUIDRange]
	if !ok {
		return OperatorPicksIDs
	}
	return UserIDs{uid: firstOfRange(r), namespaceRange: true}
}

// firstOfRange is the first ID of OpenShift's range "first/size" (or
// "first-last"), or 0 when it cannot be read: the admission then refuses
// the namespace's pods whatever they set.
func firstOfRange(r string) int64 {
	first, _, _ := strings.Cut(r, "/")
	first, _, _ = strings.Cut(first, "-")
	n, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// applyUserIDs makes spec, a pod of tmpl after Restrict, run the operand
// image's containers as ids says.
func applyUserIDs(spec *corev1.PodSpec, tmpl revision.Template, defaultImage string, ids UserIDs) {
	var uid *int64
	if ids.uid != 0 {
		uid = ptr.To(ids.uid)
	}
	if tmpl.Template == nil {
		// The short form's pod: restrictedPodSecurityContext set the
		// operator's IDs.
		if ids.namespaceRange {
			spec.SecurityContext.RunAsUser = uid
			spec.SecurityContext.RunAsGroup = nil
			spec.SecurityContext.FSGroup = nil
		}
		return
	}
	if uid == nil {
		return
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			c := &containers[i]
			if !getsOperandUser(spec, c, defaultImage) {
				continue
			}
			if c.SecurityContext == nil {
				c.SecurityContext = &corev1.SecurityContext{}
			}
			c.SecurityContext.RunAsUser = uid
		}
	}
}

// getsOperandUser reports whether container c of a template's pod spec runs
// as the user the operator picks for its operand image: it runs that image
// and neither it nor the pod sets a user. A Windows pod may set no Linux
// user at all.
func getsOperandUser(spec *corev1.PodSpec, c *corev1.Container, defaultImage string) bool {
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return false
	}
	if spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil {
		return false
	}
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return false
	}
	return IsOperandImage(c.Image, defaultImage)
}

// IsOperandImage reports whether image is the operator's operand image, at
// any tag or digest: the repository of DefaultOperandImage or of the
// manager's (defaultImage). A PodSet written for one release's operand
// image keeps its user after an upgrade moves the operand to another tag.
func IsOperandImage(image, defaultImage string) bool {
	repo := repositoryOf(image)
	return repo == repositoryOf(DefaultOperandImage) || (defaultImage != "" && repo == repositoryOf(defaultImage))
}

// repositoryOf is image without its tag and digest.
func repositoryOf(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// OperandUserChanges reports whether container i of a template's pod spec
// moves between the operand image and another image, from a to b, with no
// user of its own: its user would change with it, and a running container
// keeps its user, so such a change needs a new pod. a and b differ in
// nothing else of their security contexts.
func OperandUserChanges(a, b *corev1.PodSpec, i int, defaultImage string) bool {
	return getsOperandUser(a, &a.Containers[i], defaultImage) != getsOperandUser(b, &b.Containers[i], defaultImage)
}
