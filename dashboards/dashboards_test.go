package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// wantUIDs are the dashboards' stable uids: links and provisioning use them.
var wantUIDs = map[string]string{
	"npu-memory-headroom.json": "hccl-npu-memory-headroom",
	"hccl-faults.json":         "hccl-faults",
	"hccl-settings.json":       "hccl-settings",
	"roce-network.json":        "hccl-roce-network",
	"npu-hardware-health.json": "hccl-npu-hardware-health",
}

// contractMetrics are the metric names of the design; a query naming
// anything else has a typo or depends on something the exporter lacks.
var contractMetrics = []string{
	"hccl_exporter_build_info", "hccl_exporter_collector_success", "hccl_exporter_collector_duration_seconds",
	"ascend_npu_info", "ascend_npu_health_status", "ascend_npu_hbm_used_bytes", "ascend_npu_hbm_total_bytes",
	"ascend_npu_memory_used_bytes", "ascend_npu_memory_total_bytes", "ascend_npu_hugepages_used_pages",
	"ascend_npu_hugepages_total_pages", "ascend_npu_aicore_utilization_ratio", "ascend_npu_power_watts",
	"ascend_npu_temperature_celsius", "ascend_npu_process_memory_bytes", "ascend_npu_processes", "hccl_exporter_npu_smi_up",
	"hccl_exporter_npu_smi_last_success_timestamp_seconds",
	"hccl_fault_events_total", "hccl_fault_last_event_timestamp_seconds", "hccl_plog_errors_total",
	"hccl_env_info", "hccl_env_buffsize_bytes", "hccl_env_rdma_qps_per_connection",
	"hccl_env_connect_timeout_seconds", "hccl_env_exec_timeout_seconds",
	"hccl_communicator_info", "hccl_communicator_ranks", "hccl_communicator_servers", "hccl_communicator_processes",
	"hccl_exporter_log_lines_total", "hccl_exporter_log_files_tracked", "hccl_exporter_log_read_errors_total",
	"hccl_link_setup_queue_pair_memory_bytes", "hccl_ccl_buffer_bytes", "hccl_link_setup_headroom_bytes",
	"hccl_link_setup_pending_queue_pairs", "hccl_link_setup_established_queue_pairs", "hccl_ccl_buffer_pending_bytes",
	"hccl_link_setup_queue_pair_observed_bytes", "hccl_link_setup_queue_pair_modelled_bytes", "hccl_link_setup_queue_pair_size_bytes",
	"hccl_communicator_established_queue_pairs", "hccl_communicator_ccl_buffer_bytes",
	"ascend_roce_link_up", "ascend_roce_link_down_events_total", "ascend_roce_network_health", "ascend_roce_active_queue_pairs",
	"ascend_roce_retransmitted_packets_total", "ascend_roce_qp_status_errors_total", "ascend_roce_rx_error_packets_total",
	"ascend_roce_tx_error_packets_total", "ascend_roce_out_of_order_packets_total", "ascend_roce_verification_errors_total",
	"ascend_roce_rx_pfc_packets_total", "ascend_roce_tx_pfc_packets_total", "ascend_roce_rx_cnp_packets_total",
	"ascend_roce_tx_cnp_packets_total", "ascend_roce_rx_packets_total", "ascend_roce_tx_packets_total",
	"hccl_exporter_hccn_tool_up", "hccl_exporter_hccn_tool_last_sweep_timestamp_seconds", "hccl_exporter_hccn_tool_last_sweep_duration_seconds",
	"hccl_exporter_hccn_tool_calls_total",
	"ascend_roce_optical_present", "ascend_roce_optical_temperature_celsius", "ascend_roce_optical_rx_power_watts",
	"ascend_roce_optical_tx_power_watts", "ascend_roce_tls_enabled", "ascend_roce_link_speed_bytes_per_second",
	"ascend_npu_pod_info", "hccl_process_info",
	"ascend_npu_chips", "ascend_npu_device_files", "ascend_npu_error_code", "ascend_npu_error_codes",
	"ascend_npu_hbm_ecc_errors_total", "ascend_npu_hbm_ecc_pages", "ascend_npu_hccs_healthy",
	"ascend_npu_hccs_errors_total", "ascend_npu_hccs_retries_total", "ascend_npu_hccs_lanes",
	"ascend_npu_hccs_transmit_packets_total", "ascend_npu_hccs_receive_packets_total",
	"ascend_npu_hccs_transmit_bytes_total", "ascend_npu_hccs_receive_bytes_total",
	"ascend_npu_hccs_chip_errors_total", "ascend_npu_hccs_chip_retries_total", "ascend_npu_hccs_min_lanes",
	"ascend_roce_receive_bytes_total", "ascend_roce_transmit_bytes_total", "ascend_roce_optical_rx_power_min_watts",
	"ascend_npu_pcie_errors_total", "ascend_npu_pcie_chip_errors_total", "ascend_npu_sio_errors_total", "ascend_npu_utilization_ratio",
	"ascend_npu_hbm_bandwidth_utilization_ratio", "ascend_npu_hbm_temperature_celsius",
	"hccl_exporter_npu_smi_detail_calls_total", "hccl_exporter_npu_smi_detail_last_sweep_timestamp_seconds", "hccl_exporter_npu_smi_detail_stale_chips",
}

