// Command manager runs the podset-operator: the PodSet controller inside a
// controller-runtime manager.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlrecorder "sigs.k8s.io/controller-runtime/pkg/recorder"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/internal/admission"
	"github.com/example/podset-operator/internal/analysisconfig"
	"github.com/example/podset-operator/internal/metricsauth"
	"github.com/example/podset-operator/internal/monitoring"
	"github.com/example/podset-operator/internal/resizerules"
)

// Environment variables the manager reads.
const (
	// envWatchNamespace limits the operator to some namespaces: empty for
	// all, or a comma-separated list. OLM sets it from the
	// olm.targetNamespaces annotation of the operator's OperatorGroup.
	envWatchNamespace = "WATCH_NAMESPACE"
	// envOperandImage is the image of PodSets that name none. OLM's
	// disconnected installs rewrite RELATED_IMAGE_* variables to mirrors.
	envOperandImage = "RELATED_IMAGE_PODSET"
	// envGOGC is Go's own garbage collector target; see defaultGCPercent.
	envGOGC = "GOGC"
	// envPodName and envPodNamespace are the manager's own pod (downward
	// API): the namespace the monitoring objects go to, and the pod whose
	// Deployment owns them. A manager run outside a cluster may set them to
	// the pod of the Deployment it stands in for.
	envPodName      = "POD_NAME"
	envPodNamespace = "POD_NAMESPACE"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set:
// the heap may grow by half over what the last collection kept, not double
// as with Go's default of 100. Most of the operator's heap is its informers'
// pods, which live as long as the pods do, so the default's headroom is
// mostly room for that same cache to be copied during a relist or a scale-up.
// With 50 the peak RSS of the memory scenario (10k owned pods among 10k
// foreign ones) went from 105 to 90 MiB at no CPU cost the runs could show
// (docs/architecture.md, "Memory"). GOGC set in the environment wins, as for
// any Go program; GOMEMLIMIT works beside either.
const defaultGCPercent = 50

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

// leaderElectionID is the name of the leader election Lease.
const leaderElectionID = "podset-operator.app.example.com"

// noLeaderElectionEvents gives the leader election lock no event recorder:
// the lock is built before the manager, whose recorders it would otherwise
// use, and its events ("became leader") only repeat what the log says.
type noLeaderElectionEvents struct{}

func (noLeaderElectionEvents) GetEventRecorderFor(string) record.EventRecorder    { return nil }
func (noLeaderElectionEvents) GetEventRecorder(string) ctrlrecorder.EventRecorder { return nil }

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(appv1alpha1.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, pprofAddr string
		leaderElectionNamespace           string
		enableLeaderElection              bool
		monitoringObjects                 bool
		admissionPolicy                   bool
		secureMetrics, enableHTTP2        bool
		maxConcurrentReconciles           int
		burstReplicas                     int
		statusWriteInterval               time.Duration
		podEventBatchPeriod               time.Duration
		analysisCfg                       analysisconfig.Config
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the /healthz and /readyz probes bind to; 0 disables them.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "The address Go's pprof endpoints bind to, e.g. 127.0.0.1:8082; empty disables them.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Elect a leader through a Lease, so that only one of several replicas acts.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "The namespace of the leader election Lease; empty: the namespace the manager runs in (required when it runs outside a cluster).")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, to clients authenticated and authorized by the API server.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics server. Off by default against the HTTP/2 Rapid Reset and Stream Cancellation CVEs.")
	flag.IntVar(&maxConcurrentReconciles, "max-concurrent-reconciles", controllers.DefaultMaxConcurrentReconciles, "How many PodSets are reconciled at once.")
	flag.IntVar(&burstReplicas, "burst-replicas", controllers.DefaultBurstReplicas, "The most pods created or deleted for one PodSet in one reconcile.")
	flag.DurationVar(&statusWriteInterval, "status-write-interval", controllers.DefaultStatusWriteInterval, "The shortest time between two status writes of one PodSet while its pods are still being created, deleted or becoming available; the status of a settled PodSet, and a ReplicaFailure change, are written at once. 0 writes every change.")
	flag.DurationVar(&podEventBatchPeriod, "pod-event-batch-period", controllers.DefaultPodEventBatchPeriod, "How long a pod event waits before it wakes its PodSet, so that the events of many pods bring one reconcile; 0 wakes it at once.")
	flag.BoolVar(&monitoringObjects, "monitoring-objects", true, "Apply the operator's ServiceMonitor and PrometheusRule in its namespace (POD_NAMESPACE) whenever the cluster serves monitoring.coreos.com/v1, owned by its Deployment (found from POD_NAME).")
	flag.BoolVar(&admissionPolicy, "admission-policy", true, "Apply the ValidatingAdmissionPolicy that refuses PodSet updates podUpdatePolicy InPlaceOnly cannot make in place, owned by the PodSet CRD, whenever the cluster serves admissionregistration.k8s.io/v1 policies (Kubernetes 1.30 and later).")
	opts := zap.Options{}
	if err := analysisCfg.Bind(flag.CommandLine, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if _, set := os.LookupEnv(envGOGC); !set {
		debug.SetGCPercent(defaultGCPercent)
	}

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, TLSOpts: tlsOpts}
	if secureMetrics {
		// A TokenReview and a SubjectAccessReview per caller, cached (see
		// package metricsauth for why not controller-runtime's filter).
		metricsOpts.FilterProvider = metricsauth.FilterProvider
	}

	namespaces := watchNamespaces(os.Getenv(envWatchNamespace))
	operandImage := os.Getenv(envOperandImage)
	if operandImage == "" {
		operandImage = operand.DefaultOperandImage
	}

	pods := podcache.NewPodIndex()
	watchGaps := podcache.NewWatchGaps()
	// The PodSet metrics read the PodSet informers' stores at scrape time.
	podSetMetrics := metrics.NewPodSetCollector()
	ctrlmetrics.Registry.MustRegister(podSetMetrics)
	cfg := ctrl.GetConfigOrDie()
	// With leader election, the lease lock reports its renewals to a fence
	// that stops a leader resumed after a pause from acting on what it knew
	// before (see leaderfence.Fence).
	var (
		fence *leaderfence.Fence
		lock  resourcelock.Interface
	)
	if enableLeaderElection {
		fence = leaderfence.New(leaderfence.DefaultThreshold)
		// The lock gets a copy of the config: controller-runtime's
		// NewResourceLock sets its User-Agent ("leader-election") on
		// the config it is given, and the lease must be renewed
		// without the fence below, which would otherwise keep a
		// fenced leader from ever renewing.
		inner, err := leaderelection.NewResourceLock(rest.CopyConfig(cfg), noLeaderElectionEvents{}, leaderelection.Options{
			LeaderElection:          true,
			LeaderElectionID:        leaderElectionID,
			LeaderElectionNamespace: leaderElectionNamespace,
		})
		if err != nil {
			setupLog.Error(err, "unable to create the leader election lock")
			os.Exit(1)
		}
		lock = fence.Wrap(inner)
		// Every write of the manager asks the fence when it enters the
		// HTTP transport and again as its body goes on the wire.
		cfg.Wrap(fence.WrapTransport)
		// The chaos tests tell which replica leads by this identity.
		setupLog.Info("leader election", "identity", lock.Identity())
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		LeaderElection:          enableLeaderElection,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: leaderElectionNamespace,
		// Set only with leader election; it makes the manager use this lock.
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionReleaseOnCancel:       true,
		Cache:                               podcache.CacheOptions(namespaces, pods, podSetMetrics, watchGaps),
		Client:                              podcache.ClientOptions(),
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}

	ctx := ctrl.SetupSignalHandler()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		setupLog.Error(err, "unable to create the discovery client")
		os.Exit(1)
	}
	resizeRules, err := resizerules.Discover(ctx, disc, setupLog)
	if err != nil {
		setupLog.Error(err, "stopped before the API server answered")
		os.Exit(1)
	}
	setupLog.Info("in-place resize", "rules", resizeRules.String())
	analysisQuerier, err := analysisCfg.Querier()
	if err != nil {
		setupLog.Error(err, "invalid analysis configuration")
		os.Exit(1)
	}
	setupLog.Info("canary analysis", "prometheus", analysisCfg.String())
	podsREST, err := podwrites.NewPodsREST(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		setupLog.Error(err, "unable to create the pods' REST client")
		os.Exit(1)
	}
	if err := (&controllers.PodSetReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                mgr.GetEventRecorder("podset-controller"),
		Pods:                    pods,
		WatchGaps:               watchGaps,
		DefaultImage:            operandImage,
		ResizeRules:             resizeRules,
		BurstReplicas:           burstReplicas,
		MaxConcurrentReconciles: maxConcurrentReconciles,
		StatusWriteInterval:     statusWriteInterval,
		PodEventBatchPeriod:     podEventBatchPeriod,
		Fence:                   fence,
		PodsREST:                podsREST,
		AnalysisQuerier:         analysisQuerier,
		AnalysisQuerySlots:      analysisCfg.QuerySlots,
		AnalysisNamespaceLabel:  analysisCfg.NamespaceLabel,
	}).SetupWithManager(ctx, mgr); err != nil {
		setupLog.Error(err, "unable to create the controller", "controller", "PodSet")
		os.Exit(1)
	}
	if fence != nil {
		if err := mgr.Add(fence); err != nil {
			setupLog.Error(err, "unable to add the leader fence")
			os.Exit(1)
		}
	}
	if err := monitoring.Add(mgr, monitoring.Options{
		Enabled:   monitoringObjects,
		Namespace: os.Getenv(envPodNamespace),
		PodName:   os.Getenv(envPodName),
		Log:       ctrl.Log.WithName("monitoring"),
	}); err != nil {
		setupLog.Error(err, "unable to set up the monitoring objects")
		os.Exit(1)
	}
	if err := admission.Add(mgr, admission.Options{
		Enabled: admissionPolicy,
		Log:     ctrl.Log.WithName("admission"),
	}); err != nil {
		setupLog.Error(err, "unable to set up the admission policy")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up the ready check")
		os.Exit(1)
	}

	setupLog.Info("starting the manager", "namespaces", namespaces, "operandImage", operandImage)
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running the manager")
		os.Exit(1)
	}
}

// watchNamespaces parses WATCH_NAMESPACE: empty means every namespace.
func watchNamespaces(v string) []string {
	var namespaces []string
	for ns := range strings.SplitSeq(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces
}
