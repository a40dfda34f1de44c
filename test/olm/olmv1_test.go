//go:build !realnode

package olm_test

// The OLM v1 suite (`make test-olmv1`, needs root): operator-controller and
// catalogd (OLMV1_BIN, built from their Go module) run as processes beside
// a kwok local cluster without the monitoring CRDs. They pull the catalog
// and bundle images from a TLS registry on loopback (Debian's
// docker-registry), filled with images that buildah builds here: the
// previous release's bundle (git history, UPGRADE_FROM_REV), today's bundle/
// and today's catalog/. The catalog names its bundles quay.io/example/...;
// a registries.conf mirror sends those pulls to the local registry, so the
// committed catalog is used unchanged.
//
// Two things a pod would have are provided by hand: both controllers read
// their ServiceAccount token at the in-cluster path, given to them in a
// private mount namespace (testdata/with-sa-token.sh); and kwok runs no
// container, so the operator runs as a process with a token of the
// ServiceAccount the ClusterExtension created (startManagerBin).

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

const (
	olmv1Namespace   = "olmv1-system"
	installNamespace = "podset-operator"
	installerSA      = "podset-installer"
	extensionName    = "podset-operator"
	// The bundle repository the catalog names (Makefile IMAGE_TAG_BASE).
	imageRepo = "example/podset-operator"
)

var (
	clusterCatalogGVK   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	clusterExtensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

// olmv1 is set by setUpOLMv1.
var olmv1 *olmv1Env

type olmv1Env struct {
	caFile       string
	previousBin  string // the manager of UPGRADE_FROM_REV
	previousVer  string // its version (its Makefile's VERSION)
	currentVer   string // today's (Makefile VERSION, from bundle/)
	catalogImage string
}

// setUpOLMv1 starts the registry and fills it, the cluster, and OLM v1.
func setUpOLMv1(ctx context.Context) error {
	if bins.manager = os.Getenv("MANAGER_BIN"); bins.manager == "" {
		return errors.New("MANAGER_BIN must be set; run `make test-olmv1`")
	}
	rev := os.Getenv("UPGRADE_FROM_REV")
	if rev == "" {
		return errors.New("UPGRADE_FROM_REV must be set; run `make test-olmv1`")
	}
	work := filepath.Join(logDir, "olmv1")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	olmv1 = &olmv1Env{}
	v := olmv1

	var err error
	if v.previousVer, err = makefileVersion(rev); err != nil {
		return err
	}
	if v.currentVer, err = makefileVersion(""); err != nil {
		return err
	}
	// One CA for the registry's and catalogd's serving certificates; the
	// controllers trust it through a directory (--pull-cas-dir,
	// --catalogd-cas-dir), buildah through --cert-dir.
	pki := filepath.Join(work, "pki")
	cas := filepath.Join(work, "cas")
	if err := writePKI(pki, cas); err != nil {
		return err
	}
	v.caFile = filepath.Join(cas, "ca.crt")
	if err := startImageRegistry(ctx, work, pki); err != nil {
		return err
	}
	logf("registry on %s", registryAddr)

	// The images and the previous release's manager.
	if err := buildAndPushImages(ctx, work, rev, cas); err != nil {
		return err
	}
	if v.previousBin, err = buildManagerAtRev(ctx, work, rev); err != nil {
		return err
	}

	cluster, err = localcluster.Start(ctx, localcluster.Options{BinDir: bins.k8s, Nodes: 1, Out: os.Stderr})
	if err != nil {
		return fmt.Errorf("starting the local cluster: %w", err)
	}
	if k8s, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return err
	}
	return startOLMv1(ctx, work, pki, cas)
}

var registryAddr string

