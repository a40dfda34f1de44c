package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

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
// namespace's series only. A selector's own matchers on label are replaced
// by it when each can match namespace (label="namespace",
// label=~"namespace|other", label!="other"), and the query is refused
// (ErrOutsideNamespace) when one cannot. A query that does not parse, or
// that reads no series at all (it would pass or fail on no evidence), is
// refused too.
//
// Every selector of the syntax tree is visited, wherever it sits: also in
// the parameter of topk, bottomk, quantile and count_values, which
// prom-label-proxy's walk (EnforceNode) skips. Then the confined query is
// parsed again and each of its selectors checked to carry the matcher, so
// that a node a newer parser adds cannot carry a selector past it. The
// editing is done on Prometheus's own syntax tree and judged by its own
// matchers (labels.Matcher.Matches), with the rule prom-label-proxy's
// EnforceMatchers applies when told to refuse rather than replace. That
// package is not imported: for these ten lines it would bring Alertmanager's
// API client, go-openapi and mongo-driver (about 120 packages, 4 MB of the
// manager's binary) into the image that users' scanners read.
func Confine(query, label, namespace string) (string, error) {
	if label == "" || namespace == "" {
		return "", errors.New("no namespace to confine the query to")
	}
	expr, err := parser.ParseExpr(query)
	if err != nil {
		// The parser's message says where: "1:14: parse error: ...".
		return "", fmt.Errorf("the query does not parse: %w", err)
	}
	selectors := 0
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok || err != nil {
			return nil
		}
		selectors++
		vs.LabelMatchers, err = narrow(vs.LabelMatchers, label, namespace)
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case selectors == 0:
		return "", errors.New("the query reads no series: it would be judged on no evidence")
	}
	confined := expr.String()
	if err := checkConfined(confined, label, namespace); err != nil {
		return "", err
	}
	return confined, nil
}

// narrow returns a selector's matchers with label="namespace" in place of
// its own matchers on label. An own matcher that also matches namespace is
// dropped, as the added one narrows it; one that cannot means the selector
// reads other namespaces only, and is refused.
func narrow(matchers []*labels.Matcher, label, namespace string) ([]*labels.Matcher, error) {
	out := make([]*labels.Matcher, 0, len(matchers)+1)
	for _, m := range matchers {
		if m.Name != label {
			out = append(out, m)
			continue
		}
		if !m.Matches(namespace) {
			return nil, fmt.Errorf("%w: %s cannot select %q", ErrOutsideNamespace, m, namespace)
		}
	}
	return append(out, labels.MustNewMatcher(labels.MatchEqual, label, namespace)), nil
}

// checkConfined parses query and checks that every series selector in it
// has the one matcher label="namespace" on label.
func checkConfined(query, label, namespace string) error {
	expr, err := parser.ParseExpr(query)
	if err != nil {
		return fmt.Errorf("the confined query does not parse: %w", err)
	}
	var bad []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		n := 0
		for _, m := range vs.LabelMatchers {
			if m.Name == label {
				if m.Type != labels.MatchEqual || m.Value != namespace {
					n = -1
					break
				}
				n++
			}
		}
		if n != 1 {
			bad = append(bad, vs.String())
		}
		return nil
	})
	if len(bad) > 0 {
		return fmt.Errorf("%w: the selectors %s could not be confined", ErrOutsideNamespace, strings.Join(bad, ", "))
	}
	return nil
}
