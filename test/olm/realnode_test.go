//go:build realnode

package olm_test

// The real-node suite (`make test-olm-real`, needs root): the local cluster
// runs one real node with its registry (test/localcluster, RealNode), and
// OLM's pods really run there: the bundle unpack Job, the catalog pod that
// `operator-sdk run bundle` creates, the operator's Deployment from the CSV.
// The CLI commands are run as users run them, against the registry's own
// name; the images that OLM and the CSV name by their upstream names
// (quay.io/..., docker.io/...) are pulled from the same registry, which the
// node's containerd takes as their mirror. `make test-olmv1` runs the same
// cluster and publishing with OLM v1 instead (olmv1_test.go).

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/internal/monitoring"
	"github.com/example/podset-operator/test/localcluster"
)

// The stand-in images (hack/build-node-images.sh) under the names the
// catalog operator and the CLI are given; pinned to the tools under test.
const (
	opmImage  = "quay.io/operator-framework/opm:v1.60.0"
	utilImage = "quay.io/operator-framework/olm:v0.28.0"
)

// version is the bundle's (Makefile VERSION).
var version string

// setUp starts the cluster with its real node, publishes this version's
// images to its registry and runs OLM; with OLMV1_BIN (`make test-olmv1`),
// OLM v1 instead of OLM v0 (olmv1_test.go).
func setUp(ctx context.Context) error {
	target, required := "make test-olm-real", []string{"manager.tar", "opm.tar", "olm.tar"}
	v1 := os.Getenv("OLMV1_BIN") != ""
	if v1 {
		target, required = "make test-olmv1", []string{"manager.tar", "opm.tar"}
	}
	if version = os.Getenv("VERSION"); version == "" {
		return fmt.Errorf("VERSION must be set; run `%s`", target)
	}
	if !v1 && os.Getenv("PROMETHEUS_OPERATOR_BIN") != "" {
		buildPrometheusTools(ctx)
	}
	node, err := localcluster.RealNodeImages(os.Getenv("NODE_IMAGES"))
	if err != nil {
		return err
	}
	for _, want := range required {
		if !slices.ContainsFunc(node.Images, func(p string) bool { return filepath.Base(p) == want }) {
			return fmt.Errorf("no %s among the node's images in %q: run `%s`, which builds it", want, os.Getenv("NODE_IMAGES"), target)
		}
	}
	// This version's manager, bundle and catalog images reach the registry
	// the way a user publishes them (pushImages), not from archives.
	managerArchive = filepath.Join(filepath.Dir(node.Images[0]), "manager.tar")
	opmArchive = filepath.Join(filepath.Dir(node.Images[0]), "opm.tar")
	node.Images = slices.DeleteFunc(node.Images, func(p string) bool {
		return slices.Contains([]string{"manager.tar", "bundle.tar", "catalog.tar"}, filepath.Base(p))
	})
	// A run that crashed left the host changed: put it back first, then
	// take the host as it is, to compare once the cluster has stopped.
	if err := localcluster.Cleanup(nil); err != nil {
		return err
	}
	before, err := localcluster.SnapshotHost()
	if err != nil {
		return err
	}
	afterClusterStop = func() error {
		after, err := localcluster.SnapshotHost()
		if err != nil {
			return err
		}
		if diff := before.Diff(after); diff != "" {
			return fmt.Errorf("the real node left the host changed:\n%s", diff)
		}
		fmt.Fprintln(os.Stderr, "the host is as it was before the real node:", after)
		return nil
	}
	cluster, err = localcluster.Start(ctx, localcluster.Options{BinDir: bins.k8s, RealNode: node, Out: os.Stderr})
	if err != nil {
		return fmt.Errorf("starting the local cluster: %w", err)
	}
	if err := pushImages(ctx); err != nil {
		return err
	}
	if v1 {
		return startOLMv1(ctx)
	}
	// OLM's catalog operator dials the catalogs of CatalogSources with
	// spec.image by their Service's DNS name.
	catalogCommand = cluster.WithClusterDNS
	return startOLM(ctx, "--opmImage", opmImage, "--util-image", utilImage)
}

// The archives of this version's manager image and of the opm stand-in (the
// catalog image's base), from NODE_IMAGES.
var managerArchive, opmArchive string

