package exporter

import (
	"context"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// TestFamilyFlags: a group's flag switches its families; off by default
// unless the group says otherwise, and --<collector>.<group> turns it on.
func TestFamilyFlags(t *testing.T) {
	groups := []collector.FamilyGroup{
		{Collector: "c", Name: "detail", Families: []string{"a_total", "b"}},
		{Collector: "c", Name: "core", Default: true, Families: []string{"c"}},
	}
	for _, tc := range []struct {
		args []string
		off  []string
	}{
		{nil, []string{"a_total", "b"}},
		{[]string{"--c.detail"}, nil},
		{[]string{"--no-c.core"}, []string{"a_total", "b", "c"}},
	} {
		app := kingpin.New("x", "")
		off := AddFamilyFlags(app, groups)
		if _, err := app.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got := off()
		if len(got) != len(tc.off) {
			t.Errorf("%v: off %v, want %v", tc.args, got, tc.off)
		}
		for _, f := range tc.off {
			if !got[f] {
				t.Errorf("%v: %s not off", tc.args, f)
			}
		}
	}
}

type twoFamilies struct{}

var (
	keepDesc = prometheus.NewDesc("kept_total", "Kept.", []string{"x"}, nil)
	dropDesc = prometheus.NewDesc("dropped", "Dropped.", []string{"x"}, nil)
)

func (twoFamilies) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	for _, x := range []string{"1", "2", "3"} {
		ch <- prometheus.MustNewConstMetric(keepDesc, prometheus.CounterValue, 1, x)
		ch <- prometheus.MustNewConstMetric(dropDesc, prometheus.GaugeValue, 1, x)
	}
	return nil
}

// TestScraperLeavesOutFamiliesOff: a switched-off family is not served,
// the others are, and the collector's success is untouched.
func TestScraperLeavesOutFamiliesOff(t *testing.T) {
	s := NewScraper(discard(), map[string]collector.Collector{"two": twoFamilies{}})
	if n := testutil.CollectAndCount(s, "kept_total", "dropped"); n != 6 {
		t.Fatalf("without a filter %d series, want 6", n)
	}
	s.SetFamiliesOff(map[string]bool{"dropped": true, "absent": true})
	if n := testutil.CollectAndCount(s, "dropped"); n != 0 {
		t.Errorf("dropped: %d series served", n)
	}
	if n := testutil.CollectAndCount(s, "kept_total"); n != 3 {
		t.Errorf("kept_total: %d series, want 3", n)
	}
	if got := s.FamiliesOff(); len(got) != 2 || got[0] != "absent" || got[1] != "dropped" {
		t.Errorf("FamiliesOff = %v", got)
	}
}

// TestFamilyFilterCost: a scrape of the worst-case node's 2,300 series
// through a filter (every metric looked up) against the same scrape
// without one, alternated in one process: the filter is one cached map
// lookup per metric and must stay within a few percent.
func TestFamilyFilterCost(t *testing.T) {
	if testing.Short() {
		t.Skip("timing guard: skipped under -short")
	}
	col := newNodeCollector()
	plain := NewScraper(discard(), map[string]collector.Collector{"node": col})
	filtered := NewScraper(discard(), map[string]collector.Collector{"node": col})
	filtered.SetFamiliesOff(map[string]bool{"not_served": true})
	hp, err := NewMetricsHandler(plain, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	hf, err := NewMetricsHandler(filtered, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	timeScrapes(hp, 2)
	timeScrapes(hf, 2)
	const rounds, n = guardRounds, guardScrapes
	f, p := medianRatio(hf, hp, rounds, n)
	ratio := float64(f) / float64(p)
	t.Logf("scrape with the family filter %v, without %v: ratio %.3f", f/n, p/n, ratio)
	if ratio > 1.25 {
		t.Errorf("the family filter makes a scrape %.2f× as slow, limit 1.25×", ratio)
	}
}
