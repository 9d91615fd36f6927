package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// selfAlerts are the shipped alerts about the exporter and its view of the
// node, not about the node's jobs and hardware: the demo's own setup must
// raise none of them.
var selfAlerts = regexp.MustCompile(`^(HCCLExporter.*|CANNLogTimezoneMismatch|HCCLLogsNotVisible|NPUHardwareProbeFailing)$`)

// TestDemoWarnsAboutNothingOfItsOwn runs `make demo`'s script as users do
// (scripts/demo.sh --serve: its flags, its procfs, its time zone) and the
// shipped rules in a real Prometheus that scrapes it. The demo's data shows
// a job in trouble (negative headroom, an EI0011), and those alerts go
// pending; but nothing about the exporter itself: no WARN or ERROR log line
// (such as "npu-smi lists pids of another pid namespace") and no self alert
// pending or firing (such as HCCLExporterNPUSMIForeignPIDNamespace).
func TestDemoWarnsAboutNothingOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds and runs the demo; skipped under -short")
	}
	dir := t.TempDir()
	port := testtools.FreePort(t)
	t.Setenv("DEMO_PORT", fmt.Sprint(port))
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	demo := testtools.StartProcess(t, dir, script, "--serve")
	rules := filepath.Join(dir, "hccl_exporter.rules.yml")
	if err := os.WriteFile(rules, alerts.Rules, 0o644); err != nil {
		t.Fatal(err)
	}
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets: []string{fmt.Sprintf("127.0.0.1:%d", port)},
		JobName:       "hccl_exporter",
		RuleFiles:     []string{rules},
	})
	// The script builds the exporter first: minutes on a loaded machine.
	prom.WaitTargetsUp(t, "hccl_exporter", 8*time.Minute)
	// Every source answered: npu-smi's table and its pid check, the detail
	// sweep, hccn_tool, the CANN logs (the demo's headroom).
	prom.WaitQuery(t, `hccl_exporter_npu_smi_foreign_pid_namespace == 0`, 60*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 })
	prom.WaitQuery(t, `count(ascend_npu_error_codes) == 8 and on () count(ascend_roce_link_up) == 8`, 90*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 })
	// The rules evaluate: the demo's job alert is pending (its for: holds it).
	prom.WaitQuery(t, `ALERTS{alertname="NPULinkSetupHeadroomLow"}`, 60*time.Second,
		func(s []testtools.Sample) bool { return len(s) > 0 })
	// A few more evaluations, for a self alert to show up if it would.
	time.Sleep(5 * time.Second)
	as, err := prom.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if selfAlerts.MatchString(a.Labels["alertname"]) {
			t.Errorf("the demo raises %s (%s) about itself: %v", a.Labels["alertname"], a.State, a.Labels)
		}
	}
	if done, err := demo.Exited(); done {
		t.Fatalf("the demo exited: %v", err)
	}
	out := demo.Output(1 << 20)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("the demo logs a warning about itself: %s", l)
		}
	}
	if !strings.Contains(out, "level=INFO") {
		t.Errorf("the demo's log has no INFO line: the scan reads the wrong output\n%s", out)
	}
}
