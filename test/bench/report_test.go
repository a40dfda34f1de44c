package main

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
)

// The direct client's figure of a shape is its run with that shape's owners
// when there is one, and its run of the same number of bare pods otherwise.
func TestSummariseDirectFigurePerShape(t *testing.T) {
	g := NewWithT(t)
	phases := []phaseResult{
		{Kind: "direct", Shape: "1000x1-direct", Target: 1000, AllCreatedS: 3},
		{Kind: "direct", Shape: "1000x1", Owners: 1000, Replicas: 1, Target: 1000, AllCreatedS: 7},
		{Kind: "direct", Shape: "1000x1", Owners: 1000, Replicas: 1, Target: 1000, Error: "timed out", AllCreatedS: 99},
		{Kind: "podset", Shape: "1000x1", Owners: 1000, Replicas: 1, Target: 1000, AllCreatedS: 8},
		{Kind: "podset", Shape: "1x1000", Owners: 1, Replicas: 1000, Target: 1000, AllCreatedS: 4},
	}
	direct := map[string]float64{}
	for _, row := range summarise(phases, []shape{{owners: 1, replicas: 1000}, {owners: 1000, replicas: 1}}) {
		if row.Figure == "all pods created (s)" {
			direct[row.Shape] = row.Direct
		}
	}
	g.Expect(direct).To(Equal(map[string]float64{"1x1000": 3, "1000x1": 7}))
}

// The chart shows the five times the targets judge, for every shape, and
// none of the other figures in seconds (CPU, per-owner latencies, the
// scale-down's parts), which crowded its labels.
func TestChartShowsTheJudgedTimesOfEveryShape(t *testing.T) {
	g := NewWithT(t)
	var charted []string
	for _, row := range chartRows(summarise(nil, []shape{{owners: 1, replicas: 1000}, {owners: 100, replicas: 10}})) {
		charted = append(charted, row.Shape+" "+row.Figure)
	}
	var want []string
	for _, s := range []string{"1x1000", "100x10"} {
		for _, f := range []string{"all pods created (s)", "all pods bound to a node (s)", "all pods Ready (s)", "status caught up (s)", "scale down by half (s)"} {
			want = append(want, s+" "+f)
		}
	}
	g.Expect(charted).To(Equal(want))
	tabled := map[string]bool{}
	for _, f := range figures {
		tabled[f.name] = true
	}
	for name := range chartedFigures {
		g.Expect(tabled).To(HaveKey(name), "a charted figure the table no longer has")
	}
}

// A sequential shape has no direct floor: the bare pods' run of the same
// count does not stand for it.
func TestSummariseSequentialShapeHasNoDirectFigure(t *testing.T) {
	g := NewWithT(t)
	seq := shape{owners: 100, replicas: 10, sequential: true}
	g.Expect(seq.String()).To(Equal("100x10-seq"))
	g.Expect(seq.clientWidth()).To(Equal(1))
	phases := []phaseResult{
		{Kind: "direct", Shape: "1000x1-direct", Target: 1000, AllCreatedS: 3, PodStartupP50S: 1},
		{Kind: "podset", Shape: "100x10-seq", Owners: 100, Replicas: 10, Sequential: true, Target: 1000, AllCreatedS: 8, PodStartupP50S: 2},
		{Kind: "replicaset", Shape: "100x10-seq", Owners: 100, Replicas: 10, Sequential: true, Target: 1000, AllCreatedS: 4, PodStartupP50S: 1},
	}
	rows := map[string]medianRow{}
	for _, row := range summarise(phases, []shape{seq}) {
		rows[row.Figure] = row
	}
	g.Expect(rows["all pods created (s)"].Direct).To(BeZero(), "no direct run stands for it")
	_, err := json.Marshal(rows)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows["per pod: created to Ready, p50 (s)"].Ratio).To(Equal(2.0))
}

// TestViolationsCheckTheWarmUp: a PodSet warm-up phase is held to the same
// counts as a measured one, though its figures are in no median.
func TestViolationsCheckTheWarmUp(t *testing.T) {
	g := NewWithT(t)
	ok := phaseResult{Kind: "podset", Shape: "100x10", Run: 1, Target: 1000, Created: 1000, MaxLive: 1000}
	g.Expect(violations(report{Phases: []phaseResult{ok}})).To(BeEmpty())

	warmUp := ok
	warmUp.Run, warmUp.Overshoot, warmUp.MaxLive = 0, 3, 1003
	g.Expect(violations(report{WarmUp: []phaseResult{warmUp}, Phases: []phaseResult{ok}})).To(ConsistOf(ContainSubstring("run 0: overshoot 3")))

	rsWarmUp := warmUp
	rsWarmUp.Kind = "replicaset"
	g.Expect(violations(report{WarmUp: []phaseResult{rsWarmUp}, Phases: []phaseResult{ok}})).To(BeEmpty(), "the ReplicaSet is the reference")
}
