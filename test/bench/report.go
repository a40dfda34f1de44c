package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// phaseResult is what one phase (one kind of controller, one shape, one
// run) measured. Durations are seconds from the first owner's create call
// (scale-up) or the first scale patch (scale-down).
type phaseResult struct {
	Kind     string `json:"kind"` // podset, replicaset or direct
	Shape    string `json:"shape"`
	Owners   int    `json:"owners"`
	Replicas int    `json:"replicas"`
	// Sequential: the client wrote the owners one request at a time.
	Sequential bool `json:"sequential,omitempty"`
	// Template is -template: the pods' template (empty: the short form's).
	Template string `json:"template,omitempty"`
	Run      int    `json:"run"`
	// WentFirst: this kind ran before the other in this shape and run.
	WentFirst bool `json:"wentFirst"`
	Target    int  `json:"targetPods"`

	// OwnersCreatedS is when the benchmark's last owner create returned:
	// the client-side part of every other figure, large at 1000 owners.
	OwnersCreatedS float64 `json:"ownersCreatedSeconds,omitempty"`
	AllCreatedS    float64 `json:"allCreatedSeconds"`
	// AllBoundS is when as many pods as must be Ready were bound to a
	// node: the scheduler's part of AllReadyS (kwok's is the rest).
	AllBoundS  float64 `json:"allBoundSeconds,omitempty"`
	AllReadyS  float64 `json:"allReadySeconds"`
	StatusS    float64 `json:"statusCaughtUpSeconds,omitempty"`
	ScaleDownS float64 `json:"scaleDownSeconds,omitempty"`
	// The scale-down's two parts: until the pods left live are the
	// target, and until the status says so (ScaleDownS is the later).
	ScaleDownPodsS   float64 `json:"scaleDownPodsSeconds,omitempty"`
	ScaleDownStatusS float64 `json:"scaleDownStatusSeconds,omitempty"`
	// OwnersScaledS is when the benchmark's last scale patch returned: the
	// client-side part of the scale-down, as OwnersCreatedS is of the
	// scale-up.
	OwnersScaledS float64 `json:"ownersScaledSeconds,omitempty"`

	// The scale-up per owner (traceOwners): from the owner's first sight
	// to its first pod's, and from its first pod to its last; medians and
	// 90th percentiles over the owners.
	OwnerToFirstPodMedianS float64 `json:"ownerToFirstPodMedianSeconds,omitempty"`
	OwnerToFirstPodP90S    float64 `json:"ownerToFirstPodP90Seconds,omitempty"`
	FirstToLastPodMedianS  float64 `json:"firstToLastPodMedianSeconds,omitempty"`
	FirstToLastPodP90S     float64 `json:"firstToLastPodP90Seconds,omitempty"`
	// From the owner's first sight to its last pod's first sight Ready.
	OwnerToReadyMedianS float64 `json:"ownerToReadyMedianSeconds,omitempty"`
	OwnerToReadyP90S    float64 `json:"ownerToReadyP90Seconds,omitempty"`

	// PodStartupP50S and PodStartupP99S are the scale-up's pod startup
	// latency (a pod's first sight to its first sight Ready, in the pod
	// watch), median and 99th percentile over its pods.
	PodStartupP50S float64 `json:"podStartupP50Seconds,omitempty"`
	PodStartupP99S float64 `json:"podStartupP99Seconds,omitempty"`

	// MaxLive is the most live pods seen at once; Overshoot how far that
	// exceeded the target; Created the distinct pods ever created.
	MaxLive   int `json:"maxLivePods"`
	Overshoot int `json:"overshoot"`
	Created   int `json:"podsCreated"`

	// Operator only: its API writes (POST, PUT, PATCH, DELETE) during the
	// scale-up and per pod created, during the scale-down and per pod
	// deleted.
	WritesUp         float64 `json:"operatorWritesScaleUp,omitempty"`
	WritesPerPod     float64 `json:"operatorWritesPerCreatedPod,omitempty"`
	WritesDown       float64 `json:"operatorWritesScaleDown,omitempty"`
	WritesPerDeleted float64 `json:"operatorWritesPerDeletedPod,omitempty"`
	// QueueWaitUpMs and QueueWaitDownMs are a PodSet's mean wait for a
	// worker in the scale-up and in the scale-down; ReconcileUpMs and
	// ReconcileDownMs the mean time a reconcile held one (the operator's
	// work queue metrics).
	QueueWaitUpMs      float64            `json:"operatorQueueWaitUpMs,omitempty"`
	QueueWaitDownMs    float64            `json:"operatorQueueWaitDownMs,omitempty"`
	ReconcileUpMs      float64            `json:"operatorReconcileUpMs,omitempty"`
	ReconcileDownMs    float64            `json:"operatorReconcileDownMs,omitempty"`
	WritesByMethodUp   map[string]float64 `json:"operatorWritesByMethodScaleUp,omitempty"`
	OperatorPeakRSSMiB float64            `json:"operatorPeakRSSMiB,omitempty"`
	// ControllerCPUS is the CPU time of the process that did the work over
	// the whole phase: the operator for PodSets, kube-controller-manager
	// (all of its controllers) for ReplicaSets.
	ControllerCPUS float64 `json:"controllerCPUSeconds,omitempty"`
	// APIServerCPUS is kube-apiserver's CPU time over the same phase, and
	// NodesCPUS that of etcd, kube-scheduler and kwok together: what the
	// controller's requests cost the cluster that every pod waits on.
	APIServerCPUS float64 `json:"apiServerCPUSeconds,omitempty"`
	NodesCPUS     float64 `json:"etcdSchedulerKwokCPUSeconds,omitempty"`
	// API Priority and Fairness over the phase, for the flow schema the
	// controller's requests fall in (apf.go): requests dispatched, those
	// that waited over 5 ms in a queue, the total wait of all, and requests
	// rejected.
	APFFlowSchema string  `json:"apfFlowSchema,omitempty"`
	APFRequests   int     `json:"apfRequests,omitempty"`
	APFQueued     int     `json:"apfQueued,omitempty"`
	APFWaitS      float64 `json:"apfWaitSeconds,omitempty"`
	APFRejected   int     `json:"apfRejected,omitempty"`

	// RequestsUp and RequestsDown are the controller's requests (the
	// operator's, or the ReplicaSet controller's) from the first owner
	// create until the scale-up settled, and from the scale-down patch
	// until it settled, from the API server's audit log.
	RequestsUp   requestTally `json:"controllerRequestsScaleUp,omitempty"`
	RequestsDown requestTally `json:"controllerRequestsScaleDown,omitempty"`

	Error string `json:"error,omitempty"`
}

