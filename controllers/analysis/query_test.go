package analysis

import (
	"errors"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	vars := Vars{Namespace: "shop", Name: "web", CanaryHash: "6d4f9c7b8", StableHash: "5c8b7f6d9", Interval: "1m"}
	for _, tc := range []struct {
		name, query, want, err string
	}{
		{name: "every placeholder",
			query: `sum(rate(http_requests_total{namespace="{{namespace}}",podset="{{name}}",controller_revision_hash="{{canaryHash}}",code=~"5.."}[{{interval}}])) / sum(rate(http_requests_total{controller_revision_hash="{{stableHash}}"}[{{interval}}]))`,
			want:  `sum(rate(http_requests_total{namespace="shop",podset="web",controller_revision_hash="6d4f9c7b8",code=~"5.."}[1m])) / sum(rate(http_requests_total{controller_revision_hash="5c8b7f6d9"}[1m]))`},
		{name: "spaces inside the braces", query: `up{pod=~"{{ name }}-.*"}`, want: `up{pod=~"web-.*"}`},
		{name: "no placeholder", query: `vector(1)`, want: `vector(1)`},
		{name: "an unknown name is named", query: `up{ns="{{ns}}",x="{{ revision }}"}`, err: "unknown placeholder {{ns}}, {{ revision }}: a query may use {{namespace}}, {{name}}, {{canaryHash}}, {{stableHash}}, {{interval}}"},
		{name: "a stray opening", query: `up{x="{{namespace"}`, err: `a "{{" or "}}" that is no placeholder`},
		{name: "a stray closing", query: `up{x="namespace}}"}`, err: `a "{{" or "}}" that is no placeholder`},
		{name: "Go template syntax is no placeholder", query: `up{x="{{.Namespace}}"}`, err: "unknown placeholder {{.Namespace}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(tc.query, vars)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Render(%q) = %q, %v; want the error %q", tc.query, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Render(%q) = %q, %v; want %q", tc.query, got, err, tc.want)
			}
		})
	}
}

func TestConfine(t *testing.T) {
	for _, tc := range []struct {
		name, query, want string
		outside           bool
		err               string
	}{
		{name: "a selector gets the namespace", query: `up`, want: `up{namespace="shop"}`},
		{name: "every selector of a ratio, and ranges",
			query: `sum(rate(http_requests_total{code=~"5.."}[1m])) / sum(rate(http_requests_total[1m]))`,
			want:  `sum(rate(http_requests_total{code=~"5..",namespace="shop"}[1m])) / sum(rate(http_requests_total{namespace="shop"}[1m]))`},
		{name: "a subquery", query: `max_over_time(rate(x[1m])[10m:1m])`, want: `max_over_time(rate(x{namespace="shop"}[1m])[10m:1m])`},
		{name: "a bare name matcher", query: `count({__name__=~".+"})`, want: `count({__name__=~".+",namespace="shop"})`},
		{name: "its own namespace is kept", query: `up{namespace="shop"}`, want: `up{namespace="shop"}`},
		{name: "a regular expression that matches it narrows to it", query: `up{namespace=~"shop|bank"}`, want: `up{namespace="shop"}`},
		{name: "match-all narrows to it", query: `up{namespace=~".*"}`, want: `up{namespace="shop"}`},
		{name: "excluding another namespace is allowed", query: `up{namespace!="bank"}`, want: `up{namespace="shop"}`},
		{name: "another namespace is refused", query: `up{namespace="bank"}`, outside: true},
		{name: "another namespace in one operand is refused", query: `up / up{namespace="bank"}`, outside: true},
		{name: "excluding its own namespace is refused", query: `up{namespace!="shop"}`, outside: true},
		{name: "a regular expression that misses it is refused", query: `up{namespace=~"ban.*"}`, outside: true},
		{name: "a negative regular expression that excludes it is refused", query: `up{namespace!~"sh.*"}`, outside: true},
		{name: "the refusal names the matcher", query: `rate(x{code="500"}[1m]) / rate(x{namespace=~"ban.*"}[1m])`,
			err: `the query selects series outside its PodSet's namespace: namespace=~"ban.*" cannot select "shop"`},
		{name: "a query that reads no series is refused", query: `vector(1) * time()`, err: "the query reads no series"},
		{name: "a selector in the parameter of topk is confined", query: `topk(scalar(x), y)`, want: `topk(scalar(x{namespace="shop"}), y{namespace="shop"})`},
		{name: "another namespace in the parameter of quantile is refused",
			query: `quantile(scalar(sum(secret{namespace="bank"})), vector(1))`, outside: true},
		{name: "the parameter of a nested aggregation", query: `quantile(0.5, quantile(scalar(a), b))`,
			want: `quantile(0.5, quantile(scalar(a{namespace="shop"}), b{namespace="shop"}))`},
		{name: "a join's other side", query: `quantile(scalar(vector(1) + on () group_left () {namespace="bank"}), vector(1))`, outside: true},
		{name: "the @ and offset modifiers keep their selector confined", query: `rate(x[5m] offset 1h) + x @ 1765000000`,
			want: `rate(x{namespace="shop"}[5m] offset 1h) + x{namespace="shop"} @ 1765000000.000`},
		{name: "a query that does not parse says where", query: `sum(rate(x[1m])`, err: "the query does not parse: 1:16: parse error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Confine(tc.query, "namespace", "shop")
			switch {
			case tc.outside:
				if !errors.Is(err, ErrOutsideNamespace) {
					t.Fatalf("Confine(%q) = %q, %v; want ErrOutsideNamespace", tc.query, got, err)
				}
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Confine(%q) = %q, %v; want the error %q", tc.query, got, err, tc.err)
				}
			case err != nil || got != tc.want:
				t.Fatalf("Confine(%q) = %q, %v; want %q", tc.query, got, err, tc.want)
			}
		})
	}
	if _, err := Confine("up", "namespace", ""); err == nil {
		t.Fatal("Confine to no namespace succeeded")
	}
}

func TestCheckConfinedFindsAnUnconfinedSelector(t *testing.T) {
	for _, q := range []string{`up`, `up{namespace="shop"} + up`, `up{namespace="shop",namespace="bank"}`, `up{namespace=~"shop"}`, `up{namespace="shop",namespace="shop"}`} {
		if err := checkConfined(q, "namespace", "shop"); !errors.Is(err, ErrOutsideNamespace) {
			t.Errorf("checkConfined(%q) = %v; want ErrOutsideNamespace", q, err)
		}
	}
	if err := checkConfined(`topk(scalar(x{namespace="shop"}), rate(y{namespace="shop"}[1m]))`, "namespace", "shop"); err != nil {
		t.Errorf("checkConfined of a confined query: %v", err)
	}
}
