package analysis

import (
	"strings"
	"testing"
)

func TestCompileCondition(t *testing.T) {
	for _, tc := range []struct {
		expr   string
		result float64
		met    bool
		err    string
	}{
		{expr: "result < 0.05", result: 0.01, met: true},
		{expr: "result < 0.05", result: 0.5},
		{expr: "result < 1", result: 0.5, met: true}, // an int literal compares with the double
		{expr: "result >= 0.99 && result <= 1", result: 0.995, met: true},
		{expr: "reslt < 0.05", err: "undeclared reference to 'reslt'"},
		{expr: "result <", err: "Syntax error"},
		{expr: "result + 1.0", err: "is of type double; a condition must be true or false"},
		{expr: "result < 0.05 " + strings.Repeat(" ", MaxConditionLength), err: "longer than 1024 characters"},
	} {
		c, err := CompileCondition(tc.expr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("CompileCondition(%q) = %v; want the error %q", tc.expr, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("CompileCondition(%q): %v", tc.expr, err)
		}
		if met, err := c.Eval(tc.result); err != nil || met != tc.met {
			t.Errorf("%q with result %v = %v, %v; want %v", tc.expr, tc.result, met, err, tc.met)
		}
	}
}

func TestCompileConditionsNamesTheField(t *testing.T) {
	for _, tc := range []struct{ success, failure, err string }{
		{success: "result <", err: "successCondition: "},
		{failure: "nope", err: "failureCondition: "},
		{err: "neither successCondition nor failureCondition is set"},
	} {
		if _, err := CompileConditions(tc.success, tc.failure); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("CompileConditions(%q, %q) = %v; want the error %q", tc.success, tc.failure, err, tc.err)
		}
	}
	c, err := CompileConditions("result < 0.05", "result > 0.2")
	if err != nil || c.Success == nil || c.Failure == nil {
		t.Fatalf("CompileConditions = %+v, %v", c, err)
	}
}

func TestConditionTypeChecks(t *testing.T) {
	for _, expr := range []string{"result.size > 1", "result + 1.0", "'a' + result", "result + 1 > 0.0"} {
		c, err := CompileCondition(expr)
		if err == nil {
			_, evalErr := c.Eval(0.5)
			t.Errorf("CompileCondition(%q) compiled; its evaluation: %v", expr, evalErr)
		}
	}
}

func TestEqualityWithAWholeNumberSaysHowToWriteIt(t *testing.T) {
	for _, expr := range []string{"result == 0", "1 != result"} {
		if _, err := CompileCondition(expr); err == nil || !strings.Contains(err.Error(), "as doubles: 0.0, not 0") {
			t.Errorf("CompileCondition(%q) = %v; want the hint to write a double", expr, err)
		}
	}
	c, err := CompileCondition("result == 0.0")
	if err != nil {
		t.Fatal(err)
	}
	if met, err := c.Eval(0); err != nil || !met {
		t.Errorf("result == 0.0 with 0 = %v, %v", met, err)
	}
}