// rssResult is the memory scenario's outcome.
type rssResult struct {
	OwnedPods   int    `json:"ownedPods"`
	ForeignPods int    `json:"foreignPods"`
	Shape       string `json:"podSetShape"`
	// Template is the PodSets' template (-rss-template); empty for the
	// short form.
	Template    string  `json:"podSetTemplate,omitempty"`
	PeakRSSMiB  float64 `json:"operatorPeakRSSMiB"`
	FinalRSSMiB float64 `json:"operatorRSSAtEndMiB"`
	// LiveHeapMiB is the operator's Go heap that its last garbage
	// collection before the end kept: what its objects need, without the
	// collector's headroom and the runtime's own memory.
	LiveHeapMiB float64 `json:"operatorLiveHeapAtEndMiB"`
	// Restart and Failover are the operator's restart and a standby's
	// takeover once settled (-rss-restart).
	Restart  *restartResult `json:"restart,omitempty"`
	Failover *restartResult `json:"failover,omitempty"`
	CPUS     float64        `json:"operatorCPUSeconds"`
	SettledS float64        `json:"ownedStatusCaughtUpSeconds"`
	Error    string         `json:"error,omitempty"`
}

type machine struct {
	CPUs       int    `json:"cpus"`
	MemoryGiB  int    `json:"memoryGiB"`
	GoVersion  string `json:"goVersion"`
	Kubernetes string `json:"kubernetes"`
	CPUModel   string `json:"cpuModel,omitempty"`
	Date       string `json:"date"`
}