// pushImages publishes this version's manager, bundle and catalog images to
// the cluster's registry with the README's commands: make docker-push,
// make bundle-build bundle-push and make catalog-build catalog-push, with
// buildah as CONTAINER_TOOL and the images named by the registry's address
// (the repository paths the upstream names map to, so that the node, which
// takes the registry as the mirror of quay.io, pulls exactly these).
// buildah trusts the registry's certificate through SSL_CERT_FILE, as
// operator-sdk does.
func pushImages(ctx context.Context) error {
	img, err := registryName("quay.io/example/podset-operator:v" + version)
	if err != nil {
		return err
	}
	bundleImg, err := registryName("quay.io/example/podset-operator-bundle:v" + version)
	if err != nil {
		return err
	}
	catalogImg, err := registryName("quay.io/example/podset-operator-catalog:v" + version)
	if err != nil {
		return err
	}
	env := append(os.Environ(), "STORAGE_DRIVER=vfs", "BUILDAH_ISOLATION=chroot", "SSL_CERT_FILE="+cluster.CAFile())
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = repoRoot, env
		out, err := cmd.CombinedOutput()
		logf("$ %s %s\n%s", name, strings.Join(args, " "), out)
		if err != nil {
			return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	// The manager image as make docker-build left it (the archive
	// make test-manager-image saved), under IMG's registry name; and the
	// catalog's base image, which catalog-build cannot pull here.
	for _, step := range [][]string{
		{"buildah", "pull", "--quiet", "docker-archive:" + managerArchive},
		{"buildah", "tag", "quay.io/example/podset-operator:v" + version, img},
		{"buildah", "pull", "--quiet", "docker-archive:" + opmArchive},
		{"make", "--no-print-directory", "docker-push", "CONTAINER_TOOL=buildah", "IMG=" + img},
		{"make", "--no-print-directory", "bundle-build", "bundle-push", "CONTAINER_TOOL=buildah", "BUNDLE_IMG=" + bundleImg},
		{"make", "--no-print-directory", "catalog-build", "catalog-push", "CONTAINER_TOOL=buildah", "CATALOG_IMG=" + catalogImg},
	} {
		if err := run(step[0], step[1:]...); err != nil {
			return err
		}
		if step[0] == "make" {
			fmt.Fprintf(os.Stderr, "published with make %s\n", strings.Join(step[2:], " "))
		}
	}
	// The registry names are the test's; buildah's storage keeps the
	// upstream names only.
	return run("buildah", "rmi", img, bundleImg, catalogImg)
}

// subscribeCatalogImage points a CatalogSource at the catalog image (make
// catalog-build catalog-push), as the README's catalog section does:
// spec.image, which has OLM run the image as a pod on the node, behind a
// Service whose DNS name the catalog operator dials.
func subscribeCatalogImage(t *testing.T, ctx context.Context) {
	t.Helper()
	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: catalogName, Namespace: olmNamespace},
		Spec: operatorsv1alpha1.CatalogSourceSpec{
			SourceType:  operatorsv1alpha1.SourceTypeGrpc,
			Image:       registryRef(t, "quay.io/example/podset-operator-catalog:v"+version),
			DisplayName: "PodSet Operator",
		},
	}
	must(t, k8s.Create(ctx, cs))
	must(t, waitCatalogSourceReady(ctx, cs))
	if cs.Status.RegistryServiceStatus == nil || cs.Status.RegistryServiceStatus.ServiceName != catalogName {
		t.Fatalf("the CatalogSource is served by %+v, want its own Service", cs.Status.RegistryServiceStatus)
	}
	// The catalog really runs on the node, from the registry.
	pods := &corev1.PodList{}
	must(t, k8s.List(ctx, pods, client.InNamespace(olmNamespace), client.MatchingLabels{"olm.catalogSource": catalogName}))
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == localcluster.RealNodeName && p.Spec.Containers[0].Image == cs.Spec.Image {
			running++
		}
	}
	if running != 1 {
		t.Fatalf("%d catalog pods of %s run on the node, want 1: %+v", running, cs.Spec.Image, pods.Items)
	}
}

