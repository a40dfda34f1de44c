//go:build e2e && realnode && argorollouts

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/test/localcluster"
)

// TestArgoRolloutsSideBySide (`make compare-argo-rollouts`) gives Argo
// Rollouts' controller, built from its module (ARGO_ROLLOUTS_BIN), the
// scenarios of TestRealNode/CanaryAnalysis on the same real node: a Rollout
// with the same pods, steps (setWeight 25 is one pod of four, as
// updatedReplicas 1) and Service, and an AnalysisTemplate with the same
// query, measured as the PodSet's analysis is (one measurement 10 s after
// the step begins). It prints Argo's table as the PodSet's test prints its
// own. Its assertions are what Argo Rollouts documents for each scenario,
// so that a table is never printed from a scenario that did not happen.
func TestArgoRolloutsSideBySide(t *testing.T) {
	RegisterTestingT(t)
	dir := os.Getenv("ARGO_ROLLOUTS_BIN")
	Expect(dir).NotTo(BeEmpty(), "ARGO_ROLLOUTS_BIN is not set: run `make compare-argo-rollouts`")
	Expect(realPrometheus).NotTo(BeNil(), "PROMETHEUS is not set: run `make compare-argo-rollouts`")
	ctx := t.Context()
	_, err := realPrometheus.Wait(ctx)
	Expect(err).NotTo(HaveOccurred())
	ns := newNamespace(t, "real-argo", restricted)
	const name, replicas = argoRollout, 4

	// Argo Rollouts: its CRDs, and its controller as a process of the
	// host, in namespaced mode, for this namespace only.
	crds, err := filepath.Glob(filepath.Join(dir, "crds", "*-crd.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(crds).NotTo(BeEmpty())
	for _, crd := range crds {
		_, stderr, err := kubectl(ctx, "apply", "--server-side", "-f", crd)
		Expect(err).NotTo(HaveOccurred(), "%s", stderr)
	}
	_, stderr, err := kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/rollouts.argoproj.io", "crd/analysistemplates.argoproj.io", "crd/analysisruns.argoproj.io")
	Expect(err).NotTo(HaveOccurred(), "%s", stderr)
	ports := make([]int, 3)
	for i := range ports {
		ports[i], err = localcluster.FreePort()
		Expect(err).NotTo(HaveOccurred())
	}
	controller, err := localcluster.StartProcess("argo-rollouts", filepath.Join(dir, "rollouts-controller"), []string{
		"--kubeconfig=" + env.cluster.KubeconfigPath(), "--namespaced", "--namespace=" + ns, "--leader-elect=false",
		"--metricsPort=" + strconv.Itoa(ports[0]), "--healthzPort=" + strconv.Itoa(ports[1]),
	}, nil, filepath.Join(env.cluster.LogDir(), "argo-rollouts.log"))
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = controller.Stop() })

	promAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2]))
	prom := startPodMonitorPrometheus(t, ns, promAddr, "rollouts-pod-template-hash")
	step("Argo Rollouts' controller (%s) for %s; Prometheus on %s labels the pods' series with their rollouts-pod-template-hash", dir, ns, promAddr)

	// The query of the PodSet's analysis, as the PodSet's operator sends
	// it (confined to the namespace), on Argo's hash label.
	query := fmt.Sprintf(`sum(rate(http_requests_total{namespace=%q,rollouts_pod_template_hash="{{args.canary-hash}}",code="500"}[10s]))`+
		` / sum(rate(http_requests_total{namespace=%q,rollouts_pod_template_hash="{{args.canary-hash}}"}[10s]))`, ns, ns)
	template := func(name string, consecutiveErrorLimit int) *unstructured.Unstructured {
		return toUnstructured(map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{
				"args": []any{map[string]any{"name": "canary-hash"}},
				"metrics": []any{map[string]any{
					"name": "error-ratio", "interval": "10s", "initialDelay": "10s", "count": 1,
					"successCondition": "result[0] < 0.01", "failureCondition": "result[0] > 0.05",
					"failureLimit": 0, "consecutiveErrorLimit": consecutiveErrorLimit,
					"provider": map[string]any{"prometheus": map[string]any{"address": "http://" + promAddr, "query": query}},
				}},
			},
		})
	}
	// consecutiveErrorLimit: Argo's default (4), and 1 as the PodSet's
	// Prometheus-stopped scenario sets it.
	Expect(env.admin.Create(ctx, template("error-ratio", 4))).To(Succeed())
	Expect(env.admin.Create(ctx, template("error-ratio-1", 1))).To(Succeed())
	analysis := func(template string, dryRun bool) map[string]any {
		a := map[string]any{
			"templates": []any{map[string]any{"templateName": template}},
			"args":      []any{map[string]any{"name": "canary-hash", "valueFrom": map[string]any{"podTemplateHashValue": "Latest"}}},
		}
		if dryRun {
			a["dryRun"] = []any{map[string]any{"metricName": "error-ratio"}}
		}
		return a
	}
	steps := func(template string, dryRun bool) []any {
		return []any{
			map[string]any{"setWeight": 25}, map[string]any{"analysis": analysis(template, dryRun)},
			map[string]any{"setWeight": 50}, map[string]any{"analysis": analysis(template, dryRun)},
		}
	}

	svc := newCanaryAppService(t, ns, name)
	// The PodSet's pods get the restricted profile from the operator; a
	// Rollout's, as a Deployment's, must carry it themselves.
	podTemplate := canaryAppTemplate("v1", "0")
	podTemplate.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	podTemplate.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	rollout := toUnstructured(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": podTemplate,
			"strategy": map[string]any{"canary": map[string]any{"maxSurge": 1, "maxUnavailable": 0, "steps": steps("error-ratio", false)}},
		},
	})
	Expect(env.admin.Create(ctx, rollout)).To(Succeed())
	stable := waitArgoHealthy(ctx, ns, "", replicas)
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	Eventually(func() string { return getOnce(url) }).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(BeEmpty())
	table := startScenarioLog(ctx, url)
	defer table.stop()
	step("Argo Rollouts: %d pods of v1 behind %s, %d requests a second over new connections and as many kept alive", replicas, url, zeroDowntimeRate)
	time.Sleep(2 * time.Second)

	patch := func(ops ...string) {
		Expect(env.admin.Patch(ctx, rolloutRef(ns, name), client.RawPatch(types.JSONPatchType, []byte("["+strings.Join(ops, ",")+"]")))).To(Succeed())
	}
	setVersion := func(version, errorShare string) string {
		return fmt.Sprintf(`{"op":"replace","path":"/spec/template/spec/containers/0/env","value":[{"name":"VERSION","value":%q},{"name":"ERROR_SHARE","value":%q}]}`, version, errorShare)
	}
	setCanary := func(steps []any, background map[string]any) string {
		c := map[string]any{"maxSurge": 1, "maxUnavailable": 0, "steps": steps}
		if background != nil {
			c["analysis"] = background
		}
		data, err := json.Marshal(c)
		Expect(err).NotTo(HaveOccurred())
		return fmt.Sprintf(`{"op":"replace","path":"/spec/strategy/canary","value":%s}`, data)
	}

	// v2, 30% 500s: aborted at the first analysis.
	start := time.Now()
	patch(setVersion("v2", "0.3"))
	v2 := waitArgoNewHash(ctx, ns, stable)
	mostV2 := watchMostArgoPods(ctx, ns, v2)
	aborted, gone := waitArgoAborted(ctx, ns, v2)
	v2row := &canaryScenario{name: "v2, 30% 500s: aborted", took: gone.Sub(start), mostPods: mostV2(), retreated: true}
	table.add(v2row, start, gone)
	firstBad := firstArgoMeasurement(ctx, ns, v2, "Failed")
	v2row.badToRetreat, v2row.badToGone = aborted.Sub(firstBad), gone.Sub(firstBad)
	step("Argo, v2: failed measurement at %s; abort recorded %s later, every pod of v2 gone %s later",
		firstBad.Format(time.TimeOnly), v2row.badToRetreat, v2row.badToGone.Round(100*time.Millisecond))

	// v3 good, with a background analysis: promoted.
	start = time.Now()
	patch(setVersion("v3", "0"), setCanary(steps("error-ratio", false), analysis("error-ratio", false)))
	v3 := waitArgoNewHash(ctx, ns, v2)
	mostV3 := watchMostArgoPods(ctx, ns, v3)
	waitArgoHealthy(ctx, ns, v3, replicas)
	table.add(&canaryScenario{name: "v3, good, with a background analysis: promoted", took: time.Since(start), mostPods: mostV3()}, start, time.Now())

	// v4, 30% 500s, dry run: let through.
	start = time.Now()
	patch(setVersion("v4", "0.3"), setCanary(steps("error-ratio", true), nil))
	v4 := waitArgoNewHash(ctx, ns, v3)
	mostV4 := watchMostArgoPods(ctx, ns, v4)
	waitArgoHealthy(ctx, ns, v4, replicas)
	table.add(&canaryScenario{name: "v4, 30% 500s, dry run: let through", took: time.Since(start), mostPods: mostV4()}, start, time.Now())

	// v5, 50% 500s, one pod and a pause until promoted, a background
	// analysis: aborted in the pause.
	start = time.Now()
	patch(setVersion("v5", "0.5"), setCanary([]any{map[string]any{"setWeight": 25}, map[string]any{"pause": map[string]any{}}}, analysis("error-ratio", false)))
	v5 := waitArgoNewHash(ctx, ns, v4)
	mostV5 := watchMostArgoPods(ctx, ns, v5)
	aborted, gone = waitArgoAborted(ctx, ns, v5)
	v5row := &canaryScenario{name: "v5, 50% 500s, background analysis, paused: aborted", took: gone.Sub(start), mostPods: mostV5(), retreated: true}
	table.add(v5row, start, gone)
	firstBad = firstArgoMeasurement(ctx, ns, v5, "Failed")
	v5row.badToRetreat, v5row.badToGone = aborted.Sub(firstBad), gone.Sub(firstBad)

	// v6 good, Prometheus stopped at the first analysis (consecutive
	// errors borne: 1, as in the PodSet's scenario).
	start = time.Now()
	patch(setVersion("v6", "0"), setCanary(steps("error-ratio-1", false), nil))
	v6 := waitArgoNewHash(ctx, ns, v5)
	mostV6 := watchMostArgoPods(ctx, ns, v6)
	Eventually(func(g Gomega) {
		g.Expect(argoAnalysisRuns(g, ctx, ns, v6)).NotTo(BeEmpty(), "the first analysis has begun")
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(prom.Stop()).To(Succeed())
	stopped := time.Now()
	outcome := ""
	Eventually(func(g Gomega) {
		r := getRollout(g, ctx, ns)
		abort, _, _ := unstructured.NestedBool(r.Object, "status", "abort")
		phase, _, _ := unstructured.NestedString(r.Object, "status", "phase")
		message, _, _ := unstructured.NestedString(r.Object, "status", "message")
		g.Expect(abort || phase == "Paused").To(BeTrue(), "phase %s: %s", phase, message)
		outcome = fmt.Sprintf("%s after %s (abort %v): %s", phase, time.Since(stopped).Round(time.Second), abort, message)
	}).WithContext(ctx).WithTimeout(2 * timeout).WithPolling(poll).Should(Succeed())
	if strings.Contains(outcome, "abort true") {
		_, gone = waitArgoAborted(ctx, ns, v6)
	} else {
		gone = time.Now()
	}
	table.add(&canaryScenario{name: "v6, good, Prometheus stopped: " + outcome, took: gone.Sub(start), mostPods: mostV6()}, start, gone)
	before, _ := table.finish("Argo Rollouts " + strings.TrimPrefix(filepath.Base(dir), "argo-rollouts-"))
	Expect(before).To(BeEmpty(), "requests failed before any change")
}

// toUnstructured is obj, as the API's JSON makes it (numbers int64).
func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	data, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	Expect(u.UnmarshalJSON(data)).To(Succeed())
	return u
}

