// Command bench measures the PodSet operator against the kube-controller-
// manager's ReplicaSet controller on the same local cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes, see
// test/localcluster), in the same run, and against a client creating the
// same pods directly with no controller at all.
//
// For every shape (owners × replicas) and run it creates the owners of one
// kind in a fresh namespace, with a pod watch started beforehand, and records
// when every pod exists, when every pod is Ready, and when every owner's
// status says so; then it scales every owner down by half. The two kinds
// alternate which goes first. It prints a Markdown table of medians and
// PodSet/ReplicaSet ratios, and writes benchmarks.json and benchmarks.png.
//
// `make bench` runs the full benchmark into docs/; `make bench-smoke` runs
// small shapes once and exits non-zero when a PodSet ever had more live pods
// than wanted, or created a pod more (or fewer) than wanted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// shape is a phase's owners and replicas, and how the client writes the
// owners: clientParallelism requests in flight (a GitOps tool's parallel
// waves), or one at a time (sequential: `kubectl apply -f dir/`, the HPA).
type shape struct {
	owners, replicas int
	sequential       bool
}

// sequentialSuffix marks a sequential shape's name: 100x10-seq.
const sequentialSuffix = "-seq"

func (s shape) String() string {
	name := fmt.Sprintf("%dx%d", s.owners, s.replicas)
	if s.sequential {
		name += sequentialSuffix
	}
	return name
}
func (s shape) pods() int { return s.owners * s.replicas }

// clientWidth is how many owner writes the client has in flight.
func (s shape) clientWidth() int {
	if s.sequential {
		return 1
	}
	return clientParallelism
}

// parseShapes parses comma-separated OWNERSxREPLICAS shapes, sequential
// ones when sequential is set.
func parseShapes(v string, sequential bool) ([]shape, error) {
	var out []shape
	for f := range strings.SplitSeq(v, ",") {
		o, r, ok := strings.Cut(strings.TrimSpace(f), "x")
		owners, err1 := strconv.Atoi(o)
		replicas, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil || owners < 1 || replicas < 1 {
			return nil, fmt.Errorf("bad shape %q: want OWNERSxREPLICAS, e.g. 100x10", f)
		}
		out = append(out, shape{owners, replicas, sequential})
	}
	return out, nil
}

func main() {
	os.Exit(run())
}

type options struct {
	binDir, manager, crdDir, out, profileDir string
	replot                                   string
	// growthFit, when set, only fits the growth runs in these directories
	// (space-separated) and checks the fit against growthMaxPeakKiB.
	growthFit                      string
	growthMaxPeakKiB               float64
	shapes, rolloutShapes          []shape
	runs, nodes                    int
	smoke, rss, requests, keepLogs bool
	rssShape                       shape
	// warmUp, when set, is the shape of one unmeasured phase of each kind
	// before the first run (warmUpPhases).
	warmUp     *shape
	rssForeign int
	rssRestart bool
	// rssTemplate, when set, is the memory scenario's PodSets' template
	// (-rss-template); they take the short form without it.
	rssTemplate     *corev1.PodTemplateSpec
	rssTemplateName string
	// template, when set, is the pod template of the scaling and rollout
	// shapes' PodSets (-template), and rendered as the operator renders it,
	// of their ReplicaSets and Deployments and of the direct client's pods;
	// all take the short form's pod without it.
	template                   *corev1.PodTemplateSpec
	templateName               string
	phaseTimeout, stallTimeout time.Duration
	operatorArgs               []string
	// inPlacePods, when set, runs only the in-place phase (inplace.go)
	// on a real node whose images are in nodeImages.
	inPlacePods  int
	inPlaceSurge string
	// inPlaceChange is what the in-place phase changes: "image" or
	// "resources" (see nodeChanges).
	inPlaceChange string
	nodeImages    string
	// identity is who the operator runs as (identity.go), and configDir
	// the kustomization whose ServiceAccount and RBAC it gets.
	identity, configDir string
}

