//go:build e2e && realnode

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/loadclient"
)

// The zero-downtime scenarios (`make test-zero-downtime`): a real server
// behind a ClusterIP Service, reached from the host through the node's
// kube-proxy, while a PodSet, and then a Deployment with the same template
// and replica count, change their pods. The load client records every
// failed request; the PodSet must have none, and never more than the
// Deployment. The figures of both are printed, one line per scenario.

// zeroDowntimeRate is the requests a second of each of the client's modes
// (new connections, kept-alive ones): 50 a second in all.
const zeroDowntimeRate = 25

// zeroDowntimeTemplate is a web server that changes its pods without
// dropping a request, as docs/reference.md says to write one: a readiness
// probe, a preStop pause long enough for the endpoint to leave every node's
// rules before the server stops, and a grace period that covers the pause.
// Its server stops at once on SIGTERM, as real ones do (busybox httpd as
// PID 1 ignores it and would serve on until the grace period's SIGKILL,
// hiding what the scenarios look for); VERSION=crash makes it exit 1 at
// start, a version that crashes.
func zeroDowntimeTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			// Restricted in full, as the operator makes a PodSet's pods:
			// the Deployment's must be so to run in the namespace.
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			TerminationGracePeriodSeconds: ptr.To[int64](15),
			Containers: []corev1.Container{{
				Name:  "web",
				Image: busybox137,
				Command: []string{"sh", "-c", `[ "$VERSION" = crash ] && exit 1
mkdir -p /tmp/www && hostname > /tmp/www/index.html
httpd -f -p 8080 -h /tmp/www & trap "kill $!; exit 0" TERM; wait`},
				Env:   []corev1.EnvVar{{Name: "VERSION", Value: "1"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// zeroDowntimeKind is one of the two kinds a scenario runs for: the
// workload object, which both take the same JSON patches on
// /spec/replicas and /spec/template.
type zeroDowntimeKind interface {
	name() string
	create(t *testing.T, ns string, replicas int32, template corev1.PodTemplateSpec)
	object() client.Object
	// settled: the controller has seen the spec and reports every one
	// of replicas pods on it, available.
	settled(g Gomega, replicas int32)
}

type podSetKind struct {
	ps     *appv1alpha1.PodSet
	mutate func(*appv1alpha1.PodSetSpec)
}

func (k *podSetKind) name() string          { return "PodSet" }
func (k *podSetKind) object() client.Object { return k.ps }

func (k *podSetKind) create(t *testing.T, ns string, replicas int32, template corev1.PodTemplateSpec) {
	k.ps = &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appv1alpha1.PodSetSpec{
			Replicas: ptr.To(replicas),
			Template: &template,
			UpdateStrategy: appv1alpha1.UpdateStrategy{RollingUpdate: &appv1alpha1.RollingUpdate{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			}},
		},
	}
	if k.mutate != nil {
		k.mutate(&k.ps.Spec)
	}
	Expect(env.admin.Create(t.Context(), k.ps)).To(Succeed())
}

func (k *podSetKind) settled(g Gomega, replicas int32) {
	ps := getPodSet(g, context.Background(), k.ps.Namespace, k.ps.Name)
	g.Expect(ps.Status.ObservedGeneration).To(Equal(ps.Generation))
	g.Expect(ps.Status.UpdatedReplicas).To(Equal(replicas), "status %+v", ps.Status)
	g.Expect(ps.Status.AvailableReplicas).To(Equal(replicas))
	g.Expect(ps.Status.Replicas).To(Equal(replicas))
}

type deploymentKind struct{ d *appsv1.Deployment }

func (k *deploymentKind) name() string          { return "Deployment" }
func (k *deploymentKind) object() client.Object { return k.d }

func (k *deploymentKind) create(t *testing.T, ns string, replicas int32, template corev1.PodTemplateSpec) {
	k.d = &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: template.Labels},
			Template: template,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			}},
		},
	}
	Expect(env.admin.Create(t.Context(), k.d)).To(Succeed())
}

func (k *deploymentKind) settled(g Gomega, replicas int32) {
	d := &appsv1.Deployment{}
	g.Expect(env.admin.Get(context.Background(), client.ObjectKeyFromObject(k.d), d)).To(Succeed())
	g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
	g.Expect(d.Status.UpdatedReplicas).To(Equal(replicas), "status %+v", d.Status)
	g.Expect(d.Status.AvailableReplicas).To(Equal(replicas))
	g.Expect(d.Status.Replicas).To(Equal(replicas))
}

// zeroDowntimePatch sends JSON patch operations to the kind's object.
func zeroDowntimePatch(t *testing.T, k zeroDowntimeKind, ops ...string) {
	patch := "[" + strings.Join(ops, ",") + "]"
	Expect(env.admin.Patch(t.Context(), k.object(), client.RawPatch(types.JSONPatchType, []byte(patch)))).To(Succeed())
}

