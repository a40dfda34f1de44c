package admission

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestObjects(t *testing.T) {
	g := NewWithT(t)
	owner := &metav1.OwnerReference{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: CRDName, UID: "crd-uid"}
	objs, err := Objects(owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(6))
	for i, name := range []string{"podsets-in-place-only.app.example.com", "podsets-template.app.example.com", "podsets-update-strategy.app.example.com"} {
		policy, binding := objs[2*i], objs[2*i+1]
		g.Expect(policy.GetKind()).To(Equal("ValidatingAdmissionPolicy"))
		g.Expect(binding.GetKind()).To(Equal("ValidatingAdmissionPolicyBinding"))
		for _, o := range []*unstructured.Unstructured{policy, binding} {
			g.Expect(o.GetName()).To(Equal(name), "the name the manager's RBAC allows")
			g.Expect(o.GetNamespace()).To(BeEmpty())
			g.Expect(o.GetOwnerReferences()).To(Equal([]metav1.OwnerReference{*owner}))
		}
		g.Expect(binding.Object["spec"]).To(HaveKeyWithValue("policyName", name))
	}
}

// Kubernetes 1.29 serves admissionregistration.k8s.io/v1 (the webhook
// configurations) without the policies: nothing is applied, and one line
// says so however many rounds pass.
func TestSyncWithoutPolicies(t *testing.T) {
	g := NewWithT(t)
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: GroupVersion,
		APIResources: []metav1.APIResource{{Name: "validatingwebhookconfigurations", Kind: "ValidatingWebhookConfiguration"}},
	}}}}
	a := NewApplier(c, c, disc, Options{Log: log})
	for range 3 {
		g.Expect(a.Sync(context.Background())).To(BeFalse(), "the cluster may be upgraded")
	}
	g.Expect(lines).To(ConsistOf(ContainSubstring("is not served (Kubernetes before 1.30)")))
}

// The InPlaceOnly policy's lists of what no in-place update changes are
// every field of corev1's PodSpec but its containers (and the ephemeral
// containers no template may have), and of its Container but image and
// resources: a field a newer k8s.io/api adds must be added there too.
func TestTemplateFieldLists(t *testing.T) {
	g := NewWithT(t)
	objs, err := Objects(nil)
	g.Expect(err).NotTo(HaveOccurred())
	lists := map[string][]string{}
	vars, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "variables")
	for _, v := range vars {
		m := v.(map[string]any)
		if name := m["name"].(string); name == "podFields" || name == "containerFields" {
			expr := strings.Trim(m["expression"].(string), "[]")
			for _, f := range strings.Split(expr, ",") {
				lists[name] = append(lists[name], strings.Trim(strings.TrimSpace(f), "'"))
			}
		}
	}
	jsonNames := func(t reflect.Type, skip ...string) []string {
		var out []string
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); !slices.Contains(skip, name) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	g.Expect(lists["podFields"]).To(Equal(jsonNames(reflect.TypeFor[corev1.PodSpec](), "containers", "ephemeralContainers")))
	g.Expect(lists["containerFields"]).To(Equal(jsonNames(reflect.TypeFor[corev1.Container](), "image", "resources")))
}
