package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/exporter"
)

var collectorSpecs = []exporter.Spec{
	{Name: "npusmi", Help: "NPU memory, health, power and processes from npu-smi info.", DefaultEnabled: true},
	{Name: "cannlog", Help: "effective HCCL settings and HCCL fault codes from CANN plogs and screen logs.", DefaultEnabled: true},
	{Name: "headroom", Help: "NPU memory headroom before HCCL link setup (joins npu-smi's process table with the CANN logs).", DefaultEnabled: true},
}

// collectorWiring holds the parsed flags of every collector and builds the
// enabled ones, connecting the views they share: the npu-smi snapshot feeds
// the headroom model and process liveness; the CANN log state feeds the
// headroom model with each process's HCCL settings and communicators.
type collectorWiring struct {
	enabled  map[string]*bool
	npusmi   *npusmi.Config
	cannlog  *cannlogFlags
	headroom *headroom.Config
}

func addCollectorFlags(app *kingpin.Application) *collectorWiring {
	return &collectorWiring{
		enabled:  exporter.AddCollectorFlags(app, collectorSpecs),
		npusmi:   npusmi.AddFlags(app),
		cannlog:  addCannlogFlags(app),
		headroom: headroom.AddFlags(app),
	}
}

// build constructs the enabled collectors. The npu-smi runner also exists
// when only headroom needs it (its metrics are then not exported), so that
// every consumer shares one npu-smi run. Without a collector that runs
// npu-smi, process liveness rests on /proc and the TTL alone: a runner that
// never runs would hold expiry back for the readiness grace period.
func (w *collectorWiring) build(logger *slog.Logger) (map[string]exporter.Collector, func(), error) {
	out := map[string]exporter.Collector{}
	cleanup := func() {}
	on := func(name string) bool { return *w.enabled[name] }

	var npu *npusmi.Collector
	if on("npusmi") || on("headroom") {
		npu = npusmi.New(*w.npusmi, logger.With("collector", "npusmi"))
	}
	if on("npusmi") {
		out["npusmi"] = npu
	}

	var settings headroom.SettingsSource
	// When the npusmi collector is on, it reports a failed npu-smi run
	// itself; headroom's failure for the same cause is then logged quietly.
	chips := npuChips{npu: npu, reported: on("npusmi")}
	if on("cannlog") {
		c, stop, err := w.cannlog.build(logger.With("collector", "cannlog"), npuLiveness{npu})
		if err != nil {
			return nil, nil, fmt.Errorf("cannlog collector: %w", err)
		}
		cleanup = stop
		out["cannlog"] = c
		settings = c
		chips.logged = c.State().HasProcess
	}
	if on("headroom") {
		if err := w.headroom.Validate(); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("headroom collector: %w", err)
		}
		if settings == nil {
			logger.Warn("headroom collector runs without the cannlog collector: every process is modelled with HCCL's default settings and no communicators")
		}
		out["headroom"] = headroom.New(*w.headroom, chips, settings, logger.With("collector", "headroom"))
	}
	return out, cleanup, nil
}

// npuChips adapts the npu-smi snapshot to the headroom model's input. It
// joins the scrape's shared npu-smi run rather than starting another.
//
// npu-smi lists host pids, while a containerised job's plogs are named after
// the pid inside its container. Where npu-smi prints the "Process id in
// container" column and the logs know that pid but not the host one, the
// process is joined on the container pid.
type npuChips struct {
	npu      *npusmi.Collector
	logged   func(pid int) bool // whether the CANN logs know a pid; nil without cannlog
	reported bool               // the npusmi collector reports npu-smi failures
}

func (n npuChips) Chips(ctx context.Context) ([]headroom.ChipMemory, []headroom.ChipProcess, error) {
	snap, err := n.npu.Snapshot(ctx)
	if err != nil {
		if n.reported {
			err = fmt.Errorf("%w: %w", exporter.ErrDependency, err)
		}
		return nil, nil, err
	}
	chips := make([]headroom.ChipMemory, 0, len(snap.Chips))
	for _, c := range snap.Chips {
		m := headroom.ChipMemory{NPU: c.NPU, Chip: c.Chip, HBMUsedBytes: -1, HBMTotalBytes: -1}
		if c.HBMUsedBytes.OK && c.HBMTotalBytes.OK {
			m.HBMUsedBytes, m.HBMTotalBytes = c.HBMUsedBytes.V, c.HBMTotalBytes.V
		}
		chips = append(chips, m)
	}
	procs := make([]headroom.ChipProcess, 0, len(snap.Processes))
	for _, p := range snap.Processes {
		procs = append(procs, headroom.ChipProcess{NPU: p.NPU, Chip: p.Chip, PID: n.logPID(p)})
	}
	return chips, procs, nil
}

// Ready reports whether npu-smi has answered at least once: until then its
// silence about a pid says nothing, and the cannlog collector keeps processes
// it would otherwise expire.
func (n npuLiveness) Ready() bool {
	if n.npu == nil {
		return true
	}
	_, _, ok := n.npu.Latest()
	return ok
}

// logPID is the pid under which the CANN logs know process p.
func (n npuChips) logPID(p npusmi.Process) int {
	if n.logged == nil || n.logged(p.PID) {
		return p.PID
	}
	if cpid, err := strconv.Atoi(p.ContainerPID); err == nil && cpid > 0 && n.logged(cpid) {
		return cpid
	}
	return p.PID
}

// npuLiveness reports a pid alive while the last successful npu-smi run
// listed it (as host pid or as pid in its container), without running npu-smi
// itself. A containerised exporter without the host's pid namespace still
// sees the host pids there.
type npuLiveness struct{ npu *npusmi.Collector }

func (n npuLiveness) Alive(pid int) bool {
	if n.npu == nil {
		return false
	}
	snap, _, ok := n.npu.Latest()
	if !ok {
		return false
	}
	for _, p := range snap.Processes {
		if p.PID == pid || p.ContainerPID == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
