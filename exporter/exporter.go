// Package exporter owns the collector framework of hccl_exporter: the Collector
// interface every source implements, the Scraper that runs and times the
// enabled collectors on each scrape under the scrape's deadline, the HTTP
// handler that serves them and the HTTP server's connection limits.
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

	"github.com/hccl-exporter/hccl_exporter/exporter/scrapeerr"
)

// Namespace prefixes the exporter's own metrics.
const Namespace = "hccl_exporter"

// Collector is one source of metrics. Update sends the metrics of one scrape
// on ch and returns an error when the source failed; metrics sent before the
// error are still served (a collector reports its own "up" gauge that way).
//
// ctx carries the scrape's deadline (see ScrapeContext). A collector whose
// source may be slow (a vendor CLI) must not wait on it past ctx: it returns
// what it has with an error instead. The Scraper stops waiting for a
// collector at the deadline anyway, drops whatever it sent and reports it
// failed, so a collector that ignores ctx costs only its own series.
type Collector interface {
	Update(ctx context.Context, ch chan<- prometheus.Metric) error
}

// ErrNoData tells the Scraper that a collector had nothing to report this
// scrape; it is logged at debug level and still counts as success.
var ErrNoData = scrapeerr.ErrNoData

// ErrDependency marks a failure caused by a source that another collector
// reads and reports itself (headroom failing because npu-smi failed): the
// scrape still counts as failed, but the Scraper logs it at debug level so
// one broken npu-smi is not logged twice per scrape.
var ErrDependency = scrapeerr.ErrDependency

// ErrLogged marks a failure the collector has logged itself when it began
// (an hccn_tool sweep that stays incomplete until the next one): the scrape
// still counts as failed, but the Scraper logs it at debug level instead of
// repeating it at error level on every scrape until it ends.
var ErrLogged = errors.New("a failure the collector has logged")

// Spec names a collector and its default for the --collector.<name> flag.
type Spec struct {
	Name           string
	Help           string
	DefaultEnabled bool
}

// AddCollectorFlags registers --collector.<name> / --no-collector.<name> for
// every spec and returns the parsed switches by name.
func AddCollectorFlags(app *kingpin.Application, specs []Spec) map[string]*bool {
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
		prometheus.BuildFQName(Namespace, "collector", "duration_seconds"),
		"hccl_exporter: duration of a collector scrape.",
		[]string{"collector"}, nil,
	)
	scrapeSuccessDesc = prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "collector", "success"),
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
	collectors map[string]Collector
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

type scrapeKey struct{}

// WithScrape returns ctx marked as the context of scrape id, which
// ScrapeOf returns: the collectors of one scrape share a source's answer
// meant for that scrape (an npu-smi run that landed late is served to one
// scrape only, to all of that scrape's collectors). The Scraper numbers its
// scrapes from 1.
func WithScrape(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, scrapeKey{}, id)
}

// ScrapeOf returns the scrape ctx belongs to, 0 outside a scrape.
func ScrapeOf(ctx context.Context) uint64 {
	id, _ := ctx.Value(scrapeKey{}).(uint64)
	return id
}

// NewScraper returns a scraper over the given named collectors.
func NewScraper(logger *slog.Logger, collectors map[string]Collector) *Scraper {
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
	ctx = WithScrape(ctx, s.scrapes.Add(1))
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
func (s *Scraper) run(ctx context.Context, name string, c Collector) []prometheus.Metric {
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
	case errors.Is(err, ErrNoData):
		s.logger.Debug("collector returned no data", "collector", name, "duration_seconds", duration, "err", err)
	case errors.Is(err, ErrDependency):
		success = 0
		s.logger.Debug("collector failed because a source it depends on failed", "collector", name, "duration_seconds", duration, "err", err)
	case errors.Is(err, ErrLogged):
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
