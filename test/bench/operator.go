package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/example/podset-operator/test/localcluster"
)

// operator is the manager binary running as a child process, as it runs in a
// cluster: its own process, so that its RSS and CPU time are its own and its
// client's request counter is not mixed with the benchmark's.
type operator struct {
	proc       *localcluster.Process
	logPath    string
	metricsURL string
	pprofURL   string
}

// startOperator runs the manager with kubeconfig (identity.go), plain
// HTTP metrics on loopback, and pprof when withPprof. It returns once the
// PodSet controller's workers run, i.e. its caches are synced, so that a
// phase's clock does not include the operator's start.
func startOperator(ctx context.Context, bin, kubeconfig, logDir, name string, withPprof bool, extraArgs ...string) (*operator, error) {
	return launchOperator(ctx, bin, kubeconfig, logDir, name, withPprof, true, extraArgs...)
}

// startServing runs the manager as startOperator does, but returns once
// its metrics are served, without waiting for its workers: a standby of
// leader election starts them only as the leader, and a restart's caller
// times them itself (a wait here would delay its first look at the log).
func startServing(ctx context.Context, bin, kubeconfig, logDir, name string, extraArgs ...string) (*operator, error) {
	return launchOperator(ctx, bin, kubeconfig, logDir, name, false, false, extraArgs...)
}

// workersStarted tells whether the operator's PodSet controller has
// started its workers.
func (o *operator) workersStarted() bool {
	data, _ := os.ReadFile(o.logPath)
	return strings.Contains(string(data), `"Starting workers"`) && strings.Contains(string(data), `"controller":"podset"`)
}

func launchOperator(ctx context.Context, bin, kubeconfig, logDir, name string, withPprof, waitWorkers bool, extraArgs ...string) (*operator, error) {
	metricsPort, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	probePort, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		"--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
	}
	op := &operator{
		logPath:    filepath.Join(logDir, name+".log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
	}
	if withPprof {
		pprofPort, err := localcluster.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
		op.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort)
	}
	args = append(args, extraArgs...)
	_ = os.Remove(op.logPath) // a fresh log per phase
	if op.proc, err = localcluster.StartProcess("operator", bin, args, nil, op.logPath); err != nil {
		return nil, fmt.Errorf("%w (make bench builds it)", err)
	}

	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-op.proc.Done():
			return nil, fmt.Errorf("the operator exited during start; see %s", op.logPath)
		case <-ctx.Done():
			op.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if !waitWorkers || op.workersStarted() {
			if _, err := op.scrape(); err == nil {
				return op, nil
			}
		}
		if time.Now().After(deadline) {
			op.stop()
			return nil, fmt.Errorf("the operator did not start its workers within 2m; see %s", op.logPath)
		}
	}
}

func (o *operator) pid() int { return o.proc.Pid() }

// stop terminates the operator; once it has exited, stop does nothing.
func (o *operator) stop() { _ = o.proc.Stop() }

// kill ends the operator with SIGKILL, as a node's loss or the OOM killer
// would: no lease released, no request finished.
func (o *operator) kill() error { return o.proc.Kill() }

// requestCounts is the operator's rest_client_requests_total by HTTP method.
type requestCounts map[string]float64

// operatorCounts is what one scrape of the operator's metrics says: its
// requests by HTTP method, and the pod creates and deletes it sent by
// result (podset_operator_pod_creates_total, podset_operator_pod_deletes_total).
type operatorCounts struct {
	requests requestCounts
	creates  map[string]float64
	deletes  map[string]float64
	// queue holds the PodSet controller's work queue histograms' sums
	// and counts (workqueue_queue_duration_seconds: how long a PodSet
	// waited for a worker; workqueue_work_duration_seconds: how long its
	// reconcile held one), keyed "queue_sum", "queue_count", "work_sum",
	// "work_count".
	queue map[string]float64
	// liveHeapBytes is the Go heap the last garbage collection kept
	// (go_gc_heap_live_bytes, runtime/metrics' /gc/heap/live:bytes).
	liveHeapBytes float64
}

// meanQueueWait and meanReconcile are the mean wait for a worker and the
// mean reconcile time, in milliseconds, between the scrape before and this
// one.
func (c operatorCounts) meanQueueWait(before operatorCounts) float64 {
	return meanMs(c.queue["queue_sum"]-before.queue["queue_sum"], c.queue["queue_count"]-before.queue["queue_count"])
}

func (c operatorCounts) meanReconcile(before operatorCounts) float64 {
	return meanMs(c.queue["work_sum"]-before.queue["work_sum"], c.queue["work_count"]-before.queue["work_count"])
}

func meanMs(sum, count float64) float64 {
	if count <= 0 {
		return 0
	}
	return 1000 * sum / count
}

// writes sums the methods that change something on the API server.
func (c operatorCounts) writes() float64 {
	r := c.requests
	return r["POST"] + r["PUT"] + r["PATCH"] + r["DELETE"]
}