func parseFlags() (options, error) {
	var o options
	shapes := flag.String("shapes", "1x1000,100x10,1000x1", "comma-separated OWNERSxREPLICAS shapes whose owners the client writes 32 at a time; empty skips them")
	sequentialShapes := flag.String("sequential-shapes", "100x10", "comma-separated OWNERSxREPLICAS shapes whose owners the client creates, then scales down, one request at a time (as `kubectl apply -f dir/` and the HPA do), after the -shapes; empty skips them")
	rolloutShapes := flag.String("rollout-shapes", "1x1000,100x10", "OWNERSxREPLICAS shapes of the rollout phase (PodSets against Deployments); empty skips it")
	flag.IntVar(&o.runs, "runs", 3, "runs per shape and kind")
	flag.StringVar(&o.out, "out", "docs", "directory for benchmarks.json and benchmarks.png")
	flag.BoolVar(&o.smoke, "smoke", false, "small shapes (2x5,5x2,1x600), one run, no memory scenario; for CI")
	flag.BoolVar(&o.requests, "requests", false, "log the controllers' requests in the API server's audit log and tabulate them by verb, resource and code (slows every phase down, both kinds alike)")
	flag.BoolVar(&o.rss, "rss", false, "also run the memory scenario: the operator owning -rss-shape pods among -rss-foreign pods it does not own")
	rssShape := flag.String("rss-shape", "10x1000", "PodSets of the memory scenario")
	warmUp := flag.String("warm-up", "100x10", "OWNERSxREPLICAS shape of one unmeasured phase of each kind before the first run, so that no measured phase meets a cold API server; empty skips it")
	flag.IntVar(&o.rssForeign, "rss-foreign", 10000, "pods without the managed-by label in the memory scenario")
	template := flag.String("template", "", "the pods of the scaling and rollout shapes and of the direct client: empty for the short form with the default operand; sample for config/samples' template (a web server with a port, a readiness probe, a preStop hook and a grace period); realistic for the memory scenario's chart-sized template. The ReplicaSets, Deployments and the direct client's pods get the same pods, as the operator renders them")
	rssTemplate := flag.String("rss-template", "", "the memory scenario's PodSets: empty for the short form with the default operand; realistic for a chart-sized template of two containers with probes, volumes and env from a ConfigMap")
	flag.BoolVar(&o.rssRestart, "rss-restart", false, "end the memory scenario with two takeovers, a restart (the settled operator stopped, a new one started) and a failover (a standby started, the leader SIGKILLed), each after a pod of each of the first 10 PodSets was deleted: the new leader's time to act and to catch up, and its peak RSS")
	flag.StringVar(&o.binDir, "bin-dir", os.Getenv("K8S_BIN"), "the local cluster's binaries (default $K8S_BIN)")
	flag.StringVar(&o.manager, "manager", "bin/manager", "the operator binary")
	flag.StringVar(&o.crdDir, "crd-dir", "config/crd/bases", "the CRD manifests")
	flag.IntVar(&o.nodes, "nodes", 6, "kwok nodes, 5000 pod slots each")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 10*time.Minute, "the longest one scale-up or scale-down may take")
	flag.DurationVar(&o.stallTimeout, "stall-timeout", time.Minute, "give a scaling, direct or rollout phase up once its watches have seen no event for this long (0: never); the run is reported and left out of the medians")
	flag.StringVar(&o.profileDir, "profile-dir", "", "when set, run the operator with pprof and save a CPU profile of each PodSet scale-up and a heap profile after it here")
	flag.BoolVar(&o.keepLogs, "keep-logs", false, "keep the cluster's logs (the operator's, the API server's, the audit log with -requests) in -out/run-logs even when the run set passes, for tracing; a failed run set always keeps them in -out/failed-run-logs")
	flag.IntVar(&o.inPlacePods, "inplace-pods", 0, "when set, run only the in-place phase: owners of this many pods rolled to a new image on one real node (needs root and -node-images)")
	flag.StringVar(&o.inPlaceSurge, "inplace-surge", "25%", "maxSurge of every owner of the in-place phase (maxUnavailable is 25%)")
	flag.StringVar(&o.inPlaceChange, "inplace-change", "image", "what the in-place phase changes: image (a new image: the container restarts) or resources (new cpu and memory, resizePolicy NotRequired: no restart)")
	flag.StringVar(&o.nodeImages, "node-images", os.Getenv("NODE_IMAGES"), "the real node's image archives (hack/build-node-images.sh), for -inplace-pods")
	flag.StringVar(&o.replot, "replot", "", "only re-render the table and chart of an existing benchmarks.json into -out")
	flag.StringVar(&o.growthFit, "growth-fit", "", "only fit the growth runs in these space-separated directories (each with a benchmarks.json of the memory scenario without foreign pods), print the table and the fitted lines, and check -growth-max-peak-kib-per-pod")
	flag.Float64Var(&o.growthMaxPeakKiB, "growth-max-peak-kib-per-pod", 0, "with -growth-fit: fail when the fitted peak RSS grows by more than this many KiB per owned pod (0: no check)")
	operatorArgs := flag.String("operator-args", "", "extra flags for the operator, space-separated")
	flag.StringVar(&o.identity, "operator-identity", identityServiceAccount, "who the operator runs as: serviceaccount (config/default's ServiceAccount and RBAC, as installed; API Priority and Fairness queues it in workload-low) or admin (cluster-admin, which APF exempts)")
	flag.StringVar(&o.configDir, "config-dir", "config/default", "the kustomization that gives the operator its ServiceAccount and RBAC")
	flag.Parse()
	if o.smoke {
		// 1x600 crosses the burst of 500, so a scale-up takes two
		// reconciles, the second one judged against a cache that must
		// already hold the first one's pods: where an overshoot would come
		// from.
		*shapes, o.runs, o.rss = "2x5,5x2,1x600", 1, false
		*sequentialShapes = "5x2"
		// The smoke run checks counts, not times.
		*warmUp = ""
		// Two PodSets of 20: bounds of 25 live and 15 ready each.
		*rolloutShapes = "2x20"
	}
	var err error
	if *shapes != "" {
		if o.shapes, err = parseShapes(*shapes, false); err != nil {
			return o, err
		}
	}
	if *sequentialShapes != "" {
		seq, err := parseShapes(*sequentialShapes, true)
		if err != nil {
			return o, err
		}
		o.shapes = append(o.shapes, seq...)
	}
	if *rolloutShapes != "" {
		if o.rolloutShapes, err = parseShapes(*rolloutShapes, false); err != nil {
			return o, err
		}
	}
	if o.rss {
		if s, err := parseShapes(*rssShape, false); err != nil || len(s) != 1 {
			return o, fmt.Errorf("bad -rss-shape %q", *rssShape)
		} else {
			o.rssShape = s[0]
		}
	}
	switch *template {
	case "":
	case "sample":
		t, err := sampleTemplate(filepath.Join(filepath.Dir(o.crdDir), "..", "samples", "app_v1alpha1_podset.yaml"))
		if err != nil {
			return o, err
		}
		o.template, o.templateName = t, *template
	case "realistic":
		o.template, o.templateName = realisticTemplate(), *template
	default:
		return o, fmt.Errorf("bad -template %q: empty, sample or realistic", *template)
	}
	switch *rssTemplate {
	case "":
	case "realistic":
		o.rssTemplate, o.rssTemplateName = realisticTemplate(), *rssTemplate
	default:
		return o, fmt.Errorf("bad -rss-template %q: empty or realistic", *rssTemplate)
	}
	if *warmUp != "" {
		if s, err := parseShapes(*warmUp, false); err != nil || len(s) != 1 {
			return o, fmt.Errorf("bad -warm-up %q", *warmUp)
		} else {
			o.warmUp = &s[0]
		}
	}
	if o.binDir == "" && o.replot == "" && o.growthFit == "" {
		return o, fmt.Errorf("-bin-dir (or $K8S_BIN) is required")
	}
	o.operatorArgs = strings.Fields(*operatorArgs)
	return o, nil
}

