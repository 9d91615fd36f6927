package dashboards

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestQueriesReturnDataOnContractMetrics runs every panel query in a real
// Prometheus that scrapes metrics shaped as the design names them
// (testdata/contract-metrics.prom) and loads the shipped rules: each query
// must parse, evaluate and return data. The end-to-end test does the same
// against the real exporter.
func TestQueriesReturnDataOnContractMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	exposition, err := os.ReadFile(filepath.Join("testdata", "contract-metrics.prom"))
	if err != nil {
		t.Fatal(err)
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(exposition)
	}))
	defer target.Close()
	rules := filepath.Join(t.TempDir(), "hccl_exporter.rules.yml")
	if err := os.WriteFile(rules, alerts.Rules, 0o644); err != nil {
		t.Fatal(err)
	}
	instance := strings.TrimPrefix(target.URL, "http://")
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets: []string{instance},
		JobName:       "hccl_exporter",
		Labels:        map[string]string{"cluster": "test"},
		RuleFiles:     []string{rules},
	})
	prom.WaitTargetsUp(t, "hccl_exporter", 60*time.Second)
	// rate() and increase() need two samples in their window.
	prom.WaitQuery(t, `count_over_time(hccl_exporter_build_info[1m])`, 30*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value >= 3 })

	qs, err := Queries("hccl_exporter", instance)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	for _, q := range qs {
		if q.Instant {
			s, err := prom.Query(q.Expr)
			if err != nil || len(s) == 0 {
				t.Errorf("%s %q %s: instant query returned %v, %v\n%s", q.Dashboard, q.Panel, q.RefID, s, err, q.Expr)
			}
			continue
		}
		s, err := prom.QueryRange(q.Expr, end.Add(-30*time.Second), end, time.Second)
		if err != nil || len(s) == 0 {
			t.Errorf("%s %q %s: range query returned %v, %v\n%s", q.Dashboard, q.Panel, q.RefID, s, err, q.Expr)
		}
	}

	// The namespace and pod filters: NPU 1 is held by train/job-a-0 (and
	// process 1595259 runs on it), NPU 0 by no pod. Filtering on another
	// namespace hides NPU 1's chip, its process and the process's settings
	// set and communicator; chips no pod holds stay.
	for _, tc := range []struct {
		namespace string
		panel     string
		label     string
		want      []string
	}{
		{"", "HBM used ratio per chip", "npu", []string{"0", "1"}},
		{"train", "HBM used ratio per chip", "npu", []string{"0", "1"}},
		{"infer", "HBM used ratio per chip", "npu", []string{"0"}},
		{"", "QPs per connection per settings set", "settings", []string{"a3c26ec6"}},
		{"infer", "QPs per connection per settings set", "settings", nil},
		{"", "Processes and nodes per settings set", "settings", []string{"a3c26ec6"}},
		{"infer", "Processes and nodes per settings set", "settings", nil},
		{"", "Communicators", "communicator", []string{"127.0.0.1%enp_60000_0_1765367607599032"}},
		{"infer", "Communicators", "communicator", nil},
	} {
		qs, err := QueriesWith(Vars{Job: "hccl_exporter", Instance: instance, Namespace: tc.namespace, RateInterval: "1m", Range: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, q := range qs {
			if q.Panel != tc.panel {
				continue
			}
			found = true
			s, err := prom.Query(q.Expr)
			if err != nil {
				t.Fatalf("%q: %v", q.Panel, err)
			}
			var got []string
			for _, x := range s {
				got = append(got, x.Metric[tc.label])
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("namespace %q, %q: %s %v, want %v\n%s", tc.namespace, tc.panel, tc.label, got, tc.want, q.Expr)
			}
		}
		if !found {
			t.Errorf("no panel %q", tc.panel)
		}
	}

	// The rules load and evaluate in a real Prometheus too.
	prom.WaitQuery(t, `communicator:hccl_settings_sets:count{communicator="127.0.0.1%enp_60000_0_1765367607599032"}`, 30*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 1 })
}
