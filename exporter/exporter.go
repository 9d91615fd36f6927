// Package exporter owns the serving of hccl_exporter: the Scraper that runs
// and times the enabled collectors on each scrape under the scrape's
// deadline, their --collector.<name> switches, the HTTP handler that serves
// them and the HTTP server's connection limits. The contract the collectors
// implement (Collector, its errors, Spec) is package collector's.
// Validation, content negotiation, encoding and compression are
// client_golang's (a prometheus.Registry per scrape, promhttp.HandlerFor);
// this package adds the deadline and lets requests that arrive together with
// the same headers share one answer (http.go). It imports no concrete
// collector; cmd/hccl_exporter wires them in.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// AddCollectorFlags registers --collector.<name> / --no-collector.<name> for
// every spec and returns the parsed switches by name.
func AddCollectorFlags(app *kingpin.Application, specs []collector.Spec) map[string]*bool {
	enabled := make(map[string]*bool, len(specs))
	for _, s := range specs {
		def := "false"
		state := "disabled"
		if s.DefaultEnabled {
			def, state = "true", "enabled"
		}
		enabled[s.Name] = app.Flag("collector."+s.Name,
			fmt.Sprintf("Enable the %s collector (default: %s): %s", s.Name, state, s.Help)).
			Default(def).Bool()
	}
	return enabled
}

var (
	scrapeDurationDesc = prometheus.NewDesc(
		prometheus.BuildFQName(collector.Namespace, "collector", "duration_seconds"),
		"hccl_exporter: duration of a collector scrape.",
		[]string{"collector"}, nil,
	)
	scrapeSuccessDesc = prometheus.NewDesc(
		prometheus.BuildFQName(collector.Namespace, "collector", "success"),
		"hccl_exporter: whether a collector succeeded (1) or failed (0) on this scrape.",
		[]string{"collector"}, nil,
	)
)

// Scraper runs the enabled collectors concurrently on each scrape and
// reports per-collector success and duration. It implements
// prometheus.Collector as an unchecked collector (the metrics each source
// exports vary with what it saw); the metrics handler collects it bound to
// each scrape's deadline (scrapeCollector).
type Scraper struct {
	collectors map[string]collector.Collector
	names      []string
	logger     *slog.Logger
	// sent is how many metrics each collector sent last time: the next
	// scrape's buffer is allocated at that size rather than grown.
	sent map[string]*atomic.Int64
	// scrapes numbers the scrapes run (ScrapeOf).
	scrapes atomic.Uint64
	// filter leaves out the families switched off (SetFamiliesOff).
	filter *familyFilter
}

// NewScraper returns a scraper over the given named collectors.
func NewScraper(logger *slog.Logger, collectors map[string]collector.Collector) *Scraper {
	names := make([]string, 0, len(collectors))
	for n := range collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	sent := make(map[string]*atomic.Int64, len(names))
	for _, n := range names {
		sent[n] = new(atomic.Int64)
	}
	return &Scraper{collectors: collectors, names: names, logger: logger, sent: sent}
}

// Names lists the registered collectors in sorted order.
func (s *Scraper) Names() []string { return append([]string(nil), s.names...) }

// Describe sends nothing: the scraper is an unchecked collector.
func (s *Scraper) Describe(chan<- *prometheus.Desc) {}

// Collect runs the collectors under DefaultScrapeTimeout, as a scrape
// without Prometheus's timeout header does, and sends their metrics: the
// scraper used as a plain prometheus.Collector (tests, linting).
func (s *Scraper) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultScrapeTimeout)
	defer cancel()
	s.scrape(ctx, ch)
}

