package exporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// nodeCollector sends the series of a worst-case node's log state: 64
// processes × 28 settings, 8 communicators × 2, kept between scrapes as the
// cannlog collector keeps them; with stable set, as the cannlog collector
// sends them (SendStable, one version throughout).
type nodeCollector struct {
	ms     []prometheus.Metric
	stable bool
}

var (
	perfEnvDesc  = prometheus.NewDesc("perf_env_info", "Setting.", []string{"pid", "process", "variable", "value", "set_by"}, nil)
	perfCommDesc = prometheus.NewDesc("perf_communicator_ranks", "Ranks.", []string{"pid", "communicator"}, nil)
)

func newNodeCollector() nodeCollector {
	var c nodeCollector
	for p := 0; p < 64; p++ {
		pid := strconv.Itoa(300001 + p)
		for v := 0; v < 28; v++ {
			c.ms = append(c.ms, prometheus.MustNewConstMetric(perfEnvDesc, prometheus.GaugeValue, 1,
				pid, "python3", "HCCL_VARIABLE_NUMBER_"+strconv.Itoa(v), strconv.Itoa(v*100), "default"))
		}
		for k := 0; k < 8; k++ {
			c.ms = append(c.ms, prometheus.MustNewConstMetric(perfCommDesc, prometheus.GaugeValue, 64,
				pid, "10.0.0.11%enp189s0f0_6000"+strconv.Itoa(k)+"_0_1767685109000000"))
		}
	}
	return c
}

func (c nodeCollector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	if c.stable {
		SendStable(ctx, ch, 1, c.ms)
		return nil
	}
	for _, m := range c.ms {
		ch <- m
	}
	return nil
}

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- perfEnvDesc; ch <- perfCommDesc }
func (c nodeCollector) Collect(ch chan<- prometheus.Metric) { _ = c.Update(context.Background(), ch) }

// timeScrapes returns the median over rounds of the time n gzip scrapes take.
func timeScrapes(h http.Handler, rounds, n int) time.Duration {
	var ds []time.Duration
	for r := 0; r < rounds; r++ {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				panic(rec.Code)
			}
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Regression guard, measured as ratios in one process so that a slow or
// busy machine moves both sides: an uncached scrape of a worst-case node
// (client_golang's registry and promhttp behind the registry's deadline
// handling) must stay close to client_golang's own handler over the same
// collector, and a cached scrape (a recorded promhttp answer replayed)
// close to a handler that writes a fixed body. The limits are far above what is measured (docs/benchmarks.md) so
// that only a real regression fails; -race slows our code (instrumented)
// more than the baselines' assembly, hence its own limits.
func TestScrapeCostRegressionGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("timing guard")
	}
	col := newNodeCollector()
	reg := NewRegistry(discard(), map[string]Collector{"node": col})
	uncached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stableCol := col
	stableCol.stable = true
	stable, err := NewMetricsHandler(NewRegistry(discard(), map[string]Collector{"node": stableCol}), discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	ref := prometheus.NewRegistry()
	ref.MustRegister(col)
	baseline := promhttp.HandlerFor(ref, promhttp.HandlerOpts{})
	// A fixed body of the same size, gzipped as our cached one.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	cached.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	trivial := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})

	const rounds, n = guardRounds, guardScrapes
	// Warm up every path (pools, caches), then alternate.
	for _, h := range []http.Handler{uncached, stable, baseline, cached, trivial} {
		timeScrapes(h, 1, 2)
	}
	u := timeScrapes(uncached, rounds, n)
	st := timeScrapes(stable, rounds, n)
	b := timeScrapes(baseline, rounds, n)
	c := timeScrapes(cached, rounds, 20*n)
	tr := timeScrapes(trivial, rounds, 20*n)
	uncachedRatio := float64(u) / float64(b)
	stableRatio := float64(st) / float64(b)
	cachedRatio := float64(c) / float64(tr)
	t.Logf("uncached scrape %v, client_golang handler %v: ratio %.2f (limit %.1f)", u/n, b/n, uncachedRatio, limitUncached)
	t.Logf("uncached scrape of a stable set %v: ratio %.3f (limit %.2f)", st/n, stableRatio, limitStable)
	t.Logf("cached scrape %v, fixed-body handler %v: ratio %.2f (limit %.0f)", c/(20*n), tr/(20*n), cachedRatio, limitCached)
	if uncachedRatio > limitUncached {
		t.Errorf("an uncached scrape costs %.2f× client_golang's handler, limit %.1f×", uncachedRatio, limitUncached)
	}
	// Gathered, encoded and deflated anew on every scrape, the stable set
	// would cost about what the uncached scrape costs.
	if stableRatio > limitStable {
		t.Errorf("an uncached scrape of a stable set costs %.3f× client_golang's handler, limit %.2f×: is the set gathered anew?", stableRatio, limitStable)
	}
	if cachedRatio > limitCached {
		t.Errorf("a cached scrape costs %.1f× a fixed-body handler, limit %.0f×", cachedRatio, limitCached)
	}
}

// BenchmarkScrape measures one gzip scrape of a worst-case node's log
// series: uncached (a gather and an encoding each), uncached with the
// series sent as a stable set (the cannlog collector's way: gathered,
// encoded and deflated once), cached (a recorded answer replayed), and
// client_golang's own handler over the same collector as the baseline of
// the same run.
func BenchmarkScrape(b *testing.B) {
	col := newNodeCollector()
	reg := NewRegistry(discard(), map[string]Collector{"node": col})
	uncached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		b.Fatal(err)
	}
	stableCol := col
	stableCol.stable = true
	stable, err := NewMetricsHandler(NewRegistry(discard(), map[string]Collector{"node": stableCol}), discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		b.Fatal(err)
	}
	cached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ref := prometheus.NewRegistry()
	ref.MustRegister(col)
	baseline := promhttp.HandlerFor(ref, promhttp.HandlerOpts{})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"uncached", uncached}, {"uncached-stable", stable}, {"cached", cached}, {"client_golang", baseline}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				timeScrapes(bc.h, 1, 1)
			}
		})
	}
}
