package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

func TestMain(m *testing.M) { testtools.Main(m) }

// The default set's cost per node, measured on the real binary: a change
// that adds default series fails here until the node's ceiling (budget.go,
// DESIGN.md's budgets: below npu-exporter's series on the same hardware)
// and docs/scale.md's tables are updated on purpose (`go run ./bench/scale
// -budget` prints them).
// familiesOff are families of the switched-off groups
// (each collector's FamilyGroups): none may show in a default run.
var familiesOff = []string{
	"ascend_npu_hccs_errors_total", "ascend_npu_hccs_retries_total", "ascend_npu_hccs_lanes",
	"ascend_npu_hccs_transmit_packets_total", "ascend_npu_hccs_receive_packets_total",
	"ascend_npu_utilization_ratio", "ascend_npu_hbm_ecc_enabled", "ascend_npu_voltage_volts",
	"ascend_npu_aicore_frequency_hertz", "ascend_roce_optical_tx_power_watts", "ascend_roce_optical_tx_bias_amperes",
	"ascend_roce_optical_vcc_volts", "ascend_roce_optical_rx_power_watts", "ascend_roce_rx_packets_total", "ascend_roce_tx_pause_frames_total",
	"ascend_roce_link_up_events_total", "hccl_env_values_rejected_total", "ascend_npu_pcie_errors_total",
}

// TestDefaultBudget runs the real binary with its defaults on the demo A2
// node, bench/gen's 16-chip node with 128 (process, communicator) pairs and
// the chart's A3 product (budget.go) and holds their series besides the
// runtime to the budgets; docs/scale.md's tables are the ones the
// measurement gives.
func TestDefaultBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exporter binary on three nodes: skipped under -short")
	}
	bin := testtools.BuildExporter(t, filepath.Join("..", ".."))
	var rs []*budgetResult
	for i, n := range budgetNodes() {
		r, err := measureBudget(bin, filepath.Join(t.TempDir(), string(rune('a'+i))), n)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d series (%v)", r.name, r.total, r.byGroup)
		for _, f := range familiesOff {
			if r.families[f] > 0 {
				t.Errorf("%s: %s is served by default (%d series)", r.name, f, r.families[f])
			}
		}
		if n.answers {
			for _, f := range []string{"ascend_npu_hccs_chip_errors_total", "ascend_npu_hccs_transmit_bytes_total", "ascend_roce_transmit_bytes_total", "ascend_npu_error_codes"} {
				if r.families[f] == 0 {
					t.Errorf("%s: default family %s missing: the node did not answer in full", r.name, f)
				}
			}
		}
		if got := r.total - r.byGroup["runtime"]; got > n.ceiling {
			t.Errorf("%s: %d series by default besides the runtime, budget %d", r.name, got, n.ceiling)
		}
		rs = append(rs, r)
	}
	// npuhealth's share on the A3 product is the term H of docs/scale.md
	// (the demo answers with one active code on NPU 6: 2 dies carry it).
	if got, want := rs[2].byGroup["npuhealth"], hardwareSeries(16, worstHardwareChip, false)+2; got != want {
		t.Errorf("A3 node: npuhealth serves %d series, H gives %d", got, want)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	if table := fleetTable(rs); !strings.Contains(string(doc), table) {
		t.Errorf("docs/scale.md's fleet table is not the measured one; put this in it (go run ./bench/scale -budget):\n%s", table)
	}
	if table := groupTable(rs); !strings.Contains(string(doc), table) {
		t.Errorf("docs/scale.md's series-by-collector table is not the measured one; put this in it (go run ./bench/scale -budget):\n%s", table)
	}
}

// TestToolRunsPerMinute counts the npu-smi and hccn_tool processes the real
// binary starts on the demo A2 node and the A3 product (runs.go): the
// sweeps ask each chip once per query and command, the table runs once per
// sweep, and docs/scale.md's table is the measured one.
func TestToolRunsPerMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exporter binary for two sweeps on two nodes: skipped under -short")
	}
	bin := testtools.BuildExporter(t, filepath.Join("..", ".."))
	var rs []*runsResult
	for i, n := range budgetNodes() {
		if !n.answers {
			continue
		}
		r, err := measureRuns(bin, filepath.Join(t.TempDir(), string(rune('a'+i))), n)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	// Per steady sweep: on the A2 node 6 chip-form queries (health, ecc,
	// pcie-err, hccs, memory, usages) on every chip (sio-info is asked
	// once and never again on 910B, which does not support it); on the A3
	// product health, hccs and sio-info on every die and the card form of
	// ecc, pcie-err, memory and usages once per NPU for its two dies. 5
	// hccn_tool commands per chip, 3 slow ones per chip every 10 minutes.
	for _, c := range []struct {
		r             *runsResult
		chips, detail int
	}{{rs[0], 8, 8 * 6}, {rs[1], 16, 16*3 + 8*4}} {
		if c.r.detail != c.detail || c.r.tableInSweep > 1 || c.r.hccn != 5*c.chips || c.r.hccnSlow != 3*c.chips {
			t.Errorf("%s: %+v, want %d detail calls, at most 1 table run, %d hccn_tool calls and %d slow ones per sweep",
				c.r.name, *c.r, c.detail, 5*c.chips, 3*c.chips)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	if table := runsTable(rs); !strings.Contains(string(doc), table) {
		t.Errorf("docs/scale.md's tool-runs table is not the measured one; put this in it (go run ./bench/scale -runs):\n%s", table)
	}
}