// bench holds what every phase uses.
type bench struct {
	opts   options
	cs     kubernetes.Interface
	dc     dynamic.Interface
	op     *operator
	kcmPID int
	// apiServerPID and nodePIDs (etcd, kube-scheduler, kwok: what turns a
	// created pod into a Ready one) are measured for CPU in every phase.
	apiServerPID int
	nodePIDs     []int
	audit        *auditReader
	logDir       string
	workDir      string
	// id is who the operator runs as, and opKubeconfig its kubeconfig.
	id           *operatorIdentity
	opKubeconfig string
}

func run() int {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if o.replot != "" {
		if err := replot(o.replot, o.out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}
	if o.growthFit != "" {
		if err := growthReport(os.Stdout, strings.Fields(o.growthFit), o.growthMaxPeakKiB); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.inPlacePods > 0 {
		if err := inPlaceBenchmark(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}
	began := time.Now()
	rep, err := benchmark(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Printf("\nbenchmark finished in %s\n", time.Since(began).Round(time.Second))
	if out := leftOut(rep); len(out) > 0 {
		fmt.Fprintln(os.Stderr, "bench: left out of the medians:")
		for _, o := range out {
			fmt.Fprintln(os.Stderr, "  -", o)
		}
	}
	if bad := violations(rep); len(bad) > 0 {
		fmt.Fprintln(os.Stderr, "bench: FAILED:")
		for _, v := range bad {
			fmt.Fprintln(os.Stderr, "  -", v)
		}
		return 1
	}
	return 0
}

// violations are the correctness failures: any PodSet run with more live
// pods than wanted at any moment, with more or fewer pods created than
// wanted, or that did not finish. Times are reported, not enforced: a timed
// assertion on a shared 2-core machine would fail for reasons that are not
// the operator's.
func violations(r report) []string {
	var out []string
	// A warm-up phase is held to the same counts as a measured one.
	for _, p := range append(slices.Clone(r.WarmUp), r.Phases...) {
		if p.Kind != "podset" {
			continue
		}
		switch {
		case p.Error != "":
			out = append(out, fmt.Sprintf("PodSet %s run %d: %s", p.Shape, p.Run, p.Error))
		case p.Overshoot != 0:
			out = append(out, fmt.Sprintf("PodSet %s run %d: overshoot %d (max %d live pods, target %d)", p.Shape, p.Run, p.Overshoot, p.MaxLive, p.Target))
		case p.Created != p.Target:
			out = append(out, fmt.Sprintf("PodSet %s run %d: %d pods created, target %d", p.Shape, p.Run, p.Created, p.Target))
		}
		out = append(out, unexplainedRequests(p)...)
	}
	if r.RSS != nil && r.RSS.Error != "" {
		out = append(out, "memory scenario: "+r.RSS.Error)
	}
	return append(out, rolloutViolations(r.Rollouts)...)
}

func benchmark(ctx context.Context, o options) (rep report, err error) {
	rep = report{Config: benchSettings{
		Runs: o.runs, Nodes: o.nodes, ComponentQPS: componentQPS, ComponentBurst: componentBurst, KwokPodParallelism: kwokPodParallelism, StallTimeoutSeconds: o.stallTimeout.Seconds(),
		OperatorArgs: o.operatorArgs, ClientParallelism: clientParallelism, OperatorIdentity: o.identity,
	}}
	for _, s := range o.shapes {
		rep.Config.Shapes = append(rep.Config.Shapes, s.String())
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return rep, err
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return rep, err
		}
	}

	id, err := newOperatorIdentity(o.identity, o.binDir, o.configDir)
	if err != nil {
		return rep, err
	}
	c, err := startCluster(ctx, o.binDir, o.nodes, o.profileDir != "", o.requests, id.user)
	if err != nil {
		return rep, err
	}
	defer func() {
		// A failed run set is only worth something if it can be traced:
		// keep the cluster's logs (the operator's, the API server's, the
		// audit log with -requests) before the cluster takes them away.
		failed := err != nil || len(violations(rep)) > 0
		if failed || o.keepLogs {
			if dir, keepErr := keepLogs(c.LogDir(), o.out, failed); keepErr != nil {
				fmt.Fprintln(os.Stderr, "bench: keeping the cluster's logs:", keepErr)
			} else {
				fmt.Fprintln(os.Stderr, "bench: the cluster's logs of this run set are in", dir)
			}
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stopping the cluster:", err)
		}
	}()
	typedCfg, dynCfg := benchConfig(c)
	b := &bench{opts: o, logDir: c.LogDir(), workDir: c.WorkDir(), id: id}
	if o.requests {
		b.audit = &auditReader{path: c.AuditLogPath(), operatorUser: id.user}
	}
	if b.cs, err = kubernetes.NewForConfig(typedCfg); err != nil {
		return rep, err
	}
	if b.dc, err = dynamic.NewForConfig(dynCfg); err != nil {
		return rep, err
	}
	if err := installCRDs(ctx, dynCfg, o.crdDir); err != nil {
		return rep, err
	}
	if b.opKubeconfig, err = id.install(ctx, c, b.dc); err != nil {
		return rep, err
	}
	rep.Machine = describeMachine()
	if v, err := b.cs.Discovery().ServerVersion(); err == nil {
		rep.Machine.Kubernetes = v.GitVersion
	}
	if b.kcmPID = findProcess(c.WorkDir(), "kube-controller-manager"); b.kcmPID == 0 {
		fmt.Fprintln(os.Stderr, "bench: kube-controller-manager's PID not found; its CPU is not reported")
	}
	b.apiServerPID = findProcess(c.WorkDir(), "kube-apiserver")
	for _, name := range []string{"etcd", "kube-scheduler", "kwok"} {
		if pid := findProcess(c.WorkDir(), name); pid != 0 {
			b.nodePIDs = append(b.nodePIDs, pid)
		}
	}
	logf("cluster up: %s, %d kwok nodes; operator logs in %s", rep.Machine.Kubernetes, o.nodes, c.LogDir())

	if b.op, err = startOperator(ctx, o.manager, b.opKubeconfig, c.LogDir(), "operator", o.profileDir != "", o.operatorArgs...); err != nil {
		return rep, err
	}
	defer func() { b.op.stop() }() // idempotent: the memory scenario stops it earlier

	if o.warmUp != nil && (len(o.shapes) > 0 || len(o.rolloutShapes) > 0) {
		rep.Config.WarmUp = o.warmUp.String()
		rep.WarmUp = b.warmUpPhases(ctx, *o.warmUp)
	}
	for r := 1; r <= o.runs; r++ {
		// The direct client, once per run and distinct pod count, and
		// once per shape of several owners.
		done := map[int]bool{}
		for _, s := range o.shapes {
			if s.sequential {
				// No direct floor: a client writing its owners one at a
				// time leaves a controller no floor to compare with
				// but the ReplicaSet's.
				continue
			}
			if !done[s.pods()] {
				done[s.pods()] = true
				rep.Phases = append(rep.Phases, b.directPhase(ctx, s, false, r))
			}
			if s.owners > 1 {
				rep.Phases = append(rep.Phases, b.directPhase(ctx, s, true, r))
			}
		}
		for i, s := range o.shapes {
			kinds := []string{"podset", "replicaset"}
			if (r+i)%2 == 0 {
				kinds[0], kinds[1] = kinds[1], kinds[0]
			}
			for k, kind := range kinds {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				rep.Phases = append(rep.Phases, b.ownerPhase(ctx, kind, s, r, k == 0))
			}
		}
		for i, s := range o.rolloutShapes {
			kinds := []string{"podset", "deployment"}
			if (r+i)%2 == 0 {
				kinds[0], kinds[1] = kinds[1], kinds[0]
			}
			for k, kind := range kinds {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				rep.Rollouts = append(rep.Rollouts, b.rolloutPhase(ctx, kind, s, r, k == 0))
			}
		}
	}
	rep.Medians = summarise(rep.Phases, o.shapes)
	rep.RolloutMedians = summariseRollouts(rep.Rollouts, o.rolloutShapes)
	rep.Requests = summariseRequests(rep.Phases, o.shapes)

	if o.rss {
		b.op.stop()
		res := b.rssScenario(ctx)
		rep.RSS = &res
	}

	fmt.Println()
	printTable(os.Stdout, rep.Medians)
	if len(rep.RolloutMedians) > 0 {
		fmt.Println()
		printRolloutTable(os.Stdout, rep.RolloutMedians)
	}
	if len(rep.Requests) > 0 {
		fmt.Println()
		printRequestTable(os.Stdout, rep.Requests)
	}
	if rep.RSS != nil {
		fmt.Printf("\nmemory: operator peak RSS %.1f MiB owning %d pods (PodSets %s) among %d foreign pods (error: %q)\n",
			rep.RSS.PeakRSSMiB, rep.RSS.OwnedPods, rep.RSS.Shape, rep.RSS.ForeignPods, rep.RSS.Error)
	}
	if err := writeJSON(filepath.Join(o.out, "benchmarks.json"), rep); err != nil {
		return rep, err
	}
	if len(rep.Medians) == 0 {
		// A rollout-only run (-shapes "" -sequential-shapes ""): the chart
		// is of the scaling phases.
		logf("wrote %s", filepath.Join(o.out, "benchmarks.json"))
		return rep, nil
	}
	if err := writeChart(filepath.Join(o.out, "benchmarks.png"), rep.Medians); err != nil {
		return rep, err
	}
	logf("wrote %s and %s", filepath.Join(o.out, "benchmarks.json"), filepath.Join(o.out, "benchmarks.png"))
	return rep, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = int((kb + 1<<19) >> 20)
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// keepLogs copies the cluster's log directory into out/failed-run-logs (or
// out/run-logs for a run set that passed), replacing what an earlier run
// left there, and returns that path.
func keepLogs(logDir, out string, failed bool) (string, error) {
	dst := filepath.Join(out, "run-logs")
	if failed {
		dst = filepath.Join(out, "failed-run-logs")
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	return dst, os.CopyFS(dst, os.DirFS(logDir))
}
