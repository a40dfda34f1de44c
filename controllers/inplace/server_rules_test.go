package inplace_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/inplace/inplacetest"
	"github.com/example/podset-operator/controllers/revision"
)

// servers are the API servers of each Kubernetes minor the operator's CSV
// allows, as discovery and /version describe them.
var servers = []struct {
	gitVersion   string
	resizeServed bool
}{
	{"v1.29.15", false},
	{"v1.30.14", false},
	{"v1.31.8", false},
	{"v1.32.13", false},
	{"v1.33.13", true},
	{"v1.34.2", true},
	{"v1.35.0", true},
	{"v1.36.1", true},
	{"v1.37.0", true},
}

func TestServerRulesOf(t *testing.T) {
	for _, tc := range []struct {
		gitVersion   string
		resizeServed bool
		want         inplace.ServerRules
	}{
		{"v1.29.15", false, inplace.ServerRules{NoResize: true}},
		{"v1.32.13", false, inplace.ServerRules{NoResize: true}},
		{"v1.33.13", true, inplace.ServerRules{NoMemoryLimitDecrease: true}},
		// A 1.33 whose pods/resize is turned off (its feature gate).
		{"v1.33.13", false, inplace.ServerRules{NoResize: true}},
		{"v1.33.5-eks-1a2b3c4", true, inplace.ServerRules{NoMemoryLimitDecrease: true}},
		{"v1.34.2+rhos", true, inplace.ServerRules{NoMemoryLimitDecrease: true}},
		{"v1.35.0", true, inplace.ServerRules{}},
		{"v1.37.0-gke.1200", true, inplace.ServerRules{}},
	} {
		t.Run(tc.gitVersion, func(t *testing.T) {
			g := NewWithT(t)
			got, err := inplace.ServerRulesOf(tc.gitVersion, tc.resizeServed)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	_, err := inplace.ServerRulesOf("unknown", true)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring(`"unknown"`)))
}

// TestResizeRulesPerVersion classifies the same resource changes on each
// Kubernetes minor: "in place", or the words of why they need a new pod.
func TestResizeRulesPerVersion(t *testing.T) {
	const (
		inPlace     = "in place"
		noResize    = "pods/resize, which this API server does not serve"
		lowerMemory = "lowers a memory limit in place only when the container's memory resizePolicy is RestartContainer"
		addMemory   = "adds a memory limit in place only when the container's memory resizePolicy is RestartContainer"
	)
	restartOnMemory := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	notRequired := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}
	res := func(requests, limits map[corev1.ResourceName]string) *inplaceRes {
		r := inplacetest.Res(requests, limits)
		return &inplaceRes{corev1.ResourceRequirements{Requests: r.Requests, Limits: r.Limits}}
	}
	mem := corev1.ResourceMemory
	cpu := corev1.ResourceCPU
	for _, tc := range []struct {
		name     string
		from, to *inplaceRes
		policy   []corev1.ContainerResizePolicy
		// want by minor: 29 to 32, 33 and 34, 35 and later.
		before33, on33and34, from35 string
	}{
		{
			name:     "cpu request up",
			from:     res(map[corev1.ResourceName]string{cpu: "100m", mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			to:       res(map[corev1.ResourceName]string{cpu: "200m", mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			before33: noResize, on33and34: inPlace, from35: inPlace,
		},
		{
			name:     "memory limit up",
			from:     res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			to:       res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "256Mi"}),
			before33: noResize, on33and34: inPlace, from35: inPlace,
		},
		{
			name:     "memory limit down, no resize policy (NotRequired)",
			from:     res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "256Mi"}),
			to:       res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			before33: noResize, on33and34: lowerMemory, from35: inPlace,
		},
		{
			name:     "memory limit down, NotRequired said",
			from:     res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "256Mi"}),
			to:       res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			policy:   notRequired,
			before33: noResize, on33and34: lowerMemory, from35: inPlace,
		},
		{
			name:     "memory limit down, RestartContainer",
			from:     res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "256Mi"}),
			to:       res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			policy:   restartOnMemory,
			before33: noResize, on33and34: inPlace, from35: inPlace,
		},
		{
			name:     "memory limit added to a request (Burstable either way)",
			from:     res(map[corev1.ResourceName]string{mem: "64Mi"}, nil),
			to:       res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "128Mi"}),
			before33: noResize, on33and34: addMemory, from35: inPlace,
		},
		{
			name:     "memory request down, limit kept",
			from:     res(map[corev1.ResourceName]string{mem: "128Mi"}, map[corev1.ResourceName]string{mem: "256Mi"}),
			to:       res(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "256Mi"}),
			before33: noResize, on33and34: inPlace, from35: inPlace,
		},
	} {
		for _, srv := range servers {
			rules, err := inplace.ServerRulesOf(srv.gitVersion, srv.resizeServed)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.from35
			switch minor := srv.gitVersion[len("v1."):len("v1.33")]; {
			case minor < "33":
				want = tc.before33
			case minor <= "34":
				want = tc.on33and34
			}
			for _, form := range []string{"short form", "template"} {
				t.Run(tc.name+"/"+srv.gitVersion+"/"+form, func(t *testing.T) {
					from, to := tc.from.template(form, tc.policy), tc.to.template(form, tc.policy)
					got := inplace.Classify(from, to, "", rules)
					if want == inPlace {
						NewWithT(t).Expect(got.NotInPlace).To(BeEmpty())
						NewWithT(t).Expect(got.Resources).To(BeTrue())
						return
					}
					NewWithT(t).Expect(got.NotInPlace).To(ContainSubstring(want))
					field := "spec.resources: "
					if form == "template" {
						field = "spec.template.spec.containers[0].resources: "
					}
					NewWithT(t).Expect(strings.HasPrefix(got.NotInPlace, field)).To(BeTrue(), got.NotInPlace)
				})
			}
		}
	}
}

type inplaceRes struct{ r corev1.ResourceRequirements }

// template is a template of either form whose (first) container has these
// resources and resize policy; the template has a second container, so
// that it is not the short form's.
func (r *inplaceRes) template(form string, policy []corev1.ContainerResizePolicy) revision.Template {
	if form == "short form" {
		return revision.Template{Image: "web:1", Resources: &appv1alpha1.Resources{Requests: r.r.Requests, Limits: r.r.Limits}, ResizePolicy: policy}
	}
	return revision.Template{Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "web:1", Resources: r.r, ResizePolicy: policy},
		{Name: "log", Image: "log:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}}},
	}}}}
}
