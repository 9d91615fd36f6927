package npuhealth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestLinkNumbers: the link label is the hardware link number npu-smi's
// `-t hccs -lane L` and npu-exporter use, not the array position: links
// 1-7 on A2, Atlas 800I A3 and Atlas 900 A3 SuperPoD (npu-smi prints 7
// links), 2-7 on an Atlas 9000 A3 SuperPoD die (6 links), 0 on a 310P
// Duo's one link: npu-smi chip_info.c:42-43 (env_offset 2 on Atlas 9000 A3
// SuperPoD main boards) and npu-exporter collector_for_hccs.go:160-166
// (hccsBeginIndex 1 for A2, A900 A3 SuperPoD and 800I A3, 2 for A9000 A3
// SuperPoD).
func TestLinkNumbers(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []int
	}{
		{7, []int{1, 2, 3, 4, 5, 6, 7}},
		{6, []int{2, 3, 4, 5, 6, 7}},
		{1, []int{0}},
	} {
		for i, w := range c.want {
			if got := LinkNumber(i, c.n); got != w {
				t.Errorf("LinkNumber(%d, %d) = %d, want %d", i, c.n, got, w)
			}
		}
	}
}

// TestLinkLabelMatchesLaneQuery: on the 910B capture, the series labelled
// link="1" carries what `npu-smi info -t hccs -i N -c C -lane 1` prints for
// that one link (the reference's -lane layout: scalars in brackets).
func TestLinkLabelMatchesLaneQuery(t *testing.T) {
	read := func(name string) HCCS {
		b, err := os.ReadFile(filepath.Join("testdata", "910b", name))
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseHCCS(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return h
	}
	all, lane1 := read("hccs.txt"), read("hccs-lane1.txt")
	if lane1.Links != 1 || all.Links != 7 {
		t.Fatalf("links: all %d, -lane 1 %d", all.Links, lane1.Links)
	}
	c := &Collector{}
	p := c.publish(&Sweep{Readings: []Reading{{NPU: "0", Chip: "0", HCCS: &all}}})
	byLink := map[string]map[string]float64{}
	var txBytes float64
	for _, m := range p.metrics {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		v := pb.GetCounter().GetValue() + pb.GetGauge().GetValue()
		switch m.Desc() {
		case hccsTxBytesDesc:
			txBytes = v
		case hccsTxDesc, hccsRxDesc, hccsLanesDesc, hccsRetriesDesc, hccsErrorsDesc:
			if byLink[labels["link"]] == nil {
				byLink[labels["link"]] = map[string]float64{}
			}
			byLink[labels["link"]][descName(m.Desc())] = v
		}
	}
	if _, ok := byLink["0"]; ok {
		t.Errorf("a series is labelled link=\"0\": array positions leak into the label")
	}
	if len(byLink) != 7 || byLink["7"] == nil {
		t.Fatalf("links exported: %v, want 1..7", byLink)
	}
	for desc, want := range map[*prometheus.Desc]float64{
		hccsTxDesc: lane1.TxPackets[0], hccsRxDesc: lane1.RxPackets[0], hccsLanesDesc: lane1.Lanes[0],
		hccsRetriesDesc: lane1.Retries[0], hccsErrorsDesc: lane1.Errors[0],
	} {
		if got := byLink["1"][descName(desc)]; got != want {
			t.Errorf("%s{link=\"1\"} = %v, -lane 1 prints %v", descName(desc), got, want)
		}
	}
	// npu-smi's hccs tx bytes line, summed, is the chip's total.
	want := 0.0
	for _, v := range all.TxPackets {
		want += v * 20
	}
	if txBytes != want || txBytes != 39860043360+28688790100+31775670400+24200088220+37464039800+33066600420+30045962200 {
		t.Errorf("ascend_npu_hccs_transmit_bytes_total = %v, want %v (the sum of hccs tx bytes)", txBytes, want)
	}
}

func descName(d *prometheus.Desc) string {
	_, rest, _ := strings.Cut(d.String(), `fqName: "`)
	name, _, _ := strings.Cut(rest, `"`)
	return name
}

// TestDocsNumberSuperPoDLinksAsTheVendor: wherever README, the docs or the
// metric help number HCCS links 2-7 for a SuperPoD, they say it of the Atlas
// 9000 A3 SuperPoD only: npu-smi and npu-exporter start the Atlas 900 A3
// SuperPoD at link 1 (TestLinkNumbers), as LinkNumber does for its 7 links.
func TestDocsNumberSuperPoDLinksAsTheVendor(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "README.md"), "collector.go")
	mentions := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, span := range []string{"2–7", "2-7"} {
				for rest := line; ; {
					j := strings.Index(rest, span)
					if j < 0 {
						break
					}
					// The clause the span belongs to: up to the next ; , ) or |.
					clause := rest[j:]
					if k := strings.IndexAny(clause, ";,)|"); k >= 0 {
						clause = clause[:k]
					}
					rest = rest[j+len(span):]
					if !strings.Contains(clause, "SuperPoD") {
						continue
					}
					mentions++
					if !strings.Contains(clause, "9000") {
						t.Errorf("%s:%d numbers links %s for %q: only the Atlas 9000 A3 SuperPoD starts at link 2", f, i+1, span, clause)
					}
				}
			}
		}
	}
	if mentions < 3 {
		t.Errorf("found %d mentions of SuperPoD link numbers: the scan is broken", mentions)
	}
}
