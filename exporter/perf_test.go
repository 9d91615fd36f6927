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

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// nodeCollector sends the series of a worst-case node's log state before
// the series were shaped around jobs: 64 processes × 28 settings, 8
// communicators each.
type nodeCollector struct {
	ms []prometheus.Metric
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

func (c nodeCollector) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	for _, m := range c.ms {
		ch <- m
	}
	return nil
}

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- perfEnvDesc; ch <- perfCommDesc }
func (c nodeCollector) Collect(ch chan<- prometheus.Metric) { _ = c.Update(context.Background(), ch) }

// timeScrapes returns the time n gzip scrapes take.
func timeScrapes(h http.Handler, n int) time.Duration {
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
	return time.Since(t0)
}

// medianRatio times n scrapes of h and of base, alternately, rounds times
// (so that a busy spell of the machine moves both), and returns the median
// of each.
func medianRatio(h, base http.Handler, rounds, n int) (time.Duration, time.Duration) {
	var hs, bs []time.Duration
	for r := 0; r < rounds; r++ {
		hs = append(hs, timeScrapes(h, n))
		bs = append(bs, timeScrapes(base, n))
	}
	slices.Sort(hs)
	slices.Sort(bs)
	return hs[len(hs)/2], bs[len(bs)/2]
}

// Regression guard, measured as ratios in one process so that a slow or
// busy machine moves both sides: an uncached scrape of a worst-case node
// (the Scraper's deadline handling, a registry per scrape, promhttp) must
// stay close to promhttp's own handler over the same collector, and a
// shared answer replayed close to a handler that writes a fixed body. The
// limits are well above what is measured (docs/benchmarks.md), so that only
// a real regression fails; -race slows this package's code (instrumented)
// more than the baselines', hence its own limits.
func TestScrapeCostRegressionGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("timing guard: skipped under -short")
	}
	col := newNodeCollector()
	reg := NewScraper(discard(), map[string]collector.Collector{"node": col})
	uncached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ref := prometheus.NewRegistry()
	ref.MustRegister(col)
	baseline := promhttp.HandlerFor(ref, promhttp.HandlerOpts{})
	// A fixed body of the same size, gzipped as the shared one.
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
	// Warm up every path, then measure.
	for _, h := range []http.Handler{uncached, baseline, cached, trivial} {
		timeScrapes(h, 2)
	}
	u, b := medianRatio(uncached, baseline, rounds, n)
	c, tr := medianRatio(cached, trivial, rounds, 20*n)
	uncachedRatio := float64(u) / float64(b)
	cachedRatio := float64(c) / float64(tr)
	t.Logf("uncached scrape %v, promhttp's handler %v: ratio %.2f (limit %.1f)", u/n, b/n, uncachedRatio, limitUncached)
	t.Logf("shared answer %v, fixed-body handler %v: ratio %.2f (limit %.0f)", c/(20*n), tr/(20*n), cachedRatio, limitCached)
	if uncachedRatio > limitUncached {
		t.Errorf("an uncached scrape costs %.2f× promhttp's handler, limit %.1f×", uncachedRatio, limitUncached)
	}
	if cachedRatio > limitCached {
		t.Errorf("a shared answer costs %.1f× a fixed-body handler, limit %.0f×", cachedRatio, limitCached)
	}
}

// BenchmarkScrape measures one gzip scrape of a worst-case node's log
// series: uncached (a gather and an encoding each), cached (a shared answer
// replayed), and promhttp's own handler over the same collector as the
// baseline of the same run.
func BenchmarkScrape(b *testing.B) {
	col := newNodeCollector()
	reg := NewScraper(discard(), map[string]collector.Collector{"node": col})
	uncached, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
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
	}{{"uncached", uncached}, {"cached", cached}, {"promhttp", baseline}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				timeScrapes(bc.h, 1)
			}
		})
	}
}
