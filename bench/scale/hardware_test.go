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
// 8-NPU 910B node; and the docs state H and the worst case it gives.
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
	want := hardwareSeries(8, hardwareChip{links: 7, pcie: true, engines: 6, hbmBandwidth: true}) + 3 - 1
	if got != want {
		t.Errorf("golden 910B node: %d series, the term gives %d", got, want)
	}
	per := sum(worstHardwareChip.families())
	if per != 59 || hardwareFixed != 58 {
		t.Errorf("worst chip %d series, fixed %d; docs/scale.md says 59 and 58", per, hardwareFixed)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"H = 59·X + E + 58", "1,946"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("docs/scale.md does not state %q", s)
		}
	}
	if h := hardwareSeries(32, worstHardwareChip); h != 1946 {
		t.Errorf("worst-case H = %d, docs say 1,946", h)
	}
}
