// Package olm_test installs the operator the way its users do, through the
// real Operator Lifecycle Manager, on a local cluster (test/localcluster):
// OLM's own CRDs and its `olm` and `catalog` operators built from
// github.com/operator-framework/operator-lifecycle-manager, run as
// processes. Three suites share this file:
//   - `make test-olm` (kwok_test.go, olm_test.go): kwok nodes, the project's
//     file-based catalog (catalog/) served by the real `opm serve`, all four
//     install modes;
//   - `make test-olm-real` (build tag realnode, realnode_test.go): a real
//     node and its registry, and the operator-sdk commands that users run;
//   - `make test-olmv1` (build tag realnode, olmv1_test.go): the same real
//     node with OLM v1 (catalogd and operator-controller, built from
//     github.com/operator-framework/operator-controller) instead.
package olm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

const (
	// OLM's operators and the CatalogSource live here, as in OLM's own
	// install manifests.
	olmNamespace = "olm"
	catalogName  = "podset-catalog"
	packageName  = "podset-operator"
	// The bundle's default channel (Makefile DEFAULT_CHANNEL).
	channel = "stable"
	// What the CSV names the operator's Deployment and ServiceAccount.
	operatorName = "podset-operator-controller-manager"
	crdName      = "podsets.app.example.com"
)

var (
	cluster  *localcluster.Cluster
	k8s      client.Client
	scheme   = runtime.NewScheme()
	repoRoot string
	bins     struct{ k8s, olm, manager, opm, sccAdmission string }
	// The process logs, in a directory kept when the run fails.
	logDir string
	// afterClusterStop, when set, checks what the stopped cluster left.
	afterClusterStop func() error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The clients log only API warnings (a field the previous release's CRD
	// does not know); discard them rather than warn about a missing logger.
	crlog.SetLogger(logr.Discard())
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme, appv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	bins.k8s, bins.olm = os.Getenv("K8S_BIN"), os.Getenv("OLM_BIN")
	// OLM v1 (make test-olmv1) needs OLMV1_BIN instead of OLM_BIN.
	if bins.k8s == "" || (bins.olm == "" && os.Getenv("OLMV1_BIN") == "") {
		fmt.Fprintln(os.Stderr, "K8S_BIN and OLM_BIN (or OLMV1_BIN) must be set; run `make test-olm`, `make test-olmv1` or `make test-olm-real`")
		return 1
	}
	bins.opm = filepath.Join(bins.olm, "opm")
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = filepath.Join(wd, "..", "..")
	bins.sccAdmission = os.Getenv("SCC_ADMISSION_BIN")
	if bins.sccAdmission == "" {
		bins.sccAdmission = filepath.Join(repoRoot, "bin", "openshift", "sccadmission")
	}

	if logDir, err = os.MkdirTemp("", "podset-olm-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	code := 1
	if err := setUp(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "set-up failed:", err)
	} else {
		code = m.Run()
	}
	cancel()
	stopAll()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the cluster:", err)
		}
	}
	if afterClusterStop != nil {
		if err := afterClusterStop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		_ = os.RemoveAll(logDir)
	} else {
		fmt.Fprintln(os.Stderr, "process logs kept in", logDir)
	}
	return code
}

// startOLM installs OLM's CRDs and runs its olm and catalog operators as
// processes, with catalogArgs added to the catalog operator's flags. The
// cluster has nothing else: no Prometheus Operator CRDs, as most clusters.
func startOLM(ctx context.Context, catalogArgs ...string) error {
	var err error
	if k8s, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if err := installOLMCRDs(ctx); err != nil {
		return err
	}
	if err := createNamespace(ctx, olmNamespace); err != nil {
		return err
	}
	kubeconfig := cluster.KubeconfigPath()
	// --writeStatusName "": there is no OpenShift ClusterOperator to report to.
	if err := startRestarting("olm", filepath.Join(bins.olm, "olm"), []string{
		"--namespace", olmNamespace, "--writeStatusName", "",
	}, "KUBECONFIG="+kubeconfig, "OPERATOR_NAMESPACE="+olmNamespace, "OPERATOR_NAME=olm-operator"); err != nil {
		return err
	}
	bin, args := catalogCommand(filepath.Join(bins.olm, "catalog"), append([]string{
		"--namespace", olmNamespace, "--kubeconfig", kubeconfig, "--writeStatusName", "",
	}, catalogArgs...))
	return startRestarting("catalog", bin, args, "KUBECONFIG="+kubeconfig)
}

