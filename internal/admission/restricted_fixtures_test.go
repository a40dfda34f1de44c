package admission

// Every fixture pod of the Pod Security Standard "restricted" that
// k8s.io/pod-security-admission ships for its newest version, as the
// template of a PodSet, against a real kube-apiserver: the policy
// (template.yaml) admits the PodSet exactly when the operator would make
// pods of it (operand.RestrictedRefusal on the pod that Restrict filled).

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
)

// templatePolicyDenied starts what the API server says when the template
// policy refuses a request.
const templatePolicyDenied = "ValidatingAdmissionPolicy 'podsets-template.app.example.com' with binding 'podsets-template.app.example.com' denied request: "

type restrictedFixture struct {
	name string // pass/base.yaml
	pass bool   // under pass/: the profile admits the pod
	pod  corev1.Pod
}

func TestRestrictedFixtures(t *testing.T) {
	g := NewWithT(t)
	version, fixtures := readRestrictedFixtures(t)
	c, ok := startWithPolicies(t)
	if !ok {
		return
	}
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted-fixtures"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())

	// The API server loads a new policy in the background: wait until a
	// privileged container is refused.
	tries := 0
	g.Eventually(func() error {
		tries++
		probe := fixturePodSet(ns.Name, fmt.Sprintf("probe-%d", tries), &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "i", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
		}})
		return c.Create(ctx, probe)
	}).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring(templatePolicyDenied)))

	agreeAtAdmission, agreeAsWritten := 0, 0
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			// The library's verdict on the pod as written, and on it as
			// the API server would store it, which is what the fixture's
			// directory says (see asStored).
			asWritten, stored := operand.RestrictedRefusal(&f.pod), operand.RestrictedRefusal(asStored(&f.pod))
			if (stored == "") != f.pass {
				t.Fatalf("the library does not judge the fixture as its directory says: %s", verdict(stored))
			}
			if stored != asWritten {
				t.Logf("as written, the library refuses what the pod's defaults make admissible: %s", asWritten)
			}

			spec := f.pod.Spec.DeepCopy()
			if fixed := fixSchema(spec); fixed != "" {
				t.Logf("set %s, which the CRD's schema requires and the profile does not judge", fixed)
				if operand.RestrictedRefusal(&corev1.Pod{ObjectMeta: f.pod.ObjectMeta, Spec: *spec}) != asWritten {
					t.Fatal("fixing the schema changed the library's verdict")
				}
			}
			labels := maps.Clone(f.pod.Labels)
			delete(labels, appv1alpha1.LabelPodSet)
			delete(labels, appv1alpha1.LabelRevisionHash)
			ps := fixturePodSet(ns.Name, podSetName(f.name), &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: f.pod.Annotations},
				Spec:       *spec,
			})
			want, agrees, err := admitAsOperator(t, c, ps)
			admitted := err == nil
			if agrees {
				agreeAtAdmission++
			}

			switch {
			case admitted == (asWritten == ""):
				agreeAsWritten++
			case !f.pass && admitted && want == "":
				t.Logf("a fail fixture the operator's defaults fix: %s", asWritten)
			default:
				t.Errorf("admission %s, the library on the fixture as written %s, and the operator's defaults do not explain it",
					verdict(admissionMessage(err)), verdict(asWritten))
			}
		})
	}

	line := fmt.Sprintf("restricted fixtures (%s): %d of %d agree with the operator's verdict at admission; %d of %d with the library's verdict on the fixture as written (the other %d are fixed by the operator's defaults)",
		version, agreeAtAdmission, len(fixtures), agreeAsWritten, len(fixtures), len(fixtures)-agreeAsWritten)
	t.Log(line)
	fmt.Println(line)
	g.Expect(agreeAtAdmission).To(Equal(len(fixtures)), "every fixture as the operator judges it")

	t.Run("beyond the fixtures", func(t *testing.T) { restrictedEdgeCases(t, c, ns.Name) })
}

