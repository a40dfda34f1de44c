//go:build !realnode

package olm_test

// The kwok suite (`make test-olm`). Two things a cluster without containers
// cannot do are provided here:
//   - the fake (kwok) Nodes carry kubernetes.io/os=linux, which the bundle
//     unpack Job's pod selects (test/localcluster labels them);
//   - the unpack pod never runs, so the ConfigMap it would fill with the
//     bundle is filled by running the real `opm alpha bundle extract` on
//     bundle/ (see unpackBundles).
//
// The operator itself runs as a local process (MANAGER_BIN) with a token of
// the ServiceAccount OLM created from the CSV, so the RBAC under test is
// exactly what the CSV grants.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/test/localcluster"
)

// setUp starts the cluster, installs OLM, serves the catalog and waits until
// OLM is connected to it.
func setUp(ctx context.Context) error {
	if bins.manager = os.Getenv("MANAGER_BIN"); bins.manager == "" {
		return errors.New("MANAGER_BIN must be set; run `make test-olm`")
	}
	var err error
	cluster, err = localcluster.Start(ctx, localcluster.Options{BinDir: bins.k8s, Out: os.Stderr})
	if err != nil {
		return fmt.Errorf("starting the local cluster: %w", err)
	}
	// The images only name what the unpack Job and registry pods would run;
	// nothing is pulled here. They are pinned to the versions under test.
	if err := startOLM(ctx,
		"--opmImage", "quay.io/operator-framework/opm:v1.60.0",
		"--util-image", "quay.io/operator-framework/olm:v0.28.0",
		"--configmapServerImage", "quay.io/operator-framework/configmap-operator-registry:v1.60.0",
	); err != nil {
		return err
	}

	if err := serveCatalog(ctx); err != nil {
		return err
	}
	go unpackBundles(ctx)
	return nil
}

// serveCatalog serves catalog/ with the real `opm serve` on this machine,
// creates the CatalogSource that points OLM's catalog operator at it, and
// waits until OLM is connected.
func serveCatalog(ctx context.Context) error {
	port, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	pprof, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	if err := start("opm-serve", bins.opm, []string{
		"serve", filepath.Join(repoRoot, "catalog"), "--port", strconv.Itoa(port),
		"--pprof-addr", "127.0.0.1:" + strconv.Itoa(pprof),
		"--termination-log", filepath.Join(logDir, "opm-serve.termination"),
	}); err != nil {
		return err
	}

	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: catalogName, Namespace: olmNamespace},
		Spec: operatorsv1alpha1.CatalogSourceSpec{
			SourceType:  operatorsv1alpha1.SourceTypeGrpc,
			Address:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			DisplayName: "PodSet Operator (local catalog/)",
			Publisher:   "podset-operator tests",
		},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		return fmt.Errorf("creating the CatalogSource: %w", err)
	}
	return waitCatalogSourceReady(ctx, cs)
}

// unpackBundles plays the part of OLM's bundle unpack pod, which kwok never
// runs: whenever the catalog operator creates the (empty) ConfigMap the pod
// would fill, fill it with the real `opm alpha bundle extract`, the command
// the pod runs, from bundle/ (which is what catalog/ was rendered from).
func unpackBundles(ctx context.Context) {
	done := map[string]bool{}
	for ctx.Err() == nil {
		var cms corev1.ConfigMapList
		if err := k8s.List(ctx, &cms, client.InNamespace(olmNamespace), client.MatchingLabels{"olm.managed": "true"}); err == nil {
			for _, cm := range cms.Items {
				if len(cm.Data) > 0 || len(cm.BinaryData) > 0 || done[string(cm.UID)] || !ownedByCatalogSource(&cm) {
					continue
				}
				out, err := exec.CommandContext(ctx, bins.opm, "alpha", "bundle", "extract",
					"-m", filepath.Join(repoRoot, "bundle")+"/", "-n", olmNamespace, "-c", cm.Name, "-z",
					"-k", cluster.KubeconfigPath()).CombinedOutput()
				logf("opm alpha bundle extract -c %s: err=%v\n%s", cm.Name, err, out)
				if err == nil {
					done[string(cm.UID)] = true
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ownedByCatalogSource(o metav1.Object) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == operatorsv1alpha1.CatalogSourceKind {
			return true
		}
	}
	return false
}

// start starts a process of the kwok cluster, stopped with the others.
func start(name, bin string, args []string, env ...string) error {
	_, err := startProc(name, bin, args, env...)
	return err
}
