package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"
)

// settle is how long a phase waits, once its target is reached, before it
// reads the operator's request counter: the event recorder writes
// asynchronously, and its writes belong to the phase.
const settle = 2 * time.Second

// cleanupTimeout bounds the wait for a namespace's pods to be gone.
const cleanupTimeout = 5 * time.Minute

// errStalled marks a phase given up because nothing moved.
var errStalled = errors.New("stalled")

// eventCount counts the events a watcher observed: the benchmark's measure
// of progress, the same for every kind of controller.
type eventCount struct{ n atomic.Uint64 }

func (e *eventCount) saw()           { e.n.Add(1) }
func (e *eventCount) events() uint64 { return e.n.Load() }

type watched interface{ events() uint64 }

// waitUntil polls cond until it holds, for at most timeout. The watchers
// timestamp what they see themselves, so the polling period does not affect
// the measurements. With a stall bound, it also gives up once none of the
// watched watchers has seen an event for that long. A controller that stops
// partway (an independent harness once saw the ReplicaSet controller sit at
// 328 of 1000 pods for 180 s) then fails its run, which is reported and
// left out of the medians, instead of counting as a slow run; either kind
// alike, since both are watched the same way.
func waitUntil(ctx context.Context, timeout, stall time.Duration, what string, cond func() bool, ws ...watched) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	events := func() (n uint64) {
		for _, w := range ws {
			n += w.events()
		}
		return n
	}
	seen, since := events(), time.Now()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case now := <-t.C:
			if n := events(); n != seen {
				seen, since = n, now
			} else if stall > 0 && len(ws) > 0 && now.Sub(since) >= stall {
				return fmt.Errorf("waiting for %s: %w, no event for %s", what, errStalled, stall)
			}
		}
	}
	return nil
}

func secs(d time.Duration) float64 { return d.Seconds() }

// downProfileSeconds is how much of a scale-down is profiled: the longest
// measured scale-down at 1x1000 and 100x10 is under 3 s.
const downProfileSeconds = 3

// profiles are profiles being taken in the background.
type profiles struct{ done []chan error }

func (p *profiles) start(f func() error) {
	c := make(chan error, 1)
	p.done = append(p.done, c)
	go func() { c <- f() }()
}

// wait returns once every profile is saved, with their errors.
func (p *profiles) wait() error {
	var errs []error
	for _, c := range p.done {
		errs = append(errs, <-c)
	}
	return errors.Join(errs...)
}

// startDownProfiles starts the scale-down's profiles when -profile-dir is set:
// the API server's CPU (both kinds), and for PodSets the operator's CPU and
// execution trace. The profilers get a moment to start before the clock.
func (b *bench) startDownProfiles(ctx context.Context, isPodSet bool, base string) *profiles {
	p := &profiles{}
	if b.opts.profileDir == "" {
		return p
	}
	p.start(func() error { return b.apiserverProfile(ctx, downProfileSeconds, base+"-down-apiserver-cpu.pprof") })
	if isPodSet {
		p.start(func() error {
			return b.op.profile(fmt.Sprintf("profile?seconds=%d", downProfileSeconds), base+"-down-operator-cpu.pprof")
		})
		p.start(func() error {
			return b.op.profile(fmt.Sprintf("trace?seconds=%d", downProfileSeconds), base+"-down-operator.trace")
		})
	}
	time.Sleep(100 * time.Millisecond)
	return p
}

// apiserverProfile saves a CPU profile of the API server (its /debug/pprof,
// open to the cluster-admin identity the benchmark uses).
func (b *bench) apiserverProfile(ctx context.Context, seconds int, path string) error {
	data, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", fmt.Sprint(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("API server profile: %w", err)
	}
	return os.WriteFile(path, data, 0o644)
}

