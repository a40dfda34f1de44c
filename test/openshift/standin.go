// Package openshift puts a stand-in of OpenShift's pod admission in front of
// a local cluster (test/localcluster): OpenShift's own
// SecurityContextConstraints admission plugin, served as a mutating and a
// validating webhook by the command in sccadmission/ (a module of its own,
// built by hack/build-openshift-admission.sh), with the SCC CRD as
// OpenShift ships it, the ten SCCs every OpenShift cluster has and the RBAC
// through which every authenticated user may use restricted-v2
// (manifests/default-sccs.yaml).
//
// It judges the pods of the namespaces made with NewNamespace, which carry
// the annotations OpenShift's namespace controller sets and a label the
// webhooks select, as OpenShift judges every namespace's: the suites' other
// namespaces stay plain Kubernetes.
package openshift

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/test/localcluster"
)

const (
	// Label marks the namespaces whose pods the stand-in judges.
	Label = "e2e.example.com/openshift"
	// SCCAnnotation names the SCC that admitted a pod.
	SCCAnnotation = "openshift.io/scc"
	// The other two annotations OpenShift's namespace controller sets
	// beside operand.AnnotationUIDRange.
	annotationSupplementalGroups = "openshift.io/sa.scc.supplemental-groups"
	annotationMCS                = "openshift.io/sa.scc.mcs"
	// UIDRangeSize is how many user IDs each namespace gets.
	UIDRangeSize = 10000
	crdName      = "securitycontextconstraints.security.openshift.io"
	fieldOwner   = "openshift-stand-in"
)

//go:embed manifests/default-sccs.yaml
var defaultSCCs []byte

// StandIn is the running stand-in.
type StandIn struct {
	admin client.Client
	base  string // https://127.0.0.1:PORT
	http  *http.Client
	proc  *localcluster.Process
	hooks []client.Object

	mu   sync.Mutex
	next int // the index of the next namespace's UID range
}

// Judgement is what the stand-in decided for one namespace's pods
// (sccadmission's GET /judgements).
type Judgement struct {
	// Admitted counts the pods the validating pass admitted (after every
	// other admission plugin), SCCs them by the SCC that admitted them.
	Admitted int            `json:"admitted"`
	SCCs     map[string]int `json:"sccs"`
	// Refused counts the pods OpenShift's plugin refused, Refusals holds
	// their messages, ValidationRefused the pods the validating pass
	// refused.
	Refused           int      `json:"refused"`
	Refusals          []string `json:"refusals"`
	ValidationRefused int      `json:"validationRefused"`
}

// Start installs what OpenShift ships (the SCC CRD beside bin, the default
// SCCs and their RBAC), starts bin, the sccadmission command, with the
// cluster's admin identity, registers it for the pods of the namespaces
// labelled Label, and waits until the API server calls it. Stop undoes it.
func Start(ctx context.Context, cluster *localcluster.Cluster, admin client.Client, bin, logPath string) (*StandIn, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: build it with `make %s`", err, bin)
	}
	crd, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "securitycontextconstraints.crd.yaml"))
	if err != nil {
		return nil, err
	}
	if err := apply(ctx, admin, crd); err != nil {
		return nil, fmt.Errorf("installing the SCC CRD: %w", err)
	}
	if err := cluster.WaitForCRDEstablished(ctx, crdName, time.Minute); err != nil {
		return nil, err
	}
	// The API server adds a new CRD's kind to discovery a moment after it
	// reports the CRD Established, and the client finds the kind only
	// then: until it does, the apply fails with no match for the kind.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = apply(ctx, admin, defaultSCCs)
		if meta.IsNoMatchError(last) {
			return false, nil
		}
		return last == nil, last
	}); err != nil {
		return nil, fmt.Errorf("installing the default SCCs: %w", errors.Join(err, last))
	}

	dir, err := os.MkdirTemp("", "openshift-stand-in-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	caPEM, err := writeServingCert(dir)
	if err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, "address")
	proc, err := localcluster.StartProcess("sccadmission", bin, []string{
		"--kubeconfig=" + cluster.KubeconfigPath(), "--listen=127.0.0.1:0", "--address-file=" + addrFile,
		"--tls-cert=" + filepath.Join(dir, "tls.crt"), "--tls-key=" + filepath.Join(dir, "tls.key"),
	}, nil, logPath)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	s := &StandIn{admin: admin, proc: proc, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}}
	if err := s.register(ctx, addrFile, caPEM); err != nil {
		_ = s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

// register waits for the stand-in to serve, registers it, and waits until
// the API server calls it: a probe pod in a namespace it judges comes back
// with the SCC that admitted it (the admin's, who may use every SCC).
func (s *StandIn) register(ctx context.Context, addrFile string, caPEM []byte) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		addr, err := os.ReadFile(addrFile)
		if err != nil {
			return false, nil
		}
		s.base = "https://" + string(addr)
		resp, err := s.http.Get(s.base + "/healthz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("the stand-in did not serve (its log: %s): %w", s.proc.LogPath(), err)
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{Label: "true"}}
	config := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(s.base + path), CABundle: caPEM}
	}
	s.hooks = []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "openshift-stand-in-scc"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "scc.security.openshift.io", ClientConfig: config("/mutate"), Rules: rules, NamespaceSelector: selector,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "openshift-stand-in-scc"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "scc.security.openshift.io", ClientConfig: config("/validate"), Rules: rules, NamespaceSelector: selector,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		},
	}
	for _, h := range s.hooks {
		if err := s.admin.Create(ctx, h); err != nil {
			return err
		}
	}
	probeNS, _, err := s.NewNamespace(ctx, "openshift-stand-in-probe")
	if err != nil {
		return err
	}
	defer func() {
		_ = s.admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNS}})
	}()
	var last error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: probeNS},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		// A dry run: the webhooks (side effects None) are called and
		// annotate it, and no pod is stored for a node to run.
		if last = s.admin.Create(ctx, probe, client.DryRunAll); last != nil {
			return false, nil
		}
		return probe.Annotations[SCCAnnotation] != "", nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not call the stand-in: %w", errors.Join(err, last))
	}
	return nil
}

