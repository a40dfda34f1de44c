package controllers

// The integration suite: the reconciler in a real manager against a real
// kube-apiserver and etcd (envtest), with the binaries `make envtest-assets`
// builds. There is no kubelet, scheduler or garbage collector: tests play the
// kubelet where they need ready pods, and unscheduled pods vanish as soon as
// they are deleted.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/internal/resizerules"
)

// Shared by the integration tests; set up once in TestMain.
var (
	testScheme = runtime.NewScheme()
	// k8sClient talks to the API server directly, never through a cache, so
	// that tests see what the server holds.
	k8sClient client.Client
	clientset kubernetes.Interface
	// suitePodSetMetrics collects the PodSet metrics from the suite
	// manager's cache.
	suitePodSetMetrics = metrics.NewPodSetCollector()
	// suitePods is the suite manager's pod index: what its reconciles see.
	suitePods *podcache.PodIndex
	// suiteCache is the suite manager's cache: what its reconciles read.
	suiteCache client.Reader
	// suiteClient is the suite manager's client, as the reconciler has it.
	suiteClient client.Client
	// suitePodsREST sends the suite reconciler's pod deletes.
	suitePodsREST rest.Interface
	// integration is false when no kube-apiserver and etcd were found; the
	// unit tests run, and every integration test fails saying so.
	integration bool
	// suiteResizeRules are the envtest API server's, as the manager reads
	// them: the in-place tests expect what its version allows.
	suiteResizeRules inplace.ServerRules
)

const testOperandImage = "registry.example.com/operand:1.0"

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(testScheme))
	utilruntime.Must(appv1alpha1.AddToScheme(testScheme))
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		// What `make envtest-assets` built, so that a plain `go test` works
		// once `make test` has run.
		if found, _ := filepath.Glob(filepath.Join("..", "bin", "k8s-*", "kube-apiserver")); len(found) > 0 {
			assets = filepath.Dir(found[len(found)-1])
		}
	}
	if assets == "" {
		// Unit tests still run; every integration test fails and says why.
		return m.Run()
	}
	integration = true
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))

	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start fails after launching the control plane when the CRDs do
		// not install (an invalid CEL rule, say): stop what it started.
		_ = env.Stop()
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	if k8sClient, err = client.New(cfg, client.Options{Scheme: testScheme}); err != nil {
		fmt.Fprintf(os.Stderr, "client: %v\n", err)
		return 1
	}
	clientset = kubernetes.NewForConfigOrDie(cfg)
	{
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		suiteResizeRules, err = resizerules.Discover(ctx, clientset.Discovery(), logf.Log)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "reading the resize rules: %v\n", err)
			return 1
		}
	}

	pods := podcache.NewPodIndex()
	suitePods = pods
	gaps := podcache.NewWatchGaps()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  podcache.CacheOptions(nil, pods, suitePodSetMetrics, gaps),
		Client:                 podcache.ClientOptions(),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		return 1
	}
	suiteCache = mgr.GetCache()
	suiteClient = mgr.GetClient()
	suitePodsREST, err = podwrites.NewPodsREST(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		fmt.Fprintf(os.Stderr, "pods' REST client: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&PodSetReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                mgr.GetEventRecorder("podset-controller"),
		Pods:                    pods,
		WatchGaps:               gaps,
		DefaultImage:            testOperandImage,
		ResizeRules:             suiteResizeRules,
		MaxConcurrentReconciles: 5,
		StatusWriteInterval:     DefaultStatusWriteInterval,
		PodEventBatchPeriod:     DefaultPodEventBatchPeriod,
		PodsREST:                suitePodsREST,
	}).SetupWithManager(ctx, mgr); err != nil {
		fmt.Fprintf(os.Stderr, "controller: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	code := m.Run()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "manager stopped with error: %v\n", err)
		}
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "manager did not stop within 30s")
	}
	return code
}

// zapLevel keeps the controller quiet unless PODSET_TEST_VERBOSE is set.
func zapLevel() zapcore.Level {
	if os.Getenv("PODSET_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// requireEnvtest skips nothing: it fails a test that needs the API server when
// the suite was started without one, naming the command that provides it.
func requireEnvtest(t *testing.T) {
	t.Helper()
	if !integration {
		t.Fatal("this test needs a real API server: run `make test` (it sets KUBEBUILDER_ASSETS)")
	}
}

// newTestNamespace creates a namespace for one test, with the given labels.
// envtest runs no namespace controller, so namespaces are not deleted; unique
// names keep tests apart.
func newTestNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podset-test-", Labels: labels}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}