// admitAsOperator creates ps, and reports the operator's verdict on its
// pods, the API server's error, and whether the two agree; it fails t
// when they do not, or when a refusal is not the template policy's,
// naming a field under spec.template, with reason Invalid.
func admitAsOperator(t *testing.T, c client.Client, ps *appv1alpha1.PodSet) (want string, agrees bool, err error) {
	t.Helper()
	want = operand.RestrictedRefusal(operand.NewPod(ps, operand.TemplateOf(ps), "h", "", operand.OperatorPicksIDs))
	err = c.Create(t.Context(), ps)
	t.Logf("operator: %s; admission: %s", verdict(want), verdict(admissionMessage(err)))
	switch {
	case err != nil && !strings.Contains(err.Error(), templatePolicyDenied):
		t.Errorf("refused by the API server for a reason that is not the template policy (operator's verdict: %s): %v", verdict(want), err)
	case err != nil && !apierrors.IsInvalid(err):
		t.Errorf("the policy's refusal is not 422 Invalid: %v", err)
	case err != nil && !regexp.MustCompile(`denied request: spec\.template\.`).MatchString(err.Error()):
		t.Errorf("the policy's refusal does not start with the field under spec.template: %v", err)
	case (err == nil) != (want == ""):
		t.Errorf("the API server says %s, the operator %s", verdict(admissionMessage(err)), verdict(want))
	default:
		return want, true, err
	}
	return want, false, err
}