// argoRollout is the name of the scenarios' Rollout.
const argoRollout = "store"

var (
	rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	runGVK     = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AnalysisRunList"}
)

func rolloutRef(ns, name string) *unstructured.Unstructured {
	r := &unstructured.Unstructured{}
	r.SetGroupVersionKind(rolloutGVK)
	r.SetNamespace(ns)
	r.SetName(name)
	return r
}

// getRollout gets the scenarios' Rollout (argoRollout) of ns.
func getRollout(g Gomega, ctx context.Context, ns string) *unstructured.Unstructured {
	r := rolloutRef(ns, argoRollout)
	g.Expect(env.admin.Get(ctx, client.ObjectKeyFromObject(r), r)).To(Succeed())
	return r
}

// waitArgoHealthy waits until the Rollout's (argoRollout's) replicas all run
// one pod template, want ("" for any), Healthy, and returns its hash.
func waitArgoHealthy(ctx context.Context, ns, want string, replicas int64) string {
	var hash string
	Eventually(func(g Gomega) {
		r := getRollout(g, ctx, ns)
		phase, _, _ := unstructured.NestedString(r.Object, "status", "phase")
		g.Expect(phase).To(Equal("Healthy"))
		hash, _, _ = unstructured.NestedString(r.Object, "status", "stableRS")
		current, _, _ := unstructured.NestedString(r.Object, "status", "currentPodHash")
		g.Expect(hash).To(Equal(current))
		g.Expect(hash).NotTo(BeEmpty())
		if want != "" {
			g.Expect(hash).To(Equal(want))
		}
		available, _, _ := unstructured.NestedInt64(r.Object, "status", "availableReplicas")
		g.Expect(available).To(Equal(replicas))
	}).WithContext(ctx).WithTimeout(2 * timeout).WithPolling(poll).Should(Succeed())
	return hash
}

