package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npuhealth"
	npusmic "github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/pods"
	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/follow"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/join"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// collectorSpecs are the --collector.<name> switches, in the order --help
// lists them; familyGroups the switches of family groups.
var (
	collectorSpecs = []collector.Spec{npusmic.Spec, cannlog.Spec, pods.Spec, headroom.Spec, npuhealth.Spec, hccn.Spec}
	familyGroups   = concat(npuhealth.FamilyGroups, hccn.FamilyGroups, cannlog.FamilyGroups)
)

func concat[T any](lists ...[]T) []T {
	var out []T
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// collectorFlags holds the parsed flags of every collector; each
// package's AddFlags defines its own, with their bounds.
type collectorFlags struct {
	enabled map[string]*bool
	// familiesOff gives, once flags are parsed, the families the
	// switched-off groups leave out.
	familiesOff func() map[string]bool
	paths       *paths
	npusmi      *npusmic.Config
	cannlog     *follow.Config
	headroom    *headroom.Config
	hccn        *hccn.Config
	pods        *pods.Config
	health      *npuhealth.Config
}

// addCollectorFlags registers every collector's flags, in the order --help
// lists them.
func addCollectorFlags(app *kingpin.Application, rules *flagcheck.Rules) *collectorFlags {
	f := &collectorFlags{
		enabled:     exporter.AddCollectorFlags(app, collectorSpecs),
		familiesOff: exporter.AddFamilyFlags(app, familyGroups),
	}
	for _, s := range collectorSpecs {
		rules.Add("collector."+s.Name, flagcheck.Switch)
	}
	for _, g := range familyGroups {
		rules.Add(g.Flag(), flagcheck.Switch)
	}
	f.paths = addPathFlags(app, rules)
	f.npusmi = npusmic.AddFlags(app, rules)
	f.cannlog = cannlog.AddFlags(app, rules)
	f.headroom = headroom.AddFlags(app, rules)
	f.hccn = hccn.AddFlags(app, rules)
	f.pods = pods.AddFlags(app, rules)
	f.health = npuhealth.AddFlags(app, rules)
	return f
}

// paths are the host paths several collectors read.
type paths struct {
	// procfs is --path.procfs: the log follower finds each npu-smi
	// process's log root there, npu-smi's pids are checked against it and
	// the pods collector reads each process's cgroup.
	procfs string
	// devFS is --path.devfs: npuhealth counts /dev/davinciN there, and the
	// hccn sweep lists them where no npu-smi runs.
	devFS string
}

// addPathFlags registers --path.procfs and --path.devfs, named as
// node_exporter names them.
func addPathFlags(app *kingpin.Application, rules *flagcheck.Rules) *paths {
	p := &paths{}
	rules.Flag(app, "path.procfs", "The host's /proc (mount it at /host/proc in a container). For every process npu-smi lists, "+
		"its own CANN log root is found there and read through <procfs>/<pid>/root, with no host path or job change needed: "+
		"the root from ASCEND_PROCESS_LOG_PATH, ASCEND_WORK_PATH and HOME of its environment (no other variable is kept), "+
		"its pid in its own namespace from status (NSpid). Needs root, or CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH. Empty disables.",
		flagcheck.AbsPathOrEmpty).Default("/proc").StringVar(&p.procfs)
	rules.Flag(app, "path.devfs", "The host's /dev: the /dev/davinciN there are counted as ascend_npu_device_files, and the hccn sweep lists them for its chips where no npu-smi runs.",
		flagcheck.AbsPath).Default("/dev").StringVar(&p.devFS)
	return p
}

// validate runs each collector's own checks of its parsed flags.
func (f *collectorFlags) validate() error {
	for _, v := range []interface{ Validate() error }{f.headroom, f.hccn, f.health} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// lifecycle is every collector's: built by its package's New, started
// once, closed once.
type lifecycle interface {
	collector.Collector
	Start(ctx context.Context)
	Close() error
}

// closers closes what was started, in reverse order of starting.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		errs = append(errs, cs[i].Close())
	}
	return errors.Join(errs...)
}