// makefileVersion is VERSION in the Makefile at rev ("" for the worktree's).
func makefileVersion(rev string) (string, error) {
	var data []byte
	var err error
	if rev == "" {
		data, err = os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	} else {
		data, err = exec.Command("git", "-C", repoRoot, "show", rev+":Makefile").Output()
	}
	if err != nil {
		return "", fmt.Errorf("reading the Makefile at %q: %w", rev, err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if after, ok := strings.CutPrefix(line, "VERSION ?= "); ok {
			return strings.TrimSpace(after), nil
		}
	}
	return "", fmt.Errorf("no VERSION in the Makefile at %q", rev)
}

// writePKI writes a CA (dir/ca.crt, and casDir/ca.crt) and a serving
// certificate for 127.0.0.1 and localhost (dir/tls.crt, dir/tls.key).
func writePKI(dir, casDir string) error {
	for _, d := range []string{dir, casDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podset-olmv1-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "podset-olmv1-test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for path, data := range map[string][]byte{
		filepath.Join(dir, "ca.crt"):    caPEM,
		filepath.Join(casDir, "ca.crt"): caPEM,
		filepath.Join(dir, "tls.crt"):   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		filepath.Join(dir, "tls.key"):   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// caClient is an HTTPS client that trusts the test's CA only.
func caClient() (*http.Client, error) {
	pem, err := os.ReadFile(olmv1.caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("the test CA does not parse")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t, Timeout: 10 * time.Second}, nil
}

// startImageRegistry runs Debian's docker-registry with TLS on a free
// loopback port, its storage under work.
func startImageRegistry(ctx context.Context, work, pki string) error {
	port, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	registryAddr = "127.0.0.1:" + strconv.Itoa(port)
	q := strconv.Quote
	config := `version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: ` + q(filepath.Join(work, "registry")) + `
  delete:
    enabled: true
http:
  addr: ` + q(registryAddr) + `
  tls:
    certificate: ` + q(filepath.Join(pki, "tls.crt")) + `
    key: ` + q(filepath.Join(pki, "tls.key")) + `
`
	cfg := filepath.Join(work, "registry.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return err
	}
	p, err := startProc("registry", localcluster.RegistryBinary, []string{"serve", cfg})
	if err != nil {
		return err
	}
	c, err := caClient()
	if err != nil {
		return err
	}
	return poll(ctx, 30*time.Second, func() (bool, string, error) {
		if exited(p) {
			return false, "", fmt.Errorf("the registry exited:\n%s", tail(p.LogPath(), 20))
		}
		resp, err := c.Get("https://" + registryAddr + "/v2/")
		if err != nil {
			return false, err.Error(), nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, "GET /v2/: " + resp.Status, nil
	})
}

// buildAndPushImages builds, with buildah in a storage of its own, the
// bundle images of the previous release (its bundle/ and bundle.Dockerfile
// from git, with today's ignore file for that Dockerfile, which the release
// lacked) and of today's bundle/, and a catalog image of today's catalog/,
// and pushes them to the registry.
func buildAndPushImages(ctx context.Context, work, rev, cas string) error {
	src := filepath.Join(work, "src")
	prev, cur, cat := filepath.Join(src, "previous"), filepath.Join(src, "current"), filepath.Join(src, "catalog")
	for _, d := range []string{prev, cur, cat} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	sh := func(script string, args ...string) error {
		cmd := exec.CommandContext(ctx, "sh", append([]string{"-euc", script, "sh"}, args...)...)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", script, err, out)
		}
		return nil
	}
	if err := sh(`git archive "$1" bundle bundle.Dockerfile | tar -x -C "$2" && cp bundle.Dockerfile.dockerignore "$2/"`, rev, prev); err != nil {
		return err
	}
	if err := sh(`tar -c bundle bundle.Dockerfile bundle.Dockerfile.dockerignore | tar -x -C "$1"`, cur); err != nil {
		return err
	}
	// catalogd needs only the file-based catalog under the label's
	// directory: no opm in the image.
	if err := sh(`tar -c catalog | tar -x -C "$1" && printf '%s\n' 'FROM scratch' 'ADD catalog /configs' \
		'LABEL operators.operatorframework.io.index.configs.v1=/configs' >"$1/Dockerfile"`, cat); err != nil {
		return err
	}
	home := filepath.Join(work, "buildah-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	buildah := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "buildah", append([]string{
			"--root", filepath.Join(work, "containers", "storage"), "--runroot", filepath.Join(work, "containers", "runroot"),
			"--storage-driver", "vfs",
		}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("buildah %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	olmv1.catalogImage = registryAddr + "/" + imageRepo + "-catalog:v" + olmv1.currentVer
	for _, img := range []struct{ dir, dockerfile, ref string }{
		{prev, "bundle.Dockerfile", registryAddr + "/" + imageRepo + "-bundle:v" + olmv1.previousVer},
		{cur, "bundle.Dockerfile", registryAddr + "/" + imageRepo + "-bundle:v" + olmv1.currentVer},
		{cat, "Dockerfile", olmv1.catalogImage},
	} {
		if err := buildah("bud", "--quiet", "--isolation", "chroot", "-f", filepath.Join(img.dir, img.dockerfile), "-t", img.ref, img.dir); err != nil {
			return err
		}
		if err := buildah("push", "--quiet", "--cert-dir", cas, img.ref, "docker://"+img.ref); err != nil {
			return err
		}
		logf("pushed %s", img.ref)
	}
	return nil
}

// buildManagerAtRev builds the manager of an earlier commit (as the e2e
// suite's buildManagerAt does).
func buildManagerAtRev(ctx context.Context, work, rev string) (string, error) {
	dir := filepath.Join(work, "manager-"+rev)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repoRoot, rev, dir).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git archive %s: %w\n%s", rev, err, out)
	}
	bin := filepath.Join(work, "manager-previous")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod -trimpath")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager of %s: %w\n%s", rev, err, out)
	}
	return bin, nil
}

