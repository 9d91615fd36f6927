package testtools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrometheusConfig describes the Prometheus a test wants. Config, when set,
// is used verbatim as prometheus.yml; otherwise one is generated from the
// other fields.
type PrometheusConfig struct {
	Config string

	// ScrapeTargets are host:port targets scraped as job JobName, with
	// Labels added to every target.
	ScrapeTargets []string
	JobName       string // default "hccl_exporter"
	Labels        map[string]string
	// ScrapeInterval and EvaluationInterval default to 1s.
	ScrapeInterval     time.Duration
	EvaluationInterval time.Duration
	// RuleFiles are loaded by absolute path.
	RuleFiles []string
	// AlertmanagerURL, when set, is where firing alerts are sent.
	AlertmanagerURL string
}

// Prometheus is a running Prometheus server on loopback.
type Prometheus struct {
	URL     string // http://127.0.0.1:PORT
	Dir     string // holds prometheus.yml, data/ and the log
	Process *Process
	client  *http.Client
}

// StartPrometheus starts the real `prometheus` binary (installing the Debian
// package when missing) with a temporary storage directory on a free loopback
// port, and waits until it reports ready.
func StartPrometheus(t testing.TB, cfg PrometheusConfig) *Prometheus {
	t.Helper()
	bin := EnsureTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	text := cfg.Config
	if text == "" {
		text = cfg.render()
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatalf("write prometheus config: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := StartProcess(t, dir, bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		// The first alert is often evaluated before the Alertmanager is
		// discovered and then dropped; resend every second, not minute.
		"--rules.alert.resend-delay=1s",
	)
	prom := &Prometheus{URL: "http://" + addr, Dir: dir, Process: p, client: &http.Client{Timeout: 10 * time.Second}}
	waitHTTPReady(t, p, prom.URL+"/-/ready", 60*time.Second)
	return prom
}

func (c PrometheusConfig) render() string {
	scrape := orDuration(c.ScrapeInterval, time.Second)
	eval := orDuration(c.EvaluationInterval, time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n",
		model(scrape), model(scrape), model(eval))
	if len(c.RuleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for _, f := range c.RuleFiles {
			fmt.Fprintf(&b, "  - %s\n", strconv.Quote(f))
		}
	}
	if c.AlertmanagerURL != "" {
		u, err := url.Parse(c.AlertmanagerURL)
		host := c.AlertmanagerURL
		if err == nil && u.Host != "" {
			host = u.Host
		}
		fmt.Fprintf(&b, "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [%s]\n", strconv.Quote(host))
	}
	if len(c.ScrapeTargets) > 0 {
		job := c.JobName
		if job == "" {
			job = "hccl_exporter"
		}
		fmt.Fprintf(&b, "scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets:\n", strconv.Quote(job))
		for _, tg := range c.ScrapeTargets {
			fmt.Fprintf(&b, "          - %s\n", strconv.Quote(tg))
		}
		if len(c.Labels) > 0 {
			b.WriteString("        labels:\n")
			for k, v := range c.Labels {
				fmt.Fprintf(&b, "          %s: %s\n", k, strconv.Quote(v))
			}
		}
	}
	return b.String()
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// model formats d the way Prometheus configuration durations are written.
func model(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// Sample is one element of an instant query result (a vector element, or
// the single value of a scalar with no labels).
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Series is one element of a range query result.
type Series struct {
	Metric map[string]string
	Values []float64
}

type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// Query evaluates expr at the current time and returns its samples. An
// error (bad expression, server failure) is returned, not fatal, so callers
// can poll.
func (p *Prometheus) Query(expr string) ([]Sample, error) {
	data, err := p.api("/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	var qd queryData
	if err := json.Unmarshal(data, &qd); err != nil {
		return nil, fmt.Errorf("decode query data: %w", err)
	}
	switch qd.ResultType {
	case "vector":
		var res []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(qd.Result, &res); err != nil {
			return nil, fmt.Errorf("decode vector: %w", err)
		}
		out := make([]Sample, 0, len(res))
		for _, r := range res {
			v, err := parseValue(r.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Metric: r.Metric, Value: v})
		}
		return out, nil
	case "scalar":
		var res [2]any
		if err := json.Unmarshal(qd.Result, &res); err != nil {
			return nil, fmt.Errorf("decode scalar: %w", err)
		}
		v, err := parseValue(res[1])
		if err != nil {
			return nil, err
		}
		return []Sample{{Metric: map[string]string{}, Value: v}}, nil
	default:
		return nil, fmt.Errorf("query %q: unsupported result type %q", expr, qd.ResultType)
	}
}

// QueryRange evaluates expr over [start, end] at step, as a Grafana time
// series panel does.
func (p *Prometheus) QueryRange(expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	data, err := p.api("/api/v1/query_range", url.Values{
		"query": {expr},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', 3, 64)},
	})
	if err != nil {
		return nil, err
	}
	var qd queryData
	if err := json.Unmarshal(data, &qd); err != nil {
		return nil, fmt.Errorf("decode query data: %w", err)
	}
	if qd.ResultType != "matrix" {
		return nil, fmt.Errorf("query_range %q: unexpected result type %q", expr, qd.ResultType)
	}
	var res []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	if err := json.Unmarshal(qd.Result, &res); err != nil {
		return nil, fmt.Errorf("decode matrix: %w", err)
	}
	out := make([]Series, 0, len(res))
	for _, r := range res {
		s := Series{Metric: r.Metric}
		for _, pair := range r.Values {
			v, err := parseValue(pair[1])
			if err != nil {
				return nil, err
			}
			s.Values = append(s.Values, v)
		}
		out = append(out, s)
	}
	return out, nil
}

// Alert is an alert as Prometheus's /api/v1/alerts reports it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
	Value       string            `json:"value"`
}

// Alerts returns the pending and firing alerts.
func (p *Prometheus) Alerts() ([]Alert, error) {
	data, err := p.api("/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("decode alerts: %w", err)
	}
	return res.Alerts, nil
}

// WaitQuery polls expr until ok accepts its result or timeout passes, and
// returns the last result. It fails the test on timeout.
func (p *Prometheus) WaitQuery(t testing.TB, expr string, timeout time.Duration, ok func([]Sample) bool) []Sample {
	t.Helper()
	var (
		last    []Sample
		lastErr error
	)
	deadline := time.Now().Add(timeout)
	for {
		last, lastErr = p.Query(expr)
		if lastErr == nil && ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %q: condition not met after %s; last result %v, error %v", expr, timeout, last, lastErr)
		}
		if done, err := p.Process.Exited(); done {
			t.Fatalf("prometheus exited (%v):\n%s", err, p.Process.Output(4096))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitTargetsUp waits until every scraped target of job reports up == 1 and
// at least one target exists.
func (p *Prometheus) WaitTargetsUp(t testing.TB, job string, timeout time.Duration) {
	t.Helper()
	p.WaitQuery(t, fmt.Sprintf("up{job=%q}", job), timeout, func(s []Sample) bool {
		if len(s) == 0 {
			return false
		}
		for _, x := range s {
			if x.Value != 1 {
				return false
			}
		}
		return true
	})
}

func (p *Prometheus) api(path string, params url.Values) (json.RawMessage, error) {
	u := p.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s response: %w", path, err)
	}
	var ar apiResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		return nil, fmt.Errorf("decode %s response (status %s): %w: %s", path, resp.Status, err, tail(body, 512))
	}
	if ar.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", path, ar.ErrorType, ar.Error)
	}
	return ar.Data, nil
}

func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("parse sample value %q: %w", s, err)
	}
	return f, nil
}
