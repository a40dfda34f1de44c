package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus-community/prom-label-proxy/injectproxy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Vars are the values a query's placeholders are rendered with.
type Vars struct {
	// Namespace and Name are the PodSet's.
	Namespace, Name string
	// CanaryHash and StableHash are the values of the
	// controller-revision-hash label on the pods of the revision being
	// rolled out and on those of the revision it replaces.
	CanaryHash, StableHash string
	// Interval is the time between two measurements, in PromQL's duration
	// form ("1m"), for a rate over what happened since the last one.
	Interval string
}

var placeholder = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// Placeholders are the names a query may use, in the order the docs list
// them.
var Placeholders = []string{"namespace", "name", "canaryHash", "stableHash", "interval"}

// Render replaces each {{placeholder}} of query with its value. A name that
// is not one of Placeholders is an error naming it, and so is a stray "{{"
// or "}}": a typo must not reach Prometheus as a selector that matches
// nothing, which would read as "no data".
func Render(query string, v Vars) (string, error) {
	values := map[string]string{
		"namespace": v.Namespace, "name": v.Name,
		"canaryHash": v.CanaryHash, "stableHash": v.StableHash, "interval": v.Interval,
	}
	var unknown []string
	out := placeholder.ReplaceAllStringFunc(query, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		value, ok := values[name]
		if !ok {
			unknown = append(unknown, m)
			return m
		}
		return value
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown placeholder %s: a query may use {{%s}}",
			strings.Join(unknown, ", "), strings.Join(Placeholders, "}}, {{"))
	}
	if strings.Contains(out, "{{") || strings.Contains(out, "}}") {
		return "", errors.New(`a "{{" or "}}" that is no placeholder: a query may use {{` +
			strings.Join(Placeholders, "}}, {{") + "}}")
	}
	return out, nil
}

// ErrOutsideNamespace is what Confine returns, wrapped, for a query whose
// own matchers on the namespace label select some other namespace.
var ErrOutsideNamespace = errors.New("the query selects series outside its PodSet's namespace")

// Confine returns query with the matcher label="namespace" added to each of
// its series selectors, so that Prometheus answers it from that
// namespace's series only. A selector that already has a matcher on label
// keeps it when it can match namespace (label="namespace",
// label=~"namespace|other", label!="other"), and the query is refused
// (ErrOutsideNamespace) when it cannot. A query that does not parse is
// refused too, with the parser's error.
func Confine(query, label, namespace string) (confined string, err error) {
	if label == "" || namespace == "" {
		return "", errors.New("no namespace to confine the query to")
	}
	// The enforcer panics on a node type it does not know, which a newer
	// parser could produce; a PodSet's query must not stop the operator.
	defer func() {
		if r := recover(); r != nil {
			confined, err = "", fmt.Errorf("the query could not be confined to its namespace: %v", r)
		}
	}()
	expr, err := parser.ParseExpr(query)
	if err != nil {
		// The parser's message says where: "1:14: parse error: ...".
		return "", fmt.Errorf("the query does not parse: %w", err)
	}
	enforcer := injectproxy.NewPromQLEnforcer(true, &labels.Matcher{Type: labels.MatchEqual, Name: label, Value: namespace})
	if err := enforcer.EnforceNode(expr); err != nil {
		if errors.Is(err, injectproxy.ErrIllegalLabelMatcher) {
			return "", fmt.Errorf("%w: %w", ErrOutsideNamespace, err)
		}
		return "", fmt.Errorf("the query could not be confined to its namespace: %w", err)
	}
	return expr.String(), nil
}