// startOLMv1 installs OLM v1's CRDs, the identities of its two controllers,
// runs them, and registers catalogd's mutating webhook by URL.
func startOLMv1(ctx context.Context, work, pki, cas string) error {
	dir := os.Getenv("OLMV1_BIN")
	files, err := filepath.Glob(filepath.Join(dir, "olmv1-crds", "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return fmt.Errorf("want the 2 OLM v1 CRDs in %s/olmv1-crds, found %d; `make olmv1-tools` copies them there", dir, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := decodeYAML(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := k8s.Create(ctx, crd); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, crd.Name); err != nil {
			return err
		}
	}
	if err := createNamespace(ctx, olmv1Namespace); err != nil {
		return err
	}
	// The controllers claim these identities (their token's "sub"); every
	// API call goes through the admin kubeconfig.
	tokens := map[string]string{}
	for _, sa := range []string{"catalogd-controller-manager", "operator-controller-controller-manager"} {
		if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: olmv1Namespace}}); err != nil {
			return err
		}
		cfg, err := cluster.ServiceAccountConfig(ctx, olmv1Namespace, sa, 4*time.Hour)
		if err != nil {
			return err
		}
		tokens[sa] = filepath.Join(work, sa+".token")
		if err := os.WriteFile(tokens[sa], []byte(cfg.BearerToken), 0o600); err != nil {
			return err
		}
	}
	// containers/image in both controllers reads
	// $HOME/.config/containers/registries.conf: the catalog's
	// quay.io/example references are pulled from the local registry.
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config", "containers"), 0o700); err != nil {
		return err
	}
	conf := "[[registry]]\nprefix = \"quay.io/example\"\nlocation = \"quay.io/example\"\n[[registry.mirror]]\nlocation = \"" + registryAddr + "/example\"\n"
	if err := os.WriteFile(filepath.Join(home, ".config", "containers", "registries.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = localcluster.FreePort(); err != nil {
			return err
		}
	}
	catalogdAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	webhookPort, catalogdHealth, catalogdMetrics, ocHealth := ports[1], ports[2], ports[3], ports[4]
	wrap := filepath.Join(repoRoot, "test", "olm", "testdata", "with-sa-token.sh")
	kubeconfig := cluster.KubeconfigPath()
	for _, d := range []string{"catalogd-cache", "oc-cache"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o700); err != nil {
			return err
		}
	}
	// Their exit status on SIGTERM is not looked at: both exit non-zero
	// (removing a global pull secret file that was never written).
	catalogd, err := startProc("catalogd", wrap, []string{tokens["catalogd-controller-manager"], filepath.Join(dir, "catalogd"),
		"--kubeconfig", kubeconfig, "--system-namespace", olmv1Namespace,
		"--tls-cert", filepath.Join(pki, "tls.crt"), "--tls-key", filepath.Join(pki, "tls.key"),
		"--external-address", catalogdAddr, "--catalogs-server-addr", catalogdAddr,
		"--webhook-server-port", strconv.Itoa(webhookPort),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(catalogdHealth),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(catalogdMetrics),
		"--cache-dir", filepath.Join(work, "catalogd-cache"), "--pull-cas-dir", cas,
	}, "HOME="+home)
	if err != nil {
		return err
	}
	oc, err := startProc("operator-controller", wrap, []string{tokens["operator-controller-controller-manager"], filepath.Join(dir, "operator-controller"),
		"--kubeconfig", kubeconfig, "--system-namespace", olmv1Namespace,
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(ocHealth),
		"--cache-path", filepath.Join(work, "oc-cache"), "--pull-cas-dir", cas, "--catalogd-cas-dir", cas,
	}, "HOME="+home)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		p    *localcluster.Process
		port int
	}{{catalogd, catalogdHealth}, {oc, ocHealth}} {
		err := poll(ctx, time.Minute, func() (bool, string, error) {
			if exited(c.p) {
				return false, "", fmt.Errorf("%s exited:\n%s", c.p.LogPath(), tail(c.p.LogPath(), 30))
			}
			resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(c.port) + "/readyz")
			if err != nil {
				return false, err.Error(), nil
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, "readyz " + resp.Status, nil
		})
		if err != nil {
			return err
		}
	}
	// catalogd's one webhook (it sets the label olm.operatorframework.io/metadata.name
	// that operator-controller selects catalogs by), by URL.
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	return k8s.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "catalogd-mutating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "inject-metadata-name.olm.operatorframework.io",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      ptr.To("https://127.0.0.1:" + strconv.Itoa(webhookPort) + "/mutate-olm-operatorframework-io-v1-clustercatalog"),
				CABundle: ca,
			},
			FailurePolicy:  ptr.To(admissionregistrationv1.Fail),
			SideEffects:    ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds: ptr.To[int32](10),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"olm.operatorframework.io"}, APIVersions: []string{"v1"}, Resources: []string{"clustercatalogs"},
				},
			}},
		}},
	})
}

