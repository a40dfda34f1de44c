// Package promapi is a small client of Prometheus's HTTP API
// (/api/v1), for the suites that run a real Prometheus against the
// operator: test/e2e and test/olm (build tag realnode).
package promapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Client queries the Prometheus whose API is at Base, such as
// "http://127.0.0.1:9090/api/v1". LogTail, when set, returns the last lines
// of its log, which are added to the error of a request that gets no
// answer.
type Client struct {
	Base    string
	LogTail func() string
}

// Get returns the data of a successful response to GET Base+path.
func (c *Client) Get(ctx context.Context, path string) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if c.LogTail != nil {
			return nil, fmt.Errorf("%w (Prometheus log:\n%s)", err, c.LogTail())
		}
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", path, body.Error)
	}
	return body.Data, nil
}

// decode unmarshals the data of GET Base+path into v.
func (c *Client) decode(ctx context.Context, path string, v any) error {
	data, err := c.Get(ctx, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Value is the single value of an instant query; an error when it returns
// no series or more than one.
func (c *Client) Value(ctx context.Context, query string) (float64, error) {
	var res struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := c.decode(ctx, "/query?query="+url.QueryEscape(query), &res); err != nil {
		return 0, err
	}
	if len(res.Result) != 1 {
		return 0, fmt.Errorf("%s: %d series", query, len(res.Result))
	}
	s, _ := res.Result[0].Value[1].(string)
	var v float64
	_, err := fmt.Sscan(s, &v)
	return v, err
}

// Target is an active scrape target.
type Target struct {
	ScrapePool string            `json:"scrapePool"`
	Labels     map[string]string `json:"labels"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

// Targets are the active scrape targets.
func (c *Client) Targets(ctx context.Context) ([]Target, error) {
	var res struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	err := c.decode(ctx, "/targets?state=active", &res)
	return res.ActiveTargets, err
}

// RuleGroup is a group of rules loaded from a rule file.
type RuleGroup struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Rules []Rule `json:"rules"`
}

// Rule is a rule of a RuleGroup.
type Rule struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Rules are the groups of alerting rules loaded.
func (c *Client) Rules(ctx context.Context) ([]RuleGroup, error) {
	var res struct {
		Groups []RuleGroup `json:"groups"`
	}
	err := c.decode(ctx, "/rules?type=alert", &res)
	return res.Groups, err
}

// Alert is an active alert: State is "pending" or "firing".
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Alerts are the active alerts.
func (c *Client) Alerts(ctx context.Context) ([]Alert, error) {
	var res struct {
		Alerts []Alert `json:"alerts"`
	}
	err := c.decode(ctx, "/alerts", &res)
	return res.Alerts, err
}
