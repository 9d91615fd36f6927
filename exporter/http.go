package exporter

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HandlerOpts configures the metrics endpoint.
type HandlerOpts struct {
	// MaxRequests bounds parallel scrapes; 0 or less means no bound.
	MaxRequests int
	// WithRuntimeMetrics adds the exporter's own go_* and process_* series.
	WithRuntimeMetrics bool
}

// NewMetricsHandler serves the registry, hccl_exporter_build_info and, when
// asked, the exporter's own runtime metrics. Errors of single metrics are
// logged and the rest is served, as node_exporter does.
func NewMetricsHandler(reg *Registry, logger *slog.Logger, opts HandlerOpts) (http.Handler, error) {
	r := prometheus.NewRegistry()
	if err := r.Register(versioncollector.NewCollector(Namespace)); err != nil {
		return nil, err
	}
	if opts.WithRuntimeMetrics {
		if err := r.Register(collectors.NewGoCollector()); err != nil {
			return nil, err
		}
		if err := r.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, err
		}
	}
	if err := r.Register(reg); err != nil {
		return nil, err
	}
	return promhttp.InstrumentMetricHandler(r, promhttp.HandlerFor(r, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: opts.MaxRequests,
	})), nil
}