var (
	// selectorRE finds the exporter's metrics in a query with their
	// matchers and range, if any.
	selectorRE = regexp.MustCompile(`\b((?:[a-z_]+:)?(?:hccl|ascend)_[a-zA-Z0-9_]*(?::[a-z_0-9]+)?)(\{[^}]*\})?(\[[^\]]*\])?`)
	matcherRE  = regexp.MustCompile(`\b(job|instance)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	// recordedRE matches a recording rule's series in a query.
	recordedRE = regexp.MustCompile(`\b([a-z_]+:[a-zA-Z0-9_]+:[a-zA-Z0-9_:]+)(\{[^}]*\})?`)
	recordRE   = regexp.MustCompile(`(?m)^\s+record: "?([^"\n]+)"?$`)
)

// recordedNames are the series the shipped rules record (a panel may chart
// them: the per-pod panels chart mixin/rules/pods.libsonnet's).
func recordedNames() []string {
	var out []string
	for _, m := range recordRE.FindAllSubmatch(alerts.Rules, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func loadAll(t *testing.T) map[string]Dashboard {
	t.Helper()
	all, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(wantUIDs) {
		t.Errorf("found dashboards %v, want %v", keys(all), wantUIDs)
	}
	out := map[string]Dashboard{}
	for name, b := range all {
		if !json.Valid(b) {
			t.Errorf("%s is not valid JSON", name)
			continue
		}
		d, err := Parse(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		out[name] = d
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestDashboardsImportable(t *testing.T) {
	uids := map[string]bool{}
	for name, d := range loadAll(t) {
		if want := wantUIDs[name]; d.UID != want {
			t.Errorf("%s: uid %q, want %q", name, d.UID, want)
		}
		if uids[d.UID] {
			t.Errorf("%s: duplicate uid %q", name, d.UID)
		}
		uids[d.UID] = true
		if d.Title == "" {
			t.Errorf("%s: no title", name)
		}
		if d.SchemaVersion < 39 {
			t.Errorf("%s: schemaVersion %d, want ≥ 39", name, d.SchemaVersion)
		}
		checkVariables(t, name, d.Templating.List)
		if len(d.Panels) == 0 {
			t.Errorf("%s: no panels", name)
		}
		ids := map[int]bool{}
		for _, p := range d.Panels {
			where := fmt.Sprintf("%s panel %q", name, p.Title)
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: id %d missing or not unique", where, p.ID)
			}
			ids[p.ID] = true
			if !slices.Contains([]string{"timeseries", "stat", "table"}, p.Type) {
				t.Errorf("%s: type %q, want timeseries, stat or table", where, p.Type)
			}
			checkDatasource(t, where, p.Datasource)
			if p.FieldConfig.Defaults.Unit == "" {
				t.Errorf("%s: no unit", where)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no queries", where)
			}
			if (p.Type == "stat" || p.Type == "table") != allInstant(p.Targets) {
				t.Errorf("%s: stat and table panels use instant queries, time series range queries", where)
			}
			for _, tg := range p.Targets {
				if strings.Contains(tg.Expr, `job=~"$job"`) && strings.Count(tg.Expr, `cluster=~"$cluster"`) != strings.Count(tg.Expr, `job=~"$job"`) {
					t.Errorf("%s target %s: a selector filters by $job but not by $cluster: %s", where, tg.RefID, tg.Expr)
				}
				checkDatasource(t, where+" target "+tg.RefID, tg.Datasource)
				checkExpr(t, where+" target "+tg.RefID, tg.Expr)
			}
		}
	}
}

func allInstant(ts []Target) bool {
	for _, t := range ts {
		if !t.Instant {
			return false
		}
	}
	return true
}

func checkVariables(t *testing.T, name string, vars []Variable) {
	t.Helper()
	byName := map[string]Variable{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	if ds, ok := byName["datasource"]; !ok || ds.Type != "datasource" || ds.Query != "prometheus" {
		t.Errorf("%s: no Prometheus datasource variable: %+v", name, ds)
	}
	if v, ok := byName["cluster"]; !ok || v.Type != "query" || v.AllValue != ".*" {
		t.Errorf("%s: no cluster query variable whose All matches series without the label: %+v", name, v)
	}
	for _, n := range []string{"job", "instance"} {
		v, ok := byName[n]
		if !ok || v.Type != "query" {
			t.Errorf("%s: no query variable %q", name, n)
			continue
		}
		checkDatasource(t, name+" variable "+n, v.Datasource)
		q, _ := json.Marshal(v.Query)
		if !strings.Contains(string(q), "label_values(hccl_exporter_build_info") {
			t.Errorf("%s: variable %s query %s does not list the exporter's targets", name, n, q)
		}
		if !strings.Contains(string(q), `cluster=~\"$cluster\"`) {
			t.Errorf("%s: variable %s does not follow $cluster: %s", name, n, q)
		}
		if n == "instance" && !strings.Contains(string(q), `job=~\"$job\"`) {
			t.Errorf("%s: instance variable does not follow $job: %s", name, q)
		}
	}
}

func checkDatasource(t *testing.T, where string, ds *DatasourceRef) {
	t.Helper()
	if ds == nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
		t.Errorf("%s: datasource %+v, want prometheus ${datasource}", where, ds)
	}
}

// checkExpr applies the query rules: every selector of the exporter's
// metrics filters on $job and $instance, counters only inside rate() or
// increase(), ranges are $__rate_interval or $__range, no hard-coded node.
func checkExpr(t errorer, where, expr string) {
	t.Helper()
	if strings.TrimSpace(expr) == "" {
		t.Errorf("%s: empty query", where)
		return
	}
	for _, m := range matcherRE.FindAllStringSubmatch(expr, -1) {
		if m[2] != "=~" || m[3] != "$"+m[1] {
			t.Errorf("%s: matcher %s hard-codes a value; use %s=~\"$%s\"", where, m[0], m[1], m[1])
		}
	}
	found := false
	// Series the shipped rules record (level:metric:operations): the rule
	// must exist, and the selector filters like the others.
	for _, m := range recordedRE.FindAllStringSubmatch(expr, -1) {
		found = true
		if !slices.Contains(recordedNames(), m[1]) {
			t.Errorf("%s: %s is recorded by no rule of alerts/hccl_exporter.rules.yml", where, m[1])
		}
		if !strings.Contains(m[2], `job=~"$job"`) || !strings.Contains(m[2], `instance=~"$instance"`) {
			t.Errorf("%s: selector %s%s lacks job=~\"$job\" and instance=~\"$instance\"", where, m[1], m[2])
		}
	}
	for _, loc := range selectorRE.FindAllStringSubmatchIndex(expr, -1) {
		if loc[0] > 0 && expr[loc[0]-1] == ':' {
			continue // part of a recorded name
		}
		found = true
		name := expr[loc[2]:loc[3]]
		if strings.Contains(name, ":") {
			if !recordedRE.MatchString(name) && !slices.Contains(recordedNames(), name) {
				t.Errorf("%s: %s is recorded by no rule of alerts/hccl_exporter.rules.yml", where, name)
			}
			continue // a recorded series, checked above
		}
		if !slices.Contains(contractMetrics, name) {
			t.Errorf("%s: metric %s is not one the exporter exports", where, name)
		}
		var matchers, rng string
		if loc[4] >= 0 {
			matchers = expr[loc[4]:loc[5]]
		}
		if loc[6] >= 0 {
			rng = expr[loc[6]:loc[7]]
		}
		if !strings.Contains(matchers, `job=~"$job"`) || !strings.Contains(matchers, `instance=~"$instance"`) {
			t.Errorf("%s: selector %s%s lacks job=~\"$job\" and instance=~\"$instance\"", where, name, matchers)
		}
		before := strings.TrimRight(expr[:loc[0]], " ")
		isCounter := strings.HasSuffix(name, "_total")
		inRate := strings.HasSuffix(before, "rate(") || strings.HasSuffix(before, "increase(")
		if isCounter && !inRate {
			t.Errorf("%s: counter %s not inside rate() or increase()", where, name)
		}
		if isCounter && rng != "[$__rate_interval]" && rng != "[$__range]" {
			t.Errorf("%s: counter %s range %q, want [$__rate_interval] or [$__range]", where, name, rng)
		}
		if !isCounter && rng != "" {
			t.Errorf("%s: gauge %s with range %s", where, name, rng)
		}
	}
	if !found {
		t.Errorf("%s: query %q uses none of the exporter's metrics", where, expr)
	}
}

// TestCheckExprCatchesMistakes makes sure the query rules can fail.
func TestCheckExprCatchesMistakes(t *testing.T) {
	for _, bad := range []string{
		`hccl_ccl_buffer_bytes`,
		`hccl_ccl_buffer_bytes{job=~"$job"}`,
		`hccl_ccl_buffer_bytes{job=~"$job",instance="node-1:9842"}`,
		`sum(hccl_fault_events_total{job=~"$job",instance=~"$instance"})`,
		`rate(hccl_fault_events_total{job=~"$job",instance=~"$instance"}[5m])`,
		`hccl_link_headroom_bytes{job=~"$job",instance=~"$instance"}`,
		`instance:hccl_link_setup_headroom_bytes:no_such_rule{job=~"$job",instance=~"$instance"}`,
		`instance:hccl_link_setup_headroom_bytes:capacity_min{job=~"$job"}`,
		`vector(1)`,
	} {
		ft := &fakeT{}
		checkExpr(ft, "test", bad)
		if !ft.failed {
			t.Errorf("checkExpr accepted %q", bad)
		}
	}
	ft := &fakeT{}
	checkExpr(ft, "test", `sum by (code) (increase(hccl_fault_events_total{code="EI0011",job=~"$job",instance=~"$instance"}[$__rate_interval]))`)
	if ft.failed {
		t.Errorf("checkExpr rejected a good query: %v", ft.msgs)
	}
}

// errorer is the part of testing.T the checks use, so tests can check them.
type errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

type fakeT struct {
	failed bool
	msgs   []string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// TestQueriesParse runs every expanded panel query through promtool, which
// parses it with Prometheus's own PromQL parser.
func TestQueriesParse(t *testing.T) {
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	qs, err := Queries("hccl_exporter", "127.0.0.1:9842")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("groups:\n  - name: dashboard-queries\n    rules:\n")
	for i, q := range qs {
		if strings.Contains(q.Expr, "$") {
			t.Errorf("%s %q: variable left after expansion: %s", q.Dashboard, q.Panel, q.Expr)
		}
		expr, _ := json.Marshal(q.Expr) // a JSON string is a YAML double-quoted string
		fmt.Fprintf(&b, "      - record: dashboard:query:q%d\n        expr: %s\n", i, expr)
	}
	file := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool rejects a dashboard query: %v\n%s", err, out)
	}
}

func TestQueries(t *testing.T) {
	qs, err := Queries("hccl_exporter", "10.0.0.1:9842")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, d := range loadAll(t) {
		for _, p := range d.Panels {
			total += len(p.Targets)
		}
	}
	if len(qs) != total {
		t.Errorf("Queries returned %d queries, the dashboards have %d targets", len(qs), total)
	}
	want := `instance=~"10\\.0\\.0\\.1:9842"`
	for _, q := range qs {
		if !strings.Contains(q.Expr, want) {
			t.Errorf("%s %q: expanded query lacks %s: %s", q.Dashboard, q.Panel, want, q.Expr)
			break
		}
	}
	if got := Expand(`rate(x[$__rate_interval]) + y[$__range]`, Vars{RateInterval: "2m", Range: "6h"}); got != `rate(x[2m]) + y[6h]` {
		t.Errorf("Expand intervals = %q", got)
	}
}
