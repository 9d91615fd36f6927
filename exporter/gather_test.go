package exporter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	dto "github.com/prometheus/client_model/go"
	gproto "google.golang.org/protobuf/proto"
)

// mixedNode returns the metrics of a node-like scrape: families of very
// different sizes sent interleaved and out of order (as collectors send
// them), a counter, a family with a constant label, and a family whose
// metrics each carry a Desc of their own (a collector that builds its Desc
// per metric) so that it spreads over several registries.
func mixedNode(seed uint64) []prometheus.Metric {
	rng := rand.New(rand.NewPCG(seed, 1))
	var ms []prometheus.Metric
	sizes := []int{1792, 512, 512, 512, 512, 160, 64, 64, 52, 32, 32, 5, 1}
	descs := make([]*prometheus.Desc, len(sizes))
	for i := range sizes {
		descs[i] = prometheus.NewDesc(fmt.Sprintf("node_family_%02d", i), "Family "+strconv.Itoa(i)+".",
			[]string{"pid", "variable"}, prometheus.Labels{"node": "n1"})
	}
	counter := prometheus.NewDesc("node_events_total", "Events.", []string{"code"}, nil)
	for i, n := range sizes {
		for j := 0; j < n; j++ {
			ms = append(ms, prometheus.MustNewConstMetric(descs[i], prometheus.GaugeValue, float64(j),
				strconv.Itoa(300000+j%64), "V"+strconv.Itoa(j/64)))
		}
	}
	for j := 0; j < 40; j++ {
		ms = append(ms, prometheus.MustNewConstMetric(counter, prometheus.CounterValue, float64(j), "EI"+strconv.Itoa(1000+j)))
		perMetric := prometheus.NewDesc("node_split_family", "Split.", []string{"chip"}, nil)
		ms = append(ms, prometheus.MustNewConstMetric(perMetric, prometheus.GaugeValue, float64(j), strconv.Itoa(j)))
	}
	rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	return ms
}

// gatherOne is the reference: every metric through one stock registry.
func gatherOne(t *testing.T, own []prometheus.Collector, ms []prometheus.Metric) ([]*dto.MetricFamily, error) {
	t.Helper()
	reg := prometheus.NewRegistry()
	for _, c := range own {
		reg.MustRegister(c)
	}
	reg.MustRegister(metricSlice(ms))
	return reg.Gather()
}

func sameFamilies(t *testing.T, got, want []*dto.MetricFamily) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d families, want %d", len(got), len(want))
	}
	for i := range want {
		if !gproto.Equal(got[i], want[i]) {
			t.Fatalf("family %d differs:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

func TestShardedGatherEqualsOneRegistry(t *testing.T) {
	own := []prometheus.Collector{versioncollector.NewCollector(Namespace)}
	for seed := uint64(1); seed <= 3; seed++ {
		ms := mixedNode(seed)
		want, err := gatherOne(t, own, ms)
		if err != nil {
			t.Fatal(err)
		}
		for _, shards := range []int{1, 2, 3, 4, 7} {
			t.Run(fmt.Sprintf("seed%d/shards%d", seed, shards), func(t *testing.T) {
				got, err := shardedGather(own, ms, shards)
				if err != nil {
					t.Fatal(err)
				}
				sameFamilies(t, got, want)
			})
		}
	}
}

func TestShardedGatherChecksAcrossRegistries(t *testing.T) {
	// One family, a Desc per metric: its metrics land in different
	// registries, none of which sees the others' duplicates or help.
	desc := func(help string) *prometheus.Desc {
		return prometheus.NewDesc("dup_value", help, []string{"chip"}, nil)
	}
	gauge := func(d *prometheus.Desc, v float64, chip string) prometheus.Metric {
		return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, chip)
	}
	tests := []struct {
		name    string
		ms      []prometheus.Metric
		wantErr string
		want    []string // chip label of each metric kept, in order
	}{
		{"duplicate label set", []prometheus.Metric{gauge(desc("h"), 1, "0"), gauge(desc("h"), 2, "1"), gauge(desc("h"), 3, "0")},
			"was collected before with the same name and label values", []string{"0", "1"}},
		{"help differs", []prometheus.Metric{gauge(desc("h"), 1, "0"), gauge(desc("other"), 2, "1")},
			`has help "other" but should have "h"`, []string{"0"}},
		{"type differs", []prometheus.Metric{gauge(desc("h"), 1, "0"),
			prometheus.MustNewConstMetric(desc("h"), prometheus.CounterValue, 2, "1")}, "is both a", []string{"0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, refErr := gatherOne(t, nil, tc.ms)
			if refErr == nil {
				t.Fatal("one registry accepts these metrics: the case tests nothing")
			}
			got, err := shardedGather(nil, tc.ms, len(tc.ms))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
			if len(got) != 1 {
				t.Fatalf("got %d families, want 1", len(got))
			}
			var chips []string
			for _, m := range got[0].Metric {
				chips = append(chips, m.Label[0].GetValue())
			}
			if !slices.Equal(chips, tc.want) {
				t.Fatalf("kept chips %v, want %v", chips, tc.want)
			}
		})
	}
}

func TestSplitByFamilyKeepsFamiliesWholeAndBalanced(t *testing.T) {
	ms := mixedNode(7)
	for _, n := range []int{2, 3, 4} {
		parts := splitByFamily(ms, n)
		if len(parts) != n {
			t.Fatalf("%d parts, want %d", len(parts), n)
		}
		where := map[*prometheus.Desc]int{}
		total, largest, smallest := 0, 0, len(ms)
		for p, part := range parts {
			total += len(part)
			largest, smallest = max(largest, len(part)), min(smallest, len(part))
			for _, m := range part {
				if q, ok := where[m.Desc()]; ok && q != p {
					t.Fatalf("a Desc's metrics are in parts %d and %d", q, p)
				}
				where[m.Desc()] = p
			}
			// The order of ms is kept within a part.
			pos := make(map[prometheus.Metric]int, len(ms))
			for i, m := range ms {
				pos[m] = i
			}
			if !slices.IsSortedFunc(part, func(a, b prometheus.Metric) int { return pos[a] - pos[b] }) {
				t.Fatalf("part %d is not in the order of the metrics", p)
			}
		}
		if total != len(ms) {
			t.Fatalf("parts hold %d metrics, want %d", total, len(ms))
		}
		// The largest family (1,792) bounds the imbalance.
		if largest-smallest > 1792 {
			t.Fatalf("parts of %d and %d metrics", largest, smallest)
		}
		t.Logf("%d parts: largest %d, smallest %d", n, largest, smallest)
	}
	if parts := splitByFamily(ms[:1], 4); len(parts) != 1 {
		t.Fatalf("one metric split into %d parts", len(parts))
	}
}

func TestPartsFor(t *testing.T) {
	if got := partsFor(minPartSeries - 1); got != 1 {
		t.Fatalf("a small scrape is split into %d registries", got)
	}
	if got := partsFor(5000); got < 1 || got > maxParts {
		t.Fatalf("partsFor(5000) = %d", got)
	}
}
