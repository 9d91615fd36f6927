package exporter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

type fakeCollector struct {
	value float64
	err   error
}

var fakeDesc = prometheus.NewDesc("fake_value", "A fake value.", nil, nil)

func (f fakeCollector) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	ch <- prometheus.MustNewConstMetric(fakeDesc, prometheus.GaugeValue, f.value)
	return f.err
}

// silentCollector sends nothing and fails or succeeds as told.
type silentCollector struct{ err error }

func (s silentCollector) Update(context.Context, chan<- prometheus.Metric) error { return s.err }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestScraperReportsSuccessPerCollector(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantSuccess string
	}{
		{"ok", nil, "1"},
		{"nodata", collector.ErrNoData, "1"},
		{"failing", errors.New("npu-smi exited 1"), "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := NewScraper(discard(), map[string]collector.Collector{"c": fakeCollector{value: 3, err: tc.err}})
			want := `
# HELP fake_value A fake value.
# TYPE fake_value gauge
fake_value 3
# HELP hccl_exporter_collector_success hccl_exporter: whether a collector succeeded (1) or failed (0) on this scrape.
# TYPE hccl_exporter_collector_success gauge
hccl_exporter_collector_success{collector="c"} ` + tc.wantSuccess + "\n"
			if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "fake_value", "hccl_exporter_collector_success"); err != nil {
				t.Fatal(err)
			}
			if n := testutil.CollectAndCount(reg, "hccl_exporter_collector_duration_seconds"); n != 1 {
				t.Fatalf("duration series = %d, want 1", n)
			}
		})
	}
}

func TestScraperRunsEveryCollectorAndLints(t *testing.T) {
	reg := NewScraper(discard(), map[string]collector.Collector{
		"b": silentCollector{},
		"a": silentCollector{err: errors.New("boom")},
	})
	if got := strings.Join(reg.Names(), ","); got != "a,b" {
		t.Fatalf("Names() = %q, want a,b", got)
	}
	want := `
# HELP hccl_exporter_collector_success hccl_exporter: whether a collector succeeded (1) or failed (0) on this scrape.
# TYPE hccl_exporter_collector_success gauge
hccl_exporter_collector_success{collector="a"} 0
hccl_exporter_collector_success{collector="b"} 1
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "hccl_exporter_collector_success"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(reg, "hccl_exporter_collector_success", "hccl_exporter_collector_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("lint problems: %v", problems)
	}
}

func TestCollectorFlags(t *testing.T) {
	app := kingpin.New("t", "")
	enabled := AddCollectorFlags(app, []collector.Spec{
		{Name: "on", DefaultEnabled: true},
		{Name: "off", DefaultEnabled: false},
	})
	if _, err := app.Parse([]string{"--no-collector.on", "--collector.off"}); err != nil {
		t.Fatal(err)
	}
	if *enabled["on"] || !*enabled["off"] {
		t.Fatalf("flags not applied: on=%v off=%v", *enabled["on"], *enabled["off"])
	}
}

func TestMetricsHandlerServesBuildInfoAndCollectors(t *testing.T) {
	reg := NewScraper(discard(), map[string]collector.Collector{"c": fakeCollector{value: 7}})
	h, err := NewMetricsHandler(reg, discard(), HandlerOpts{MaxRequests: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"hccl_exporter_build_info{", "fake_value 7", `hccl_exporter_collector_success{collector="c"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics page lacks %q", want)
		}
	}
	if strings.Contains(string(body), "go_goroutines") {
		t.Errorf("runtime metrics served although not asked for")
	}
}

// scrapeRecorder records the scrape each Update ran in.
type scrapeRecorder struct {
	mu  sync.Mutex
	ids []uint64
}

func (s *scrapeRecorder) Update(ctx context.Context, _ chan<- prometheus.Metric) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, collector.ScrapeOf(ctx))
	return nil
}

// The collectors of one scrape see one scrape id, each scrape its own,
// whether it comes through the metrics handler or a plain Collect.
func TestScrapesAreNumbered(t *testing.T) {
	a, b := &scrapeRecorder{}, &scrapeRecorder{}
	s := NewScraper(discard(), map[string]collector.Collector{"a": a, "b": b})
	h, err := NewMetricsHandler(s, discard(), HandlerOpts{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	}
	testutil.CollectAndCount(s) // Collect
	if len(a.ids) != 3 || len(b.ids) != 3 {
		t.Fatalf("updates: %v %v", a.ids, b.ids)
	}
	for i := range a.ids {
		if a.ids[i] == 0 || a.ids[i] != b.ids[i] || i > 0 && a.ids[i] == a.ids[i-1] {
			t.Fatalf("scrape ids of a %v and b %v: want one non-zero id per scrape, shared by its collectors", a.ids, b.ids)
		}
	}
	if collector.ScrapeOf(context.Background()) != 0 {
		t.Fatal("a context outside a scrape has a scrape id")
	}
}