// waitArgoNewHash waits until the Rollout's current pod template hash is no
// longer old, and returns it.
func waitArgoNewHash(ctx context.Context, ns, old string) string {
	var hash string
	Eventually(func(g Gomega) {
		r := getRollout(g, ctx, ns)
		hash, _, _ = unstructured.NestedString(r.Object, "status", "currentPodHash")
		status, _, _ := unstructured.NestedMap(r.Object, "status")
		g.Expect(hash).NotTo(BeEmpty())
		g.Expect(hash).NotTo(Equal(old), "the Rollout's status: %v", status)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return hash
}

// waitArgoAborted waits until the Rollout has aborted the rollout of hash
// and none of its pods is left, and returns when the abort was recorded
// and when the test saw the last pod gone.
func waitArgoAborted(ctx context.Context, ns, hash string) (aborted, gone time.Time) {
	Eventually(func(g Gomega) {
		r := getRollout(g, ctx, ns)
		abort, _, _ := unstructured.NestedBool(r.Object, "status", "abort")
		g.Expect(abort).To(BeTrue())
		at, _, _ := unstructured.NestedString(r.Object, "status", "abortedAt")
		g.Expect(at).NotTo(BeEmpty())
		t, err := time.Parse(time.RFC3339, at)
		g.Expect(err).NotTo(HaveOccurred())
		aborted = t
		g.Expect(argoPods(g, ctx, ns, hash)).To(BeEmpty(), "a pod of the aborted revision still exists")
	}).WithContext(ctx).WithTimeout(2 * timeout).WithPolling(poll).Should(Succeed())
	return aborted, time.Now()
}

// argoPods lists the pods of a pod template hash ("" for all), terminating
// ones included.
func argoPods(g Gomega, ctx context.Context, ns, hash string) []corev1.Pod {
	var pods corev1.PodList
	labels := client.MatchingLabels{"app": "web"}
	if hash != "" {
		labels["rollouts-pod-template-hash"] = hash
	}
	g.Expect(env.admin.List(ctx, &pods, client.InNamespace(ns), labels)).To(Succeed())
	return pods.Items
}

// watchMostArgoPods polls the pods of a pod template hash, not terminating,
// until ctx ends, and returns what reports the most it saw.
func watchMostArgoPods(ctx context.Context, ns, hash string) func() int {
	return watchMostPodsLabelled(ctx, ns, client.MatchingLabels{"rollouts-pod-template-hash": hash})
}

// argoAnalysisRuns lists the AnalysisRuns of a pod template hash.
func argoAnalysisRuns(g Gomega, ctx context.Context, ns, hash string) []unstructured.Unstructured {
	runs := &unstructured.UnstructuredList{}
	runs.SetGroupVersionKind(runGVK)
	g.Expect(env.admin.List(ctx, runs, client.InNamespace(ns), client.MatchingLabels{"rollouts-pod-template-hash": hash})).To(Succeed())
	return runs.Items
}

// firstArgoMeasurement is when the first measurement of phase, of the
// AnalysisRuns of a pod template hash, finished.
func firstArgoMeasurement(ctx context.Context, ns, hash, phase string) time.Time {
	var first time.Time
	Eventually(func(g Gomega) {
		for _, run := range argoAnalysisRuns(g, ctx, ns, hash) {
			results, _, _ := unstructured.NestedSlice(run.Object, "status", "metricResults")
			for _, r := range results {
				ms, _, _ := unstructured.NestedSlice(r.(map[string]any), "measurements")
				for _, m := range ms {
					mm := m.(map[string]any)
					if mm["phase"] != phase {
						continue
					}
					at, err := time.Parse(time.RFC3339, fmt.Sprint(mm["finishedAt"]))
					g.Expect(err).NotTo(HaveOccurred())
					if first.IsZero() || at.Before(first) {
						first = at
					}
				}
			}
		}
		g.Expect(first.IsZero()).To(BeFalse(), "no %s measurement of %s", phase, hash)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return first
}
