package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFitLineThroughPointsOnALine(t *testing.T) {
	g := NewWithT(t)
	f := fitLine([]float64{10000, 25000, 50000}, []float64{50 + 3*10000, 50 + 3*25000, 50 + 3*50000})
	g.Expect(f.perPod).To(BeNumerically("~", 3, 1e-9))
	g.Expect(f.base).To(BeNumerically("~", 50, 1e-6))
	g.Expect(fitLine([]float64{1, 1}, []float64{2, 3})).To(Equal(growthFit{}), "no slope through one x")
}

// writeGrowthRun writes a growth run's benchmarks.json as the bench does.
func writeGrowthRun(t *testing.T, dir string, rss rssResult) string {
	t.Helper()
	dir = filepath.Join(t.TempDir(), dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(report{RSS: &rss})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "benchmarks.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// growthRun is a run whose figures lie on lines of the given cost per pod
// (peak RSS in KiB) over a base of 40 MiB.
func growthRun(t *testing.T, pods int, peakKiBPerPod float64) string {
	mib := func(perPod float64) float64 { return 40 + float64(pods)*perPod/1024 }
	return writeGrowthRun(t, "", rssResult{OwnedPods: pods, Shape: "Nx10", PeakRSSMiB: mib(peakKiBPerPod), FinalRSSMiB: mib(peakKiBPerPod - 0.5),
		LiveHeapMiB: mib(1.5) - 30, CPUS: float64(pods) / 1000, SettledS: float64(pods) / 150})
}

func TestGrowthReportFitsTheRunsAndGuardsThePeakPerPod(t *testing.T) {
	g := NewWithT(t)
	restarted := rssResult{OwnedPods: 10000, Shape: "Nx10", PeakRSSMiB: 40 + 10000*3.2/1024, FinalRSSMiB: 40 + 10000*2.7/1024,
		LiveHeapMiB: 10 + 10000*1.5/1024, CPUS: 10, SettledS: 10000.0 / 150,
		Restart:  &restartResult{Kind: "restart", WorkersS: 6, FirstPodCreatedS: 7, CaughtUpS: 12.5, PeakRSSMiB: 80},
		Failover: &restartResult{Kind: "failover", WorkersS: 21, FirstPodCreatedS: 20.5, CaughtUpS: 22, PeakRSSMiB: 81}}
	dirs := []string{growthRun(t, 50000, 3.2), writeGrowthRun(t, "", restarted), growthRun(t, 25000, 3.2)}
	var out strings.Builder

	g.Expect(growthReport(&out, dirs, 3.5)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("fitted: peak RSS 40.0 MiB + 3.20 KiB per pod; at the end 40.0 MiB + 2.70 KiB per pod; live heap 10.0 MiB + 1.50 KiB per pod; CPU 1.00 s per 1000 pods; settled after 6.67 s per 1000 pods"))
	lines := strings.Split(out.String(), "\n")
	g.Expect(lines[2]).To(HavePrefix("| 10000 (Nx10) |"), "smallest first")
	g.Expect(lines[4]).To(HavePrefix("| 50000 (Nx10) |"))
	g.Expect(out.String()).To(ContainSubstring("---:|\n| 10000 | restart | 6.0 | 7.0 | 12.5 | 80.0 |\n| 10000 | failover | 21.0 | 20.5 | 22.0 | 81.0 |\n\n"),
		"the takeovers' figures, only of the run that had them")

	err := growthReport(&out, dirs, 3.0)
	g.Expect(err).To(MatchError(ContainSubstring("peak RSS grows by 3.20 KiB per owned pod, over the guard's 3.00 KiB")))
	g.Expect(growthReport(&out, dirs, 0)).To(Succeed(), "no guard")
}

func TestGrowthReportRefusesRunsItCannotFit(t *testing.T) {
	g := NewWithT(t)
	ok := growthRun(t, 10000, 3)
	failed := writeGrowthRun(t, "failed", rssResult{OwnedPods: 25000, Error: "timed out"})
	foreign := writeGrowthRun(t, "foreign", rssResult{OwnedPods: 25000, ForeignPods: 10000})
	templated := writeGrowthRun(t, "templated", rssResult{OwnedPods: 25000, Template: "realistic"})
	var out strings.Builder

	g.Expect(growthReport(&out, []string{ok, failed}, 0)).To(MatchError(ContainSubstring("the memory scenario failed: timed out")))
	g.Expect(growthReport(&out, []string{ok, foreign}, 0)).To(MatchError(ContainSubstring("10000 foreign pods")))
	g.Expect(growthReport(&out, []string{ok, templated}, 0)).To(MatchError(ContainSubstring(`PodSet template "realistic", but`)))
	g.Expect(growthReport(&out, []string{ok, growthRun(t, 10000, 3)}, 0)).To(MatchError(ContainSubstring("both owned 10000 pods")))
	g.Expect(growthReport(&out, []string{ok}, 0)).To(MatchError(ContainSubstring("at least two")))
	g.Expect(growthReport(&out, []string{filepath.Join(t.TempDir(), "none")}, 0)).To(MatchError(os.ErrNotExist))
}
