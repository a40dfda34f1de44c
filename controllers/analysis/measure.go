package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Phase is the verdict on one measurement.
type Phase string

const (
	// Successful: the value met the success condition, or did not meet the
	// failure condition when only that is given.
	Successful Phase = "Successful"
	// Failed: the value met the failure condition, or did not meet the
	// success condition when only that is given.
	Failed Phase = "Failed"
	// Inconclusive: there was no value to judge (no series, or NaN), or the
	// value met neither of the two conditions.
	Inconclusive Phase = "Inconclusive"
	// Error: no value could be had: Prometheus failed, timed out or could
	// not be reached, the query was refused, or it returned something that
	// is not one number (several series, a range vector, a string).
	Error Phase = "Error"
)

// Measurement is one measurement and its verdict.
type Measurement struct {
	Phase Phase
	// Value is the number the query returned, as Prometheus writes it
	// ("0.0123", "NaN", "+Inf"); empty when it returned none.
	Value string
	// Message says why the verdict is what it is.
	Message string
}

// Querier sends a query to Prometheus, confined to namespace. Prometheus
// is the one the manager uses; tests give their own.
type Querier interface {
	Query(ctx context.Context, namespace, query string) (model.Value, error)
}

// Bounds of a Measurement's Value and Message, which PodSet status shows.
const (
	MaxValueLength   = 64
	MaxMessageLength = 512
)

// Measure takes one measurement: it sends query to q for namespace and
// judges the answer. Its value and message are cut to MaxValueLength and
// MaxMessageLength: Prometheus's errors and the conditions can be longer.
func Measure(ctx context.Context, q Querier, namespace, query string, c Conditions) Measurement {
	var m Measurement
	if v, err := q.Query(ctx, namespace, query); err != nil {
		m = Measurement{Phase: Error, Message: describeQueryError(err)}
	} else {
		m = Judge(v, c)
	}
	m.Value, m.Message = truncate(m.Value, MaxValueLength), truncate(m.Message, MaxMessageLength)
	return m
}

// truncate cuts s to at most limit bytes, on a rune boundary, marking the
// cut with "...".
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Judge turns a query's answer into a measurement. Only a single number is
// judged by the conditions: an instant vector of one sample, or a scalar.
func Judge(v model.Value, c Conditions) Measurement {
	value, m, ok := single(v)
	if !ok {
		return m
	}
	m = Measurement{Value: formatValue(value)}
	if math.IsNaN(value) {
		m.Phase, m.Message = Inconclusive, "the query returned NaN (a ratio over no requests is 0/0)"
		return m
	}
	if c.Failure != nil {
		met, err := c.Failure.Eval(value)
		if err != nil {
			return Measurement{Phase: Error, Value: m.Value, Message: fmt.Sprintf("failureCondition %q: %v", c.Failure, err)}
		}
		if met {
			m.Phase, m.Message = Failed, fmt.Sprintf("%s met failureCondition %q", m.Value, c.Failure)
			return m
		}
	}
	if c.Success == nil {
		m.Phase, m.Message = Successful, fmt.Sprintf("%s did not meet failureCondition %q", m.Value, c.Failure)
		return m
	}
	met, err := c.Success.Eval(value)
	switch {
	case err != nil:
		return Measurement{Phase: Error, Value: m.Value, Message: fmt.Sprintf("successCondition %q: %v", c.Success, err)}
	case met:
		m.Phase, m.Message = Successful, fmt.Sprintf("%s met successCondition %q", m.Value, c.Success)
	case c.Failure != nil:
		m.Phase, m.Message = Inconclusive, fmt.Sprintf("%s met neither successCondition %q nor failureCondition %q", m.Value, c.Success, c.Failure)
	default:
		m.Phase, m.Message = Failed, fmt.Sprintf("%s did not meet successCondition %q", m.Value, c.Success)
	}
	return m
}

// single returns the one number in v, or the measurement that says why
// there is none.
func single(v model.Value) (float64, Measurement, bool) {
	switch v := v.(type) {
	case *model.Scalar:
		return float64(v.Value), Measurement{}, true
	case model.Vector:
		switch {
		case len(v) == 0:
			return 0, Measurement{Phase: Inconclusive, Message: "the query returned no series"}, false
		case len(v) > 1:
			return 0, Measurement{Phase: Error, Message: fmt.Sprintf(
				"the query returned %d series, and a condition judges one number: aggregate them (sum, max, avg ... by nothing)", len(v))}, false
		case v[0].Histogram != nil:
			return 0, Measurement{Phase: Error, Message: "the query returned a native histogram, not a number: take histogram_quantile, histogram_count or histogram_sum of it"}, false
		}
		return float64(v[0].Value), Measurement{}, true
	case model.Matrix:
		return 0, Measurement{Phase: Error, Message: "the query returned a range vector, not a number: wrap its range selector in a function such as rate or avg_over_time"}, false
	case *model.String:
		return 0, Measurement{Phase: Error, Message: "the query returned a string, not a number"}, false
	default:
		return 0, Measurement{Phase: Error, Message: fmt.Sprintf("the query returned %v, not a number", v)}, false
	}
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// describeQueryError says what went wrong with a query in the words of
// the one who reads the PodSet's status.
func describeQueryError(err error) string {
	var apiErr *promv1.Error
	var netErr net.Error
	switch {
	case errors.Is(err, ErrOutsideNamespace):
		return "refused: " + err.Error()
	case errors.Is(err, ErrWarnings):
		return err.Error()
	case errors.As(err, &apiErr):
		return fmt.Sprintf("Prometheus answered with an error (%s): %s", apiErr.Type, strings.TrimSpace(apiErr.Msg))
	case errors.Is(err, context.DeadlineExceeded):
		return "Prometheus did not answer in time: " + err.Error()
	case errors.As(err, &netErr):
		return "Prometheus could not be reached: " + err.Error()
	}
	return err.Error()
}