// scrape runs every collector in its own goroutine, waits for all of them
// but not past ctx's deadline, and sends what they sent on ch, collector by
// collector in name order. The collectors' context carries the deadline and
// the scrape's number (ScrapeOf).
func (s *Scraper) scrape(ctx context.Context, ch chan<- prometheus.Metric) {
	ctx = collector.WithScrape(ctx, s.scrapes.Add(1))
	parts := make([][]prometheus.Metric, len(s.names))
	var wg sync.WaitGroup
	for i, name := range s.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i] = s.run(ctx, name, s.collectors[name])
		}()
	}
	wg.Wait()
	for _, p := range parts {
		for _, m := range p {
			ch <- m
		}
	}
}

// scrapeCollector is the scraper bound to one scrape's context: what the
// scrape's prometheus.Registry collects.
type scrapeCollector struct {
	s   *Scraper
	ctx context.Context
}

func (scrapeCollector) Describe(chan<- *prometheus.Desc)      {}
func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) { c.s.scrape(c.ctx, ch) }

// collectorGrace is how much earlier than the scraper's own cutoff a
// collector's context expires, so that a collector which honours ctx returns
// its failure series (hccl_exporter_npu_smi_up 0) before the cutoff drops them.
const collectorGrace = 100 * time.Millisecond

// run runs one collector and returns its metrics followed by its duration
// and success. They are buffered and returned only when it returned in
// time: a collector cut off at the deadline contributes no half-sent series,
// only its failed success gauge and duration.
func (s *Scraper) run(ctx context.Context, name string, c collector.Collector) []prometheus.Metric {
	begin := time.Now()
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		grace := min(collectorGrace, time.Until(dl)/10)
		cctx, cancel = context.WithDeadline(ctx, dl.Add(-grace))
	}
	defer cancel()

	out := make(chan prometheus.Metric, 256)
	errc := make(chan error, 1)
	// The deadline as a channel of this collector's own: the scrape's
	// Done channel is shared by every collector, and selecting on it for
	// every metric had them contend for its lock.
	deadline := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { close(deadline) })
	defer stop()
	go func() {
		defer close(out)
		defer func() {
			if p := recover(); p != nil {
				errc <- fmt.Errorf("collector panicked: %v", p)
			}
		}()
		errc <- c.Update(cctx, out)
	}()
	// Room for the duration and success gauges appended below.
	ms := make([]prometheus.Metric, 0, s.sent[name].Load()+2)
	var err error
collect:
	for {
		select {
		case m, ok := <-out:
			if !ok {
				err = <-errc
				break collect
			}
			if s.filter.keep(m) {
				ms = append(ms, m)
			}
			// What is buffered already is taken without a select.
			for len(out) > 0 {
				if m := <-out; s.filter.keep(m) {
					ms = append(ms, m)
				}
			}
		case <-deadline:
			// Abandon the collector: drain what it still sends so its
			// goroutine can finish whenever it does.
			go func() {
				for range out {
				}
			}()
			ms = nil
			err = fmt.Errorf("did not finish within the scrape deadline (its series are left out of this scrape): %w", ctx.Err())
			break collect
		}
	}
	if ms != nil {
		s.sent[name].Store(int64(len(ms)))
	}
	duration := time.Since(begin).Seconds()
	success := 1.0
	switch {
	case err == nil:
		s.logger.Debug("collector succeeded", "collector", name, "duration_seconds", duration)
	case errors.Is(err, collector.ErrNoData):
		s.logger.Debug("collector returned no data", "collector", name, "duration_seconds", duration, "err", err)
	case errors.Is(err, collector.ErrDependency):
		success = 0
		s.logger.Debug("collector failed because a source it depends on failed", "collector", name, "duration_seconds", duration, "err", err)
	case errors.Is(err, collector.ErrLogged):
		success = 0
		s.logger.Debug("collector failed, as it logged when the failure began", "collector", name, "duration_seconds", duration, "err", err)
	default:
		success = 0
		s.logger.Error("collector failed", "collector", name, "duration_seconds", duration, "err", err)
	}
	return append(ms,
		prometheus.MustNewConstMetric(scrapeDurationDesc, prometheus.GaugeValue, duration, name),
		prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, success, name))
}
