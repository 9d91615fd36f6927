package main

import (
	"context"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
)

type cannlogFlags struct{ cfg *cannlog.Config }

func addCannlogFlags(app *kingpin.Application) *cannlogFlags {
	return &cannlogFlags{cfg: cannlog.AddFlags(app)}
}

// build starts the log follower in the background; the returned func stops
// it and writes a last checkpoint.
func (f *cannlogFlags) build(logger *slog.Logger) (*cannlog.Collector, func(), error) {
	c, err := cannlog.New(*f.cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.Start(ctx)
	stop := func() {
		cancel()
		if err := c.Close(); err != nil {
			logger.Warn("final checkpoint of the CANN log state failed", "err", err)
		}
	}
	return c, stop, nil
}
