package localcluster

import (
	"io"
	"time"
)

// Options configure a local cluster. The zero value of every field but
// BinDir is usable.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok, and the kwok Stage YAMLs in kwok-stages/.
	BinDir string

	// WorkDir receives certificates, kubeconfigs, etcd data and one log file
	// per component (logs/NAME.log). When empty a fresh temporary directory
	// is created and removed by Stop. A caller-provided WorkDir is kept.
	WorkDir string
	// KeepWorkDir keeps a temporary WorkDir after Stop, for debugging.
	KeepWorkDir bool

	// Nodes is the number of fake (kwok) Nodes; default 3.
	Nodes int
	// RealNode, when set, runs one real node (kubelet, containerd) instead
	// of the kwok nodes; see RealNode. It needs root.
	RealNode *RealNode
	// Registry runs the cluster's registry (registry.go) with the kwok
	// nodes too, for tests that push images without running them; a real
	// node always has it.
	Registry bool
	// PodsPerNode is each Node's pods capacity; default 5000 so that
	// benchmarks with 10,000+ pods fit on a few Nodes.
	PodsPerNode int

	// ControllerManagerQPS and ControllerManagerBurst are the client rate
	// limits of kube-controller-manager (its defaults are 20 and 30).
	// Zero means 100 and twice the QPS.
	ControllerManagerQPS   float32
	ControllerManagerBurst int
	// SchedulerQPS and SchedulerBurst are the client rate limits of
	// kube-scheduler (its defaults are 50 and 100). Zero means 200 and twice
	// the QPS.
	SchedulerQPS   float32
	SchedulerBurst int

	// KwokPodParallelism is how many pods kwok moves through their stages
	// at once (its KwokConfiguration's podPlayStageParallelism); zero keeps
	// kwok's default of 4. Each stage is a status patch, so 4 at once caps
	// how fast pods turn Ready, below the rate a controller creates them
	// in a benchmark: the pods then wait for kwok, not for their
	// controller.
	KwokPodParallelism int

	// EtcdLatencyProxy puts a proxy between kube-apiserver and etcd whose
	// latency Cluster.SetEtcdLatency sets: a slow etcd, for fault tests.
	EtcdLatencyProxy bool

	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy (YAML); the API
	// server then writes JSON audit events to Cluster.AuditLogPath. Off by
	// default because it slows large runs down.
	AuditPolicy []byte
	// AuditLogMode is "blocking" (the default: a request returns once its
	// event is written, so a test can read the log right after it) or
	// "batch" (written asynchronously, one event at a time: requests do not
	// wait for the disk, for benchmarks).
	AuditLogMode string

	// Extra command-line flags appended to each component's own.
	EtcdArgs, APIServerArgs, ControllerManagerArgs, SchedulerArgs, KwokArgs []string

	// Out receives progress lines ("starting etcd ..."); nil discards them.
	// Component logs always go to files under WorkDir/logs.
	Out io.Writer

	// StartTimeout bounds the whole start, including readiness; default 3m
	// (the first start on a slow machine spends most of it in etcd and the
	// API server's post-start hooks).
	StartTimeout time.Duration
}

func (o *Options) setDefaults() {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.PodsPerNode <= 0 {
		o.PodsPerNode = 5000
	}
	if o.ControllerManagerQPS <= 0 {
		o.ControllerManagerQPS = 100
	}
	if o.ControllerManagerBurst <= 0 {
		o.ControllerManagerBurst = int(2 * o.ControllerManagerQPS)
	}
	if o.SchedulerQPS <= 0 {
		o.SchedulerQPS = 200
	}
	if o.SchedulerBurst <= 0 {
		o.SchedulerBurst = int(2 * o.SchedulerQPS)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 3 * time.Minute
	}
}
