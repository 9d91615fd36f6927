package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// migrationQueries returns the PromQL of docs/migrating.md's ```promql
// blocks, one query per line.
func migrationQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "migrating.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, blk := range strings.Split(string(b), "```promql\n")[1:] {
		body, _, _ := strings.Cut(blk, "```")
		for _, l := range strings.Split(body, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	if len(out) < 15 {
		t.Fatalf("docs/migrating.md: %d queries found, the scan is broken", len(out))
	}
	return out
}

// TestMigrationQueriesReturnData runs every query of docs/migrating.md in a
// real Prometheus that scrapes the real binary on the demo node (its fake
// npu-smi and hccn_tool, CANN logs and screen log) with two pods from a fake
// kubelet holding its chips and every family switch on, and loads the
// shipped rules (the per-pod recorded series): each must return data.
func TestMigrationQueriesReturnData(t *testing.T) {
	queries := migrationQueries(t)
	bin := buildExporter(t)
	dir := t.TempDir()
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	npuSMI, hccn := demoTool(t, dir, "npu-smi"), demoTool(t, dir, "hccn_tool")
	demo := filepath.Join("..", "..", "examples", "demo")
	var podA, podB []string
	for phy := range 8 {
		if phy < 4 {
			podA = append(podA, fmt.Sprintf("Ascend910-%d", phy))
		} else {
			podB = append(podB, fmt.Sprintf("Ascend910-%d", phy))
		}
	}
	kubelet := testtools.StartFakeKubelet(t,
		testtools.PodDevice{Namespace: "train", Pod: "job-a-0", Container: "pytorch", Resource: "huawei.com/Ascend910", DeviceIDs: podA},
		testtools.PodDevice{Namespace: "train", Pod: "job-b-0", Container: "pytorch", Resource: "huawei.com/Ascend910", DeviceIDs: podB},
	)
	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	exporter := testtools.StartProcess(t, dir, bin,
		"--web.listen-address="+addr,
		"--npusmi.path="+npuSMI,
		"--npuhealth.interval=10s",
		"--hccn.path="+hccn,
		"--hccn.interval=2s",
		"--cannlog.root="+filepath.Join(demo, "log"),
		"--cannlog.screen-log-path="+filepath.Join(demo, "screen", "*.log"),
		"--pods.kubelet-socket="+kubelet.Socket,
		"--pods.kubelet-interval=1s",
		"--npuhealth.hccs-links", "--npuhealth.hccs-traffic", "--npuhealth.engine-utilization", "--npuhealth.ecc-enable",
		"--npuhealth.voltage", "--npuhealth.aicore-frequency",
		"--hccn.optical-detail", "--hccn.packet-counters", "--hccn.link-up-count", "--cannlog.rejected-values",
	)
	rules := filepath.Join(dir, "hccl_exporter.rules.yml")
	if err := os.WriteFile(rules, alerts.Rules, 0o644); err != nil {
		t.Fatal(err)
	}
	compat := filepath.Join(dir, alerts.CompatRulesFile)
	if err := os.WriteFile(compat, alerts.CompatRules, 0o644); err != nil {
		t.Fatal(err)
	}
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets: []string{addr},
		JobName:       "hccl_exporter",
		RuleFiles:     []string{rules, compat},
	})
	if done, err := exporter.Exited(); done {
		t.Fatalf("exporter exited: %v", err)
	}
	prom.WaitTargetsUp(t, "hccl_exporter", 30*time.Second)
	// The detail sweep, the hccn sweep and the kubelet have answered, and
	// rate() has two samples of each counter.
	prom.WaitQuery(t, `count(npu_namespace_pod_container:ascend_npu_error_codes:join) and count(rate(ascend_npu_hccs_transmit_bytes_total[1m]))`, 60*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 8 })
	prom.WaitQuery(t, `count(rate(ascend_roce_transmit_bytes_total[1m]))`, 30*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 8 })
	for _, q := range queries {
		s, err := prom.Query(q)
		if err != nil {
			t.Errorf("docs/migrating.md query %q: %v", q, err)
			continue
		}
		if len(s) == 0 {
			t.Errorf("docs/migrating.md query %q returned no data on the demo node", q)
		}
	}
	t.Logf("%d queries of docs/migrating.md returned data", len(queries))

	// Every npu-exporter family's rewrite, per link and lane as the table
	// lists them.
	n := 0
	for _, f := range npuExporterFamilies(t) {
		if f.Kind != "promql" {
			continue
		}
		n++
		if s, err := prom.Query(f.What); err != nil || len(s) == 0 {
			t.Errorf("npu-exporter's %s: rewrite %q returned %v, %v on the demo node", f.Family, f.What, s, err)
		}
	}
	t.Logf("%d npu-exporter families' rewrites returned data", n)

	// Every series the compatibility rules record has data, and the
	// per-chip ones carry npu-exporter's id (the physical id) and
	// model_name on every chip, and its pod labels where a pod holds it.
	var file struct {
		Groups []struct {
			Rules []struct{ Record string }
		}
	}
	if err := yaml.Unmarshal(alerts.CompatRules, &file); err != nil {
		t.Fatal(err)
	}
	records := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			records++
			prom.WaitQuery(t, r.Record, 30*time.Second, func(s []testtools.Sample) bool { return len(s) > 0 })
		}
	}
	for _, q := range []string{
		`count(npu_chip_info_hbm_used_memory{id=~"[0-7]", model_name="910B3", pcie_bus_info!=""}) == 8`,
		`count(npu_chip_info_temperature{namespace="train", pod_name=~"job-[ab]-0", container_name="pytorch"}) == 8`,
		`count(npu_chip_info_utilization{id="5", pod_name="job-b-0"}) == 1`,
		`machine_npu_nums == 8`,
	} {
		if s, err := prom.Query(q); err != nil || len(s) != 1 {
			t.Errorf("compatibility rules: %s: %v, %v", q, s, err)
		}
	}
	t.Logf("%d npu-exporter compatibility records returned data", records)
}
