package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestChipLossEndToEnd: the real binary on a node whose npu-smi table loses
// NPU 7 while its /dev/davinci7 stays. npu-smi's table must list the smaller
// node several runs in a row before it is taken (a cut output is not a lost
// chip); the next detail sweep then exports ascend_npu_chips 7 against 8
// device files, and NPUChipMissing fires in a Prometheus that loads the
// shipped rules (its for: shortened). The detail series of the fake 910B
// node (the demo's npu-smi) are scraped meanwhile.
func TestChipLossEndToEnd(t *testing.T) {
	bin := buildExporter(t)
	dir := t.TempDir()
	fake := demoTool(t, dir, "npu-smi")
	table := filepath.Join(dir, "npu-smi-info.txt")
	full := npuSMITable(e2eHBMUsedStartMiB)
	writeAtomic(t, table, full)
	t.Setenv("DEMO_NPU_SMI_OUTPUT", table)
	devfs := filepath.Join(dir, "dev")
	if err := os.MkdirAll(devfs, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := os.WriteFile(filepath.Join(devfs, fmt.Sprintf("davinci%d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	exporter := testtools.StartProcess(t, dir, bin,
		"--web.listen-address="+addr,
		"--npusmi.path="+fake,
		"--npusmi.min-interval=0s",
		"--npuhealth.interval=10s",
		"--path.devfs="+devfs,
		"--no-collector.cannlog", "--no-collector.headroom", "--no-collector.pods", "--no-collector.hccn",
	)
	rules := filepath.Join(dir, "hccl_exporter.rules.yml")
	if err := os.WriteFile(rules, shortenFor(t, alerts.Rules, "5s"), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets: []string{addr},
		JobName:       "hccl_exporter",
		RuleFiles:     []string{rules},
	})
	if done, err := exporter.Exited(); done {
		t.Fatalf("exporter exited: %v", err)
	}
	prom.WaitTargetsUp(t, "hccl_exporter", 30*time.Second)
	prom.WaitQuery(t, `ascend_npu_chips`, 30*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 8 })
	prom.WaitQuery(t, `ascend_npu_device_files`, 10*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 8 })
	// The demo's NPU 6 carries an active code, classed by the table built
	// into the binary (no --npuhealth.fault-code-file); every chip its HCCS
	// links.
	prom.WaitQuery(t, `ascend_npu_error_code{npu="6",code="80E01809",class="NotHandleFault"}`, 10*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 })
	prom.WaitQuery(t, `count(ascend_npu_hccs_min_lanes == 4)`, 10*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 8 })
	if s, err := prom.Query(`ALERTS{alertname="NPUChipMissing"}`); err != nil || len(s) != 0 {
		t.Errorf("NPUChipMissing on a whole node: %v, %v", s, err)
	}

	// NPU 7 leaves the table (its device rows and its process row).
	lost := dropNPU(t, full, 7)
	writeAtomic(t, table, lost)
	lostAt := time.Now()
	prom.WaitQuery(t, `ascend_npu_chips`, 60*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 7 })
	waitFor(t, 60*time.Second, func() bool {
		as, err := prom.Alerts()
		if err != nil {
			return false
		}
		for _, a := range as {
			if a.Labels["alertname"] == "NPUChipMissing" && a.State == "firing" && a.Labels["severity"] == "critical" {
				return true
			}
		}
		return false
	}, func() string { return "NPUChipMissing did not fire after NPU 7 left the table" })
	t.Logf("NPUChipMissing firing %s after the table lost a chip (detail interval 10s, for: 5s)", time.Since(lostAt).Round(time.Second))
	if s, err := prom.Query(`ascend_npu_error_codes{npu="7"}`); err != nil || len(s) != 0 {
		t.Errorf("the lost chip still has series: %v, %v", s, err)
	}
}

// dropNPU removes NPU n's two device rows, its process row and the
// separators after them from an npuSMITable.
func dropNPU(t *testing.T, table string, n int) string {
	t.Helper()
	lines := strings.SplitAfter(table, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, fmt.Sprintf("| %-5d 910B3", n)) {
			i += 2 // the chip row and the separator
			continue
		}
		if strings.HasPrefix(l, fmt.Sprintf("| %-7d 0  ", n)) {
			i++ // the separator
			continue
		}
		out = append(out, l)
	}
	got := strings.Join(out, "")
	if len(got) >= len(table) {
		t.Fatal("dropNPU removed nothing")
	}
	return got
}
