package admission

// The policy against a real kube-apiserver and etcd (envtest, with the
// binaries `make envtest-assets` builds) and the PodSet CRD: the Applier
// applies it, owned by the CRD, and it refuses under InPlaceOnly exactly the
// changes that inplace.Classify says cannot be made in place.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/inplace/inplacetest"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/internal/selfapply"
)

func TestPolicyAgainstAPIServer(t *testing.T) {
	g := NewWithT(t)
	c, disc := startEnvtest(t)
	ctx := t.Context()
	if !policiesServed(t, c, disc) {
		return
	}

	// One round applies the policy and its binding, owned by the CRD, by
	// the operator's field manager.
	a := NewApplier(c, c, disc, Options{Log: testr.New(t)})
	g.Expect(a.Sync(ctx)).To(BeFalse())
	owner, err := CRDOwner(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(owner.UID).NotTo(BeEmpty())
	want, err := Objects(owner)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(want).To(HaveLen(6))
	for _, w := range want {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(w.GroupVersionKind())
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed(), "%s %s", w.GetKind(), w.GetName())
		g.Expect(got.GetOwnerReferences()).To(Equal([]metav1.OwnerReference{*owner}))
		var managers []string
		for _, f := range got.GetManagedFields() {
			managers = append(managers, string(f.Operation)+" "+f.Manager)
		}
		g.Expect(managers).To(Equal([]string{"Apply " + selfapply.FieldOwner}))
	}
	// An expression that fails to compile or to evaluate fails the
	// request (failurePolicy Fail), so the table below, which wants the
	// in-place changes taken, finds such a mistake too. (The policy's
	// status.typeChecking is written by kube-controller-manager, which
	// envtest does not run.)
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(want[0].GroupVersionKind())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "admission"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())

	// The API server loads a new policy in the background: wait until an
	// env change under InPlaceOnly is refused. Each try sets another value,
	// so that a try taken before the policy is loaded is not repeated as
	// no change at all.
	probe := createPodSet(g, c, ns.Name, "probe", appv1alpha1.InPlaceOnlyPodUpdatePolicy, revision.Template{})
	tries := 0
	g.Eventually(func() error {
		tries++
		return c.Patch(ctx, probe, client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, `{"spec":{"env":[{"name":"A","value":"%d"}]}}`, tries)))
	}).WithTimeout(30 * time.Second).Should(HaveOccurred())

	for i, tc := range inplacetest.ClassifyCases {
		t.Run(tc.Name, func(t *testing.T) {
			for _, policy := range []appv1alpha1.PodUpdatePolicy{appv1alpha1.InPlaceOnlyPodUpdatePolicy, appv1alpha1.InPlaceIfPossiblePodUpdatePolicy} {
				g := NewWithT(t)
				ps := createPodSet(g, c, ns.Name, fmt.Sprintf("case-%d-%s", i, strings.ToLower(string(policy))), policy, tc.From)
				updated := ps.DeepCopy()
				setTemplate(updated, tc.To)
				err := c.Patch(ctx, updated, client.MergeFrom(ps))
				if tc.Want.InPlace() || policy != appv1alpha1.InPlaceOnlyPodUpdatePolicy {
					g.Expect(err).NotTo(HaveOccurred(), string(policy))
					continue
				}
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
				field := regexp.MustCompile(`^spec\.[a-zA-Z]+`).FindString(tc.Want.NotInPlace)
				g.Expect(err.Error()).To(MatchRegexp(`denied request: `+regexp.QuoteMeta(field)+`\b`), "the error names %s", field)
				g.Expect(err.Error()).To(ContainSubstring("InPlaceOnly"))
			}
		})
	}

	// The policy that counts is the one the update asks for: a change that
	// moves to InPlaceOnly is refused, one that leaves it is taken.
	t.Run("policy changed with the template", func(t *testing.T) {
		g := NewWithT(t)
		envChange := []byte(`{"spec":{"env":[{"name":"A","value":"1"}],"updateStrategy":{"rollingUpdate":{"podUpdatePolicy":"%s"}}}}`)
		into := createPodSet(g, c, ns.Name, "into", appv1alpha1.InPlaceIfPossiblePodUpdatePolicy, revision.Template{})
		err := c.Patch(ctx, into, client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, string(envChange), appv1alpha1.InPlaceOnlyPodUpdatePolicy)))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		out := createPodSet(g, c, ns.Name, "out", appv1alpha1.InPlaceOnlyPodUpdatePolicy, revision.Template{})
		g.Expect(c.Patch(ctx, out, client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, string(envChange), appv1alpha1.ReCreatePodUpdatePolicy)))).To(Succeed())
	})

	// An env value of "" written out, as `kubectl apply` may send it, is
	// the same variable (the Go types drop it, so the table cannot show it).
	t.Run("an empty env value written out", func(t *testing.T) {
		g := NewWithT(t)
		ps := createPodSet(g, c, ns.Name, "empty-value", appv1alpha1.InPlaceOnlyPodUpdatePolicy, revision.Template{Env: []appv1alpha1.EnvVar{{Name: "A"}}})
		g.Expect(c.Patch(ctx, ps, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"env":[{"name":"A","value":""}]}}`)))).To(Succeed())
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(appv1alpha1.GroupVersion.WithKind("PodSet"))
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ps), stored)).To(Succeed())
		env, _, _ := unstructured.NestedSlice(stored.Object, "spec", "env")
		g.Expect(env).To(Equal([]any{map[string]any{"name": "A", "value": ""}}), "the API server keeps the empty value")
		g.Expect(c.Patch(ctx, ps, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"env":[{"name":"A"}]}}`)))).To(Succeed())
	})

	// The status and scale subresources are not the policy's: the
	// operator's status writes and `kubectl scale` pass.
	t.Run("subresources", func(t *testing.T) {
		g := NewWithT(t)
		ps := createPodSet(g, c, ns.Name, "subresources", appv1alpha1.InPlaceOnlyPodUpdatePolicy, revision.Template{})
		ps.Status.Replicas = 1
		g.Expect(c.Status().Update(ctx, ps)).To(Succeed())
		g.Expect(c.SubResource("scale").Patch(ctx, ps, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"replicas":3}}`)))).To(Succeed())
	})

	// updateStrategy.recreate only with the Recreate strategy, whatever
	// type says (the default included); the scale subresource is not the
	// policy's.
	t.Run("spec.updateStrategy.recreate", func(t *testing.T) {
		g := NewWithT(t)
		withRecreate := func(name string, typ appv1alpha1.UpdateStrategyType) *appv1alpha1.PodSet {
			ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}}
			ps.Spec.UpdateStrategy = appv1alpha1.UpdateStrategy{Type: typ, Recreate: &appv1alpha1.RecreateUpdate{AutoRollback: &appv1alpha1.AutoRollback{}}}
			return ps
		}
		// The API server loads a new policy in the background: the first
		// refusal is waited for, each try under a new name.
		tries := 0
		g.Eventually(func() error {
			tries++
			return c.Create(ctx, withRecreate(fmt.Sprintf("recreate-probe-%d", tries), ""))
		}).WithTimeout(30 * time.Second).Should(HaveOccurred())
		for _, typ := range []appv1alpha1.UpdateStrategyType{"", appv1alpha1.OnDeleteStrategyType} {
			err := c.Create(ctx, withRecreate("recreate-"+cmp.Or(strings.ToLower(string(typ)), "default"), typ))
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("denied request: spec.updateStrategy.recreate: may only be set when spec.updateStrategy.type is Recreate, not " + cmp.Or(string(typ), "RollingUpdate")))
		}
		ps := withRecreate("recreate", appv1alpha1.RecreateStrategyType)
		g.Expect(c.Create(ctx, ps)).To(Succeed())
		g.Expect(ps.Spec.UpdateStrategy.Recreate.AutoRollback.RestartLimit).To(HaveValue(BeEquivalentTo(3)), "autoRollback's defaults apply under recreate")
		err := c.Patch(ctx, ps, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"updateStrategy":{"type":"RollingUpdate"}}}`)))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		g.Expect(c.Patch(ctx, ps, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"updateStrategy":{"type":"RollingUpdate","recreate":null}}}`)))).To(Succeed())
		g.Expect(c.SubResource("scale").Patch(ctx, ps, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"replicas":2}}`)))).To(Succeed())
	})

	// spec.template or its short form, never both; the template's labels
	// leave the operator's own alone (a rule of the CRD).
	t.Run("spec.template", func(t *testing.T) {
		g := NewWithT(t)
		pts := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}
		both := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: ns.Name}}
		both.Spec.Template, both.Spec.Image, both.Spec.Args = pts.DeepCopy(), "web:1", []string{"-v"}
		err := c.Create(ctx, both)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("denied request: spec.template: cannot be set beside spec.image, spec.args, its short form"))

		labelled := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "labelled", Namespace: ns.Name}}
		labelled.Spec.Template = pts.DeepCopy()
		labelled.Spec.Template.Labels = map[string]string{appv1alpha1.LabelRevisionHash: "x"}
		err = c.Create(ctx, labelled)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.template.metadata.labels: Invalid value"))

		ephemeral := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "ephemeral", Namespace: ns.Name}}
		ephemeral.Spec.Template = pts.DeepCopy()
		ephemeral.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		err = c.Create(ctx, ephemeral)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.template.spec.ephemeralContainers: Invalid value"))

		// Under InPlaceOnly, moving from the short form to the template
		// it stands for is no change: the operator keeps the pods.
		short := revision.Template{Image: "web:1", Args: []string{"-v"}}
		moved := createPodSet(g, c, ns.Name, "moved", appv1alpha1.InPlaceOnlyPodUpdatePolicy, short)
		err = c.Patch(ctx, moved, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"image":null,"args":null,"template":{"spec":{"containers":[{"name":"podset","image":"web:1","args":["-v"]}]}}}}`)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(moved.Spec.Template).NotTo(BeNil())
		g.Expect(moved.Spec.ShortFormFields()).To(BeEmpty())
	})

	// Between two templates, the policy refuses under InPlaceOnly what
	// inplace.Classify says needs new pods outside the resize rules, naming
	// the same field; what changes in place passes.
	t.Run("InPlaceOnly between templates", func(t *testing.T) {
		base := func() *corev1.PodTemplateSpec {
			return &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "front"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "web", Image: "web:1"},
					{Name: "metrics", Image: "m:1", Ports: []corev1.ContainerPort{{ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}},
				}},
			}
		}
		for i, tc := range []struct {
			name   string
			mutate func(*corev1.PodTemplateSpec)
		}{
			{"an image", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Image = "m:2" }},
			{"labels and annotations", func(p *corev1.PodTemplateSpec) {
				p.Labels["tier"] = "back"
				p.Annotations = map[string]string{"team": "a"}
			}},
			{"a port", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[1].Ports[0].ContainerPort = 9101 }},
			{"args", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Args = []string{"-v"} }},
			{"a toleration", func(p *corev1.PodTemplateSpec) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			}},
			{"a container added", func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "x", Image: "x"})
			}},
			{"restartedAt", func(p *corev1.PodTemplateSpec) {
				p.Annotations = map[string]string{appv1alpha1.AnnotationRestartedAt: "now"}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				g := NewWithT(t)
				ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("templates-%d", i), Namespace: ns.Name}}
				ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{PodUpdatePolicy: appv1alpha1.InPlaceOnlyPodUpdatePolicy}
				ps.Spec.Template = base()
				g.Expect(c.Create(ctx, ps)).To(Succeed())
				from := revision.Template{Template: ps.Spec.Template.DeepCopy()}
				tc.mutate(ps.Spec.Template)
				want := inplace.Classify(from, revision.Template{Template: ps.Spec.Template}, "", inplace.ServerRules{})
				err := c.Update(ctx, ps)
				if want.InPlace() {
					g.Expect(err).NotTo(HaveOccurred())
					return
				}
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid (%s), got %v", want.NotInPlace, err)
				field, _, _ := strings.Cut(want.NotInPlace, ":")
				// The operator names a list's item where the policy names
				// the list.
				field = regexp.MustCompile(`^(spec\.template\.spec\.containers\[\d+\]\.[a-zA-Z]+|spec\.template\.spec\.[a-zA-Z]+|spec\.template\.metadata\.annotations\[[^\]]+\])`).FindString(field)
				g.Expect(field).NotTo(BeEmpty(), want.NotInPlace)
				g.Expect(err.Error()).To(ContainSubstring("denied request: "+field), "the error names %s", field)
			})
		}
	})

	// A PodSet written while the template policy was missing can still be
	// labelled, scaled and have its finalizers removed: only an update of
	// its pod template is judged.
	t.Run("a PodSet written without the template policy", func(t *testing.T) {
		g := NewWithT(t)
		binding := &unstructured.Unstructured{}
		binding.SetGroupVersionKind(want[3].GroupVersionKind())
		binding.SetName("podsets-template.app.example.com")
		g.Expect(c.Delete(ctx, binding)).To(Succeed())
		broken := func(name string) *appv1alpha1.PodSet {
			ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Finalizers: []string{"example.com/hold"}}}
			ps.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}
			return ps
		}
		old := broken("written-before")
		g.Eventually(func() error { return c.Create(ctx, old) }).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(a.Sync(ctx)).To(BeFalse())
		tries := 0
		g.Eventually(func() error {
			tries++
			return c.Create(ctx, broken(fmt.Sprintf("probe-%d", tries)))
		}).WithTimeout(30 * time.Second).Should(HaveOccurred())

		g.Expect(c.Patch(ctx, old, client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"labels":{"team":"web"}},"spec":{"replicas":2}}`)))).To(Succeed())
		err := c.Patch(ctx, old, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:2"}]}}}}`)))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a change of the template is judged: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.template.spec.hostNetwork"))
		g.Expect(c.Patch(ctx, old, client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	})

	// A policy deleted by hand comes back at the next round.
	g.Expect(c.Delete(ctx, want[0])).To(Succeed())
	g.Expect(a.Sync(ctx)).To(BeFalse())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(want[0]), policy)).To(Succeed())
}

