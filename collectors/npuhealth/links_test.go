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
// 1-7 on A2, 2-7 on an A3 SuperPoD die, 0 on a 310P Duo's one link.
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
