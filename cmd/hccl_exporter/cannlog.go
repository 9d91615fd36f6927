package main

import (
	"context"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
)

type cannlogFlags struct{ cfg *cannlog.Config }

func addCannlogFlags(app *kingpin.Application) *cannlogFlags {
	return &cannlogFlags{cfg: cannlog.AddFlags(app)}
}

// build starts the log follower in the background; the returned func stops
// it and writes a last checkpoint.
func (f *cannlogFlags) build(logger *slog.Logger, npu cannlog.Liveness) (*cannlogSettings, func(), error) {
	live := cannlog.AnyAlive{npu, cannlog.ProcLiveness{}}
	c, err := cannlog.New(*f.cfg, live, logger)
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
	return &cannlogSettings{c}, stop, nil
}

// cannlogSettings is the cannlog collector seen by the headroom model: what
// the CANN logs say about each live process.
type cannlogSettings struct{ *cannlog.Collector }

// Settings translates a process's effective HCCL settings and live
// communicators into the headroom model's input.
func (c *cannlogSettings) Settings(pid int) (headroom.ProcessSettings, bool) {
	p, ok := c.State().ProcessVars(pid, "HCCL_RDMA_QPS_PER_CONNECTION", "HCCL_BUFFSIZE", "HCCL_INTRA_ROCE_ENABLE")
	if !ok {
		return headroom.ProcessSettings{}, false
	}
	s := headroom.ProcessSettings{PID: pid}
	if v, ok := p.Env["HCCL_RDMA_QPS_PER_CONNECTION"]; ok && v.HasNumber {
		s.QPsPerConnection, s.QPsKnown = v.Number, true
	}
	if v, ok := p.Env["HCCL_BUFFSIZE"]; ok && v.HasNumber {
		s.BuffSizeBytes, s.BuffSizeKnown = v.Number, true
	}
	if v, ok := p.Env["HCCL_INTRA_ROCE_ENABLE"]; ok && v.HasNumber {
		s.IntraRoCE = v.Number == 1
	}
	for _, cm := range p.Communicators {
		s.Communicators = append(s.Communicators, headroom.Communicator{Name: cm.Name, RankSize: cm.RankSize, ServerNum: cm.ServerNum})
	}
	return s, true
}