// createPodSet creates a PodSet of no pods with the template t under
// policy, and returns it as stored.
func createPodSet(g Gomega, c client.Client, ns, name string, policy appv1alpha1.PodUpdatePolicy, t revision.Template) *appv1alpha1.PodSet {
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ps.Spec.Replicas = new(int32)
	ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{PodUpdatePolicy: policy}
	setTemplate(ps, t)
	g.Expect(c.Create(context.Background(), ps)).To(Succeed())
	return ps
}

// setTemplate sets the pod template fields of ps's spec to t's.
func setTemplate(ps *appv1alpha1.PodSet, t revision.Template) {
	ps.Spec.Image, ps.Spec.Command, ps.Spec.Args, ps.Spec.Env = t.Image, t.Command, t.Args, t.Env
	ps.Spec.Resources, ps.Spec.PodAnnotations, ps.Spec.ResizePolicy = t.Resources, t.PodAnnotations, t.ResizePolicy
}

// policiesServed reports whether the API server serves
// admissionregistration.k8s.io/v1 policies (Kubernetes 1.30 and later).
// On one that does not (make test-k8s-versions runs 1.29) it checks what the
// operator does there instead: the Applier applies nothing, without error,
// and a PodSet that the policies would refuse is stored, for the operator to
// refuse to make pods of (the controllers' envtest suite checks that part).
func policiesServed(t *testing.T, c client.Client, disc discovery.DiscoveryInterface) bool {
	t.Helper()
	g := NewWithT(t)
	resources, err := disc.ServerResourcesForGroupVersion(GroupVersion)
	if err == nil {
		for _, r := range resources.APIResources {
			if r.Name == "validatingadmissionpolicies" {
				return true
			}
		}
	} else {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "discovering %s: %v", GroupVersion, err)
	}
	v, err := disc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("Kubernetes %s serves no %s policies: checking that nothing is applied and nothing refused", v.GitVersion, GroupVersion)
	g.Expect(v.Minor).To(BeElementOf("26", "27", "28", "29"), "policies are GA from 1.30")

	g.Expect(NewApplier(c, c, disc, Options{Log: testr.New(t)}).Sync(t.Context())).To(BeFalse())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-policies"}}
	g.Expect(c.Create(t.Context(), ns)).To(Succeed())
	both := createPodSet(g, c, ns.Name, "both-forms", appv1alpha1.InPlaceOnlyPodUpdatePolicy, revision.Template{Image: "web:1"})
	both.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:2"}}}}
	g.Expect(c.Update(t.Context(), both)).To(Succeed(), "no policy refuses a short form beside a template")
	return false
}

// startEnvtest starts a kube-apiserver and etcd (the binaries `make
// envtest-assets` builds) with the PodSet CRD, stopped when t ends, and
// returns a client and a discovery client of it.
func startEnvtest(t *testing.T) (client.Client, discovery.DiscoveryInterface) {
	t.Helper()
	g := NewWithT(t)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		m, _ := filepath.Glob(filepath.Join("..", "..", "bin", "k8s-*", "kube-apiserver"))
		if len(m) > 0 {
			assets = filepath.Dir(m[len(m)-1])
		}
	}
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS must name the envtest binaries: run `make test`")
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(appv1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	return c, disc
}
