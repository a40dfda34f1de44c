//go:build realnode

package olm_test

// The OLM v1 suite (`make test-olmv1`, needs root): the real-node cluster of
// realnode_test.go, given OLM v1 instead of OLM v0. catalogd and
// operator-controller (OLMV1_BIN, built from their Go module) run as
// processes on this machine and pull from the node's registry: the catalog
// image that `make catalog-build catalog-push` published there, and the
// bundle images it names, this release's (`make bundle-build bundle-push`)
// and the previous release's (git history, pushed when the cluster
// started). The catalog names its bundles quay.io/example/...; a
// registries.conf mirror sends the controllers' pulls of those names to the
// registry, as containerd's mirror does for the node, so the committed
// catalog is used unchanged. What OLM v1 installs really runs: the node
// pulls the manager image of the CSV's Deployment and runs it, and the
// manager runs the PodSets' pods there.
//
// One thing a pod would have is provided by hand: both controllers read
// their ServiceAccount token at the in-cluster path, given to them in a
// private mount namespace (testdata/with-sa-token.sh).

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
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
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
	// The images' repositories (Makefile IMAGE_TAG_BASE).
	imageRepo = "quay.io/example/podset-operator"
)

var (
	clusterCatalogGVK   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	clusterExtensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

// olmv1 is set by startOLMv1.
var olmv1 *olmv1Env

type olmv1Env struct {
	caFile       string // the CA of catalogd's serving certificate
	previousVer  string // the previous release (Makefile PREVIOUS_VERSION)
	catalogImage string // the catalog image, by the registry's own name
}

// startOLMv1 installs OLM v1's CRDs and the identities of its two
// controllers, runs them, and registers catalogd's mutating webhook by URL.
// The cluster is up and this release's images are in its registry.
func startOLMv1(ctx context.Context) error {
	previous := os.Getenv("PREVIOUS_VERSION")
	if previous == "" {
		return errors.New("PREVIOUS_VERSION must be set; run `make test-olmv1`")
	}
	var err error
	if k8s, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return err
	}
	work := filepath.Join(logDir, "olmv1")
	olmv1 = &olmv1Env{previousVer: previous}
	if olmv1.catalogImage, err = registryName(imageRepo + "-catalog:v" + version); err != nil {
		return err
	}
	// catalogd serves catalogs and its webhook with a certificate of a CA of
	// its own; the controllers trust, through one directory (--pull-cas-dir,
	// --catalogd-cas-dir), that CA and the cluster's, which signs the
	// registry's certificate.
	pki := filepath.Join(work, "pki")
	cas := filepath.Join(work, "cas")
	if err := writePKI(pki, cas); err != nil {
		return err
	}
	olmv1.caFile = filepath.Join(cas, "ca.crt")
	clusterCA, err := os.ReadFile(cluster.CAFile())
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cas, "cluster-ca.crt"), clusterCA, 0o600); err != nil {
		return err
	}

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
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd); err != nil {
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
	// quay.io/example references are pulled from the node's registry.
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config", "containers"), 0o700); err != nil {
		return err
	}
	conf := "[[registry]]\nprefix = \"quay.io/example\"\nlocation = \"quay.io/example\"\n[[registry.mirror]]\nlocation = \"" + cluster.RegistryHost() + "/example\"\n"
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