// restrictedEdgeCases are what the fixtures do not show: the exemptions
// of Windows pods and of user namespaces, what the operator fills in or
// leaves, values the profile allows, and the index of a container or item
// that is not the first.
func restrictedEdgeCases(t *testing.T, c client.Client, ns string) {
	sc := func(ctr *corev1.Container) *corev1.SecurityContext {
		if ctr.SecurityContext == nil {
			ctr.SecurityContext = &corev1.SecurityContext{}
		}
		return ctr.SecurityContext
	}
	podSC := func(s *corev1.PodSpec) *corev1.PodSecurityContext {
		if s.SecurityContext == nil {
			s.SecurityContext = &corev1.PodSecurityContext{}
		}
		return s.SecurityContext
	}
	windows := func(s *corev1.PodSpec) { s.OS = &corev1.PodOS{Name: corev1.Windows} }
	unconfined := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	for i, tc := range []struct {
		name   string
		mutate func(*corev1.PodTemplateSpec)
		field  string // the field a refusal names; "" when admitted
	}{
		{"nothing set", func(*corev1.PodTemplateSpec) {}, ""},
		{"windows skips capabilities, seccomp and allowPrivilegeEscalation", func(p *corev1.PodTemplateSpec) {
			windows(&p.Spec)
			podSC(&p.Spec).SeccompProfile = unconfined
			s := sc(&p.Spec.Containers[1])
			s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}, Drop: []corev1.Capability{"NET_RAW"}}
			s.AllowPrivilegeEscalation, s.SeccompProfile = ptr.To(true), unconfined
		}, ""},
		{"windows keeps privileged", func(p *corev1.PodTemplateSpec) {
			windows(&p.Spec)
			sc(&p.Spec.Containers[1]).Privileged = ptr.To(true)
		}, "spec.template.spec.containers[1].securityContext.privileged"},
		{"windows keeps runAsNonRoot", func(p *corev1.PodTemplateSpec) {
			windows(&p.Spec)
			podSC(&p.Spec).RunAsNonRoot = ptr.To(false)
		}, "spec.template.spec.securityContext.runAsNonRoot"},
		{"windows keeps hostProcess", func(p *corev1.PodTemplateSpec) {
			windows(&p.Spec)
			podSC(&p.Spec).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}, "spec.template.spec.securityContext.windowsOptions.hostProcess"},
		{"a user namespace skips runAsNonRoot and runAsUser", func(p *corev1.PodTemplateSpec) {
			p.Spec.HostUsers = ptr.To(false)
			podSC(&p.Spec).RunAsNonRoot, podSC(&p.Spec).RunAsUser = ptr.To(false), ptr.To[int64](0)
			sc(&p.Spec.Containers[1]).RunAsUser = ptr.To[int64](0)
		}, ""},
		{"a user namespace keeps procMount", func(p *corev1.PodTemplateSpec) {
			p.Spec.HostUsers = ptr.To(false)
			sc(&p.Spec.Containers[1]).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, "spec.template.spec.containers[1].securityContext.procMount"},
		{"drop without ALL", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.Containers[1]).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}
		}, "spec.template.spec.containers[1].securityContext.capabilities.drop"},
		{"NET_BIND_SERVICE added, ALL dropped among others, privileged false", func(p *corev1.PodTemplateSpec) {
			s := sc(&p.Spec.Containers[1])
			s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"NET_RAW", "ALL"}}
			s.Privileged = ptr.To(false)
		}, ""},
		{"SYS_ADMIN added, so allowPrivilegeEscalation is not filled", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.InitContainers[0]).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}
		}, "spec.template.spec.initContainers[0].securityContext.capabilities.add"},
		{"allowPrivilegeEscalation true in the second container", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.Containers[1]).AllowPrivilegeEscalation = ptr.To(true)
		}, "spec.template.spec.containers[1].securityContext.allowPrivilegeEscalation"},
		{"SELinux types and level the profile allows", func(p *corev1.PodTemplateSpec) {
			podSC(&p.Spec).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t", Level: "s0:c1"}
			sc(&p.Spec.Containers[1]).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_kvm_t"}
		}, ""},
		{"SELinux user in a container", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.Containers[1]).SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"}
		}, "spec.template.spec.containers[1].securityContext.seLinuxOptions"},
		{"AppArmor the profile allows", func(p *corev1.PodTemplateSpec) {
			podSC(&p.Spec).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
			sc(&p.Spec.Containers[0]).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("p")}
			p.Annotations = map[string]string{
				"container.apparmor.security.beta.kubernetes.io/a":    "",
				"container.apparmor.security.beta.kubernetes.io/b":    "localhost/p",
				"container.apparmor.security.beta.kubernetes.io/init": "runtime/default",
			}
		}, ""},
		{"AppArmor unconfined for the pod", func(p *corev1.PodTemplateSpec) {
			podSC(&p.Spec).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, "spec.template.spec.securityContext.appArmorProfile.type"},
		{"AppArmor unconfined in the second container", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.Containers[1]).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, "spec.template.spec.containers[1].securityContext.appArmorProfile.type"},
		{"seccomp Localhost in a container, none for the pod", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.Containers[0]).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p")}
		}, ""},
		{"seccomp Unconfined in the second container", func(p *corev1.PodTemplateSpec) {
			sc(&p.Spec.Containers[1]).SeccompProfile = unconfined
		}, "spec.template.spec.containers[1].securityContext.seccompProfile.type"},
		{"probes and handlers without a host", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
		}, ""},
		{"a startup probe with a host in the second container", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[1].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "h", Port: intstr.FromInt32(80)}}}
		}, "spec.template.spec.containers[1].startupProbe.tcpSocket.host"},
		{"a preStop hook with a host", func(p *corev1.PodTemplateSpec) {
			p.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "h", Port: intstr.FromInt32(80)}}}
		}, "spec.template.spec.initContainers[0].lifecycle.preStop.httpGet.host"},
		{"the second port with a hostPort", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81, HostPort: 81}}
		}, "spec.template.spec.containers[1].ports[1].hostPort"},
		{"volumes the profile allows", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}},
				{Name: "ephemeral", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
				{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "r"}}},
				{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
			}
		}, ""},
		{"a second volume without a source", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "none"}}
		}, "spec.template.spec.volumes[1]"},
		// The runtime cost limits, on a template far larger than usual.
		{"a large template", func(p *corev1.PodTemplateSpec) {
			p.Annotations = map[string]string{}
			for i := range 200 {
				p.Annotations[fmt.Sprintf("example.com/a%d", i)] = "v"
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			for i := range 100 {
				ctr := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "i", SecurityContext: &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"NET_RAW", "ALL"}},
				}}
				ctr.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
				for j := range 20 {
					ctr.Ports = append(ctr.Ports, corev1.ContainerPort{ContainerPort: int32(1000 + j)})
				}
				p.Spec.Containers = append(p.Spec.Containers, ctr)
			}
		}, ""},
		{"sysctls the profile allows, then one it does not", func(p *corev1.PodTemplateSpec) {
			podSC(&p.Spec).Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_rmem", Value: "4096"}, {Name: "kernel.msgmax", Value: "1"}}
		}, "spec.template.spec.securityContext.sysctls[1].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "i"}},
				Containers:     []corev1.Container{{Name: "a", Image: "i"}, {Name: "b", Image: "i"}},
			}}
			tc.mutate(pts)
			_, _, err := admitAsOperator(t, c, fixturePodSet(ns, fmt.Sprintf("edge-%d", i), pts))
			if tc.field == "" {
				if err != nil {
					t.Errorf("want admitted: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "denied request: "+tc.field+":") {
				t.Errorf("want refused naming %s: %v", tc.field, err)
			}
		})
	}
	// Without a template, or with one of metadata only, nothing is judged.
	t.Run("no template, or no pod spec", func(t *testing.T) {
		ps := fixturePodSet(ns, "edge-short-form", nil)
		ps.Spec.Image = "registry.example.com/app:1"
		if err := c.Create(t.Context(), ps); err != nil {
			t.Error(err)
		}
		raw := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": appv1alpha1.GroupVersion.String(), "kind": "PodSet",
			"metadata": map[string]any{"namespace": ns, "name": "edge-metadata-only"},
			"spec":     map[string]any{"replicas": int64(0), "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}},
		}}
		if err := c.Create(t.Context(), raw); err != nil {
			t.Error(err)
		}
	})
}