// kubectl runs the cluster's kubectl as a user would.
func kubectl(t *testing.T, ctx context.Context, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bins.k8s, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	out, err := cmd.CombinedOutput()
	logf("$ kubectl %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// registryRef is ref (an upstream name) as the CLI on this machine reaches
// it: the same repository in the cluster's registry.
func registryRef(t *testing.T, ref string) string {
	t.Helper()
	name, err := registryName(ref)
	must(t, err)
	return name
}

func registryName(ref string) (string, error) {
	tag, err := cluster.RegistryRef(ref)
	if err != nil {
		return "", err
	}
	return tag.String(), nil
}

// operatorSDK runs operator-sdk as a user would, from an empty directory
// (it writes ./cache), trusting the cluster's CA for the registry.
func operatorSDK(t *testing.T, ctx context.Context, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bins.olm, "operator-sdk"), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath(), "SSL_CERT_FILE="+cluster.CAFile())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	logf("$ operator-sdk %s", strings.Join(args, " "))
	err := cmd.Run()
	logf("%s", out.String())
	if err != nil {
		t.Fatalf("operator-sdk %s: %v\n%s\ncatalog log:\n%s", strings.Join(args, " "), err, out.String(), tail(filepath.Join(logDir, "catalog.log"), 20))
	}
}

// TestRunBundle: `operator-sdk run bundle` installs the operator from the
// bundle image in the registry, with OLM's unpack Job and the CLI's catalog
// pod really running; the CSV's Deployment runs the manager image on the
// node and it manages a PodSet. The Prometheus Operator, installed then,
// scrapes and alerts through the ServiceMonitor and PrometheusRule that the
// manager applies (checkPrometheusOperator). `operator-sdk cleanup` then
// removes everything it installed, and the two objects go with it.
func TestRunBundle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ns := "podset-run-bundle"
	createBaselineNamespace(t, ctx, ns)

	bundle := registryRef(t, "quay.io/example/podset-operator-bundle:v"+version)
	operatorSDK(t, ctx, "run", "bundle", bundle, "--namespace", ns, "--timeout", "5m",
		"--index-image", registryRef(t, opmImage))

	waitForOperator(t, ctx, ns, version)

	// OLM unpacked the bundle with its own Job, on the node.
	var jobs batchv1.JobList
	must(t, k8s.List(ctx, &jobs, client.InNamespace(ns)))
	unpacked := false
	for _, j := range jobs.Items {
		if j.Status.Succeeded > 0 && slices.ContainsFunc(j.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "extract" }) {
			unpacked = true
		}
	}
	if !unpacked {
		t.Fatalf("no bundle unpack Job succeeded in %s: %d jobs", ns, len(jobs.Items))
	}

	// It manages the sample PodSet, applied as the README says: its pods
	// really run.
	sample := filepath.Join(repoRoot, "config", "samples", "app_v1alpha1_podset.yaml")
	kubectl(t, ctx, "apply", "-n", ns, "-f", sample)
	ps := &appv1alpha1.PodSet{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podset-sample"}, ps))
	waitForRunningPods(t, ctx, ps)

	prometheusOperatorDropped := checkPrometheusOperator(t, ctx, ns)

	// Uninstall as the README says: the PodSets first, while the operator
	// and the CRD are there (the garbage collector deletes their pods; it
	// cannot once the CRD is gone: it never learns whether an owner of an
	// unknown kind exists, and leaves the pods running), then cleanup.
	kubectl(t, ctx, "delete", "-n", ns, "-f", sample, "--wait")
	waitForNoOperandPods(t, ctx, ns)
	operatorSDK(t, ctx, "cleanup", packageName, "--namespace", ns, "--timeout", "3m")
	// Everything run bundle installed is gone: the operator, its catalog,
	// its CRD.
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		var left []string
		for _, list := range []client.ObjectList{
			&operatorsv1alpha1.ClusterServiceVersionList{}, &operatorsv1alpha1.SubscriptionList{},
			&operatorsv1alpha1.CatalogSourceList{}, &operatorsv1alpha1.InstallPlanList{},
			&operatorsv1.OperatorGroupList{}, &appsv1.DeploymentList{}, &corev1.PodList{},
		} {
			if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			if n := lenOf(list); n > 0 {
				left = append(left, fmt.Sprintf("%d %T", n, list))
			}
		}
		err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{})
		if err == nil {
			left = append(left, "the CRD")
		} else if !apierrors.IsNotFound(err) {
			return false, "", err
		}
		return len(left) == 0, "left after cleanup: " + strings.Join(left, ", "), nil
	}))
	// The ServiceMonitor and PrometheusRule went with the manager's
	// Deployment, which owned them.
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(monitoring.GroupVersion)
		list.SetKind(kind + "List")
		must(t, poll(ctx, time.Minute, func() (bool, string, error) {
			if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			return len(list.Items) == 0, fmt.Sprintf("%d %s left in %s after cleanup", len(list.Items), kind, ns), nil
		}))
	}
	prometheusOperatorDropped()
}