func decodeYAML(data []byte, into any) error {
	return utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(into)
}

// TestOLMv1: a ClusterCatalog serves the project's catalog image; a
// ClusterExtension installs the previous release, then upgrades to this one
// along the catalog's edge while a PodSet keeps its pods (zero churn, the
// operator swapped too); deleting the ClusterExtension removes the CRD, so
// every PodSet and its pods, and the operator's Deployment.
func TestOLMv1(t *testing.T) {
	if olmv1 == nil {
		t.Fatal("the OLM v1 suite was not set up: run it with `make test-olmv1` (OLMV1_BIN)")
	}
	ctx := t.Context()
	v := olmv1

	// ---- ClusterCatalog ----
	catalog := &unstructured.Unstructured{}
	catalog.SetGroupVersionKind(clusterCatalogGVK)
	catalog.SetName(catalogName)
	must(t, unstructured.SetNestedMap(catalog.Object, map[string]any{
		"type": "Image", "image": map[string]any{"ref": v.catalogImage},
	}, "spec", "source"))
	must(t, k8s.Create(ctx, catalog))
	if err := waitCondition(ctx, catalog, "Serving", 2*time.Minute, nil); err != nil {
		t.Fatalf("ClusterCatalog not Serving: %v\ncatalogd log:\n%s", err, tail(filepath.Join(logDir, "catalogd.log"), 30))
	}
	if got := catalog.GetLabels()["olm.operatorframework.io/metadata.name"]; got != catalogName {
		t.Errorf("catalogd's webhook did not label the ClusterCatalog: labels %v", catalog.GetLabels())
	}
	// What it serves: the catalog's bundles, over HTTPS with the test CA.
	base, _, _ := unstructured.NestedString(catalog.Object, "status", "urls", "base")
	hc, err := caClient()
	must(t, err)
	resp, err := hc.Get(base + "/api/v1/all")
	must(t, err)
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	for _, ver := range []string{v.previousVer, v.currentVer} {
		if want := "quay.io/" + imageRepo + "-bundle:v" + ver; !strings.Contains(body.String(), want) {
			t.Fatalf("catalogd serves no bundle %s at %s (%s)", want, base, resp.Status)
		}
	}

	// ---- install the previous release ----
	must(t, createNamespace(ctx, installNamespace))
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: installerSA, Namespace: installNamespace}}))
	must(t, k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: installerSA + "-cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: installerSA, Namespace: installNamespace}},
	}))
	ext := &unstructured.Unstructured{}
	ext.SetGroupVersionKind(clusterExtensionGVK)
	ext.SetName(extensionName)
	must(t, unstructured.SetNestedMap(ext.Object, map[string]any{
		"namespace":      installNamespace,
		"serviceAccount": map[string]any{"name": installerSA},
		"source": map[string]any{
			"sourceType": "Catalog",
			"catalog":    map[string]any{"packageName": packageName, "version": v.previousVer},
		},
	}, "spec"))
	must(t, k8s.Create(ctx, ext))
	waitInstalled(t, ctx, ext, v.previousVer)
	dep := operatorDeployment(t, ctx, v.previousVer, ext)

	podName := deploymentPod(t, ctx, dep)
	operand := ""
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "RELATED_IMAGE_PODSET" {
			operand = e.Value
		}
	}
	if operand == "" {
		t.Fatal("the installed Deployment sets no RELATED_IMAGE_PODSET")
	}
	// OLM v1 installs for all namespaces: the pod template says so.
	if got, ok := dep.Spec.Template.Annotations["olm.targetNamespaces"]; !ok || got != "" {
		t.Errorf("olm.targetNamespaces annotation = %q (present %v), want \"\" (all namespaces)", got, ok)
	}
	previous := startManagerBin(t, ctx, v.previousBin, installNamespace, podName, "", operand)

	workloadNS := "podset-olmv1-workload"
	must(t, createNamespace(ctx, workloadNS))
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "olmv1-sample", Namespace: workloadNS},
		Spec:       appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](3)},
	}
	must(t, k8s.Create(ctx, ps))
	before := waitAvailablePods(t, ctx, ps, 3)

	// Every pod event from here on: an upgrade must neither create nor
	// delete one.
	churn := watchPodChurn(t, ctx, workloadNS)

	// ---- upgrade ----
	patch := []byte(`{"spec":{"source":{"catalog":{"version":"` + v.currentVer + `"}}}}`)
	must(t, k8s.Patch(ctx, ext, client.RawPatch(types.MergePatchType, patch)))
	waitInstalled(t, ctx, ext, v.currentVer)
	dep = operatorDeployment(t, ctx, v.currentVer, ext)
	must(t, previous.Stop())
	podName = deploymentPod(t, ctx, dep)
	current := startManagerBin(t, ctx, bins.manager, installNamespace, podName, "", operand)
	// Today's manager has taken the PodSet over: it reports it at its
	// current generation.
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, "", err
		}
		ok := ps.Status.ObservedGeneration == ps.Generation && ps.Status.AvailableReplicas == 3 && ps.Status.CurrentRevision != ""
		return ok, fmt.Sprintf("PodSet status %+v at generation %d", ps.Status, ps.Generation), nil
	}))
	// Some time for anything it would still do.
	time.Sleep(5 * time.Second)
	after := waitAvailablePods(t, ctx, ps, 3)
	if !slices.Equal(before, after) {
		t.Errorf("pods changed through the upgrade:\nbefore %v\nafter  %v", before, after)
	}
	if events := churn(); len(events) > 0 {
		t.Errorf("pods created or deleted during the upgrade: %v", events)
	}
	if exited(current) {
		t.Fatalf("today's manager exited:\n%s", tail(current.LogPath(), 30))
	}

	// ---- delete the ClusterExtension ----
	// The RBAC it installed carries its owner label.
	owned := client.MatchingLabels{"olm.operatorframework.io/owner-name": extensionName}
	var crs rbacv1.ClusterRoleList
	must(t, k8s.List(ctx, &crs, owned))
	if len(crs.Items) == 0 {
		t.Fatal("no ClusterRole labelled olm.operatorframework.io/owner-name=" + extensionName)
	}
	must(t, current.Stop())
	must(t, k8s.Delete(ctx, ext))
	deleted := time.Now()
	// The garbage collector removes what it installed (ownerReferences to
	// the ClusterExtension); on a fresh cluster it first waits for its
	// discovery resync (30 s) to know the new kinds.
	err = poll(ctx, 3*time.Minute, func() (bool, string, error) {
		var left []string
		err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case err == nil:
			left = append(left, "the CRD")
		case !apierrors.IsNotFound(err):
			return false, "", err
		}
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(workloadNS)); err != nil {
			return false, "", err
		}
		if len(pods.Items) > 0 {
			left = append(left, fmt.Sprintf("%d pods", len(pods.Items)))
		}
		var deps appsv1.DeploymentList
		if err := k8s.List(ctx, &deps, client.InNamespace(installNamespace)); err != nil {
			return false, "", err
		}
		if len(deps.Items) > 0 {
			left = append(left, fmt.Sprintf("%d Deployments", len(deps.Items)))
		}
		var exts unstructured.UnstructuredList
		exts.SetGroupVersionKind(clusterExtensionGVK.GroupVersion().WithKind("ClusterExtensionList"))
		if err := k8s.List(ctx, &exts); err != nil {
			return false, "", err
		}
		if len(exts.Items) > 0 {
			left = append(left, "the ClusterExtension")
		}
		var crs rbacv1.ClusterRoleList
		var crbs rbacv1.ClusterRoleBindingList
		if err := k8s.List(ctx, &crs, owned); err != nil {
			return false, "", err
		}
		if err := k8s.List(ctx, &crbs, owned); err != nil {
			return false, "", err
		}
		if n := len(crs.Items) + len(crbs.Items); n > 0 {
			left = append(left, fmt.Sprintf("%d ClusterRoles and Bindings", n))
		}
		err = k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: operatorName}, &corev1.ServiceAccount{})
		switch {
		case err == nil:
			left = append(left, "the operator's ServiceAccount")
		case !apierrors.IsNotFound(err):
			return false, "", err
		}
		return len(left) == 0, "left: " + strings.Join(left, ", "), nil
	})
	if err != nil {
		t.Fatalf("after deleting the ClusterExtension: %v", err)
	}
	t.Logf("ClusterExtension deleted: its CRD, the PodSet's pods, Deployment, RBAC gone after %s", time.Since(deleted).Round(100*time.Millisecond))
	// What the user created stays: the namespace and the installer.
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: installerSA}, &corev1.ServiceAccount{}))
	// With the CRD, the PodSet API is gone.
	err = k8s.List(ctx, &appv1alpha1.PodSetList{}, client.InNamespace(workloadNS))
	if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		t.Errorf("listing PodSets after the uninstall: %v, want no such kind", err)
	}
}

