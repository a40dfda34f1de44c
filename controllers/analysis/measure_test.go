package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

func conditions(t *testing.T, success, failure string) Conditions {
	t.Helper()
	c, err := CompileConditions(success, failure)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func vector(values ...float64) model.Vector {
	v := model.Vector{}
	for i, f := range values {
		v = append(v, &model.Sample{Metric: model.Metric{"pod": model.LabelValue(rune('a' + i))}, Value: model.SampleValue(f)})
	}
	return v
}

func TestJudge(t *testing.T) {
	successOnly := conditions(t, "result < 0.05", "")
	failureOnly := conditions(t, "", "result > 0.2")
	both := conditions(t, "result < 0.05", "result > 0.2")
	for _, tc := range []struct {
		name    string
		value   model.Value
		c       Conditions
		phase   Phase
		shown   string
		message string
	}{
		{name: "one series that meets the success condition", value: vector(0.01), c: successOnly, phase: Successful, shown: "0.01", message: `0.01 met successCondition "result < 0.05"`},
		{name: "one series that misses the success condition", value: vector(0.1), c: successOnly, phase: Failed, shown: "0.1", message: `0.1 did not meet successCondition`},
		{name: "a scalar", value: &model.Scalar{Value: 0.01}, c: successOnly, phase: Successful, shown: "0.01"},
		{name: "failure condition only, not met", value: vector(0.1), c: failureOnly, phase: Successful, message: `0.1 did not meet failureCondition "result > 0.2"`},
		{name: "failure condition only, met", value: vector(0.3), c: failureOnly, phase: Failed, message: `0.3 met failureCondition "result > 0.2"`},
		{name: "both, failure met", value: vector(0.3), c: both, phase: Failed},
		{name: "both, success met", value: vector(0.01), c: both, phase: Successful},
		{name: "both, neither met", value: vector(0.1), c: both, phase: Inconclusive, message: "met neither successCondition"},
		{name: "+Inf is a value the conditions judge", value: vector(math.Inf(1)), c: successOnly, phase: Failed, shown: "+Inf"},
		{name: "-Inf is a value the conditions judge", value: vector(math.Inf(-1)), c: successOnly, phase: Successful, shown: "-Inf"},
		{name: "NaN is never a success", value: vector(math.NaN()), c: successOnly, phase: Inconclusive, shown: "NaN", message: "returned NaN"},
		{name: "NaN is never a failure either", value: vector(math.NaN()), c: failureOnly, phase: Inconclusive, shown: "NaN"},
		{name: "no series is never a success", value: vector(), c: successOnly, phase: Inconclusive, message: "returned no series"},
		{name: "no series under a failure condition only is no success either", value: vector(), c: failureOnly, phase: Inconclusive},
		{name: "several series are an error", value: vector(0.01, 0.02), c: successOnly, phase: Error, message: "returned 2 series"},
		{name: "a native histogram is an error", value: model.Vector{{Histogram: &model.SampleHistogram{Count: 1}}}, c: successOnly, phase: Error, message: "native histogram"},
		{name: "a range vector is an error", value: model.Matrix{{Values: []model.SamplePair{{Value: 0.01}}}}, c: successOnly, phase: Error, message: "range vector"},
		{name: "a string is an error", value: &model.String{Value: "0.01"}, c: successOnly, phase: Error, message: "a string"},
		{name: "nothing at all is an error", value: nil, c: successOnly, phase: Error},
		{name: "a condition that fails to evaluate is an error", value: vector(math.Inf(1)), c: conditions(t, "int(result) > 0", ""), phase: Error, message: `successCondition "int(result) > 0": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Judge(tc.value, tc.c)
			if m.Phase != tc.phase || (tc.shown != "" && m.Value != tc.shown) || !strings.Contains(m.Message, tc.message) {
				t.Fatalf("Judge = %+v; want phase %s, value %q, a message with %q", m, tc.phase, tc.shown, tc.message)
			}
		})
	}
}