// build constructs what the collectors share (the one npu-smi runner, the
// kubelet watcher, the QP-size estimator, the identity store), then the
// enabled collectors over them, each started. The returned Closer stops
// everything, in reverse order (the collectors, the log follower's last
// checkpoint, the kubelet connection); on error build has closed what it
// started. The npu-smi runner also exists when only headroom, pods or
// npuhealth need it (its series are then not exported), so that every
// consumer shares one npu-smi run; without one, process liveness rests on
// /proc and the TTL alone.
func (f *collectorFlags) build(ctx context.Context, logger *slog.Logger) (map[string]collector.Collector, io.Closer, error) {
	on := func(name string) bool { return *f.enabled[name] }
	var started closers
	fail := func(err error) (map[string]collector.Collector, io.Closer, error) {
		if cerr := started.Close(); cerr != nil {
			logger.Debug("closing after a failed start", "err", cerr)
		}
		return nil, nil, err
	}
	out := map[string]collector.Collector{}
	add := func(name string, c lifecycle, err error) error {
		if err != nil {
			return fmt.Errorf("%s collector: %w", name, err)
		}
		c.Start(ctx)
		started = append(started, c)
		out[name] = c
		return nil
	}
	log := func(name string) *slog.Logger { return logger.With("collector", name) }

	var run *npusmi.Runner
	var npu join.NPU // a nil interface, not a nil *Runner, without npu-smi
	if on("npusmi") || on("headroom") || on("pods") || on("npuhealth") {
		run = npusmi.NewRunner(f.npusmi.Run, log("npusmi"))
		npu = run
	}
	var watcher *pods.Watcher
	if on("pods") {
		// Asked first, so that the faults the CANN logs report from the
		// start are labelled with the pod of their device.
		watcher = pods.NewWatcher(*f.pods, log("pods"))
		watcher.Refresh(ctx)
		watcher.Start(ctx)
		started = append(started, watcher)
	}
	var est *model.Estimator
	if on("headroom") {
		// With --headroom.learn-reset but learning off, an estimator is
		// still kept in the state file (never fed) so that the file is
		// written again without the sizes it held.
		est = f.headroom.Learn.Estimator()
	}
	ids := &ascend.Identities{}

	if on("npusmi") {
		c, err := npusmic.New(*f.npusmi, npusmic.Deps{Runner: run, Procfs: f.paths.procfs, Identities: ids}, log("npusmi"))
		if err := add("npusmi", c, err); err != nil {
			return fail(err)
		}
	}
	var logs *follow.Service
	if on("cannlog") {
		c, err := cannlog.New(*f.cannlog, f.followDeps(npu, watcher, est), log("cannlog"))
		if err := add("cannlog", c, err); err != nil {
			return fail(err)
		}
		logs = c.Logs()
		if est != nil && f.headroom.Learn.Reset {
			log("headroom").Info("--headroom.learn-reset: the learned QP sizes in the state file are dropped; the next checkpoint writes it without them")
		}
	}
	if on("pods") {
		view := join.Pods{NPU: npu, Reported: on("npusmi")}
		c, err := pods.New(*f.pods, pods.Deps{Watcher: watcher, Chips: view, Processes: view, Procfs: f.paths.procfs}, log("pods"))
		if err := add("pods", c, err); err != nil {
			return fail(err)
		}
	}
	var qps func() []ascend.QPReading
	if on("hccn") {
		deps := hccn.Deps{DevFS: f.paths.devFS}
		if npu != nil {
			deps.Chips = join.HCCNChips{NPU: npu}
		}
		c, err := hccn.New(*f.hccn, deps, log("hccn"))
		if err := add("hccn", c, err); err != nil {
			return fail(err)
		}
		// Where hccn_tool counts more live QPs than the logs explain, the
		// headroom model trusts the measurement.
		qps = c.ActiveQPs
	}
	if on("npuhealth") {
		c, err := npuhealth.New(*f.health, npuhealth.Deps{
			Tool: f.npusmi.Run.Tool, DevFS: f.paths.devFS,
			// A query whose every family is switched off is not asked.
			Skip:  npuhealth.QueriesOff(f.familiesOff()),
			Table: join.Health{NPU: run}, Identities: ids,
		}, log("npuhealth"))
		if err := add("npuhealth", c, err); err != nil {
			return fail(err)
		}
	}
	if on("headroom") {
		hd := join.HeadroomDeps{QPs: qps, Model: f.headroom.Model, Reported: on("npusmi")}
		deps := headroom.Deps{}
		if f.headroom.Learn.QPSize {
			// A nil interface when off, not a nil *Estimator.
			hd.Estimator, deps.Estimator = est, est
		}
		if watcher != nil {
			// A process's workload is its pod's owner.
			hd.PodOfDevice = watcher.PodOfDevice
		}
		if logs != nil {
			hd.Logs, hd.Workloads, deps.Workloads = logs, logs, logs
		} else {
			log("headroom").Warn("headroom collector runs without the cannlog collector: every process is modelled with HCCL's default settings and no communicators")
		}
		view := join.NewHeadroom(npu, hd)
		deps.NPU, deps.Settings = view, view
		c, err := headroom.New(*f.headroom, deps, log("headroom"))
		if err := add("headroom", c, err); err != nil {
			return fail(err)
		}
	}
	return out, started, nil
}

// followDeps is what the log follower gets: --path.procfs, the bounds of
// the workload memory (the headroom model's flags; the memory is kept in
// the log state and its state file), the pod of a device (the kubelet),
// the pod of a discovered process (its own cgroup), npu-smi's process
// table, and the learned QP sizes to keep in its state file.
func (f *collectorFlags) followDeps(npu join.NPU, watcher *pods.Watcher, est *model.Estimator) follow.Deps {
	deps := follow.Deps{Procfs: f.paths.procfs, WorkloadTTL: f.headroom.Learn.WorkloadTTL, MaxWorkloads: f.headroom.Learn.MaxWorkloads}
	if watcher != nil {
		deps.PodOfDevice = watcher.PodOfDevice
	}
	if f.paths.procfs != "" {
		deps.PodOfProcess = pods.PodOfProcess(f.paths.procfs, f.pods.KubeletLogs)
	}
	if npu != nil {
		// Each process npu-smi lists is read from its own log root, found
		// through --path.procfs after each npu-smi run; the same table
		// says which processes run and on which chip.
		deps.Processes = join.ProcessTable{NPU: npu}
	}
	if est != nil {
		deps.Extensions = map[string]logstate.Extension{"headroom_qp_sizes": est}
	}
	return deps
}