// podsCreatedSince is how many pods the operator's creates made, or may
// have made (result uncertain), since the scrape before.
func (c operatorCounts) podsCreatedSince(before operatorCounts) int {
	made := func(m map[string]float64) float64 { return m["created"] + m["uncertain"] }
	return int(made(c.creates) - made(before.creates))
}

// podsDeletedSince is how many pods the operator's deletes marked for
// deletion since the scrape before (not those already gone).
func (c operatorCounts) podsDeletedSince(before operatorCounts) int {
	return int(c.deletes["deleted"] - before.deletes["deleted"])
}

// waitQuiet waits until the operator has sent no write for a second, at
// most ten: after a phase's namespace is gone, so that nothing the operator
// still sends about it is counted in the next phase.
func (o *operator) waitQuiet(ctx context.Context) {
	last, quietSince := -1.0, time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
		c, err := o.scrape()
		if err != nil {
			return
		}
		if w := c.writes(); w != last {
			last, quietSince = w, time.Now()
		} else if time.Since(quietSince) >= time.Second {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape reads the operator's metrics.
func (o *operator) scrape() (operatorCounts, error) {
	counts := operatorCounts{requests: requestCounts{}, creates: map[string]float64{}, deletes: map[string]float64{}, queue: map[string]float64{}}
	resp, err := http.Get(o.metricsURL)
	if err != nil {
		return counts, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return counts, fmt.Errorf("GET %s: %s", o.metricsURL, resp.Status)
	}
	families, err := metricFamilies(resp.Body)
	if err != nil {
		return counts, fmt.Errorf("GET %s: %w", o.metricsURL, err)
	}
	for _, c := range []struct {
		into          map[string]float64
		family, label string
	}{
		{counts.requests, "rest_client_requests_total", "method"},
		{counts.creates, "podset_operator_pod_creates_total", "result"},
		{counts.deletes, "podset_operator_pod_deletes_total", "result"},
	} {
		for _, m := range families[c.family].GetMetric() {
			c.into[labelValue(m, c.label)] += m.GetCounter().GetValue()
		}
	}
	for family, key := range workQueueHistograms {
		for _, m := range families[family].GetMetric() {
			if labelValue(m, "name") == "podset" {
				counts.queue[key+"_sum"] += m.GetHistogram().GetSampleSum()
				counts.queue[key+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for _, m := range families["go_gc_heap_live_bytes"].GetMetric() {
		counts.liveHeapBytes = m.GetGauge().GetValue()
	}
	return counts, nil
}

// workQueueHistograms names the work queue histograms whose sums and counts
// operatorCounts.queue keeps, by the key prefix it keeps them under.
var workQueueHistograms = map[string]string{
	"workqueue_queue_duration_seconds": "queue",
	"workqueue_work_duration_seconds":  "work",
}

// profile saves one pprof profile (e.g. "heap", or "profile?seconds=20").
func (o *operator) profile(kind, path string) error {
	if o.pprofURL == "" {
		return nil
	}
	resp, err := http.Get(o.pprofURL + "/" + kind)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof %s: %s", kind, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// procStats reads what the kernel accounts to a process.
type procStats struct {
	// CPU is user+system time.
	CPU time.Duration
	// RSS is the resident set now, HWM its peak since start or since the
	// last resetPeak.
	RSS, HWM int64
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports (the kernel ABI fixes it).
const clockTick = 10 * time.Millisecond

func readProc(pid int) (procStats, error) {
	var s procStats
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from the closing parenthesis. utime and stime are fields 14
	// and 15, i.e. the 12th and 13th after the name.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(rest[11], 10, 64)
	stime, _ := strconv.ParseInt(rest[12], 10, 64)
	s.CPU = time.Duration(utime+stime) * clockTick

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.RSS = kb << 10
		case "VmHWM:":
			s.HWM = kb << 10
		}
	}
	return s, nil
}

// resetPeak resets the kernel's VmHWM of a process to its current RSS
// (clear_refs value 5, Linux >= 4.0), so that the next reading is the peak
// of one phase rather than of the process's life.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// rssSampler samples VmRSS while a phase runs, as a cross-check of VmHWM
// (which the kernel updates lazily, per page-table sync, and which a failed
// clear_refs would leave at the lifetime peak).
type rssSampler struct {
	once sync.Once
	mu   sync.Mutex
	max  int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if st, err := readProc(pid); err == nil {
				s.mu.Lock()
				s.max = max(s.max, st.RSS)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops the sampling (once; later calls only read) and returns the
// largest RSS seen.
func (s *rssSampler) finish() int64 {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// cpuOf is the CPU time the processes have used so far (0 for a PID that
// is 0 or gone).
func cpuOf(pids ...int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if pid == 0 {
			continue
		}
		if st, err := readProc(pid); err == nil {
			total += st.CPU
		}
	}
	return total
}