// The patches the scenarios send: a merge patch would replace the whole
// container list.
func setVersion(v string) string {
	return fmt.Sprintf(`{"op":"replace","path":"/spec/template/spec/containers/0/env/0/value","value":%q}`, v)
}

func setImage(image string) string {
	return fmt.Sprintf(`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}`, image)
}

func setCPURequest(q string) string {
	return fmt.Sprintf(`{"op":"replace","path":"/spec/template/spec/containers/0/resources/requests/cpu","value":%q}`, q)
}

func setReplicas(n int32) string {
	return fmt.Sprintf(`{"op":"replace","path":"/spec/replicas","value":%d}`, n)
}

// serving waits until the app's pods are exactly replicas, none of them
// terminating, all Ready and passing check, and the Service's ready
// endpoints are exactly theirs. It returns the pods.
func serving(t *testing.T, ns, app string, replicas int32, check func(Gomega, *corev1.Pod)) []corev1.Pod {
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		var all corev1.PodList
		g.Expect(env.admin.List(context.Background(), &all, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
		g.Expect(all.Items).To(HaveLen(int(replicas)), "pods, the terminating ones included")
		ips := map[string]bool{}
		for _, p := range all.Items {
			g.Expect(isLive(&p)).To(BeTrue(), "pod %s: %s", p.Name, podState(&p))
			g.Expect(isRunningAndReady(&p)).To(BeTrue(), "pod %s: %s", p.Name, podState(&p))
			check(g, &p)
			ips[p.Status.PodIP] = true
		}
		var slices discoveryv1.EndpointSliceList
		g.Expect(env.admin.List(context.Background(), &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: app})).To(Succeed())
		endpoints := map[string]bool{}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if ptr.Deref(e.Conditions.Ready, false) {
					for _, a := range e.Addresses {
						endpoints[a] = true
					}
				}
			}
		}
		g.Expect(endpoints).To(Equal(ips), "the Service's ready endpoints are the pods")
		pods = all.Items
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return pods
}

// runsVersion checks a pod's VERSION.
func runsVersion(v string) func(Gomega, *corev1.Pod) {
	return func(g Gomega, p *corev1.Pod) {
		g.Expect(p.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "VERSION", Value: v}), "pod %s", p.Name)
	}
}

// zeroDowntimeScenario is a change to a running workload, under load.
type zeroDowntimeScenario struct {
	name     string
	replicas int32
	// podSet adjusts the PodSet's spec beyond the template and
	// replicas; the Deployment always rolls with maxSurge 1 and
	// maxUnavailable 0.
	podSet func(*appv1alpha1.PodSetSpec)
	// change makes the change and returns once the workload has settled
	// on its outcome; before are the pods before it.
	change func(t *testing.T, k zeroDowntimeKind, ns, app string, before []corev1.Pod)
}

// zeroDowntimeResult is one kind's figures of one scenario.
type zeroDowntimeResult struct {
	kind   string
	result *loadclient.Result
	// took is the change, from its patch until the pods settled.
	took time.Duration
}