// waitCondition waits until obj (refreshed) has condition typ True, and
// extra (if set) agrees.
func waitCondition(ctx context.Context, obj *unstructured.Unstructured, typ string, timeout time.Duration, extra func() (bool, string)) error {
	return poll(ctx, timeout, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, "", err
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		var all []string
		ok := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			all = append(all, fmt.Sprintf("%v=%v %v: %v", m["type"], m["status"], m["reason"], m["message"]))
			if m["type"] == typ && m["status"] == "True" {
				ok = true
			}
		}
		what := strings.Join(all, "; ")
		if ok && extra != nil {
			var more string
			ok, more = extra()
			what += "; " + more
		}
		return ok, what, nil
	})
}

// waitInstalled waits until the ClusterExtension reports version installed.
func waitInstalled(t *testing.T, ctx context.Context, ext *unstructured.Unstructured, version string) {
	t.Helper()
	start := time.Now()
	err := waitCondition(ctx, ext, "Installed", 3*time.Minute, func() (bool, string) {
		got, _, _ := unstructured.NestedString(ext.Object, "status", "install", "bundle", "version")
		return got == version, "installed version " + got
	})
	if err != nil {
		t.Fatalf("ClusterExtension did not install %s: %v\noperator-controller log:\n%s", version, err,
			tail(filepath.Join(logDir, "operator-controller.log"), 30))
	}
	t.Logf("ClusterExtension: %s installed after %s", version, time.Since(start).Round(100*time.Millisecond))
}

