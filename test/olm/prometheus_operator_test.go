//go:build realnode

package olm_test

// The Prometheus Operator, installed after the operator, turns the
// manager's ServiceMonitor and PrometheusRule into a Prometheus
// configuration that scrapes and alerts. The Prometheus Operator is the
// release the Makefile pins (PROMETHEUS_OPERATOR_VERSION), built from its Go
// module and run as a process with all its CRDs. Its Prometheus pod cannot
// pull its images here, so the pod's programs run on the host instead, in
// its place: the config reloader of the same release, then Prometheus (the
// release that the Prometheus Operator deploys by default,
// PROMETHEUS_SERVER_VERSION), with the pod's arguments and the
// configuration and rule files that the Prometheus Operator generated, at
// the paths the pod's volumes would put them (testdata/in-prometheus-pod.sh).
// All of it is in PROMETHEUS_OPERATOR_BIN, built by `make prometheus-tools`
// beside the first install (buildPrometheusTools).

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/internal/monitoring"
	"github.com/example/podset-operator/test/localcluster"
	"github.com/example/podset-operator/test/makebuild"
	"github.com/example/podset-operator/test/promapi"
)

const (
	// The Prometheus object, in the namespace where the Prometheus Operator's
	// example RBAC puts the prometheus ServiceAccount.
	prometheusName      = "podset"
	prometheusNamespace = "default"
	// The job of the manager's metrics: the metrics Service's name, as the
	// ServiceMonitor makes it and the alerts select it.
	metricsJob = "podset-operator-controller-manager-metrics-service"
)

// prometheusTools is `make prometheus-tools` (the Prometheus Operator, its
// config reloader and Prometheus, into PROMETHEUS_OPERATOR_BIN), started as
// the run starts: only checkPrometheusOperator needs them, once the first
// install is done.
var prometheusTools *makebuild.Build

func buildPrometheusTools(ctx context.Context) {
	prometheusTools = makebuild.Start(ctx, repoRoot, filepath.Join(logDir, "make-prometheus-tools.log"),
		"prometheus-tools", "PROMETHEUS_OPERATOR_BIN="+os.Getenv("PROMETHEUS_OPERATOR_BIN"))
}