// Stop unregisters the stand-in and stops it. The SCC CRD and the SCCs
// stay: they change nothing without it.
func (s *StandIn) Stop(ctx context.Context) error {
	var errs []error
	for _, h := range s.hooks {
		if err := s.admin.Delete(ctx, h); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := s.proc.Stop(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NewNamespace creates a namespace as OpenShift's namespace controller
// leaves it, its pods judged by the stand-in, and returns its name and
// the first user ID of its range. An existing namespace of that name gets
// the same label and annotations.
func (s *StandIn) NewNamespace(ctx context.Context, name string) (string, int64, error) {
	labels, annotations, first := s.Allocate()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	err := s.admin.Create(ctx, ns)
	if apierrors.IsAlreadyExists(err) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
		err = s.admin.Patch(ctx, ns, client.RawPatch("application/merge-patch+json", patch))
	}
	if err != nil {
		return "", 0, err
	}
	return name, first, nil
}

// Allocate returns the label and the annotations of a new namespace of the
// stand-in, with a range of user IDs of its own, and that range's first ID.
func (s *StandIn) Allocate() (labels, annotations map[string]string, firstUID int64) {
	s.mu.Lock()
	s.next++
	n := s.next
	s.mu.Unlock()
	firstUID = 1000600000 + int64(n)*UIDRangeSize
	uidRange := fmt.Sprintf("%d/%d", firstUID, UIDRangeSize)
	return map[string]string{Label: "true"}, map[string]string{
		operand.AnnotationUIDRange:   uidRange,
		annotationSupplementalGroups: uidRange,
		annotationMCS:                fmt.Sprintf("s0:c%d,c5", 20+n),
	}, firstUID
}

// Judgements returns what the stand-in decided for ns's pods.
func (s *StandIn) Judgements(ns string) (Judgement, error) {
	resp, err := s.http.Get(s.base + "/judgements")
	if err != nil {
		return Judgement{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	all := map[string]Judgement{}
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return Judgement{}, err
	}
	return all[ns], nil
}

// CheckPods says what is wrong with ns's pods and the stand-in's judgements
// of them, or nil: at least min pods admitted, all under restricted-v2,
// none refused, and every container of every pod running as a user of the
// namespace's range (from first) with fsGroup first, as the SCC assigns
// them.
func (s *StandIn) CheckPods(ctx context.Context, ns string, first int64, min int) (Judgement, error) {
	j, err := s.Judgements(ns)
	if err != nil {
		return j, err
	}
	switch {
	case j.Admitted < min:
		return j, fmt.Errorf("%d pods of %s admitted, want at least %d", j.Admitted, ns, min)
	case j.Refused > 0 || j.ValidationRefused > 0:
		return j, fmt.Errorf("pods of %s refused: %v", ns, j.Refusals)
	case len(j.SCCs) != 1 || j.SCCs["restricted-v2"] == 0:
		return j, fmt.Errorf("pods of %s admitted under %v, want restricted-v2 alone", ns, j.SCCs)
	}
	var pods corev1.PodList
	if err := s.admin.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return j, err
	}
	for _, p := range pods.Items {
		if p.Annotations[SCCAnnotation] != "restricted-v2" {
			return j, fmt.Errorf("pod %s: admitted under %q", p.Name, p.Annotations[SCCAnnotation])
		}
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			uid := UserOf(&p, c)
			if uid == nil || *uid < first || *uid >= first+UIDRangeSize {
				return j, fmt.Errorf("pod %s container %s: user %v, want one of [%d, %d)", p.Name, c.Name, ptr.Deref(uid, -1), first, first+UIDRangeSize)
			}
		}
		if fs := p.Spec.SecurityContext.FSGroup; fs == nil || *fs != first {
			return j, fmt.Errorf("pod %s: fsGroup %v, want %d", p.Name, ptr.Deref(fs, -1), first)
		}
	}
	return j, nil
}

// UserOf is the user a container of p runs as by its own setting or the
// pod's, or nil.
func UserOf(p *corev1.Pod, c corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if p.Spec.SecurityContext != nil {
		return p.Spec.SecurityContext.RunAsUser
	}
	return nil
}

// apply server-side applies every object of a multi-document YAML.
func apply(ctx context.Context, c client.Client, yamlDocs []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(yamlDocs), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

// writeServingCert writes a serving certificate for 127.0.0.1 (tls.crt,
// tls.key) into dir, and returns the PEM of the CA that signed it.
func writeServingCert(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "openshift-stand-in-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sccadmission"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
