package main

import (
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
	for _, row := range summarise(phases, []shape{{1, 1000}, {1000, 1}}) {
		if row.Figure == "all pods created (s)" {
			direct[row.Shape] = row.Direct
		}
	}
	g.Expect(direct).To(Equal(map[string]float64{"1x1000": 3, "1000x1": 7}))
}