// operatorDeployment is the operator's Deployment, owned by the
// ClusterExtension, once it runs version's image.
func operatorDeployment(t *testing.T, ctx context.Context, version string, ext *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	dep := &appsv1.Deployment{}
	err := poll(ctx, time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: operatorName}, dep); err != nil {
			return false, "", err
		}
		img := dep.Spec.Template.Spec.Containers[0].Image
		return strings.HasSuffix(img, ":v"+version), "Deployment image " + img, nil
	})
	must(t, err)
	if !metav1.IsControlledBy(dep, ext) {
		t.Errorf("the Deployment's owners %v: not controlled by the ClusterExtension", dep.OwnerReferences)
	}
	return dep
}

// waitAvailablePods waits until the PodSet reports n available pods and
// owns n live pods, and returns their UIDs, sorted.
func waitAvailablePods(t *testing.T, ctx context.Context, ps *appv1alpha1.PodSet, n int) []string {
	t.Helper()
	var uids []string
	err := poll(ctx, 2*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, "", err
		}
		pods, err := ownedPods(ctx, ps)
		if err != nil {
			return false, "", err
		}
		uids = uids[:0]
		for _, p := range pods {
			uids = append(uids, string(p.UID))
		}
		slices.Sort(uids)
		return len(pods) == n && int(ps.Status.AvailableReplicas) == n,
			fmt.Sprintf("%d pods, %d available", len(pods), ps.Status.AvailableReplicas), nil
	})
	must(t, err)
	return uids
}

// watchPodChurn records every pod created or deleted in ns from now on;
// the returned function lists them.
func watchPodChurn(t *testing.T, ctx context.Context, ns string) func() []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig())
	must(t, err)
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	must(t, err)
	t.Cleanup(w.Stop)
	events := make(chan string, 1000)
	var seen []string
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch {
			case ev.Type == watch.Added, ev.Type == watch.Deleted,
				ev.Type == watch.Modified && p.DeletionTimestamp != nil:
				select { // never blocks: past 1000 events the test fails anyway
				case events <- fmt.Sprintf("%s %s", ev.Type, p.Name):
				default:
				}
			}
		}
	}()
	return func() []string {
		for {
			select {
			case e := <-events:
				seen = append(seen, e)
			default:
				return seen
			}
		}
	}
}
