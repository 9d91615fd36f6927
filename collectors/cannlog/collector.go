package cannlog

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/follow"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// Collector serves the log state's and the follower's series. Update only
// reads: the follower's goroutine, which Start starts, reads the logs.
type Collector struct {
	logs   *follow.Service
	logger *slog.Logger
}

// New builds the log follower of cfg (the --cannlog.* flags) over deps and
// restores its state file; nothing is read before Start.
func New(cfg follow.Config, deps follow.Deps, logger *slog.Logger) (*Collector, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logs, err := follow.New(cfg, deps, logger)
	if err != nil {
		return nil, err
	}
	return &Collector{logs: logs, logger: logger}, nil
}

// Logs is the follower, which the headroom view reads.
func (c *Collector) Logs() *follow.Service { return c.logs }

// Start starts reading the logs until ctx ends or Close is called.
func (c *Collector) Start(ctx context.Context) { c.logs.Start(ctx) }

// Close stops reading, writes the last checkpoint and releases the files
// and the state file's lock.
func (c *Collector) Close() error { return c.logs.Close() }

// Update sends the series of the log state and of its follower.
func (c *Collector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	return c.logs.Update(ctx, ch)
}

// Describe and Collect make the collector usable with a plain Prometheus
// registry (tests, linting).
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { c.logs.Describe(ch) }

// Collect sends the metrics of Update.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if err := c.Update(context.Background(), ch); err != nil && !errors.Is(err, tail.ErrClosed) {
		c.logger.Debug("cannlog collect", "err", err)
	}
}
