package analysis

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
)

// A condition is a CEL expression over the variable `result`, the double
// the query returned: `result < 0.05`. As in Kubernetes' own CEL, <, <=, >
// and >= compare it with a number of any type (`result < 1`), and == and !=
// with a double only (`result == 0.0`).

// conditionCostLimit bounds the work of one evaluation. A condition is a
// comparison or a few; this is far above any such and far below what a
// loop over a comprehension could make the operator spend.
const conditionCostLimit = 10_000

// MaxConditionLength is the longest condition the API takes.
const MaxConditionLength = 1024

var conditionEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("result", cel.DoubleType),
		cel.CrossTypeNumericComparisons(true),
	)
})

// Condition is a compiled condition.
type Condition struct {
	expr    string
	program cel.Program
}

// String is the condition as written.
func (c *Condition) String() string { return c.expr }

// CompileCondition compiles expr, which must be a CEL expression of type
// bool over `result`. Its errors are CEL's, which say where.
func CompileCondition(expr string) (*Condition, error) {
	if len(expr) > MaxConditionLength {
		return nil, fmt.Errorf("longer than %d characters", MaxConditionLength)
	}
	env, err := conditionEnv()
	if err != nil {
		return nil, err
	}
	ast, issues := env.Compile(expr)
	if issues.Err() != nil {
		if msg := issues.Err().Error(); strings.Contains(msg, "for '_==_' applied to '(") || strings.Contains(msg, "for '_!=_' applied to '(") {
			// As in Kubernetes' own CEL, == and != take two numbers of one
			// type; <, <=, > and >= take any two.
			return nil, fmt.Errorf("%w\n(write whole numbers that == or != compare with result as doubles: 0.0, not 0)", issues.Err())
		}
		return nil, issues.Err()
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("%q is of type %s; a condition must be true or false", expr, ast.OutputType())
	}
	program, err := env.Program(ast, cel.CostLimit(conditionCostLimit))
	if err != nil {
		return nil, err
	}
	return &Condition{expr: expr, program: program}, nil
}

// Eval says whether result meets the condition.
func (c *Condition) Eval(result float64) (bool, error) {
	out, _, err := c.program.Eval(map[string]any{"result": result})
	if err != nil {
		return false, err
	}
	met, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%q gave %v, not true or false", c.expr, out)
	}
	return met, nil
}

// Conditions are a measurement's success and failure conditions; at least
// one is set.
type Conditions struct {
	Success, Failure *Condition
}

// CompileConditions compiles the two conditions an analysis gives; an
// empty one is absent. Its error names the condition at fault by the
// field's name (successCondition, failureCondition).
func CompileConditions(success, failure string) (Conditions, error) {
	var c Conditions
	var errs []error
	if success != "" {
		var err error
		if c.Success, err = CompileCondition(success); err != nil {
			errs = append(errs, fmt.Errorf("successCondition: %w", err))
		}
	}
	if failure != "" {
		var err error
		if c.Failure, err = CompileCondition(failure); err != nil {
			errs = append(errs, fmt.Errorf("failureCondition: %w", err))
		}
	}
	if success == "" && failure == "" {
		errs = append(errs, errors.New("neither successCondition nor failureCondition is set"))
	}
	return c, errors.Join(errs...)
}
