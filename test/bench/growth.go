package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// growthPoint is one growth run's memory scenario.
type growthPoint struct {
	dir string
	rss rssResult
}

// growthFit is a straight line through the growth runs by least squares:
// the base at no pod, and the cost of each pod more.
type growthFit struct{ base, perPod float64 }

func fitLine(xs, ys []float64) growthFit {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return growthFit{}
	}
	slope := (n*sxy - sx*sy) / d
	return growthFit{base: (sy - slope*sx) / n, perPod: slope}
}

// growthFits are the lines through the growth runs, per owned pod: peak RSS,
// RSS at the end and live heap in KiB, operator CPU and time to settle in
// seconds.
type growthFits struct{ peak, end, live, cpu, settled growthFit }

func fitGrowth(points []growthPoint) growthFits {
	var pods, peak, end, live, cpu, settled []float64
	for _, p := range points {
		pods = append(pods, float64(p.rss.OwnedPods))
		peak, end, live = append(peak, p.rss.PeakRSSMiB*1024), append(end, p.rss.FinalRSSMiB*1024), append(live, p.rss.LiveHeapMiB*1024)
		cpu, settled = append(cpu, p.rss.CPUS), append(settled, p.rss.SettledS)
	}
	return growthFits{fitLine(pods, peak), fitLine(pods, end), fitLine(pods, live), fitLine(pods, cpu), fitLine(pods, settled)}
}

// readGrowth reads the memory scenario of each growth run's
// benchmarks.json, smallest first. A run that failed, had foreign pods, had
// another template than the others or saw the same number of pods as
// another is an error: the fit would mean nothing.
func readGrowth(dirs []string) ([]growthPoint, error) {
	var points []growthPoint
	for _, dir := range dirs {
		path := filepath.Join(dir, "benchmarks.json")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch {
		case r.RSS == nil:
			return nil, fmt.Errorf("%s: no memory scenario", path)
		case r.RSS.Error != "":
			return nil, fmt.Errorf("%s: the memory scenario failed: %s", path, r.RSS.Error)
		case r.RSS.ForeignPods != 0:
			return nil, fmt.Errorf("%s: %d foreign pods; the growth runs have none", path, r.RSS.ForeignPods)
		}
		if len(points) > 0 && points[0].rss.Template != r.RSS.Template {
			return nil, fmt.Errorf("%s: PodSet template %q, but %s had %q", path, r.RSS.Template, points[0].dir, points[0].rss.Template)
		}
		points = append(points, growthPoint{dir: dir, rss: *r.RSS})
	}
	slices.SortFunc(points, func(a, b growthPoint) int { return a.rss.OwnedPods - b.rss.OwnedPods })
	for i := 1; i < len(points); i++ {
		if points[i].rss.OwnedPods == points[i-1].rss.OwnedPods {
			return nil, fmt.Errorf("%s and %s both owned %d pods", points[i-1].dir, points[i].dir, points[i].rss.OwnedPods)
		}
	}
	if len(points) < 2 {
		return nil, fmt.Errorf("the fit needs at least two growth runs, got %d", len(points))
	}
	return points, nil
}

// printGrowth writes the growth table and its fitted lines, as
// docs/benchmarks.md shows them.
func printGrowth(w io.Writer, points []growthPoint, f growthFits) {
	if t := points[0].rss.Template; t != "" {
		fmt.Fprintf(w, "PodSet template: %s\n\n", t)
	}
	fmt.Fprintln(w, "| pods (PodSets of 10) | peak RSS (MiB) | RSS at the end (MiB) | live heap at the end (MiB) | operator CPU (s) | settled after (s) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
	for _, p := range points {
		r := p.rss
		fmt.Fprintf(w, "| %d (%s) | %.1f | %.1f | %.1f | %.1f | %.1f |\n", r.OwnedPods, r.Shape, r.PeakRSSMiB, r.FinalRSSMiB, r.LiveHeapMiB, r.CPUS, r.SettledS)
	}
	fmt.Fprintln(w, "\n| pods | takeover | workers started (s) | first pod replaced (s) | statuses caught up (s) | peak RSS (MiB) |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|")
	for _, p := range points {
		for _, t := range []*restartResult{p.rss.Restart, p.rss.Failover} {
			if t != nil {
				fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.1f | %.1f |\n", p.rss.OwnedPods, t.Kind, t.WorkersS, t.FirstPodCreatedS, t.CaughtUpS, t.PeakRSSMiB)
			}
		}
	}
	fmt.Fprintf(w, "\nfitted: peak RSS %.1f MiB + %.2f KiB per pod; at the end %.1f MiB + %.2f KiB per pod; live heap %.1f MiB + %.2f KiB per pod; CPU %.2f s per 1000 pods; settled after %.2f s per 1000 pods\n",
		f.peak.base/1024, f.peak.perPod, f.end.base/1024, f.end.perPod, f.live.base/1024, f.live.perPod, f.cpu.perPod*1000, f.settled.perPod*1000)
}

// checkGrowth is the growth runs' guard against the cost per pod creeping
// back: the fitted peak RSS per pod must not exceed maxPeakKiBPerPod
// (0: no guard).
func checkGrowth(f growthFits, maxPeakKiBPerPod float64) error {
	if maxPeakKiBPerPod > 0 && f.peak.perPod > maxPeakKiBPerPod {
		return fmt.Errorf("peak RSS grows by %.2f KiB per owned pod, over the guard's %.2f KiB", f.peak.perPod, maxPeakKiBPerPod)
	}
	return nil
}

// growthReport fits the growth runs in dirs, prints them and applies the
// guard.
func growthReport(w io.Writer, dirs []string, maxPeakKiBPerPod float64) error {
	points, err := readGrowth(dirs)
	if err != nil {
		return err
	}
	f := fitGrowth(points)
	printGrowth(w, points, f)
	return checkGrowth(f, maxPeakKiBPerPod)
}