// readRestrictedFixtures returns the newest version of the restricted
// fixtures in the module k8s.io/pod-security-admission, and its pods.
func readRestrictedFixtures(t *testing.T) (string, []restrictedFixture) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/pod-security-admission").Output()
	if err != nil {
		t.Fatalf("finding the module k8s.io/pod-security-admission: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "test", "testdata", "restricted")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	newest, newestMinor := "", -1
	for _, d := range dirs {
		if minor, err := strconv.Atoi(strings.TrimPrefix(d.Name(), "v1.")); err == nil && minor > newestMinor {
			newest, newestMinor = d.Name(), minor
		}
	}
	var fixtures []restrictedFixture
	for _, dir := range []string{"pass", "fail"} {
		files, err := filepath.Glob(filepath.Join(root, newest, dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixtures in %s: %v", filepath.Join(root, newest, dir), err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f := restrictedFixture{name: dir + "/" + filepath.Base(file), pass: dir == "pass"}
			// Strict: a field the Go types dropped would go untested.
			if err := yaml.UnmarshalStrict(b, &f.pod); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			fixtures = append(fixtures, f)
		}
	}
	return newest, fixtures
}

// asStored is pod with the one default of the API server's that the
// profile's verdict depends on: a volume of no source is an emptyDir
// (pass/restrictedvolumes0.yaml counts on it). A PodSet's template gets no
// such default, and the operator judges it as written.
func asStored(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	for i, v := range pod.Spec.Volumes {
		if v.VolumeSource == (corev1.VolumeSource{}) {
			pod.Spec.Volumes[i].EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
	}
	return pod
}

// fixSchema sets in spec what the CRD's schema requires and the profile
// does not judge (a fixture leaves scaleIO.secretRef null: it is about the
// volume's type), and says what it set ("" for nothing).
func fixSchema(spec *corev1.PodSpec) string {
	var fixed []string
	for i, v := range spec.Volumes {
		if v.ScaleIO != nil && v.ScaleIO.SecretRef == nil {
			v.ScaleIO.SecretRef = &corev1.LocalObjectReference{Name: "secret"}
			fixed = append(fixed, fmt.Sprintf("volumes[%d].scaleIO.secretRef", i))
		}
	}
	return strings.Join(fixed, ", ")
}

// startWithPolicies starts a kube-apiserver with the PodSet CRD, as
// TestPolicyAgainstAPIServer does, and applies the policies.
func startWithPolicies(t *testing.T) (client.Client, bool) {
	t.Helper()
	g := NewWithT(t)
	c, disc := startEnvtest(t)
	if !policiesServed(t, c, disc) {
		return c, false
	}

	// Sync logs an error and goes on; an expression that does not compile
	// shows as a policy the API server did not store.
	g.Expect(NewApplier(c, c, disc, Options{Log: testr.New(t)}).Sync(t.Context())).To(BeFalse())
	objs, err := Objects(nil)
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		got := o.DeepCopy()
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(o), got)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
	}
	return c, true
}

// fixturePodSet is a PodSet of no pods with the template pts and no short
// form field.
func fixturePodSet(ns, name string, pts *corev1.PodTemplateSpec) *appv1alpha1.PodSet {
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ps.Spec.Replicas = new(int32)
	ps.Spec.Template = pts
	return ps
}

// podSetName is a fixture's file name as an object name:
// fail/seccompprofile_restricted0.yaml is fail-seccompprofile-restricted0.
func podSetName(fixture string) string {
	return strings.NewReplacer("/", "-", "_", "-").Replace(strings.TrimSuffix(fixture, ".yaml"))
}

// admissionMessage is what follows the policy's denial in err, err itself
// when something else refused, or "" when nothing did.
func admissionMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.Index(msg, templatePolicyDenied); i >= 0 {
		return msg[i+len(templatePolicyDenied):]
	}
	return msg
}

func verdict(refusal string) string {
	if refusal == "" {
		return "allowed"
	}
	return "refused (" + refusal + ")"
}