// checkPrometheusOperator installs the Prometheus Operator's CRDs on a
// cluster where the operator already runs in ns, and follows its
// ServiceMonitor and PrometheusRule through the Prometheus Operator into a
// running Prometheus: the manager's metrics endpoint scraped through the
// Service's endpoints, the PodSet metrics with the PodSet's namespace,
// the alerting rules loaded, and an alert raised by a PodSet that a quota
// stops. The CRDs and everything of the Prometheus Operator's are removed
// when the test ends; the ServiceMonitor and PrometheusRule stay, for the
// caller to see them go with the operator. Once they are gone, the function
// it returns checks that the Prometheus Operator has dropped them from the
// configuration and the rule files it generates.
func checkPrometheusOperator(t *testing.T, ctx context.Context, ns string) (dropped func()) {
	t.Helper()
	dir := os.Getenv("PROMETHEUS_OPERATOR_BIN")
	if dir == "" || prometheusTools == nil {
		t.Fatal("PROMETHEUS_OPERATOR_BIN must be set; run `make test-olm-real`")
	}
	waited, err := prometheusTools.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("make prometheus-tools: ready (waited %s for it)", waited.Round(time.Second))
	promBin := filepath.Join(dir, "prometheus")
	dep := &appsv1.Deployment{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorName}, dep))

	// The API appears after the manager started: it finds it on its
	// periodic check (every minute) and applies both objects.
	installed := time.Now()
	// All the Prometheus Operator's CRDs: it watches every kind it serves.
	crds := filepath.Join(dir, "crds")
	installCRDs(t, ctx, crds, func(files []string) error {
		if len(files) < 2 {
			return fmt.Errorf("want the Prometheus Operator's CRDs in %s, got %v", crds, files)
		}
		return nil
	})
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		sm := &unstructured.Unstructured{}
		sm.SetAPIVersion(monitoring.GroupVersion)
		sm.SetKind("ServiceMonitor")
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: serviceMonitorName}, sm)
		return err == nil, "no ServiceMonitor from the manager yet", client.IgnoreNotFound(err)
	}))
	t.Logf("the manager applied its ServiceMonitor %s after the CRDs were installed", time.Since(installed).Round(time.Second))
	checkMonitoringObjects(t, ctx, ns, dep)

	// The Prometheus Operator's example Prometheus RBAC, as its guide has
	// users apply it: the ServiceAccount, service discovery's reads and
	// `get /metrics`, which the manager's metrics endpoint asks of a
	// scraper.
	rbac := filepath.Join(dir, "rbac-prometheus")
	kubectl(t, ctx, "apply", "-n", prometheusNamespace, "-f", rbac)
	t.Cleanup(func() {
		_ = exec.Command(filepath.Join(bins.k8s, "kubectl"), "--kubeconfig", cluster.KubeconfigPath(),
			"delete", "-n", prometheusNamespace, "--ignore-not-found", "-f", rbac).Run()
	})

	port, err := localcluster.FreePort()
	must(t, err)
	op, err := startProc("prometheus-operator", filepath.Join(dir, "prometheus-operator"),
		[]string{fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port)}, "KUBECONFIG="+cluster.KubeconfigPath())
	must(t, err)
	t.Cleanup(func() { _ = op.Stop() })

	version := prometheusVersion(t, promBin)
	prom := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "Prometheus",
		"metadata":   map[string]any{"name": prometheusName, "namespace": prometheusNamespace},
		"spec": map[string]any{
			// The configuration is generated for the Prometheus that runs it.
			"version":            version,
			"serviceAccountName": "prometheus",
			// No pod: its images cannot be pulled here, and Prometheus runs
			// on the host instead, with what the operator generated. The
			// operator generates the configuration, the rule files and the
			// StatefulSet whatever the replica count.
			"replicas":                        int64(0),
			"scrapeInterval":                  "5s",
			"evaluationInterval":              "5s",
			"serviceMonitorSelector":          map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "podset-operator"}},
			"serviceMonitorNamespaceSelector": map[string]any{},
			"ruleSelector":                    map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "podset-operator"}},
			"ruleNamespaceSelector":           map[string]any{},
		},
	}}
	must(t, k8s.Create(ctx, prom))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), prom) })

	// What the operator generated: the configuration (with a job for the
	// ServiceMonitor), the rule files (with the PrometheusRule) and the
	// StatefulSet whose pod would run them.
	job := fmt.Sprintf("serviceMonitor/%s/%s/0", ns, serviceMonitorName)
	sts := &appsv1.StatefulSet{}
	var config map[string]any
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		secret := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: prometheusNamespace, Name: "prometheus-" + prometheusName}, secret); err != nil {
			return false, "", err
		}
		var err error
		if config, err = gunzipYAML(secret.Data["prometheus.yaml.gz"]); err != nil {
			return false, "", err
		}
		if !slices.Contains(scrapeJobs(config), job) {
			return false, fmt.Sprintf("the generated configuration has jobs %v, not %s", scrapeJobs(config), job), nil
		}
		err = k8s.Get(ctx, client.ObjectKey{Namespace: prometheusNamespace, Name: "prometheus-" + prometheusName}, sts)
		return err == nil, "no StatefulSet yet", err
	}))
	pod := filepath.Join(t.TempDir(), "pod")
	var ruleFiles []string
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		var err error
		ruleFiles, err = materializePodFiles(ctx, sts, pod)
		if err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(ruleFiles, func(f string) bool { return strings.Contains(f, ns+"-podset-operator-rules-") }),
			fmt.Sprintf("the rule-file ConfigMaps hold %v, not the PrometheusRule of %s", ruleFiles, ns), nil
	}))
	t.Logf("the Prometheus Operator generated job %s and rule files %v", job, ruleFiles)

	// The pod's service-account files, for the prometheus ServiceAccount.
	sa := filepath.Join(pod, "serviceaccount")
	must(t, os.MkdirAll(sa, 0o755))
	cfg, err := cluster.ServiceAccountConfig(ctx, prometheusNamespace, "prometheus", time.Hour)
	must(t, err)
	ca, err := os.ReadFile(cluster.CAFile())
	must(t, err)
	for name, data := range map[string][]byte{"token": []byte(cfg.BearerToken), "ca.crt": ca, "namespace": []byte(prometheusNamespace)} {
		must(t, os.WriteFile(filepath.Join(sa, name), data, 0o600))
	}
	// In a pod, the "kubernetes" Service; here, the API server's own
	// address, which the same CA certifies.
	apiURL, err := url.Parse(cluster.RESTConfig().Host)
	must(t, err)
	kubeEnv := []string{"KUBERNETES_SERVICE_HOST=" + apiURL.Hostname(), "KUBERNETES_SERVICE_PORT=" + apiURL.Port()}
	script := filepath.Join(repoRoot, "test", "olm", "testdata", "in-prometheus-pod.sh")
	podName := sts.Name + "-0"

	// The pod's init container: the config reloader writes the file
	// Prometheus reads, with the pod's environment substituted (its name,
	// its shard), once.
	initC := containerNamed(t, sts.Spec.Template.Spec.InitContainers, "init-config-reloader")
	reloader := exec.CommandContext(ctx, script, append([]string{pod, filepath.Join(dir, "prometheus-config-reloader")}, initC.Args...)...)
	reloader.Env = append(append(os.Environ(), kubeEnv...), containerEnv(t, initC, podName)...)
	out, err := reloader.CombinedOutput()
	logf("$ prometheus-config-reloader %s\n%s", strings.Join(initC.Args, " "), out)
	if err != nil {
		t.Fatalf("the init container's config reloader: %v\n%s", err, out)
	}

	// Prometheus with the pod's arguments, but for the two that are the
	// pod's own: its storage (a volume) and its listen address (the pod's
	// network, here loopback).
	promC := containerNamed(t, sts.Spec.Template.Spec.Containers, "prometheus")
	apiPort, err := localcluster.FreePort()
	must(t, err)
	args := slices.DeleteFunc(slices.Clone(promC.Args), func(a string) bool {
		return strings.HasPrefix(a, "--storage.tsdb.path=") || strings.HasPrefix(a, "--web.listen-address=")
	})
	args = append(args, "--storage.tsdb.path="+filepath.Join(pod, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", apiPort))
	p, err := startProc("prometheus", script, append([]string{pod, promBin}, args...), append(kubeEnv, containerEnv(t, promC, podName)...)...)
	must(t, err)
	t.Cleanup(func() { _ = p.Stop() })
	api := &promapi.Client{Base: fmt.Sprintf("http://127.0.0.1:%d/api/v1", apiPort), LogTail: func() string { return tail(p.LogPath(), 10) }}
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		_, err := api.Get(ctx, "/status/buildinfo")
		return err == nil, fmt.Sprintf("Prometheus not answering (%v)", err), nil
	}))
	t.Logf("Prometheus %s runs the generated configuration: %s", version, strings.Join(args, " "))

	// The scrape goes to the manager's pod, found through the metrics
	// Service's endpoints, and succeeds with the ServiceAccount's token.
	managerPod := deploymentPodOn(t, ctx, dep)
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		targets, err := api.Targets(ctx)
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, tg := range targets {
			if tg.ScrapePool != job {
				continue
			}
			l := tg.Labels
			seen = append(seen, fmt.Sprintf("%v health %s (%s)", l, tg.Health, tg.LastError))
			if tg.Health == "up" && l["job"] == metricsJob && l["namespace"] == ns && l["pod"] == managerPod.Name &&
				l["service"] == metricsJob && l["instance"] == managerPod.Status.PodIP+":8443" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("targets of %s: %v", job, seen), nil
	}))
	if v, err := api.Value(ctx, fmt.Sprintf(`up{job=%q, namespace=%q}`, metricsJob, ns)); err != nil || v != 1 {
		t.Fatalf("up of the manager's job: %v, %v; want 1", v, err)
	}
	t.Logf("Prometheus scrapes %s (pod %s, %s:8443) through the ServiceMonitor", metricsJob, managerPod.Name, managerPod.Status.PodIP)

	// A PodSet elsewhere that a quota stops at one pod of two.
	alertNS := ns + "-alerting"
	createBaselineNamespace(t, ctx, alertNS)
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: alertNS}})
	})
	must(t, k8s.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: alertNS, Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
	}))
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: alertNS, Name: "over-quota"}, Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](2)}}
	must(t, k8s.Create(ctx, ps))
	sel := fmt.Sprintf(`namespace=%q, podset=%q`, alertNS, ps.Name)

	// Its metrics keep its own namespace (the ServiceMonitor's
	// honorLabels): not renamed to exported_namespace, not replaced by the
	// operator's.
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		v, err := api.Value(ctx, `podset_spec_replicas{`+sel+`}`)
		return err == nil && v == 2, fmt.Sprintf("podset_spec_replicas{%s}: %v, %v", sel, v, err), nil
	}))
	if v, err := api.Value(ctx, `count(podset_spec_replicas{exported_namespace!=""}) or vector(0)`); err != nil || v != 0 {
		t.Fatalf("PodSet series with an exported_namespace label: %v, %v; want none", v, err)
	}

	// The PrometheusRule's groups and alerts, all loaded, from the rule
	// files the Prometheus Operator wrote.
	want := embeddedAlerts(t)
	groups, err := api.Rules(ctx)
	must(t, err)
	got := map[string][]string{}
	for _, g := range groups {
		if !strings.HasPrefix(g.File, "/etc/prometheus/rules/") || !strings.Contains(g.File, ns+"-podset-operator-rules-") {
			continue
		}
		for _, r := range g.Rules {
			got[g.Name] = append(got[g.Name], r.Name)
		}
	}
	if !equalJSON(t, got, want) {
		t.Fatalf("the PrometheusRule's alerts loaded by Prometheus: %v; want %v (groups %+v)", got, want, groups)
	}

	// The quota raises ReplicaFailure, and the alert on it is pending
	// (its `for` is 5 minutes) or firing.
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		alerts, err := api.Alerts(ctx)
		if err != nil {
			return false, "", err
		}
		for _, a := range alerts {
			if a.Labels["alertname"] == "PodSetReplicaFailure" && a.Labels["namespace"] == alertNS && a.Labels["podset"] == ps.Name &&
				(a.State == "pending" || a.State == "firing") {
				t.Logf("alert PodSetReplicaFailure %s for %s/%s", a.State, alertNS, ps.Name)
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("no PodSetReplicaFailure alert for %s/%s: %+v", alertNS, ps.Name, alerts), nil
	}))

	// Deleted while the operator and its CRD are there, as the README says.
	// Once the garbage collector has deleted its pod, the rest (the
	// container's end, within its grace period) is left to the kubelet and
	// to the namespace's deletion.
	must(t, k8s.Delete(ctx, ps))
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(alertNS), client.MatchingLabels{"app.kubernetes.io/managed-by": "podset-operator"}); err != nil {
			return false, "", err
		}
		live := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
		return len(live) == 0, fmt.Sprintf("%d pods of %s/%s not deleted", len(live), alertNS, ps.Name), nil
	}))

	return func() {
		t.Helper()
		must(t, poll(ctx, time.Minute, func() (bool, string, error) {
			secret := &corev1.Secret{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: prometheusNamespace, Name: "prometheus-" + prometheusName}, secret); err != nil {
				return false, "", err
			}
			config, err := gunzipYAML(secret.Data["prometheus.yaml.gz"])
			if err != nil {
				return false, "", err
			}
			if slices.Contains(scrapeJobs(config), job) {
				return false, "the generated configuration still has " + job, nil
			}
			// Elsewhere than the running Prometheus's files.
			ruleFiles, err := materializePodFiles(ctx, sts, filepath.Join(pod, "after-uninstall"))
			if err != nil {
				return false, "", err
			}
			return !slices.ContainsFunc(ruleFiles, func(f string) bool { return strings.Contains(f, ns+"-podset-operator-rules-") }),
				fmt.Sprintf("the rule files still hold the PrometheusRule of %s: %v", ns, ruleFiles), nil
		}))
		t.Logf("the Prometheus Operator dropped the job and the rule file of %s", ns)
	}
}