// createBaselineNamespace creates ns enforcing the baseline profile, not
// restricted: run bundle's catalog pod has an init container without a
// restricted security context, whatever --security-context-config says
// (operator-sdk issue 7039).
func createBaselineNamespace(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline",
	}}}))
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		// Pods are refused in a namespace until its default ServiceAccount exists.
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, "no default ServiceAccount in " + ns, err
	}))
}

// waitForOperator waits until the CSV of version v has Succeeded in ns and
// its Deployment runs the manager image of v, available, on the node.
func waitForOperator(t *testing.T, ctx context.Context, ns, v string) {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	dep := &appsv1.Deployment{}
	image := "quay.io/example/podset-operator:v" + v
	must(t, poll(ctx, 3*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: packageName + ".v" + v}, csv); err != nil {
			return false, "", err
		}
		if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded {
			return false, fmt.Sprintf("CSV %s is %s: %s", csv.Name, csv.Status.Phase, csv.Status.Message), nil
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorName}, dep); err != nil {
			return false, "", err
		}
		img := dep.Spec.Template.Spec.Containers[0].Image
		return img == image && dep.Status.UpdatedReplicas == 1 && dep.Status.AvailableReplicas == 1 && dep.Status.Replicas == 1,
			fmt.Sprintf("deployment %s: image %s, %d updated, %d available, %d in all", operatorName, img, dep.Status.UpdatedReplicas, dep.Status.AvailableReplicas, dep.Status.Replicas), nil
	}))
	var managerPods corev1.PodList
	must(t, k8s.List(ctx, &managerPods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)))
	for _, p := range managerPods.Items {
		if p.DeletionTimestamp == nil && (p.Spec.NodeName != localcluster.RealNodeName || p.Status.Phase != corev1.PodRunning) {
			t.Fatalf("manager pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
}

// waitForRunningPods waits until ps has as many pods as it wants, each
// running on the node, and says so in its status; it returns them.
func waitForRunningPods(t *testing.T, ctx context.Context, ps *appv1alpha1.PodSet) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, "", err
		}
		pods, err := ownedPods(ctx, ps)
		if err != nil {
			return false, "", err
		}
		running = running[:0]
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == localcluster.RealNodeName {
				running = append(running, p)
			}
		}
		want := *ps.Spec.Replicas
		return len(running) == int(want) && len(pods) == int(want) && ps.Status.ReadyReplicas == want,
			fmt.Sprintf("PodSet %s: %d pods, %d running, status %+v", ps.Name, len(pods), len(running), ps.Status), nil
	}))
	return running
}

// waitForNoOperandPods waits until no pod of a PodSet is left in ns.
func waitForNoOperandPods(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/managed-by": "podset-operator"}); err != nil {
			return false, "", err
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d operand pods left", len(pods.Items)), nil
	}))
}

// watchPodSetPodChurn records, from now on, every pod of ns owned by a
// PodSet that is created or deleted; the function it returns stops and
// gives them.
func watchPodSetPodChurn(t *testing.T, ctx context.Context, ns string) func() []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig())
	must(t, err)
	var list corev1.PodList
	must(t, k8s.List(ctx, &list, client.InNamespace(ns)))
	ctx, cancel := context.WithCancel(ctx)
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	must(t, err)
	var (
		mu     sync.Mutex
		events []string
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			ref := metav1.GetControllerOf(p)
			if ref == nil || ref.Kind != "PodSet" {
				continue
			}
			if ev.Type == watch.Added || ev.Type == watch.Deleted || (ev.Type == watch.Modified && p.DeletionTimestamp != nil) {
				mu.Lock()
				events = append(events, fmt.Sprintf("%s %s (deleting %v)", ev.Type, p.Name, p.DeletionTimestamp != nil))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		cancel()
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return events
	}
}

