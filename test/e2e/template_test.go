//go:build e2e

package e2e

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
)

// ownerLabel tells the Deployment's pods from the PodSet's in the
// comparison: a Deployment's selector must match its template's labels.
const ownerLabel = "e2e.example.com/owner"

// chartTemplates are pod templates of the kinds popular charts ship.
func chartTemplates() map[string]corev1.PodTemplateSpec {
	web := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"checksum/config": "0123"},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](20),
			InitContainers: []corev1.Container{
				{Name: "migrate", Image: "registry.example.com/shop:1.4", Command: []string{"/migrate"}},
				{Name: "proxy", Image: "registry.example.com/proxy:2", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}},
			},
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example.com/shop:1.4",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, Optional: ptr.To(true)}}},
				Env:            []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}},
				StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/started", Port: intstr.FromString("http")}}, FailureThreshold: 30},
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "info", MountPath: "/etc/info"}, {Name: "cache", MountPath: "/var/cache/web"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "info", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, Optional: ptr.To(true)}},
				}}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "shop"}},
			}},
		},
	}
	worker := corev1.PodTemplateSpec{
		// Labels of its own but none of the operator's: the operator adds
		// app.kubernetes.io/instance and managed-by.
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "worker", "app.kubernetes.io/name": "worker"}},
		Spec: corev1.PodSpec{
			// A chart written for restricted namespaces sets the profile
			// itself: the operator then adds nothing.
			SecurityContext:   &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			PriorityClassName: "e2e-batch",
			NodeSelector:      map[string]string{"kubernetes.io/os": "linux"},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 50, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "worker"}}},
			}}}},
			Containers: []corev1.Container{{
				Name: "worker", Image: "registry.example.com/worker:7", Args: []string{"--queue", "jobs"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
				Env: []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "worker"}, Key: "token", Optional: ptr.To(true)}}}},
			}},
		},
	}
	return map[string]corev1.PodTemplateSpec{"web": web, "worker": worker}
}

// testTemplatePodsEqualADeployments: from the same template, a PodSet's
// pods equal a Deployment's, field by field as the API server stores them,
// apart from names, owners, the hash labels and what the operator adds
// for the restricted profile (operand.Restrict) where the template is silent.
func testTemplatePodsEqualADeployments(t *testing.T) {
	ns := newNamespace(t, "e2e-template", restricted)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-batch"}, Value: 1000}
	if err := env.admin.Create(t.Context(), pc); err != nil && !strings.Contains(err.Error(), "already exists") {
		Expect(err).NotTo(HaveOccurred())
	}
	for name, tmpl := range chartTemplates() {
		step("template %q: a PodSet and a Deployment of 2", name)
		ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		ps.Spec.Replicas = ptr.To[int32](2)
		ps.Spec.Template = tmpl.DeepCopy()
		Expect(env.admin.Create(t.Context(), ps)).To(Succeed())

		// The Deployment runs the pods the operator makes: the same
		// template with the restricted settings filled in (a Deployment
		// in this namespace would otherwise be refused its pods).
		dtmpl := tmpl.DeepCopy()
		operand.Restrict(&dtmpl.Spec)
		dtmpl.Labels[ownerLabel] = "deployment"
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-deployment", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{ownerLabel: "deployment"}},
				Template: *dtmpl,
			},
		}
		Expect(env.admin.Create(t.Context(), d)).To(Succeed())

		var fromPodSet, fromDeployment []corev1.Pod
		Eventually(func(g Gomega) {
			fromPodSet = livePods(g, t.Context(), ns, name)
			g.Expect(fromPodSet).To(HaveLen(2))
			fromDeployment = livePodsLabelled(g, t.Context(), ns, client.MatchingLabels(dtmpl.Labels))
			g.Expect(fromDeployment).To(HaveLen(2))
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		for i := range fromPodSet {
			got, want := comparable(fromPodSet[i], ps.Name, tmpl.Labels), comparable(fromDeployment[i], ps.Name, tmpl.Labels)
			Expect(got).To(Equal(want), "template %q: the PodSet's pod %s and the Deployment's %s differ", name, fromPodSet[i].Name, fromDeployment[i].Name)
		}
		step("template %q: the PodSet's pods equal the Deployment's field by field", name)
	}
}

// comparable is a pod without what tells apart two pods of one template:
// its name and identity, owner, status, node, hash labels, the test's own
// label and the operator's (those the template did not set), and the
// service account token volume the API server names at random.
func comparable(p corev1.Pod, podSet string, templateLabels map[string]string) corev1.Pod {
	p = *p.DeepCopy()
	p.ObjectMeta = metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}
	for _, k := range []string{"pod-template-hash", appv1alpha1.LabelRevisionHash, podSetLabel, ownerLabel} {
		delete(p.Labels, k)
	}
	for k, v := range map[string]string{appv1alpha1.LabelName: appv1alpha1.NameValue, appv1alpha1.LabelInstance: podSet, appv1alpha1.LabelManagedBy: appv1alpha1.ManagedByValue} {
		if _, own := templateLabels[k]; !own && p.Labels[k] == v {
			delete(p.Labels, k)
		}
	}
	p.Status = corev1.PodStatus{}
	p.Spec.NodeName = ""
	var volumes []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if !strings.HasPrefix(v.Name, "kube-api-access-") {
			volumes = append(volumes, v)
		}
	}
	p.Spec.Volumes = volumes
	for _, containers := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range containers {
			var mounts []corev1.VolumeMount
			for _, m := range containers[i].VolumeMounts {
				if !strings.HasPrefix(m.Name, "kube-api-access-") {
					mounts = append(mounts, m)
				}
			}
			containers[i].VolumeMounts = mounts
		}
	}
	return p
}