// catalogCommand is how the catalog operator is run: as it is, or (on the
// real node) wrapped so that it resolves Service names as it would in a pod.
var catalogCommand = func(bin string, args []string) (string, []string) { return bin, args }

// waitCatalogSourceReady waits until OLM's catalog operator is connected to
// the catalog that cs points at.
func waitCatalogSourceReady(ctx context.Context, cs *operatorsv1alpha1.CatalogSource) error {
	return poll(ctx, 2*time.Minute, func() (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
			return false, "", err
		}
		state := ""
		if cs.Status.GRPCConnectionState != nil {
			state = cs.Status.GRPCConnectionState.LastObservedState
		}
		return state == "READY", "CatalogSource connection state " + state, nil
	})
}

// installOLMCRDs creates the CRDs shipped in the OLM module (hack/build-tool.sh
// copies them next to the olm binary) and waits until they are served.
func installOLMCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(bins.olm, "olm-crds", "*.yaml"))
	if err != nil {
		return fmt.Errorf("listing the OLM CRDs: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no OLM CRDs in %s/olm-crds; `make olm-tools` copies them there", bins.olm)
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
	return nil
}

// waitEstablished waits until the named CRD is served.
func waitEstablished(ctx context.Context, name string) error {
	return cluster.WaitForCRDEstablished(ctx, name, time.Minute)
}

func createNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// ---- child processes ----

// procs are the processes this suite started, in start order.
var (
	procsMu sync.Mutex
	procs   []*localcluster.Process
)

// start runs a child process with its output in logDir/NAME.log. It gets its
// own process group and SIGKILL if this test binary dies, so nothing
// outlives the run.
// startRestarting starts a process and starts it again whenever it exits,
// until stopAll, as the Deployment that runs it in a cluster would. OLM's
// operators rely on that: once their labeller has labelled every object it
// watches, they exit on purpose ("exiting to re-start the process") to come
// back with a label-filtered cache. When that happens depends on what the
// tests have created and deleted; without a restart a CI run lost its
// catalog operator in the middle of TestCatalogUpgrade.
func startRestarting(name, bin string, args []string, env ...string) error {
	p, err := startProc(name, bin, args, env...)
	if err != nil {
		return err
	}
	go func() {
		for {
			<-p.Done()
			if stopping.Load() {
				return
			}
			_, why := p.Exited()
			logf("%s exited (%v); starting it again", name, why)
			time.Sleep(time.Second)
			// Checked and started under the lock that stopAll holds, so
			// that nothing is started after it.
			procsMu.Lock()
			if stopping.Load() {
				procsMu.Unlock()
				return
			}
			next, err := localcluster.StartProcess(name, bin, args, env, filepath.Join(logDir, name+".log"))
			if err == nil {
				procs = append(procs, next)
			}
			procsMu.Unlock()
			if err != nil {
				logf("starting %s again: %v", name, err)
				return
			}
			p = next
		}
	}()
	return nil
}

// stopping is set once stopAll has begun: no process is started again.
var stopping atomic.Bool

func startProc(name, bin string, args []string, env ...string) (*localcluster.Process, error) {
	p, err := localcluster.StartProcess(name, bin, args, env, filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	return p, nil
}

// exited reports whether p has ended.
func exited(p *localcluster.Process) bool {
	gone, _ := p.Exited()
	return gone
}

func stopAll() {
	procsMu.Lock()
	defer procsMu.Unlock()
	stopping.Store(true)
	for i := len(procs) - 1; i >= 0; i-- {
		_ = procs[i].Stop()
	}
	procs = nil
}

func logf(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(logDir, "test.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, time.Now().Format(time.RFC3339)+" "+format+"\n", args...)
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// poll calls check every 250ms until it reports done, fails, or timeout
// passes; the error then carries check's last description.
func poll(ctx context.Context, timeout time.Duration, check func() (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		ok, what, err := check()
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if ok {
			return nil
		}
		if err != nil {
			what = err.Error()
		}
		last = what
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %s", timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ownedPods are the live pods that ps controls.
func ownedPods(ctx context.Context, ps *appv1alpha1.PodSet) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ps.Namespace)); err != nil {
		return nil, err
	}
	var owned []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, ref := range p.OwnerReferences {
			if ref.UID == ps.UID && ref.Controller != nil && *ref.Controller {
				owned = append(owned, p)
			}
		}
	}
	return owned, nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