// run runs the scenario for a PodSet, then a Deployment, each under load
// through a Service of its own, and returns their results.
func (sc zeroDowntimeScenario) run(t *testing.T) []zeroDowntimeResult {
	var results []zeroDowntimeResult
	for _, k := range []zeroDowntimeKind{&podSetKind{mutate: sc.podSet}, &deploymentKind{}} {
		app := strings.ToLower(k.name())
		ns := newNamespace(t, "real-zd-"+sc.name+"-"+app, restricted)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": app},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
			},
		}
		Expect(env.admin.Create(t.Context(), svc)).To(Succeed())
		k.create(t, ns, sc.replicas, zeroDowntimeTemplate(app))
		Eventually(func(g Gomega) { k.settled(g, sc.replicas) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		before := serving(t, ns, app, sc.replicas, runsVersion("1"))
		url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
		// The Service answers through the node's kube-proxy before the
		// load starts: its rules are in place.
		Eventually(func() string {
			return getOnce(url)
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(BeEmpty())

		step("%s, %s: %d pods behind %s, %d requests a second over new connections and as many kept alive",
			sc.name, k.name(), sc.replicas, url, zeroDowntimeRate)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan *loadclient.Result, 1)
		go func() {
			done <- loadclient.Run(ctx, loadclient.Options{URL: url, PerSecond: zeroDowntimeRate, Timeout: 2 * time.Second})
		}()
		// Steady state first, then the change, and steady state again
		// after it, so that a late failure counts.
		time.Sleep(2 * time.Second)
		start := time.Now()
		sc.change(t, k, ns, app, before)
		took := time.Since(start)
		time.Sleep(3 * time.Second)
		stop()
		r := <-done
		step("%s, %s: %s (the change took %s)", sc.name, k.name(), r, took.Round(100*time.Millisecond))
		for _, f := range r.Failures() {
			step("  %s %s: %s", f.At.Format("15:04:05.000"), f.Mode, f.Reason)
		}
		results = append(results, zeroDowntimeResult{k.name(), r, took})
	}
	return results
}

// getOnce sends one GET and reads the answer; why it failed, "" if it
// did not.
func getOnce(url string) string {
	resp, err := (&http.Client{Timeout: time.Second}).Get(url)
	if err != nil {
		return loadclient.Reason(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return loadclient.Reason(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.Status
	}
	return ""
}

// inPlace is the PodSet's strategy of the in-place scenarios: one pod at
// a time, out of its Services while it changes.
func inPlace(s *appv1alpha1.PodSetSpec) {
	s.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{
		PodUpdatePolicy: appv1alpha1.InPlaceIfPossiblePodUpdatePolicy,
		MaxSurge:        ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
	}
}

// keptThePods checks that a PodSet's pods are those of before, as an
// in-place update keeps them.
func keptThePods(k zeroDowntimeKind, before, after []corev1.Pod) {
	if k.name() != "PodSet" {
		return
	}
	uids := func(pods []corev1.Pod) []types.UID {
		var u []types.UID
		for _, p := range pods {
			u = append(u, p.UID)
		}
		return u
	}
	Expect(uids(after)).To(ConsistOf(uids(before)), "the PodSet replaced pods it should have updated in place")
}

// restarts is the pods' container restarts in all.
func restarts(pods []corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n
}

var zeroDowntimeScenarios = []zeroDowntimeScenario{{
	name: "rolling-update", replicas: 3,
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, _ []corev1.Pod) {
		zeroDowntimePatch(t, k, setVersion("2"))
		Eventually(func(g Gomega) { k.settled(g, 3) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		serving(t, ns, app, 3, runsVersion("2"))
	},
}, {
	// The Deployment replaces its pods for the same change.
	name: "in-place-image", replicas: 3, podSet: inPlace,
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, before []corev1.Pod) {
		zeroDowntimePatch(t, k, setImage(busyboxV2))
		Eventually(func(g Gomega) { k.settled(g, 3) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		after := serving(t, ns, app, 3, func(g Gomega, p *corev1.Pod) {
			g.Expect(p.Spec.Containers[0].Image).To(Equal(busyboxV2))
			g.Expect(p.Status.ContainerStatuses[0].Image).To(Equal(busyboxV2), "pod %s runs its old image", p.Name)
		})
		keptThePods(k, before, after)
	},
}, {
	name: "scale-down", replicas: 4,
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, _ []corev1.Pod) {
		zeroDowntimePatch(t, k, setReplicas(2))
		Eventually(func(g Gomega) { k.settled(g, 2) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		serving(t, ns, app, 2, runsVersion("1"))
	},
}, {
	// The PodSet rolls itself back; the Deployment, which has no
	// auto-rollback, is rolled back as `kubectl rollout undo` would, once
	// its new pod has crashed.
	name: "auto-rollback", replicas: 3,
	podSet: func(s *appv1alpha1.PodSetSpec) {
		s.UpdateStrategy.RollingUpdate.AutoRollback = &appv1alpha1.AutoRollback{
			RestartLimit: ptr.To[int32](2), FailureGracePeriodSeconds: ptr.To[int32](5),
		}
	},
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, _ []corev1.Pod) {
		zeroDowntimePatch(t, k, setVersion("crash"))
		if ps, ok := k.object().(*appv1alpha1.PodSet); ok {
			Eventually(func(g Gomega) {
				got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
				g.Expect(got.Status.AutoRollback).NotTo(BeNil(), "no rollback yet")
				c := meta.FindStatusCondition(got.Status.Conditions, appv1alpha1.ConditionProgressing)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(appv1alpha1.ReasonRolledBack), c.Message)
				g.Expect(c.Message).To(ContainSubstring("all 3 pods are back on revision"))
			}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		} else {
			Eventually(func(g Gomega) {
				crashed := 0
				for _, p := range livePodsLabelled(g, t.Context(), ns, client.MatchingLabels{"app": app}) {
					if p.Spec.Containers[0].Env[0].Value == "crash" && restarts([]corev1.Pod{p}) > 0 {
						crashed++
					}
				}
				g.Expect(crashed).To(BeNumerically(">", 0))
			}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
			zeroDowntimePatch(t, k, setVersion("1"))
			Eventually(func(g Gomega) { k.settled(g, 3) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		}
		serving(t, ns, app, 3, runsVersion("1"))
	},
}, {
	// The Deployment's rollout runs with its controller left alone:
	// SIGKILL to kube-controller-manager would stop the endpoint
	// controllers too, which the PodSet's case keeps.
	name: "leader-killed", replicas: 3,
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, _ []corev1.Pod) {
		zeroDowntimePatch(t, k, setVersion("2"))
		if k.name() == "PodSet" {
			Eventually(func(g Gomega) {
				moved := 0
				for _, p := range livePodsLabelled(g, t.Context(), ns, client.MatchingLabels{"app": app}) {
					if p.Spec.Containers[0].Env[0].Value == "2" {
						moved++
					}
				}
				g.Expect(moved).To(BeNumerically(">=", 1))
			}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 5).Should(Succeed())
			killManager(t)
		}
		Eventually(func(g Gomega) { k.settled(g, 3) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		serving(t, ns, app, 3, runsVersion("2"))
	},
}, {
	// The PodSet is told which pod to remove (spec.scaleStrategy.podsToDelete,
	// as `kubectl podset delete-pod` writes it) and, with maxUnavailable 0,
	// creates its replacement before it deletes it; the Deployment's pod is
	// deleted as `kubectl delete pod` does, and replaced once its deletion
	// begins.
	name: "delete-pod", replicas: 3,
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, before []corev1.Pod) {
		named := before[0].Name
		if k.name() == "PodSet" {
			zeroDowntimePatch(t, k, fmt.Sprintf(`{"op":"add","path":"/spec/scaleStrategy","value":{"podsToDelete":[%q]}}`, named))
		} else {
			Expect(env.admin.Delete(t.Context(), &before[0])).To(Succeed())
		}
		Eventually(func(g Gomega) {
			k.settled(g, 3)
			if ps, ok := k.object().(*appv1alpha1.PodSet); ok {
				g.Expect(getPodSet(g, t.Context(), ps.Namespace, ps.Name).Spec.PodsToDelete()).To(BeEmpty(), "spec.scaleStrategy.podsToDelete")
			}
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		after := serving(t, ns, app, 3, runsVersion("1"))
		var names []string
		for _, p := range after {
			names = append(names, p.Name)
		}
		Expect(names).NotTo(ContainElement(named), "the named pod is still there")
		Expect(names).To(ContainElements(before[1].Name, before[2].Name), "a pod that was not named is gone")
	},
}, {
	// A cpu request changed in place restarts nothing (resizePolicy
	// NotRequired, the default); the Deployment replaces its pods.
	name: "in-place-resize", replicas: 3, podSet: inPlace,
	change: func(t *testing.T, k zeroDowntimeKind, ns, app string, before []corev1.Pod) {
		zeroDowntimePatch(t, k, setCPURequest("100m"))
		Eventually(func(g Gomega) { k.settled(g, 3) }).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		after := serving(t, ns, app, 3, func(g Gomega, p *corev1.Pod) {
			g.Expect(p.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("100m"), "pod %s", p.Name)
			g.Expect(p.Status.ContainerStatuses[0].Resources).NotTo(BeNil())
			g.Expect(p.Status.ContainerStatuses[0].Resources.Requests.Cpu().String()).To(Equal("100m"), "pod %s: not resized yet", p.Name)
		})
		keptThePods(k, before, after)
		if k.name() == "PodSet" {
			Expect(restarts(after)).To(Equal(restarts(before)), "a resize restarted containers")
		}
	},
}}

// testRealZeroDowntime runs every scenario for both kinds and prints the
// table docs/benchmarks.md keeps.
func testRealZeroDowntime(t *testing.T) {
	type row struct {
		scenario string
		results  []zeroDowntimeResult
	}
	var rows []row
	t.Cleanup(func() {
		step("zero downtime, %d requests a second (new connections and kept-alive), failed requests and p99 latency:", 2*zeroDowntimeRate)
		step("| scenario | PodSet: requests | failed | p99 | change took | Deployment: requests | failed | p99 | change took |")
		for _, r := range rows {
			line := "| " + r.scenario + " |"
			for _, res := range r.results {
				line += fmt.Sprintf(" %d | %d | %s | %.1f s |", res.result.Requests(), len(res.result.Failures()),
					res.result.Quantile(0.99).Round(time.Millisecond), res.took.Seconds())
			}
			step("%s", line)
		}
	})
	for _, sc := range zeroDowntimeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			RegisterTestingT(t)
			results := sc.run(t)
			rows = append(rows, row{sc.name, results})
			podSet := results[0].result
			Expect(podSet.Failures()).To(BeEmpty(), "requests failed while the PodSet changed: %s", podSet)
			// The load ran through the whole change: the 5 s of steady
			// state around it alone make this many.
			Expect(podSet.Requests()).To(BeNumerically(">", 2*zeroDowntimeRate*5))
		})
	}
}