type report struct {
	Machine machine       `json:"machine"`
	Config  benchSettings `json:"settings"`
	Phases  []phaseResult `json:"phases"`
	// WarmUp are the unmeasured phases before the first run (-warm-up),
	// run 0: checked for overshoot and counts, left out of the medians.
	WarmUp  []phaseResult `json:"warmUp,omitempty"`
	Medians []medianRow   `json:"medians"`
	RSS     *rssResult    `json:"rss,omitempty"`
	// Rollouts are the rollout phase's runs: PodSets against Deployments.
	Rollouts       []rolloutResult `json:"rollouts,omitempty"`
	RolloutMedians []rolloutMedian `json:"rolloutMedians,omitempty"`
	// Requests are the medians of the controllers' requests per phase.
	Requests []requestRow `json:"requests,omitempty"`
}

type benchSettings struct {
	Shapes                  []string `json:"shapes"`
	Runs                    int      `json:"runs"`
	Nodes                   int      `json:"kwokNodes"`
	ComponentQPS            int      `json:"controllerManagerAndSchedulerQPS"`
	ComponentBurst          int      `json:"controllerManagerAndSchedulerBurst"`
	KwokPodParallelism      int      `json:"kwokPodParallelism,omitempty"`
	OperatorArgs            []string `json:"operatorArgs"`
	ClientParallelism       int      `json:"benchClientParallelism"`
	StallTimeoutSeconds     float64  `json:"stallTimeoutSeconds,omitempty"`
	WarmUp                  string   `json:"warmUpShape,omitempty"`
	MaxConcurrentReconciles string   `json:"note,omitempty"`
	// OperatorIdentity is serviceaccount or admin (identity.go).
	OperatorIdentity string `json:"operatorIdentity,omitempty"`
}