// serviceMonitorName is the manager's ServiceMonitor.
const serviceMonitorName = "podset-operator-controller-manager-metrics-monitor"

// prometheusVersion is the version of the Prometheus binary, as the
// Prometheus object's spec.version gives it ("v2.42.0").
func prometheusVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	must(t, err)
	m := regexp.MustCompile(`version (\d+\.\d+\.\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version: %s", bin, out)
	}
	return "v" + string(m[1])
}

// materializePodFiles writes into dir/etc-prometheus what the volumes that
// the StatefulSet's pod mounts under /etc/prometheus hold (the Secrets and
// ConfigMaps, the empty directories), at the same relative paths, and
// returns the rule files among them.
func materializePodFiles(ctx context.Context, sts *appsv1.StatefulSet, dir string) ([]string, error) {
	const root = "/etc/prometheus"
	base := filepath.Join(dir, "etc-prometheus")
	if err := os.RemoveAll(base); err != nil {
		return nil, err
	}
	spec := sts.Spec.Template.Spec
	var mounts []corev1.VolumeMount
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if !slices.ContainsFunc(mounts, func(o corev1.VolumeMount) bool { return o.MountPath == m.MountPath }) {
				mounts = append(mounts, m)
			}
		}
	}
	var ruleFiles []string
	for _, m := range mounts {
		rel, err := filepath.Rel(root, m.MountPath)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if j < 0 {
			return nil, fmt.Errorf("volume %s not in StatefulSet %s", m.Name, sts.Name)
		}
		v := spec.Volumes[j]
		files := map[string][]byte{}
		add := func(secret, configMap string, optional *bool) error {
			var data map[string][]byte
			var err error
			if secret != "" {
				s := &corev1.Secret{}
				err = k8s.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: secret}, s)
				data = s.Data
			} else {
				cm := &corev1.ConfigMap{}
				err = k8s.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: configMap}, cm)
				data = map[string][]byte{}
				for k, v := range cm.Data {
					data[k] = []byte(v)
				}
			}
			if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
				return nil
			} else if err != nil {
				return err
			}
			for k, v := range data {
				files[k] = v
			}
			return nil
		}
		switch {
		case v.Secret != nil:
			err = add(v.Secret.SecretName, "", v.Secret.Optional)
		case v.ConfigMap != nil:
			err = add("", v.ConfigMap.Name, v.ConfigMap.Optional)
			for k := range files {
				ruleFiles = append(ruleFiles, filepath.Join(m.MountPath, k))
			}
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil && err == nil {
					err = add(s.Secret.Name, "", s.Secret.Optional)
				}
				if s.ConfigMap != nil && err == nil {
					err = add("", s.ConfigMap.Name, s.ConfigMap.Optional)
				}
			}
		case v.EmptyDir != nil:
		default:
			return nil, fmt.Errorf("volume %s of StatefulSet %s: an unexpected source %+v", v.Name, sts.Name, v.VolumeSource)
		}
		if err != nil {
			return nil, err
		}
		target := filepath.Join(base, rel)
		if m.SubPath != "" {
			data, ok := files[m.SubPath]
			if !ok {
				return nil, fmt.Errorf("volume %s has no %s", v.Name, m.SubPath)
			}
			files = map[string][]byte{filepath.Base(target): data}
			target = filepath.Dir(target)
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return nil, err
		}
		for k, data := range files {
			if err := os.WriteFile(filepath.Join(target, k), data, 0o644); err != nil {
				return nil, err
			}
		}
	}
	return ruleFiles, nil
}

// containerEnv is c's environment as its pod would have it: literal
// values, and the pod's name where it refers to it.
func containerEnv(t *testing.T, c *corev1.Container, podName string) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env = append(env, e.Name+"="+podName)
		default:
			t.Fatalf("container %s: env %s from %+v", c.Name, e.Name, e.ValueFrom)
		}
	}
	return env
}

func containerNamed(t *testing.T, cs []corev1.Container, name string) *corev1.Container {
	t.Helper()
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %s in the Prometheus StatefulSet", name)
	}
	return &cs[i]
}

// deploymentPodOn is the running pod of dep, with its IP.
func deploymentPodOn(t *testing.T, ctx context.Context, dep *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	must(t, k8s.List(ctx, &pods, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)))
	var running []*corev1.Pod
	for i, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			running = append(running, &pods.Items[i])
		}
	}
	if len(running) != 1 {
		t.Fatalf("%d running pods of Deployment %s, want 1", len(running), dep.Name)
	}
	return running[0]
}

// gunzipYAML decodes a gzipped YAML document.
func gunzipYAML(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty")
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	return doc, yaml.Unmarshal(raw, &doc)
}

// scrapeJobs are the job names of a Prometheus configuration.
func scrapeJobs(config map[string]any) []string {
	var jobs []string
	list, _ := config["scrape_configs"].([]any)
	for _, sc := range list {
		if m, ok := sc.(map[string]any); ok {
			if name, ok := m["job_name"].(string); ok {
				jobs = append(jobs, name)
			}
		}
	}
	return jobs
}

// embeddedAlerts are the alert names of each group of the PrometheusRule
// that the manager applies.
func embeddedAlerts(t *testing.T) map[string][]string {
	t.Helper()
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert string `json:"alert"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	must(t, yaml.Unmarshal(monitoring.PrometheusRuleYAML, &rule))
	want := map[string][]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			want[g.Name] = append(want[g.Name], r.Alert)
		}
	}
	if len(want) == 0 {
		t.Fatal("the embedded PrometheusRule has no groups")
	}
	return want
}
