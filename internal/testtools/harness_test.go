package testtools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFreePort(t *testing.T) {
	a, b := FreePort(t), FreePort(t)
	if a <= 0 || b <= 0 {
		t.Fatalf("FreePort returned %d, %d", a, b)
	}
}

func TestRenderPrometheusConfig(t *testing.T) {
	got := PrometheusConfig{
		ScrapeTargets:      []string{"127.0.0.1:9000"},
		Labels:             map[string]string{"cluster": "c1"},
		EvaluationInterval: 500 * time.Millisecond,
		RuleFiles:          []string{"/x/rules.yml"},
		AlertmanagerURL:    "http://127.0.0.1:9093",
	}.render()
	for _, want := range []string{
		"scrape_interval: 1s", "evaluation_interval: 500ms", `- "/x/rules.yml"`,
		`targets: ["127.0.0.1:9093"]`, `job_name: "hccl_exporter"`, `- "127.0.0.1:9000"`, `cluster: "c1"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered config lacks %q:\n%s", want, got)
		}
	}
}

// TestPrometheusAlertmanagerWebhook proves the harness end to end: a real
// Prometheus evaluates an always-firing rule every second, sends it to a real
// Alertmanager, which posts it to the test's webhook; and a scrape of
// Prometheus itself is queryable.
func TestPrometheusAlertmanagerWebhook(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and Alertmanager")
	}
	hook := NewWebhook(t)
	am := StartAlertmanager(t, WebhookConfig(hook.URL))

	rules := filepath.Join(t.TempDir(), "always.rules.yml")
	if err := os.WriteFile(rules, []byte(`groups:
  - name: harness
    interval: 1s
    rules:
      - alert: HarnessAlwaysFiring
        expr: vector(1)
        labels:
          severity: info
        annotations:
          summary: the harness works
`), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := StartPrometheus(t, PrometheusConfig{
		RuleFiles:       []string{rules},
		AlertmanagerURL: am.URL,
	})

	got := hook.WaitForAlert(t, 60*time.Second, func(a WebhookAlert) bool {
		return a.Labels["alertname"] == "HarnessAlwaysFiring" && a.Status == "firing"
	})
	if got.Annotations["summary"] != "the harness works" || got.Labels["severity"] != "info" {
		t.Errorf("alert at webhook = %+v", got)
	}

	alerts, err := prom.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].State != "firing" {
		t.Errorf("Prometheus alerts = %+v, want one firing", alerts)
	}
	s, err := prom.Query(`vector(42)`)
	if err != nil || len(s) != 1 || s[0].Value != 42 {
		t.Errorf("Query(vector(42)) = %v, %v", s, err)
	}
	if _, err := prom.Query(`rate(`); err == nil {
		t.Error("Query of a bad expression returned no error")
	}
	now := time.Now()
	series, err := prom.QueryRange(`vector(1)`, now.Add(-10*time.Second), now, time.Second)
	if err != nil || len(series) != 1 || len(series[0].Values) == 0 {
		t.Errorf("QueryRange(vector(1)) = %v, %v", series, err)
	}
}

// TestPrometheusScrape checks the generated scrape configuration by letting
// Prometheus scrape itself with an extra target label.
func TestPrometheusScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	// A first Prometheus is the scrape target of the second.
	target := StartPrometheus(t, PrometheusConfig{})
	prom := StartPrometheus(t, PrometheusConfig{
		ScrapeTargets: []string{strings.TrimPrefix(target.URL, "http://")},
		JobName:       "target",
		Labels:        map[string]string{"cluster": "test"},
	})
	prom.WaitTargetsUp(t, "target", 60*time.Second)
	s := prom.WaitQuery(t, `prometheus_build_info{job="target",cluster="test"}`, 30*time.Second,
		func(s []Sample) bool { return len(s) == 1 })
	if s[0].Metric["instance"] != strings.TrimPrefix(target.URL, "http://") {
		t.Errorf("instance label = %q", s[0].Metric["instance"])
	}
}
