package operand

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
)

func TestUserIDsOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        UserIDs
	}{
		{"plain Kubernetes", nil, OperatorPicksIDs},
		{"another of OpenShift's annotations alone", map[string]string{"openshift.io/sa.scc.mcs": "s0:c26,c5"}, OperatorPicksIDs},
		{"OpenShift's range, first/size", map[string]string{AnnotationUIDRange: "1000660000/10000"}, UserIDs{uid: 1000660000, namespaceRange: true}},
		{"first-last", map[string]string{AnnotationUIDRange: "1000660000-1000669999"}, UserIDs{uid: 1000660000, namespaceRange: true}},
		{"unreadable: the admission assigns, or refuses", map[string]string{AnnotationUIDRange: "soon"}, UserIDs{namespaceRange: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(UserIDsOf(tc.annotations)).To(Equal(tc.want))
		})
	}
}

func TestIsOperandImage(t *testing.T) {
	for _, tc := range []struct {
		image, defaultImage string
		want                bool
	}{
		{DefaultOperandImage, "", true},
		{"docker.io/library/busybox:1.38.0", "", true},
		{"docker.io/library/busybox@sha256:0123", "", true},
		{"docker.io/library/busybox", "", true},
		{"registry.example.com/mirror/busybox@sha256:0123", "registry.example.com/mirror/busybox@sha256:4567", true},
		{"registry.example.com:5000/operand:1", "registry.example.com:5000/operand:2", true},
		{"registry.example.com:5000/operand", "", false},
		{"docker.io/library/nginx:1.27", "", false},
		{"docker.io/library/busybox-extras:1", "", false},
	} {
		t.Run(tc.image, func(t *testing.T) {
			NewWithT(t).Expect(IsOperandImage(tc.image, tc.defaultImage)).To(Equal(tc.want))
		})
	}
}

// userOf is the user a container of pod runs as, by its own setting or
// the pod's; nil when neither sets one (the image's USER, or the
// platform's choice).
func userOf(pod *corev1.Pod, c corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	return pod.Spec.SecurityContext.RunAsUser
}

func TestNewPodUserIDs(t *testing.T) {
	openshift := UserIDsOf(map[string]string{AnnotationUIDRange: "1000660000/10000"})
	operandContainer := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: managerDefaultImage}
	}
	withUser := func(c corev1.Container, uid int64) corev1.Container {
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(uid)}
		return c
	}
	template := func(podUser *int64, init []corev1.Container, containers ...corev1.Container) *corev1.PodTemplateSpec {
		pts := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{InitContainers: init, Containers: containers}}
		if podUser != nil {
			pts.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: podUser}
		}
		return pts
	}
	windows := func(pts *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
		pts.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		return pts
	}
	other := corev1.Container{Name: "app", Image: "registry.example.com/app:1"}
	tests := []struct {
		name     string
		template *corev1.PodTemplateSpec // nil: the short form
		ids      UserIDs
		// wantUsers: the user of each container, init containers first
		// (0: none set).
		wantUsers  []int64
		wantFSGrp  *int64
		wantGroups *int64
	}{
		{name: "short form, plain Kubernetes", ids: OperatorPicksIDs, wantUsers: []int64{UID}, wantFSGrp: ptr.To(UID), wantGroups: ptr.To(UID)},
		{name: "short form, OpenShift: the range's first user, the group and fsGroup the SCC's", ids: openshift, wantUsers: []int64{1000660000}},
		{name: "short form, OpenShift's range unreadable: none", ids: UserIDs{namespaceRange: true}, wantUsers: []int64{0}},
		{name: "template of the operand image, plain Kubernetes", template: template(nil, nil, operandContainer("web")), ids: OperatorPicksIDs, wantUsers: []int64{UID}},
		{name: "template of the operand image, OpenShift", template: template(nil, nil, operandContainer("web")), ids: openshift, wantUsers: []int64{1000660000}},
		{name: "the operand image at another tag counts too", template: template(nil, nil, corev1.Container{Name: "web", Image: "docker.io/library/busybox:1.36.1"}), ids: OperatorPicksIDs, wantUsers: []int64{UID}},
		{name: "another image keeps its own USER", template: template(nil, nil, other), ids: OperatorPicksIDs, wantUsers: []int64{0}},
		{name: "another image on OpenShift: the SCC assigns", template: template(nil, nil, other), ids: openshift, wantUsers: []int64{0}},
		{name: "only the operand image's containers, init ones included", template: template(nil, []corev1.Container{operandContainer("init")}, other, operandContainer("web")), ids: OperatorPicksIDs, wantUsers: []int64{UID, 0, UID}},
		{name: "the template's own user wins", template: template(nil, nil, withUser(operandContainer("web"), 1000)), ids: OperatorPicksIDs, wantUsers: []int64{1000}},
		{name: "the pod's user wins for every container", template: template(ptr.To[int64](2000), nil, operandContainer("web")), ids: OperatorPicksIDs, wantUsers: []int64{2000}},
		{name: "on OpenShift a template's own user stays, for the SCC to judge", template: template(nil, nil, withUser(other, 65532)), ids: openshift, wantUsers: []int64{65532}},
		{name: "a Windows pod sets no Linux user", template: windows(template(nil, nil, operandContainer("web"))), ids: OperatorPicksIDs, wantUsers: []int64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ps := operandtest.PodSet(1)
			ps.Spec.Template = tt.template
			pod := NewPod(ps, revision.FromPodSet(ps), "h", managerDefaultImage, tt.ids)
			var got []int64
			for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
				got = append(got, ptr.Deref(userOf(pod, c), 0))
			}
			g.Expect(got).To(Equal(tt.wantUsers))
			g.Expect(pod.Spec.SecurityContext.FSGroup).To(Equal(tt.wantFSGrp))
			g.Expect(pod.Spec.SecurityContext.RunAsGroup).To(Equal(tt.wantGroups))
			g.Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), "runAsNonRoot stays whoever picks the user")
			g.Expect(RestrictedRefusal(pod)).To(BeEmpty())
		})
	}
}