// trustingTransport is an HTTPS transport that trusts the CA in caFile only.
func trustingTransport(caFile string) (*http.Transport, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s does not parse", caFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// TestOLMv1: a ClusterCatalog serves the project's catalog image from the
// node's registry; a ClusterExtension installs the previous release, whose
// manager the node pulls and runs, and which runs a PodSet's pods; it then
// upgrades to this release along the catalog's edge: the node pulls and
// runs the new manager, which takes the PodSet over without creating or
// deleting a pod. Deleting the ClusterExtension removes the CRD, so every
// PodSet and its pods, and the operator's Deployment, Service,
// ServiceAccount and ClusterRoles.
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
	// It serves the image that was pushed: the digest it resolved is the
	// registry's.
	resolved, _, _ := unstructured.NestedString(catalog.Object, "status", "resolvedSource", "image", "ref")
	if digest := registryDigest(t, ctx, imageRepo+"-catalog:v"+version); !strings.HasSuffix(resolved, "@"+digest) {
		t.Errorf("the ClusterCatalog resolved %q, want the registry's %s", resolved, digest)
	}
	// What it serves: the catalog's bundles, over HTTPS with catalogd's CA.
	base, _, _ := unstructured.NestedString(catalog.Object, "status", "urls", "base")
	tr, err := trustingTransport(v.caFile)
	must(t, err)
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := hc.Get(base + "/api/v1/all")
	must(t, err)
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	for _, ver := range []string{v.previousVer, version} {
		if want := imageRepo + "-bundle:v" + ver; !strings.Contains(body.String(), want) {
			t.Fatalf("catalogd serves no bundle %s at %s (%s)", want, base, resp.Status)
		}
	}

	// ---- install the previous release ----
	must(t, createNamespace(ctx, installNamespace))
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: installerSA, Namespace: installNamespace}}))
	installerBinding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: installerSA + "-cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: installerSA, Namespace: installNamespace}},
	}
	must(t, k8s.Create(ctx, installerBinding))
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
	// OLM v1 installs for all namespaces: the pod template says so.
	if got, ok := dep.Spec.Template.Annotations["olm.targetNamespaces"]; !ok || got != "" {
		t.Errorf("olm.targetNamespaces annotation = %q (present %v), want \"\" (all namespaces)", got, ok)
	}
	previousPod := waitManagerPod(t, ctx, dep, imageRepo+":v"+v.previousVer)

	// The manager runs a PodSet in another namespace: its pods run on the
	// node, and it reports them ready.
	workloadNS := "podset-olmv1-workload"
	createBaselineNamespace(t, ctx, workloadNS)
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "olmv1-sample", Namespace: workloadNS},
		Spec:       appv1alpha1.PodSetSpec{Replicas: ptr.To[int32](3)},
	}
	must(t, k8s.Create(ctx, ps))
	before := podUIDs(waitForRunningPods(t, ctx, ps))

	// Every PodSet pod created or deleted from here on: an upgrade must do
	// neither.
	churn := watchPodSetPodChurn(t, ctx, workloadNS)

	// ---- upgrade ----
	patch := []byte(`{"spec":{"source":{"catalog":{"version":"` + version + `"}}}}`)
	must(t, k8s.Patch(ctx, ext, client.RawPatch(types.MergePatchType, patch)))
	waitInstalled(t, ctx, ext, version)
	dep = operatorDeployment(t, ctx, version, ext)
	currentPod := waitManagerPod(t, ctx, dep, imageRepo+":v"+version)
	if currentPod.UID == previousPod.UID {
		t.Fatalf("the manager pod %s was not replaced", currentPod.Name)
	}
	// This release's manager has taken the PodSet over: it reports the
	// update revision, which the previous one had no notion of, at the
	// current generation.
	must(t, poll(ctx, 2*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, "", err
		}
		st := ps.Status
		return st.UpdateRevision != "" && st.ObservedGeneration == ps.Generation && st.ReadyReplicas == *ps.Spec.Replicas,
			fmt.Sprintf("PodSet status %+v at generation %d", st, ps.Generation), nil
	}))
	// Some time for anything it would still do.
	time.Sleep(5 * time.Second)
	if events := churn(); len(events) > 0 {
		t.Errorf("the upgrade created or deleted pods: %v", events)
	}
	if after := podUIDs(waitForRunningPods(t, ctx, ps)); !maps.Equal(before, after) {
		t.Errorf("the PodSet's pods changed through the upgrade:\nbefore %v\nafter  %v", before, after)
	}
	// And it acts on the PodSet: a scale-up (a patch, as the manager may
	// write the status meanwhile).
	must(t, k8s.Patch(ctx, ps, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`))))
	waitForRunningPods(t, ctx, ps)

	// ---- delete the ClusterExtension ----
	// Everything it installed carries its owner label; each kind is there
	// before, and gone after.
	owned := client.MatchingLabels{"olm.operatorframework.io/owner-name": extensionName}
	installed := []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"PodSet pods", &corev1.PodList{}, []client.ListOption{client.InNamespace(workloadNS)}},
		{"pods of the operator", &corev1.PodList{}, []client.ListOption{client.InNamespace(installNamespace)}},
		{"Deployments", &appsv1.DeploymentList{}, []client.ListOption{client.InNamespace(installNamespace), owned}},
		{"ServiceAccounts it installed", &corev1.ServiceAccountList{}, []client.ListOption{client.InNamespace(installNamespace), owned}},
		{"Services it installed", &corev1.ServiceList{}, []client.ListOption{client.InNamespace(installNamespace), owned}},
		{"ClusterRoles it installed", &rbacv1.ClusterRoleList{}, []client.ListOption{owned}},
		{"ClusterRoleBindings it installed", &rbacv1.ClusterRoleBindingList{}, []client.ListOption{owned}},
		// Applied by the manager, owned by the CRD: they go with it.
		{"admission policies", &admissionregistrationv1.ValidatingAdmissionPolicyList{}, nil},
		{"admission policy bindings", &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, nil},
	}
	// This release's manager applies the InPlaceOnly admission policy once it
	// leads, owned by the CRD.
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		var vap admissionregistrationv1.ValidatingAdmissionPolicy
		err := k8s.Get(ctx, client.ObjectKey{Name: "podsets-in-place-only.app.example.com"}, &vap)
		if apierrors.IsNotFound(err) {
			return false, "no admission policy", nil
		}
		if err != nil {
			return false, "", err
		}
		owners := vap.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "CustomResourceDefinition" || owners[0].Name != crdName {
			return false, fmt.Sprintf("admission policy owned by %v, want the CRD", owners), nil
		}
		return true, "", nil
	}))
	for _, c := range installed {
		must(t, k8s.List(ctx, c.list, c.opts...))
		if meta.LenList(c.list) == 0 {
			t.Fatalf("no %s before deleting the ClusterExtension", c.what)
		}
	}
	// For all namespaces, OLM v1 grants the CSV's namespaced permissions
	// (leader election, the monitoring objects) cluster-wide, beside its
	// cluster permissions: two ClusterRoles and their bindings, no Role.
	var crs rbacv1.ClusterRoleList
	var roles rbacv1.RoleList
	must(t, k8s.List(ctx, &crs, owned))
	must(t, k8s.List(ctx, &roles, owned))
	if len(crs.Items) != 2 || len(roles.Items) != 0 {
		t.Errorf("OLM v1 installed %d ClusterRoles and %d Roles, want 2 and 0", len(crs.Items), len(roles.Items))
	}
	must(t, k8s.Delete(ctx, ext))
	deleted := time.Now()
	// The garbage collector removes what it installed (ownerReferences to
	// the ClusterExtension); on a fresh cluster it first waits for its
	// discovery resync (30 s) to know the new kinds. The pods' containers
	// stop within their grace period.
	err = poll(ctx, 3*time.Minute, func() (bool, string, error) {
		var left []string
		err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case err == nil:
			left = append(left, "the CRD")
		case !apierrors.IsNotFound(err):
			return false, "", err
		}
		var exts unstructured.UnstructuredList
		exts.SetGroupVersionKind(clusterExtensionGVK.GroupVersion().WithKind("ClusterExtensionList"))
		if err := k8s.List(ctx, &exts); err != nil {
			return false, "", err
		}
		if len(exts.Items) > 0 {
			left = append(left, "the ClusterExtension")
		}
		for _, c := range installed {
			if err := k8s.List(ctx, c.list, c.opts...); err != nil {
				return false, "", err
			}
			if n := meta.LenList(c.list); n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, c.what))
			}
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
	t.Logf("ClusterExtension deleted: its CRD, the PodSet and its pods, the admission policy, the operator's pod, Deployment, Service, ServiceAccount, ClusterRoles and bindings gone after %s", time.Since(deleted).Round(100*time.Millisecond))
	// What the user created stays: the ClusterCatalog, the namespace, the
	// installer and its binding.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(catalog), catalog))
	must(t, k8s.Get(ctx, client.ObjectKey{Name: installNamespace}, &corev1.Namespace{}))
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: installerSA}, &corev1.ServiceAccount{}))
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(installerBinding), &rbacv1.ClusterRoleBinding{}))
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

// operatorDeployment is the operator's Deployment, controlled by the
// ClusterExtension, once it runs version's manager image, rolled out and
// available.
func operatorDeployment(t *testing.T, ctx context.Context, version string, ext *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	dep := &appsv1.Deployment{}
	image := imageRepo + ":v" + version
	err := poll(ctx, 3*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: operatorName}, dep); err != nil {
			return false, "", err
		}
		img := dep.Spec.Template.Spec.Containers[0].Image
		st := dep.Status
		return img == image && st.ObservedGeneration == dep.Generation && st.UpdatedReplicas == 1 && st.AvailableReplicas == 1 && st.Replicas == 1,
			fmt.Sprintf("Deployment %s: image %s, %d updated, %d available, %d in all", operatorName, img, st.UpdatedReplicas, st.AvailableReplicas, st.Replicas), nil
	})
	must(t, err)
	if !metav1.IsControlledBy(dep, ext) {
		t.Errorf("the Deployment's owners %v: not controlled by the ClusterExtension", dep.OwnerReferences)
	}
	return dep
}

// waitManagerPod waits until dep has one live pod, running image, Ready on
// the node, and checks that the node pulled that image from the registry:
// the container runs the digest that the registry serves for image, and the
// kubelet reported pulling it (the node starts with no manager image).
func waitManagerPod(t *testing.T, ctx context.Context, dep *appsv1.Deployment, image string) *corev1.Pod {
	t.Helper()
	digest := registryDigest(t, ctx, image)
	wantID := strings.TrimSuffix(image, image[strings.LastIndex(image, ":"):]) + "@" + digest
	pod := &corev1.Pod{}
	err := poll(ctx, 2*time.Minute, func() (bool, string, error) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return false, "", err
		}
		var live []string
		for _, p := range pods.Items {
			live = append(live, fmt.Sprintf("%s (image %s, phase %s, node %q)", p.Name, p.Spec.Containers[0].Image, p.Status.Phase, p.Spec.NodeName))
			*pod = p
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d manager pods: %v", len(pods.Items), live), nil
		}
		ready := false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		ok := pod.DeletionTimestamp == nil && pod.Spec.Containers[0].Image == image && pod.Spec.NodeName == localcluster.RealNodeName &&
			pod.Status.Phase == corev1.PodRunning && ready && len(pod.Status.ContainerStatuses) == 1
		return ok, fmt.Sprintf("manager pod %v, ready %v", live, ready), nil
	})
	if err != nil {
		t.Fatalf("the manager pod of %s: %v", image, err)
	}
	if got := pod.Status.ContainerStatuses[0].ImageID; got != wantID {
		t.Errorf("the manager container runs image %q, want %q (the registry's)", got, wantID)
	}
	// The kubelet's event of the pull (an image already on the node has
	// "already present on machine" instead).
	must(t, poll(ctx, time.Minute, func() (bool, string, error) {
		var events corev1.EventList
		if err := k8s.List(ctx, &events, client.InNamespace(pod.Namespace), client.MatchingFields{"involvedObject.uid": string(pod.UID)}); err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range events.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "Pulled" && strings.HasPrefix(e.Message, "Successfully pulled image \""+image+"\"") {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("no event of pulling %s for pod %s: %v", image, pod.Name, seen), nil
	}))
	t.Logf("manager pod %s runs %s, pulled by the node", pod.Name, wantID)
	return pod
}

// registryDigest is the digest of the manifest that the registry serves
// for ref (an upstream name, which the node pulls from the registry).
func registryDigest(t *testing.T, ctx context.Context, ref string) string {
	t.Helper()
	tag, err := cluster.RegistryRef(ref)
	must(t, err)
	tr, err := trustingTransport(cluster.CAFile())
	must(t, err)
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithTransport(tr))
	must(t, err)
	return desc.Digest.String()
}

func podUIDs(pods []corev1.Pod) map[types.UID]string {
	uids := map[types.UID]string{}
	for _, p := range pods {
		uids[p.UID] = p.Name
	}
	return uids
}
