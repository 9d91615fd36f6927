// Package exporter owns the collector framework of hccl_exporter: the Collector
// interface every source implements, the registry that runs and times the
// enabled collectors on each scrape, and the HTTP handler that serves them.
// It imports no concrete collector; cmd/hccl_exporter wires them in.
package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes the exporter's own metrics.
const Namespace = "hccl_exporter"

// Collector is one source of metrics. Update sends the metrics of one scrape
// on ch and returns an error when the source failed; metrics sent before the
// error are still served (a collector reports its own "up" gauge that way).
type Collector interface {
	Update(ch chan<- prometheus.Metric) error
}

// ErrNoData tells the registry that a collector had nothing to report this
// scrape; it is logged at debug level and still counts as success.
var ErrNoData = errors.New("collector returned no data")

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

// Registry runs the enabled collectors concurrently on each scrape and reports
// per-collector success and duration. It implements prometheus.Collector as an
// unchecked collector: the metrics each source exports vary with what it saw.
type Registry struct {
	collectors map[string]Collector
	names      []string
	logger     *slog.Logger
	descs      descCache
}

// NewRegistry returns a registry over the given named collectors.
func NewRegistry(logger *slog.Logger, collectors map[string]Collector) *Registry {
	names := make([]string, 0, len(collectors))
	for n := range collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return &Registry{collectors: collectors, names: names, logger: logger}
}

// Names lists the registered collectors in sorted order.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Describe sends nothing: the registry is an unchecked collector.
func (r *Registry) Describe(chan<- *prometheus.Desc) {}

// Collect runs every collector in its own goroutine and waits for all.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	var wg sync.WaitGroup
	wg.Add(len(r.names))
	for _, name := range r.names {
		go func(name string) {
			defer wg.Done()
			r.run(name, r.collectors[name], ch)
		}(name)
	}
	wg.Wait()
}

func (r *Registry) run(name string, c Collector, ch chan<- prometheus.Metric) {
	begin := time.Now()
	err := c.Update(ch)
	duration := time.Since(begin).Seconds()
	success := 1.0
	switch {
	case err == nil:
		r.logger.Debug("collector succeeded", "collector", name, "duration_seconds", duration)
	case errors.Is(err, ErrNoData):
		r.logger.Debug("collector returned no data", "collector", name, "duration_seconds", duration, "err", err)
	default:
		success = 0
		r.logger.Error("collector failed", "collector", name, "duration_seconds", duration, "err", err)
	}
	ch <- prometheus.MustNewConstMetric(scrapeDurationDesc, prometheus.GaugeValue, duration, name)
	ch <- prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, success, name)
}