// warmUpPhases runs one unmeasured phase of each kind of owner at shape s
// and returns their results, which stay out of the medians. The API server
// sizes each watch's event buffer from its watch cache when the watch
// starts, and a fresh cluster's cache is small (10 events a watch): in the
// first phase that creates pods quickly, the long-lived pod watches (the
// scheduler's, kwok's, the controllers', the benchmark's) overflow and are
// closed and resumed, which delays every watcher's events. After a phase of
// each kind, every measured phase, whichever kind goes first, finds the
// cache and the watches as a phase before left them (while the phases run
// back to back: an idle cache shrinks again).
func (b *bench) warmUpPhases(ctx context.Context, s shape) []phaseResult {
	var out []phaseResult
	for _, kind := range []string{"podset", "replicaset"} {
		if ctx.Err() != nil {
			break
		}
		out = append(out, b.ownerPhase(ctx, kind, s, 0, false))
	}
	return out
}

// ownerPhase runs one kind of owner (podset or replicaset) at one shape:
// scale up from nothing, then down by half.
func (b *bench) ownerPhase(ctx context.Context, kind string, s shape, run int, first bool) phaseResult {
	res := phaseResult{Kind: kind, Shape: s.String(), Owners: s.owners, Replicas: s.replicas, Sequential: s.sequential, Template: b.opts.templateName, Run: run, WentFirst: first, Target: s.pods()}
	ns := fmt.Sprintf("bench-%s-%s-r%d", kind, s, run)
	logf("%s %s run %d: starting in namespace %s", kind, s, run, ns)
	if err := b.ownerPhaseIn(ctx, ns, s.clientWidth(), &res); err != nil {
		res.Error = err.Error()
		logf("%s %s run %d: ERROR %v", kind, s, run, err)
	} else {
		logf("%s %s run %d: owners written %.2fs created %.2fs bound %.2fs ready %.2fs (per pod p50 %.2fs p99 %.2fs) status %.2fs down %.2fs (owners scaled %.2fs, pods %.2fs, status %.2fs); max live %d, created %d; writes/pod %.3f; CPU %.1fs (kube-apiserver %.1fs, etcd+scheduler+kwok %.1fs); RSS %.0f MiB; queue wait/reconcile up %.0f/%.0f ms, down %.0f/%.0f ms; APF (%s) %d requests, %d queued over 5 ms, %.2fs waited in all, %d rejected",
			kind, s, run, res.OwnersCreatedS, res.AllCreatedS, res.AllBoundS, res.AllReadyS, res.PodStartupP50S, res.PodStartupP99S, res.StatusS, res.ScaleDownS, res.OwnersScaledS, res.ScaleDownPodsS, res.ScaleDownStatusS, res.MaxLive, res.Created, res.WritesPerPod, res.ControllerCPUS, res.APIServerCPUS, res.NodesCPUS, res.OperatorPeakRSSMiB,
			res.QueueWaitUpMs, res.ReconcileUpMs, res.QueueWaitDownMs, res.ReconcileDownMs, res.APFFlowSchema, res.APFRequests, res.APFQueued, res.APFWaitS, res.APFRejected)
	}
	if err := b.endPhase(ctx, ns); err != nil && res.Error == "" {
		res.Error = "cleanup: " + err.Error()
	}
	return res
}