func lenOf(list client.ObjectList) int {
	switch l := list.(type) {
	case *operatorsv1alpha1.ClusterServiceVersionList:
		return len(l.Items)
	case *operatorsv1alpha1.SubscriptionList:
		return len(l.Items)
	case *operatorsv1alpha1.CatalogSourceList:
		return len(l.Items)
	case *operatorsv1alpha1.InstallPlanList:
		return len(l.Items)
	case *operatorsv1.OperatorGroupList:
		return len(l.Items)
	case *appsv1.DeploymentList:
		return len(l.Items)
	case *corev1.PodList:
		return len(l.Items)
	}
	panic(fmt.Sprintf("lenOf: %T", list))
}

// TestBundleUpgrade: `operator-sdk run bundle-upgrade` from the previous
// release's bundle (built from git history) to this one. The PodSets that the
// old operator made keep every pod: the upgrade deletes and creates none.
// The new operator takes them over (it writes the status fields the old one
// did not have) and then acts on them.
func TestBundleUpgrade(t *testing.T) {
	previous := os.Getenv("PREVIOUS_VERSION")
	if previous == "" {
		t.Fatal("PREVIOUS_VERSION must be set; run `make test-olm-real`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ns := "podset-bundle-upgrade"
	createBaselineNamespace(t, ctx, ns)

	operatorSDK(t, ctx, "run", "bundle", registryRef(t, "quay.io/example/podset-operator-bundle:v"+previous),
		"--namespace", ns, "--timeout", "5m",
		"--index-image", registryRef(t, opmImage))
	waitForOperator(t, ctx, ns, previous)

	var sets []*appv1alpha1.PodSet
	for name, n := range map[string]int32{"first": 3, "second": 2} {
		ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To(n)}}
		must(t, k8s.Create(ctx, ps))
		sets = append(sets, ps)
	}
	before := map[types.UID]string{}
	for _, ps := range sets {
		for _, p := range waitForRunningPods(t, ctx, ps) {
			before[p.UID] = p.Name
		}
	}

	// From here on, every pod that a PodSet owns and that is created or
	// deleted is churn.
	churn := watchPodSetPodChurn(t, ctx, ns)
	operatorSDK(t, ctx, "run", "bundle-upgrade", registryRef(t, "quay.io/example/podset-operator-bundle:v"+version),
		"--namespace", ns, "--timeout", "5m")
	waitForOperator(t, ctx, ns, version)
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: packageName + ".v" + previous}, &operatorsv1alpha1.ClusterServiceVersion{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "the replaced CSV is still there", err
	}))
	// The new operator has taken every PodSet over: it reports the update
	// revision, which the old one had no notion of.
	for _, ps := range sets {
		must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
				return false, "", err
			}
			st := ps.Status
			return st.UpdateRevision != "" && st.ObservedGeneration == ps.Generation && st.ReadyReplicas == *ps.Spec.Replicas,
				fmt.Sprintf("PodSet %s status %+v", ps.Name, st), nil
		}))
	}
	// A few seconds for anything the new operator would still do.
	time.Sleep(5 * time.Second)
	if events := churn(); len(events) > 0 {
		t.Fatalf("the upgrade churned pods: %v", events)
	}
	after := map[types.UID]string{}
	for _, ps := range sets {
		pods, err := ownedPods(ctx, ps)
		must(t, err)
		for _, p := range pods {
			after[p.UID] = p.Name
		}
	}
	if !maps.Equal(before, after) {
		t.Fatalf("the PodSets' pods changed across the upgrade: before %v, after %v", before, after)
	}

	// And the new operator acts: a scale-up.
	first := sets[0]
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(first), first))
	first.Spec.Replicas = ptr.To(*first.Spec.Replicas + 1)
	must(t, k8s.Update(ctx, first))
	waitForRunningPods(t, ctx, first)

	// Uninstall, PodSets first (see TestRunBundle).
	must(t, k8s.DeleteAllOf(ctx, &appv1alpha1.PodSet{}, client.InNamespace(ns)))
	waitForNoOperandPods(t, ctx, ns)
	operatorSDK(t, ctx, "cleanup", packageName, "--namespace", ns, "--timeout", "3m")
}

