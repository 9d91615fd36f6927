package npuhealth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "910b", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseCommon: the AI Core frequencies of every NPU chip of a card,
// keyed by the Chip ID that leads each block; the MCU block is not a chip.
func TestParseCommon(t *testing.T) {
	// The real 910B1 capture (npu-smi 23.0.rc2): one chip and the MCU.
	m, err := ParseCommon(readFixture(t, "common.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if c := m["0"]; len(m) != 1 || c.RatedMHz != (ascend.Value{V: 1800, OK: true}) || c.CurrentMHz != (ascend.Value{V: 800, OK: true}) {
		t.Errorf("910B1 common = %+v, want chip 0 rated 1800, current 800", m)
	}
	// An A3 card (print_common_info layout): two dies, then the MCU.
	kv := func(l, v string) string { return "\t" + l + strings.Repeat(" ", 31-len(l)) + ": " + v + "\n" }
	a3 := kv("NPU ID", "0") + kv("Chip Count", "2") + "\n" +
		kv("Chip ID", "0") + kv("Aicore Freq(MHZ)", "1650") + kv("Aicore curFreq(MHZ)", "1650") + kv("Temperature(C)", "51") + "\n" +
		kv("Chip ID", "1") + kv("Aicore Freq(MHZ)", "1650") + kv("Aicore curFreq(MHZ)", "NA") + kv("Temperature(C)", "50") + "\n" +
		kv("Chip Name", "mcu") + kv("Temperature(C)", "38")
	m, err = ParseCommon([]byte(a3))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["0"].CurrentMHz != (ascend.Value{V: 1650, OK: true}) || m["1"].CurrentMHz.OK || m["1"].RatedMHz != (ascend.Value{V: 1650, OK: true}) {
		t.Errorf("A3 common = %+v", m)
	}
	for _, bad := range []string{"", "This device does not support querying common.\n", kv("Chip ID", "x") + kv("Aicore Freq(MHZ)", "1")} {
		if _, err := ParseCommon([]byte(bad)); err == nil {
			t.Errorf("ParseCommon(%q) accepted", bad)
		}
	}
}

func TestParseVolt(t *testing.T) {
	if v, ok, err := ParseVolt(readFixture(t, "volt.txt")); err != nil || !ok || v != 0.8 {
		t.Errorf("volt = %v %v %v, want 0.80 V", v, ok, err)
	}
	if _, ok, err := ParseVolt([]byte("\tVoltage(V)                     : NA\n")); err != nil || ok {
		t.Errorf("NA: ok %v err %v, want no value and no error", ok, err)
	}
	for _, bad := range []string{"", "\tVoltage(V) : -1\n", "\tVoltage(V) : high\n"} {
		if _, _, err := ParseVolt([]byte(bad)); err == nil {
			t.Errorf("ParseVolt(%q) accepted", bad)
		}
	}
}

func TestParseCardBoard(t *testing.T) {
	inv, err := ParseCardBoard(readFixture(t, "card-board.txt"))
	if err != nil || inv.SerialNumber != "102386371810N3000136" || inv.ProductName != "IT21PDDA01" {
		t.Errorf("card board = %+v, %v", inv, err)
	}
	// The chip-level board of a 910A prints neither: no value, no error.
	if inv, err := ParseCardBoard(readFixture(t, "board.txt")); err != nil || inv != (Inventory{}) {
		t.Errorf("chip-level board = %+v, %v", inv, err)
	}
	if _, err := ParseCardBoard([]byte("\tSerial Number : a\x01b\n")); err == nil {
		t.Error("a control character in a label value was accepted")
	}
}

// TestParityFamilies: with the parity queries asked (no Skip), the sweep
// exports voltage and AI Core frequencies per chip and ascend_npu_info's
// serial number and product name come from the card-level board query;
// with them skipped (the default), none of these calls is made.
func TestParityFamilies(t *testing.T) {
	c, f, _ := newFake(t)
	c.Sweep(context.Background())
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"ascend_npu_voltage_volts", 0.8},
		{"ascend_npu_aicore_frequency_hertz", 800e6},
		{"ascend_npu_aicore_rated_frequency_hertz", 1800e6},
	} {
		if v, ok := metrictest.Find(mfs, tc.name, metrictest.Labels("npu=2,chip=0")); !ok || v != tc.want {
			t.Errorf("%s{npu=2} = %v (%v), want %v", tc.name, v, ok, tc.want)
		}
	}
	if id := c.ids.Of(ascend.ChipID{NPU: "3", Chip: "0"}); id.SerialNumber != "102386371810N3000136" || id.ProductName != "IT21PDDA01" {
		t.Errorf("inventory of npu 3 = %q %q", id.SerialNumber, id.ProductName)
	}
	if n := f.count("-t board -i 3"); n != 2 {
		t.Errorf("board asked %d times for npu 3, want twice (chip-level VDie, card-level inventory)", n)
	}

	skipped, f2, _ := newFake(t)
	skipped.cfg.Skip = QueriesOff(map[string]bool{"ascend_npu_voltage_volts": true,
		"ascend_npu_aicore_frequency_hertz": true, "ascend_npu_aicore_rated_frequency_hertz": true})
	skipped.Sweep(context.Background())
	if n := f2.count("-t volt") + f2.count("-t common"); n != 0 {
		t.Errorf("%d volt/common calls with their families off", n)
	}
}