// ownerPhaseIn runs the phase in namespace ns, the client writing the
// owners with width requests in flight.
func (b *bench) ownerPhaseIn(ctx context.Context, ns string, width int, res *phaseResult) error {
	if err := createNamespace(ctx, b.cs, ns); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pw, err := watchPods(wctx, b.cs, ns)
	if err != nil {
		return err
	}
	var (
		driver ownerDriver
		ow     *ownerWatcher
		cpuPID int
	)
	isPodSet := res.Kind == "podset"
	if isPodSet {
		driver, cpuPID = podSetDriver{dc: b.dc, template: b.opts.template}, b.op.pid()
		ow, err = watchOwners(wctx, b.dc, podSetGVR, ns)
	} else {
		driver, cpuPID = replicaSetDriver{cs: b.cs, template: b.opts.template}, b.kcmPID
		ow, err = watchOwners(wctx, b.dc, replicaSetGVR, ns)
	}
	if err != nil {
		return err
	}

	// Baselines: the operator's request counter, peak RSS and CPU time.
	before, err := b.op.scrape()
	if err != nil {
		return err
	}
	peakReset := resetPeak(b.op.pid()) == nil
	sampler := sampleRSS(b.op.pid(), 100*time.Millisecond)
	defer sampler.finish()
	var cpuBefore procStats
	if cpuPID > 0 {
		cpuBefore, _ = readProc(cpuPID)
	}
	apiServerBefore, nodesBefore := cpuOf(b.apiServerPID), cpuOf(b.nodePIDs...)
	flowSchema := b.controllerFlowSchema(res.Kind)
	var (
		apfBefore apfCounts
		apfErr    error
	)
	if flowSchema != "" {
		apfBefore, apfErr = scrapeAPF(ctx, b.cs, flowSchema)
	}
	// Profiles of the first 15 s of the scale-up: the operator's (PodSet
	// phases) and the API server's (both kinds, to compare where its CPU
	// goes: on two cores it is what every controller waits for).
	profileBase := filepath.Join(b.opts.profileDir, fmt.Sprintf("%s-%s-r%d", res.Kind, res.Shape, res.Run))
	var profileDone chan error
	if b.opts.profileDir != "" {
		profileDone = make(chan error, 2)
		go func() { profileDone <- b.apiserverProfile(ctx, 15, profileBase+"-apiserver-cpu.pprof") }()
		if isPodSet {
			go func() { profileDone <- b.op.profile("profile?seconds=15", profileBase+"-operator-cpu.pprof") }()
		} else {
			profileDone <- nil
		}
	}

	// Scale up from nothing.
	start := time.Now()
	pw.expectScaleUp(start, res.Target)
	ow.expect(start, res.Owners, int64(res.Replicas))
	if err := driver.create(ctx, ns, res.Owners, res.Replicas, width); err != nil {
		return fmt.Errorf("creating owners: %w", err)
	}
	ownersCreated := time.Now()
	if err := waitUntil(ctx, b.opts.phaseTimeout, b.opts.stallTimeout, "every pod Ready and every status caught up", func() bool {
		return pw.counts().allReady > 0 && ow.caughtUpAfter() > 0
	}, pw, ow); err != nil {
		c := pw.counts()
		return fmt.Errorf("%w (created %d, live %d, ready %d of %d)", err, c.created, c.live, c.readyLive, res.Target)
	}
	up := pw.counts()
	res.OwnersCreatedS = secs(ownersCreated.Sub(start))
	res.AllCreatedS, res.AllBoundS, res.AllReadyS, res.StatusS = secs(up.allCreated), secs(up.allBound), secs(up.allReady), secs(ow.caughtUpAfter())
	p50, p99 := pw.startupQuantiles()
	res.PodStartupP50S, res.PodStartupP99S = secs(p50), secs(p99)
	trace := traceOwners(ow, pw)
	res.OwnerToFirstPodMedianS, res.OwnerToFirstPodP90S = secs(trace.ToFirstMedian), secs(trace.ToFirstP90)
	res.FirstToLastPodMedianS, res.FirstToLastPodP90S = secs(trace.FirstToLastMedian), secs(trace.FirstToLastP90)
	res.OwnerToReadyMedianS, res.OwnerToReadyP90S = secs(trace.ToReadyMedian), secs(trace.ToReadyP90)
	time.Sleep(settle)
	upWindow := &window{from: start, to: time.Now()}
	mid, err := b.op.scrape()
	if err != nil {
		return err
	}
	if profileDone != nil {
		errs := []error{<-profileDone, <-profileDone}
		if isPodSet {
			errs = append(errs, b.op.profile("heap", profileBase+"-operator-heap.pprof"))
		}
		if err := errors.Join(errs...); err != nil {
			logf("profiling: %v", err)
		}
	}

	// Scale every owner down by half (1 → 0).
	down := res.Replicas / 2
	wantLive := res.Owners * down
	// Profiles of the scale-down's first seconds: CPU of the operator
	// (PodSet phases) and of the API server, and the operator's execution
	// trace, which shows where a reconcile waits between its writes
	// (network, scheduler, locks; `go tool trace -pprof=net|sched|sync`).
	downProfiles := b.startDownProfiles(ctx, isPodSet, profileBase)
	start = time.Now()
	pw.expectScaleDown(start, wantLive)
	ow.expect(start, res.Owners, int64(down))
	if err := driver.scale(ctx, ns, res.Owners, down, width); err != nil {
		return fmt.Errorf("scaling owners down: %w", err)
	}
	res.OwnersScaledS = secs(time.Since(start))
	if err := waitUntil(ctx, b.opts.phaseTimeout, b.opts.stallTimeout, "scale-down", func() bool {
		return pw.counts().liveReached > 0 && ow.caughtUpAfter() > 0
	}, pw, ow); err != nil {
		c := pw.counts()
		return fmt.Errorf("%w (live %d, target %d)", err, c.live, wantLive)
	}
	res.ScaleDownPodsS, res.ScaleDownStatusS = secs(pw.counts().liveReached), secs(ow.caughtUpAfter())
	res.ScaleDownS = max(res.ScaleDownPodsS, res.ScaleDownStatusS)
	if err := downProfiles.wait(); err != nil {
		logf("profiling the scale-down: %v", err)
	}
	time.Sleep(settle)
	downWindow := &window{from: start, to: time.Now()}
	after, err := b.op.scrape()
	if err != nil {
		return err
	}
	if b.audit != nil {
		if err := b.audit.tally(res.Kind, ns, upWindow, downWindow); err != nil {
			return fmt.Errorf("reading the audit log: %w", err)
		}
		res.RequestsUp, res.RequestsDown = upWindow.tally, downWindow.tally
	}

	final := pw.counts()
	res.MaxLive, res.Created = final.maxLive, final.created
	res.Overshoot = max(0, final.maxLive-res.Target)
	if cpuPID > 0 {
		if st, err := readProc(cpuPID); err == nil {
			res.ControllerCPUS = (st.CPU - cpuBefore.CPU).Seconds()
		}
	}
	res.APIServerCPUS = (cpuOf(b.apiServerPID) - apiServerBefore).Seconds()
	res.NodesCPUS = (cpuOf(b.nodePIDs...) - nodesBefore).Seconds()
	if flowSchema != "" && apfErr == nil {
		if apfAfter, err := scrapeAPF(ctx, b.cs, flowSchema); err == nil {
			apf := apfAfter.since(apfBefore)
			res.APFFlowSchema, res.APFRequests, res.APFQueued, res.APFWaitS, res.APFRejected = flowSchema, int(apf.Requests), int(apf.Queued), apf.WaitS, int(apf.Rejected)
		}
	}
	if isPodSet {
		res.WritesUp = mid.writes() - before.writes()
		res.WritesDown = after.writes() - mid.writes()
		res.WritesByMethodUp = map[string]float64{}
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			res.WritesByMethodUp[m] = mid.requests[m] - before.requests[m]
		}
		if up.created > 0 {
			res.WritesPerPod = res.WritesUp / float64(up.created)
		}
		if deleted := res.Target - wantLive; deleted > 0 {
			res.WritesPerDeleted = res.WritesDown / float64(deleted)
		}
		res.QueueWaitUpMs, res.ReconcileUpMs = mid.meanQueueWait(before), mid.meanReconcile(before)
		res.QueueWaitDownMs, res.ReconcileDownMs = after.meanQueueWait(mid), after.meanReconcile(mid)
		peak := sampler.finish()
		if st, err := readProc(b.op.pid()); err == nil && peakReset {
			peak = max(peak, st.HWM)
		}
		res.OperatorPeakRSSMiB = float64(peak) / (1 << 20)
	}
	return nil
}

