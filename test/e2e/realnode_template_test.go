//go:build e2e && realnode

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// testRealInPlaceUpdateOfATemplatesSecondContainer: a template of two
// containers under InPlaceIfPossible; a new image of the second restarts
// that container alone, in the same pod, and the first keeps running.
func testRealInPlaceUpdateOfATemplatesSecondContainer(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "real-template-inplace", restricted)
	sleeper := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: busybox137, Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](65532)}}
	}
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pair", Namespace: ns},
		Spec: appv1alpha1.PodSetSpec{
			Replicas: ptr.To[int32](2),
			UpdateStrategy: appv1alpha1.UpdateStrategy{RollingUpdate: &appv1alpha1.RollingUpdate{
				PodUpdatePolicy: appv1alpha1.InPlaceIfPossiblePodUpdatePolicy, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			}},
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{sleeper("main"), sleeper("side")}}},
		},
	}
	g.Expect(env.admin.Create(t.Context(), ps)).To(Succeed())

	statusOf := func(p corev1.Pod, name string) corev1.ContainerStatus {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == name {
				return cs
			}
		}
		return corev1.ContainerStatus{}
	}
	settled := func(image string) map[types.UID]corev1.Pod {
		pods := map[types.UID]corev1.Pod{}
		g.Eventually(func(g Gomega) {
			got := getPodSet(g, t.Context(), ns, ps.Name)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.UpdatedReplicas).To(BeEquivalentTo(2))
			g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(2))
			live := livePods(g, t.Context(), ns, ps.Name)
			g.Expect(live).To(HaveLen(2))
			for _, p := range live {
				g.Expect(isRunningAndReady(&p)).To(BeTrue(), "pod %s: %s", p.Name, podState(&p))
				g.Expect(p.Spec.Containers[1].Image).To(Equal(image))
				pods[p.UID] = p
			}
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		return pods
	}
	before := settled(busybox137)

	step("a new image of the second container, in place")
	g.Expect(patchPodSet(t, ps, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[%s,%s]}}}}`,
		mustJSONString(sleeper("main")), strings.Replace(mustJSONString(sleeper("side")), busybox137, busybox136, 1)))).To(Succeed())
	after := settled(busybox136)
	for uid, p := range after {
		b, ok := before[uid]
		g.Expect(ok).To(BeTrue(), "pod %s is new: the update was not made in place", p.Name)
		g.Expect(p.Status.PodIP).To(Equal(b.Status.PodIP))
		g.Expect(statusOf(p, "main").ContainerID).To(Equal(statusOf(b, "main").ContainerID), "pod %s: the first container restarted", p.Name)
		g.Expect(statusOf(p, "main").RestartCount).To(Equal(statusOf(b, "main").RestartCount))
		g.Expect(statusOf(p, "side").ContainerID).NotTo(Equal(statusOf(b, "side").ContainerID))
		g.Expect(statusOf(p, "side").RestartCount).To(Equal(statusOf(b, "side").RestartCount + 1))
	}
}

func mustJSONString(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
