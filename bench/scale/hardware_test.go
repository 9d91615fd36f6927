package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHardwareTerm: the term H of docs/scale.md counts the families the
// npuhealth collector exports, checked against its golden exposition of an
// 8-NPU 910B node (the collector's whole output: every switch on); and the
// docs state the default H and the worst case it gives.
func TestHardwareTerm(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "collectors", "npuhealth", "testdata", "golden", "910b-8npu.prom"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			got++
		}
	}
	// 910B: 7 HCCS links, PCIe, no SIO; the golden node has 3 active codes
	// on NPU 3 and NPU 6's underflowed Next-Isolated count is not exported.
	want := hardwareSeries(8, hardwareChip{links: 7, pcie: true, engines: 6, hbmBandwidth: true}, true) + 3 - 1
	if got != want {
		t.Errorf("golden 910B node: %d series, the term gives %d", got, want)
	}
	per, fixed := sum(worstHardwareChip.families(false)), hardwareFixed(false)
	if per != 18 || fixed != 13 {
		t.Errorf("worst chip %d series by default, fixed %d; docs/scale.md says 18 and 13", per, fixed)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"H = 18·X + E + 13", "589"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("docs/scale.md does not state %q", s)
		}
	}
	if h := hardwareSeries(32, worstHardwareChip, false); h != 589 {
		t.Errorf("worst-case default H = %d, docs say 589", h)
	}
}