// TestCatalogUpgrade: the catalog image (make catalog-build catalog-push),
// in a CatalogSource with spec.image as the README has it, carries the
// previous release and the upgrade edge to this one. A Subscription
// started at the previous release, with manual approval, installs it; the
// catalog then offers this release as its upgrade, and once approved the
// operator upgrades through the edge without touching a pod.
func TestCatalogUpgrade(t *testing.T) {
	previous := os.Getenv("PREVIOUS_VERSION")
	if previous == "" {
		t.Fatal("PREVIOUS_VERSION must be set; run `make test-olm-real`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ns := "podset-catalog-upgrade"
	subscribeCatalogImage(t, ctx)
	createBaselineNamespace(t, ctx, ns)
	must(t, k8s.Create(ctx, &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "podset-operator", Namespace: ns},
		Spec:       operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ns}},
	}))
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: packageName, Namespace: ns},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource:          catalogName,
			CatalogSourceNamespace: olmNamespace,
			Package:                packageName,
			Channel:                channel,
			StartingCSV:            packageName + ".v" + previous,
			InstallPlanApproval:    operatorsv1alpha1.ApprovalManual,
		},
	}
	must(t, k8s.Create(ctx, sub))

	approve(t, ctx, sub, packageName+".v"+previous)
	waitForOperator(t, ctx, ns, previous)
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "through-the-catalog"}, Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](3)}}
	must(t, k8s.Create(ctx, ps))
	before := map[types.UID]string{}
	for _, p := range waitForRunningPods(t, ctx, ps) {
		before[p.UID] = p.Name
	}

	churn := watchPodSetPodChurn(t, ctx, ns)
	// The catalog offers the upgrade through the edge: an InstallPlan for
	// this release, which replaces the installed one.
	approve(t, ctx, sub, packageName+".v"+version)
	waitForOperator(t, ctx, ns, version)
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: packageName + ".v" + version}, csv))
	if csv.Spec.Replaces != packageName+".v"+previous {
		t.Fatalf("the installed CSV replaces %q, want %s.v%s", csv.Spec.Replaces, packageName, previous)
	}
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, "", err
		}
		st := ps.Status
		return st.UpdateRevision != "" && st.ObservedGeneration == ps.Generation && st.ReadyReplicas == 3,
			fmt.Sprintf("PodSet status %+v", st), nil
	}))
	time.Sleep(5 * time.Second)
	if events := churn(); len(events) > 0 {
		t.Fatalf("the upgrade churned pods: %v", events)
	}
	pods, err := ownedPods(ctx, ps)
	must(t, err)
	after := map[types.UID]string{}
	for _, p := range pods {
		after[p.UID] = p.Name
	}
	if !maps.Equal(before, after) {
		t.Fatalf("the PodSet's pods changed across the upgrade: before %v, after %v", before, after)
	}
	must(t, k8s.Delete(ctx, ps))
	waitForNoOperandPods(t, ctx, ns)
}

// approve approves the InstallPlan that sub currently points at, as
// `kubectl patch installplan ... approved=true` does, once it is the plan
// that installs csvName, and waits until that CSV exists. (OLM may replace
// a plan with a newer one before it is approved; the Subscription names
// the one it will execute.)
func approve(t *testing.T, ctx context.Context, sub *operatorsv1alpha1.Subscription, csvName string) {
	t.Helper()
	must(t, poll(ctx, 3*time.Minute, func() (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: csvName}, &operatorsv1alpha1.ClusterServiceVersion{})
		if err == nil {
			return true, "", nil
		} else if !apierrors.IsNotFound(err) {
			return false, "", err
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub); err != nil {
			return false, "", err
		}
		ref := sub.Status.InstallPlanRef
		if ref == nil {
			return false, fmt.Sprintf("no InstallPlan for the subscription yet (state %q)", sub.Status.State), nil
		}
		plan := &operatorsv1alpha1.InstallPlan{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, plan); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		if !slices.Contains(plan.Spec.ClusterServiceVersionNames, csvName) {
			return false, fmt.Sprintf("the subscription's InstallPlan %s installs %v", plan.Name, plan.Spec.ClusterServiceVersionNames), nil
		}
		if !plan.Spec.Approved {
			// A merge patch, as kubectl patch sends: OLM updates the plan's
			// status meanwhile, which an update would conflict with.
			if err := k8s.Patch(ctx, plan, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"approved":true}}`))); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
		}
		return false, fmt.Sprintf("InstallPlan %s approved, phase %q", plan.Name, plan.Status.Phase), nil
	}))
}
