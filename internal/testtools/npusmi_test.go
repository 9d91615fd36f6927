package testtools

import (
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// TestNPUSMITableParses: the tables tests write are read by the exporter's
// own parser as the values they were built from, without a warning, and
// every line is as wide as npu-smi prints it.
func TestNPUSMITableParses(t *testing.T) {
	out := NPUSMITable([]NPUSMIChip{
		{NPU: 0, PowerW: 190.5, TempC: 46, BusID: "0000:C1:00.0", AICorePct: 40, HBMUsedMiB: 30000},
		{NPU: 1, Name: "910B4", PowerW: 95, TempC: 40, BusID: "0000:01:00.0", HBMUsedMiB: 3000, HBMTotalMiB: 32768},
	}, []NPUSMIProcess{{NPU: 0, PID: 4242, MemoryMiB: 27000}})
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if len(l) != 98 {
			t.Errorf("line %d is %d wide, npu-smi prints 98: %q", i+1, len(l), l)
		}
	}
	if !strings.Contains(out, "| No running processes found in NPU 1 ") {
		t.Errorf("NPU 1 has no process but no 'No running processes' line:\n%s", out)
	}
	snap, err := npusmi.Parse([]byte(out))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, out)
	}
	if len(snap.Warnings) > 0 {
		t.Errorf("warnings %v:\n%s", snap.Warnings, out)
	}
	if len(snap.Chips) != 2 || len(snap.Processes) != 1 {
		t.Fatalf("%d chips, %d processes; want 2, 1", len(snap.Chips), len(snap.Processes))
	}
	const mib = 1 << 20
	c0, c1 := snap.Chips[0], snap.Chips[1]
	for _, tc := range []struct {
		what      string
		got, want any
	}{
		{"chip 0 name", c0.Name, "910B3"}, {"chip 1 name", c1.Name, "910B4"},
		{"chip 0 bus", c0.BusID, "0000:C1:00.0"},
		{"chip 0 HBM used", c0.HBMUsedBytes, ascend.Value{V: 30000 * mib, OK: true}},
		{"chip 0 HBM total", c0.HBMTotalBytes, ascend.Value{V: 65536 * mib, OK: true}},
		{"chip 1 HBM total", c1.HBMTotalBytes, ascend.Value{V: 32768 * mib, OK: true}},
		{"chip 0 power", c0.PowerWatts, ascend.Value{V: 190.5, OK: true}},
		{"process pid", snap.Processes[0].PID, 4242},
		{"process NPU", snap.Processes[0].NPU, "0"},
		{"process memory", snap.Processes[0].MemoryBytes, ascend.Value{V: 27000 * mib, OK: true}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}
