//go:build e2e && realnode

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// serveDelay is how long the template's server waits before it listens:
// its pod must stay unready until then, through its readiness probe.
const serveDelay = 4 * time.Second

// testRealTemplateServesAConfigMap: a real application from a full pod
// template, in a namespace that enforces the restricted profile (the
// template says nothing of security): busybox httpd serving a page from a
// ConfigMap volume on a named port, with a readiness probe on that port. The
// pod turns Ready only once the server answers, and then serves the page.
func testRealTemplateServesAConfigMap(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "real-template", restricted)
	page := "hello from a PodSet template\n"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-content", Namespace: ns}, Data: map[string]string{"index.html": page}}
	g.Expect(env.admin.Create(t.Context(), cm)).To(Succeed())
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](1), Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appv1alpha1.LabelName: "web"}},
			Spec: corev1.PodSpec{
				// busybox has no USER: the template names a non-root one,
				// as a chart for such an image does.
				SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532)},
				TerminationGracePeriodSeconds: ptr.To[int64](5),
				Containers: []corev1.Container{{
					Name:    "web",
					Image:   "docker.io/library/busybox:1.37.0",
					Command: []string{"sh", "-c", fmt.Sprintf("sleep %d; exec httpd -f -p 8080 -h /www", int(serveDelay.Seconds()))},
					Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
						PeriodSeconds: 1,
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "content", MountPath: "/www"}},
				}},
				Volumes: []corev1.Volume{{Name: "content", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-content"}},
				}}},
			},
		}},
	}
	g.Expect(env.admin.Create(t.Context(), ps)).To(Succeed())

	step("waiting for the template's pod to serve")
	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := livePods(g, t.Context(), ns, ps.Name)
		g.Expect(pods).To(HaveLen(1))
		pod = pods[0]
		g.Expect(isRunningAndReady(&pod)).To(BeTrue(), "pod %s: %s", pod.Name, podState(&pod))
		g.Expect(getPodSet(g, t.Context(), ns, ps.Name).Status.AvailableReplicas).To(BeEquivalentTo(1))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	cs := pod.Status.ContainerStatuses[0]
	g.Expect(cs.State.Running).NotTo(BeNil())
	var readySince time.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			readySince = c.LastTransitionTime.Time
		}
	}
	// Condition times have a resolution of a second.
	g.Expect(readySince).To(BeTemporally(">=", cs.State.Running.StartedAt.Add(serveDelay-time.Second)),
		"the pod turned Ready before its server listened (container started %s)", cs.State.Running.StartedAt)
	g.Expect(pod.Labels).To(HaveKeyWithValue(appv1alpha1.LabelName, "web"))
	// What the operator filled in, as the kernel applies it (no
	// read-only root: that is the short form's, not the profile's).
	g.Eventually(func(g Gomega) {
		cp := inspectContainer(g, &pod)
		g.Expect(cp.uid).To(Equal("65532"))
		g.Expect(cp.noNewPrivs).To(Equal("1"))
		g.Expect(cp.seccomp).To(Equal("2"))
		g.Expect(cp.capEff).To(Equal("0000000000000000"))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("GET http://%s:8080/ from the host", pod.Status.PodIP)
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + pod.Status.PodIP + ":8080/")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(string(body)).To(Equal(page))
}