// medianRow is one figure of one shape: the medians per kind and the
// PodSet/ReplicaSet ratio.
type medianRow struct {
	Shape      string  `json:"shape"`
	Figure     string  `json:"figure"`
	PodSet     float64 `json:"podset"`
	ReplicaSet float64 `json:"replicaset"`
	Direct     float64 `json:"direct,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
	// Max is the worst run's value, for figures whose target is "in every
	// run" (overshoot, created).
	PodSetMax float64 `json:"podsetMax"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// figures are the per-phase numbers summarised, in table order.
var figures = []struct {
	name   string
	get    func(phaseResult) float64
	ratio  bool // a PodSet/ReplicaSet ratio means something
	direct bool // the direct client has this figure
}{
	{"owners created by the client (s)", func(p phaseResult) float64 { return p.OwnersCreatedS }, true, false},
	{"all pods created (s)", func(p phaseResult) float64 { return p.AllCreatedS }, true, true},
	{"all pods bound to a node (s)", func(p phaseResult) float64 { return p.AllBoundS }, true, true},
	{"all pods Ready (s)", func(p phaseResult) float64 { return p.AllReadyS }, true, true},
	{"status caught up (s)", func(p phaseResult) float64 { return p.StatusS }, true, false},
	{"scale down by half (s)", func(p phaseResult) float64 { return p.ScaleDownS }, true, true},
	{"scale down: owners scaled by the client (s)", func(p phaseResult) float64 { return p.OwnersScaledS }, true, false},
	{"scale down: pods left live reached (s)", func(p phaseResult) float64 { return p.ScaleDownPodsS }, true, true},
	{"scale down: status caught up (s)", func(p phaseResult) float64 { return p.ScaleDownStatusS }, true, false},
	{"per pod: created to Ready, p50 (s)", func(p phaseResult) float64 { return p.PodStartupP50S }, true, true},
	{"per pod: created to Ready, p99 (s)", func(p phaseResult) float64 { return p.PodStartupP99S }, true, true},
	{"per owner: owner seen to its first pod, median (s)", func(p phaseResult) float64 { return p.OwnerToFirstPodMedianS }, true, false},
	{"per owner: owner seen to its first pod, p90 (s)", func(p phaseResult) float64 { return p.OwnerToFirstPodP90S }, true, false},
	{"per owner: first pod to last pod, median (s)", func(p phaseResult) float64 { return p.FirstToLastPodMedianS }, true, false},
	{"per owner: first pod to last pod, p90 (s)", func(p phaseResult) float64 { return p.FirstToLastPodP90S }, true, false},
	{"per owner: owner seen to all its pods Ready, median (s)", func(p phaseResult) float64 { return p.OwnerToReadyMedianS }, true, false},
	{"per owner: owner seen to all its pods Ready, p90 (s)", func(p phaseResult) float64 { return p.OwnerToReadyP90S }, true, false},
	{"overshoot (pods)", func(p phaseResult) float64 { return float64(p.Overshoot) }, false, false},
	{"pods created - target", func(p phaseResult) float64 { return float64(p.Created - p.Target) }, false, false},
	{"operator writes per created pod", func(p phaseResult) float64 { return p.WritesPerPod }, false, false},
	{"operator writes per deleted pod", func(p phaseResult) float64 { return p.WritesPerDeleted }, false, false},
	{"operator queue wait, scale-up (ms, mean)", func(p phaseResult) float64 { return p.QueueWaitUpMs }, false, false},
	{"operator reconcile, scale-up (ms, mean)", func(p phaseResult) float64 { return p.ReconcileUpMs }, false, false},
	{"operator queue wait, scale-down (ms, mean)", func(p phaseResult) float64 { return p.QueueWaitDownMs }, false, false},
	{"operator reconcile, scale-down (ms, mean)", func(p phaseResult) float64 { return p.ReconcileDownMs }, false, false},
	{"operator peak RSS (MiB)", func(p phaseResult) float64 { return p.OperatorPeakRSSMiB }, false, false},
	{"controller's requests that waited over 5 ms in an APF queue", func(p phaseResult) float64 { return float64(p.APFQueued) }, false, false},
	{"controller's APF queue wait, total (s)", func(p phaseResult) float64 { return p.APFWaitS }, false, false},
	{"controller's requests rejected by APF (429)", func(p phaseResult) float64 { return float64(p.APFRejected) }, false, false},
	{"controller CPU (s)", func(p phaseResult) float64 { return p.ControllerCPUS }, true, false},
	{"kube-apiserver CPU over the phase (s)", func(p phaseResult) float64 { return p.APIServerCPUS }, true, false},
	{"etcd, kube-scheduler and kwok CPU over the phase (s)", func(p phaseResult) float64 { return p.NodesCPUS }, true, false},
}

// leftOut lists the runs whose figures are not in the medians: every phase
// and rollout, of any kind, that timed out, stalled or failed, with why. A
// PodSet's also fails the run set (violations); the others' are reported
// here so that a set whose medians rest on fewer runs says so.
func leftOut(r report) []string {
	var out []string
	for _, p := range r.Phases {
		if p.Error != "" {
			out = append(out, fmt.Sprintf("%s %s run %d: %s", p.Kind, p.Shape, p.Run, p.Error))
		}
	}
	for _, p := range r.Rollouts {
		if p.Error != "" {
			out = append(out, fmt.Sprintf("rollout %s %s run %d: %s", p.Kind, p.Shape, p.Run, p.Error))
		}
	}
	return out
}

func summarise(phases []phaseResult, shapes []shape) []medianRow {
	var rows []medianRow
	collect := func(kind string, s shape, get func(phaseResult) float64) []float64 {
		var xs []float64
		for _, p := range phases {
			if p.Kind == kind && p.Shape == s.String() && p.Error == "" {
				xs = append(xs, get(p))
			}
		}
		if len(xs) > 0 || kind != "direct" {
			return xs
		}
		// No direct run with this shape's owners: the direct client's
		// run of the same number of pods stands for it.
		for _, p := range phases {
			if p.Kind == kind && p.Owners == 0 && p.Target == s.pods() && p.Error == "" {
				xs = append(xs, get(p))
			}
		}
		return xs
	}
	for _, shape := range shapes {
		for _, f := range figures {
			ps := collect("podset", shape, f.get)
			row := medianRow{Shape: shape.String(), Figure: f.name, PodSet: median(ps), ReplicaSet: median(collect("replicaset", shape, f.get))}
			for _, x := range ps {
				row.PodSetMax = max(row.PodSetMax, x)
			}
			// A sequential shape has no direct run (and JSON has no NaN).
			if f.direct && !shape.sequential {
				row.Direct = median(collect("direct", shape, f.get))
			}
			if f.ratio && row.ReplicaSet > 0 {
				row.Ratio = row.PodSet / row.ReplicaSet
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x == math.Trunc(x) && math.Abs(x) < 1e6:
		return fmt.Sprintf("%.0f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// printTable writes the medians as a Markdown table, ready for
// docs/benchmarks.md.
func printTable(w io.Writer, rows []medianRow) {
	fmt.Fprintln(w, "| shape | figure | PodSet | ReplicaSet | PodSet/ReplicaSet | direct client | PodSet worst run |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		ratio, direct := "", ""
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		if r.Direct > 0 {
			direct = fmtNum(r.Direct)
		}
		rs := fmtNum(r.ReplicaSet)
		if strings.HasPrefix(r.Figure, "operator") {
			rs = "n/a"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Shape, r.Figure, fmtNum(r.PodSet), rs, ratio, direct, fmtNum(r.PodSetMax))
	}
}

func writeJSON(path string, r report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// chartedFigures are the times the chart shows: the way to Ready and the
// scale-down, which issue 14's targets judge. The other figures in seconds
// (CPU, per-owner latencies, the scale-down's parts) stay in the table; on
// one axis with these they crowd the labels and read as times.
var chartedFigures = map[string]bool{
	"all pods created (s)":         true,
	"all pods bound to a node (s)": true,
	"all pods Ready (s)":           true,
	"status caught up (s)":         true,
	"scale down by half (s)":       true,
}

// chartRows are the rows writeChart draws, in table order.
func chartRows(rows []medianRow) []medianRow {
	var charted []medianRow
	for _, r := range rows {
		if chartedFigures[r.Figure] {
			charted = append(charted, r)
		}
	}
	return charted
}

// writeChart renders the median times per shape: one group of bars per
// (shape, figure), PodSet, ReplicaSet and the direct client side by side.
func writeChart(path string, rows []medianRow) error {
	var labels []string
	var psVals, rsVals, directVals plotter.Values
	for _, r := range chartRows(rows) {
		labels = append(labels, r.Shape+"\n"+strings.TrimPrefix(strings.TrimSuffix(r.Figure, " (s)"), "all pods "))
		psVals = append(psVals, zeroNaN(r.PodSet))
		rsVals = append(rsVals, zeroNaN(r.ReplicaSet))
		directVals = append(directVals, zeroNaN(r.Direct))
	}
	if len(labels) == 0 {
		return fmt.Errorf("nothing to plot")
	}
	p := plot.New()
	p.Title.Text = "PodSet operator vs ReplicaSet controller (median seconds, lower is better)"
	p.Y.Label.Text = "seconds"
	w := vg.Points(9)
	for i, s := range []struct {
		name string
		vals plotter.Values
		c    color.RGBA
	}{
		{"PodSet (operator)", psVals, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}},
		{"ReplicaSet (kube-controller-manager)", rsVals, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}},
		{"direct client, no controller", directVals, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 255}},
	} {
		bars, err := plotter.NewBarChart(s.vals, w)
		if err != nil {
			return err
		}
		bars.Color = s.c
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(i-1)
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	// Legend top left, and headroom above the tallest bar so it never
	// covers one.
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = 0
	p.Y.Max *= 1.3
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	width := vg.Length(len(labels)) * 0.9 * vg.Inch
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(max(width, 8*vg.Inch), 5*vg.Inch, path)
}

func zeroNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// replot renders the table and chart of a saved report again, e.g. after a
// change to the chart's layout, without rerunning the benchmark.
func replot(jsonPath, out string) error {
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	printTable(os.Stdout, r.Medians)
	return writeChart(filepath.Join(out, "benchmarks.png"), r.Medians)
}