// directPhase creates pods with no controller, then deletes half of them: the
// floor every controller's "all created", "all Ready" and "scale down by
// half" times sit on. With owners (a shape of more
// than one owner), the client creates each owner too, a ConfigMap, and then
// its pods, each with an ownerReference to it: the floor of that shape, whose
// owners a controller cannot act on before they exist.
func (b *bench) directPhase(ctx context.Context, s shape, owners bool, run int) phaseResult {
	pods := s.pods()
	res := phaseResult{Kind: "direct", Shape: fmt.Sprintf("%dx1-direct", pods), Owners: 0, Replicas: 1, Template: b.opts.templateName, Run: run, Target: pods}
	ns := fmt.Sprintf("bench-direct-%d-r%d", pods, run)
	if owners {
		res.Shape, res.Owners, res.Replicas = s.String(), s.owners, s.replicas
		ns = fmt.Sprintf("bench-direct-%s-r%d", s, run)
	}
	logf("direct %s run %d: starting in namespace %s", res.Shape, run, ns)
	err := func() error {
		if err := createNamespace(ctx, b.cs, ns); err != nil {
			return err
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pw, err := watchPods(wctx, b.cs, ns)
		if err != nil {
			return err
		}
		start := time.Now()
		pw.expectScaleUp(start, pods)
		create := func() error { return createPodsDirectly(ctx, b.cs, ns, "direct", pods, b.opts.template) }
		if owners {
			create = func() error { return createOwnedPodsDirectly(ctx, b.cs, ns, s, b.opts.template) }
		}
		if err := create(); err != nil {
			return err
		}
		if err := waitUntil(ctx, b.opts.phaseTimeout, b.opts.stallTimeout, "every pod Ready", func() bool { return pw.counts().allReady > 0 }, pw); err != nil {
			return err
		}
		c := pw.counts()
		res.AllCreatedS, res.AllBoundS, res.AllReadyS = secs(c.allCreated), secs(c.allBound), secs(c.allReady)
		p50, p99 := pw.startupQuantiles()
		res.PodStartupP50S, res.PodStartupP99S = secs(p50), secs(p99)

		// The scale-down's floor: half the pods deleted by a client with no
		// decision to make, every delete sent at once as both controllers
		// send a step's deletes (after a write to each owner, standing for
		// the spec patch a controller acts on).
		time.Sleep(settle)
		start = time.Now()
		wantLive := pods - pods/2
		del := func() error { return deletePodsDirectly(ctx, b.cs, ns, "direct", pods) }
		if owners {
			wantLive = s.owners * (s.replicas / 2)
			del = func() error { return deleteOwnedPodsDirectly(ctx, b.cs, ns, s) }
		}
		pw.expectScaleDown(start, wantLive)
		if err := del(); err != nil {
			return err
		}
		if err := waitUntil(ctx, b.opts.phaseTimeout, b.opts.stallTimeout, "scale-down", func() bool { return pw.counts().liveReached > 0 }, pw); err != nil {
			return err
		}
		c = pw.counts()
		res.ScaleDownS, res.MaxLive, res.Created = secs(c.liveReached), c.maxLive, c.created
		res.ScaleDownPodsS = res.ScaleDownS
		return nil
	}()
	if err != nil {
		res.Error = err.Error()
		logf("direct %s run %d: ERROR %v", res.Shape, run, err)
	} else {
		logf("direct %s run %d: created %.2fs bound %.2fs ready %.2fs (per pod p50 %.2fs p99 %.2fs) down %.2fs", res.Shape, run, res.AllCreatedS, res.AllBoundS, res.AllReadyS, res.PodStartupP50S, res.PodStartupP99S, res.ScaleDownS)
	}
	if err := b.endPhase(ctx, ns); err != nil && res.Error == "" {
		res.Error = "cleanup: " + err.Error()
	}
	return res
}

// rssScenario measures the operator's peak memory over its whole life while
// it comes to own rssShape's pods in a cluster that also holds rssForeign
// pods it does not own (no managed-by label: its cache never holds them).
// A fresh operator process, so VmHWM is the peak of exactly this scenario.
func (b *bench) rssScenario(ctx context.Context) rssResult {
	o := b.opts
	res := rssResult{OwnedPods: o.rssShape.pods(), ForeignPods: o.rssForeign, Shape: o.rssShape.String(), Template: o.rssTemplateName}
	if o.rssRestart {
		// As the manager Deployment runs it, so that a standby can take
		// over (restartAtScale).
		leaseNamespace := cmp.Or(b.id.namespace, "default")
		o.operatorArgs = append(slices.Clip(o.operatorArgs), "--leader-elect", "--leader-election-namespace="+leaseNamespace)
	}
	op, err := startOperator(ctx, o.manager, b.opKubeconfig, b.logDir, "operator-rss", o.profileDir != "", o.operatorArgs...)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer op.stop()
	sampler := sampleRSS(op.pid(), 100*time.Millisecond)
	err = func() error {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The growth runs (-rss-foreign 0) have no foreign pods.
		if o.rssForeign > 0 {
			logf("memory: creating %d foreign pods", o.rssForeign)
			if err := createNamespace(ctx, b.cs, "rss-foreign"); err != nil {
				return err
			}
			fw, err := watchPods(wctx, b.cs, "rss-foreign")
			if err != nil {
				return err
			}
			fw.expectScaleUp(time.Now(), o.rssForeign)
			if err := createPodsDirectly(ctx, b.cs, "rss-foreign", "foreign", o.rssForeign, nil); err != nil {
				return err
			}
			if err := waitUntil(ctx, b.opts.phaseTimeout, 0, "foreign pods Ready", func() bool { return fw.counts().allReady > 0 }); err != nil {
				return err
			}
		}
		logf("memory: creating PodSets %s", o.rssShape)
		if err := createNamespace(ctx, b.cs, "rss-owned"); err != nil {
			return err
		}
		ow, err := watchOwners(wctx, b.dc, podSetGVR, "rss-owned")
		if err != nil {
			return err
		}
		start := time.Now()
		ow.expect(start, o.rssShape.owners, int64(o.rssShape.replicas))
		if err := (podSetDriver{dc: b.dc, template: o.rssTemplate, distinct: true}).create(ctx, "rss-owned", o.rssShape.owners, o.rssShape.replicas, clientParallelism); err != nil {
			return err
		}
		if o.profileDir != "" {
			go func() {
				if err := op.profile("profile?seconds=30", filepath.Join(o.profileDir, "rss-operator-cpu.pprof")); err != nil {
					logf("profiling: %v", err)
				}
			}()
			go func() {
				if err := b.apiserverProfile(ctx, 30, filepath.Join(o.profileDir, "rss-apiserver-cpu.pprof")); err != nil {
					logf("profiling: %v", err)
				}
			}()
		}
		if err := waitUntil(ctx, 2*b.opts.phaseTimeout, 0, "owned PodSets caught up", func() bool { return ow.caughtUpAfter() > 0 }); err != nil {
			return err
		}
		res.SettledS = secs(ow.caughtUpAfter())
		// Steady state for a while: resyncs, late events.
		time.Sleep(10 * time.Second)
		if o.profileDir != "" {
			if err := op.profile("heap", filepath.Join(o.profileDir, "rss-heap.pprof")); err != nil {
				logf("profiling: %v", err)
			}
		}
		return nil
	}()
	if err != nil {
		res.Error = err.Error()
	}
	peak := sampler.finish()
	if c, err := op.scrape(); err == nil {
		res.LiveHeapMiB = c.liveHeapBytes / (1 << 20)
	}
	if st, err := readProc(op.pid()); err == nil {
		peak = max(peak, st.HWM)
		res.FinalRSSMiB = float64(st.RSS) / (1 << 20)
		res.CPUS = st.CPU.Seconds()
	}
	res.PeakRSSMiB = float64(peak) / (1 << 20)
	logf("memory: peak RSS %.1f MiB, at end %.1f MiB, live heap %.1f MiB, CPU %.1fs, owned PodSets caught up after %.1fs", res.PeakRSSMiB, res.FinalRSSMiB, res.LiveHeapMiB, res.CPUS, res.SettledS)
	if o.rssRestart && res.Error == "" {
		// A restart, then a failover from the restarted operator.
		var started []*operator
		defer func() {
			for _, s := range started {
				s.stop()
			}
		}()
		current := op
		for _, t := range []struct {
			failover bool
			into     **restartResult
		}{{false, &res.Restart}, {true, &res.Failover}} {
			r, next := b.restartAtScale(ctx, current, "rss-owned", t.failover, o.operatorArgs)
			*t.into = &r
			if next != nil {
				started, current = append(started, next), next
			}
			if r.Error != "" {
				res.Error = r.Kind + ": " + r.Error
				break
			}
		}
	}
	// No cleanup: the scenario runs last and the cluster is stopped right
	// after it; deleting 20,000 pods would take minutes for nothing.
	return res
}
