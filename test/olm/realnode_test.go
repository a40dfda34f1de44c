//go:build realnode

package olm_test

// The real-node suite (`make test-olm-real`, needs root): the local cluster
// runs one real node with its registry (test/localcluster, RealNode), and
// OLM's pods really run there: the bundle unpack Job, the catalog pod that
// `operator-sdk run bundle` creates, the operator's Deployment from the CSV.
// The CLI commands are run as users run them, against the registry's own
// name; the images that OLM and the CSV name by their upstream names
// (quay.io/..., docker.io/...) are pulled from the same registry, which the
// node's containerd takes as their mirror.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

// The stand-in images (hack/build-node-images.sh) under the names the
// catalog operator and the CLI are given; pinned to the tools under test.
const (
	opmImage  = "quay.io/operator-framework/opm:v1.60.0"
	utilImage = "quay.io/operator-framework/olm:v0.28.0"
	// operator-sdk run bundle's default (busybox:1.36.0) is not here.
	decompressionImage = "docker.io/library/busybox:1.37.0"
)

// version is the bundle's (Makefile VERSION).
var version string

func setUp(ctx context.Context) error {
	if version = os.Getenv("VERSION"); version == "" {
		return errors.New("VERSION must be set; run `make test-olm-real`")
	}
	node, err := localcluster.RealNodeImages(os.Getenv("NODE_IMAGES"))
	if err != nil {
		return err
	}
	for _, want := range []string{"manager.tar", "bundle.tar", "opm.tar", "olm.tar"} {
		if !slices.ContainsFunc(node.Images, func(p string) bool { return filepath.Base(p) == want }) {
			return fmt.Errorf("no %s among the node's images in %q: run `make test-olm-real`, which builds it", want, os.Getenv("NODE_IMAGES"))
		}
	}
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
	return startOLM(ctx, "--opmImage", opmImage, "--util-image", utilImage)
}

// registryRef is ref (an upstream name) as the CLI on this machine reaches
// it: the same repository in the cluster's registry.
func registryRef(t *testing.T, ref string) string {
	t.Helper()
	tag, err := cluster.RegistryRef(ref)
	must(t, err)
	return tag.String()
}

// operatorSDK runs operator-sdk as a user would, from an empty directory
// (it writes ./cache), trusting the cluster's CA for the registry.
func operatorSDK(t *testing.T, ctx context.Context, args ...string) string {
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
	return out.String()
}

// TestRunBundle: `operator-sdk run bundle` installs the operator from the
// bundle image in the registry, with OLM's unpack Job and the CLI's catalog
// pod really running; the CSV's Deployment runs the manager image on the
// node and it manages a PodSet; `operator-sdk cleanup` then removes
// everything it installed.
func TestRunBundle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "podset-run-bundle"
	// baseline, not restricted: run bundle's catalog pod has an init
	// container without a restricted security context, whatever
	// --security-context-config says (operator-sdk issue 7039).
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline",
	}}}))
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		// Pods are refused in a namespace until its default ServiceAccount exists.
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, "no default ServiceAccount in " + ns, err
	}))

	bundle := registryRef(t, "quay.io/example/podset-operator-bundle:v"+version)
	operatorSDK(t, ctx, "run", "bundle", bundle, "--namespace", ns, "--timeout", "5m",
		"--index-image", registryRef(t, opmImage), "--decompression-image", decompressionImage)

	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: packageName + ".v" + version}, csv))
	if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded {
		t.Fatalf("CSV %s is %s after run bundle: %s", csv.Name, csv.Status.Phase, csv.Status.Message)
	}

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

	// The CSV's Deployment runs the manager image on the node.
	dep := &appsv1.Deployment{}
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorName}, dep); err != nil {
			return false, "", err
		}
		return dep.Status.AvailableReplicas == 1, fmt.Sprintf("deployment %s: %d available", operatorName, dep.Status.AvailableReplicas), nil
	}))
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "quay.io/example/podset-operator:v"+version {
		t.Fatalf("the operator runs %s", img)
	}
	var managerPods corev1.PodList
	must(t, k8s.List(ctx, &managerPods, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)))
	for _, p := range managerPods.Items {
		if p.Spec.NodeName != localcluster.RealNodeName || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("manager pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}

	// It manages a PodSet: two real pods.
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-bundle"}, Spec: appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](2)}}
	must(t, k8s.Create(ctx, ps))
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		pods, err := ownedPods(ctx, ps)
		if err != nil {
			return false, "", err
		}
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == localcluster.RealNodeName {
				running++
			}
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, "", err
		}
		return running == 2 && ps.Status.ReadyReplicas == 2, fmt.Sprintf("%d running pods, status %+v", running, ps.Status), nil
	}))

	operatorSDK(t, ctx, "cleanup", packageName, "--namespace", ns, "--timeout", "3m")
	// Everything run bundle installed is gone: the operator, its catalog,
	// its CRD, and so the PodSet and its pods.
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
