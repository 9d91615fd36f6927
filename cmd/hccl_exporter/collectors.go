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
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/pods"
	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

var collectorSpecs = []collector.Spec{
	{Name: "npusmi", Help: "NPU memory, health, power and processes from npu-smi info.", DefaultEnabled: true},
	{Name: "cannlog", Help: "effective HCCL settings and HCCL fault codes from CANN plogs and screen logs, and which chip each process of the logs runs on.", DefaultEnabled: true},
	{Name: "pods", Help: "which pod holds each NPU, from the kubelet's PodResources API (--pods.kubelet-socket).", DefaultEnabled: true},
	{Name: "headroom", Help: "NPU memory headroom before HCCL link setup (joins npu-smi's process table with the CANN logs).", DefaultEnabled: true},
	{Name: "npuhealth", Help: "NPU hardware health from npu-smi's detail queries (error codes, HBM ECC, PCIe/HCCS/SIO errors, " +
		"utilisation by engine) and the chip count (background sweep).", DefaultEnabled: true},
	{Name: "hccn", Help: "RoCE NIC link state, flaps, health, live queue pairs and error counters per NPU chip from hccn_tool (background sweep).", DefaultEnabled: true},
}

// collectorWiring holds the parsed flags of every collector and builds the
// enabled ones, connecting the views they share through the joins (join.go): the
// npu-smi snapshot feeds the headroom model and process liveness; the CANN
// log state feeds the headroom model with each process's HCCL settings and
// communicators.
type collectorWiring struct {
	enabled map[string]*bool
	// familiesOff gives, once flags are parsed, the families the
	// switched-off groups leave out (families.go).
	familiesOff func() map[string]bool
	paths       *Paths
	npuSMI      *vendorcli.Tool // --npusmi.path, --npusmi.timeout
	npusmi      *npusmi.Config
	cannlog     *cannlog.Config
	headroom    *model.Config
	learn       *learnFlags
	hccn        *hccn.Config
	pods        *pods.Config
	health      *npuhealth.Config
}

// addCollectorFlags registers every collector's flags, in the order --help
// lists them.
func addCollectorFlags(app *kingpin.Application) *collectorWiring {
	w := &collectorWiring{
		enabled:     exporter.AddCollectorFlags(app, collectorSpecs),
		familiesOff: exporter.AddFamilyFlags(app, familyGroups),
		paths:       addPathFlags(app),
	}
	w.npuSMI, w.npusmi = npusmi.AddFlags(app)
	w.cannlog = cannlog.AddFlags(app)
	w.headroom = addHeadroomFlags(app)
	w.learn = addLearnFlags(app)
	w.hccn = hccn.AddFlags(app)
	w.pods = pods.AddFlags(app)
	w.health = npuhealth.AddFlags(app)
	return w
}

// Paths are the host paths the collectors read, as the flags give them.
type Paths struct {
	// Procfs is --path.procfs: the cannlog collector finds each npu-smi
	// process's log root there, npu-smi's pids are checked against it and
	// the pods collector reads each process's cgroup.
	Procfs string
	// DevFS is --path.devfs: npuhealth counts /dev/davinciN there, and the
	// hccn sweep lists them where no npu-smi runs.
	DevFS string
	// KubeletLogs is --pods.kubelet-logs, the kubelet's log layout that
	// names a pod uid's namespace, pod and container.
	KubeletLogs string
}

// addPathFlags registers the host paths several collectors read:
// --path.procfs and --path.devfs, named as node_exporter names them.
// --pods.kubelet-logs is the pods collector's flag (its layout is a pods
// matter); sharedValues copies it into Paths.
func addPathFlags(app *kingpin.Application) *Paths {
	p := &Paths{}
	app.Flag("path.procfs", "The host's /proc (mount it at /host/proc in a container). For every process npu-smi lists, "+
		"its own CANN log root is found there and read through <procfs>/<pid>/root, with no host path or job change needed: "+
		"the root from ASCEND_PROCESS_LOG_PATH, ASCEND_WORK_PATH and HOME of its environment (no other variable is kept), "+
		"its pid in its own namespace from status (NSpid). Needs root, or CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH. Empty disables.").
		Default("/proc").StringVar(&p.Procfs)
	app.Flag("path.devfs", "The host's /dev: the /dev/davinciN there are counted as ascend_npu_device_files, and the hccn sweep lists them for its chips where no npu-smi runs.").
		Default("/dev").StringVar(&p.DevFS)
	return p
}

// Deps are what the collectors share, built once from the parsed flags
// before any collector: the host paths, the npu-smi tool and its one
// runner, the CANN log follower and state, and the kubelet watcher. Each
// runner is nil when no enabled collector needs it. A collector's Config
// holds only its own flags and is passed as parsed; what else it needs
// comes in its package's own Deps, which its builder fills from these.
type Deps struct {
	Paths Paths
	// NPUSMI is the npu-smi binary and timeout (--npusmi.path,
	// --npusmi.timeout) of every npu-smi run: the table's (NPU) and the
	// npuhealth sweep's detail queries.
	NPUSMI vendorcli.Tool
	// NPU runs npu-smi info for every consumer of one scrape (the npusmi
	// collector's metrics are served only when it is enabled).
	NPU *npusmi.Collector
	// Logs follows the CANN logs (the cannlog collector).
	Logs *cannlog.Collector
	// Pods watches the kubelet's PodResources API.
	Pods *pods.Watcher
	// Identities carries each chip's identity (VDie ID, serial number,
	// product name) from the npuhealth sweep, which reads it, to NPU's
	// ascend_npu_info, which labels with it: data passed through a store,
	// so neither collector holds the other.
	Identities *ascend.Identities
}

// npuView returns NPU as the joins see it: a nil interface, not a nil
// *npusmi.Collector, when nothing runs npu-smi.
func (d *Deps) npuView() npuView {
	if d.NPU == nil {
		return nil
	}
	return d.NPU
}

// closers closes what was started, in reverse order of starting.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i] != nil {
			errs = append(errs, cs[i].Close())
		}
	}
	return errors.Join(errs...)
}

// closeFunc makes a func an io.Closer.
type closeFunc func() error

func (f closeFunc) Close() error { return f() }

// builder builds one collector over Deps (and, for the joins, the
// collectors built before it) and returns what stops it, nil when nothing
// needs stopping.
type builder func(d *Deps, built map[string]collector.Collector, logger *slog.Logger) (collector.Collector, io.Closer, error)

// build constructs Deps, then the enabled collectors over them. The
// returned Closer stops everything started, in reverse order; on error
// build has closed what it started. The npu-smi runner also exists when
// only headroom, pods or npuhealth need it (its metrics are then not
// exported), so that every consumer shares one npu-smi run. Without a
// collector that runs npu-smi, process liveness rests on /proc and the TTL
// alone: a runner that never runs would hold expiry back for the readiness
// grace period.
func (w *collectorWiring) build(logger *slog.Logger) (map[string]collector.Collector, io.Closer, error) {
	var started closers
	fail := func(err error) (map[string]collector.Collector, io.Closer, error) {
		if cerr := started.Close(); cerr != nil {
			logger.Debug("closing after a failed start", "err", cerr)
		}
		return nil, nil, err
	}
	d, err := w.deps(logger, &started)
	if err != nil {
		return fail(err)
	}
	on := func(name string) bool { return *w.enabled[name] }
	out := map[string]collector.Collector{}
	for _, b := range []struct {
		name string
		new  builder
	}{
		{"npusmi", func(d *Deps, _ map[string]collector.Collector, _ *slog.Logger) (collector.Collector, io.Closer, error) {
			return d.NPU, nil, nil
		}},
		{"cannlog", func(d *Deps, _ map[string]collector.Collector, _ *slog.Logger) (collector.Collector, io.Closer, error) {
			return d.Logs, nil, nil
		}},
		{"pods", w.newPods},
		{"hccn", w.newHCCN},
		{"npuhealth", w.newHealth},
		{"headroom", w.newHeadroom},
	} {
		if !on(b.name) {
			continue
		}
		c, closer, err := b.new(d, out, logger.With("collector", b.name))
		if err != nil {
			return fail(fmt.Errorf("%s collector: %w", b.name, err))
		}
		started = append(started, closer)
		out[b.name] = c
	}
	return out, started, nil
}

// deps builds Deps for the enabled collectors, appending what it starts to
// started. The kubelet is asked first, so that the faults the CANN logs
// report from the start are labelled with the pod of their device.
func (w *collectorWiring) deps(logger *slog.Logger, started *closers) (*Deps, error) {
	on := func(name string) bool { return *w.enabled[name] }
	d := w.sharedValues()
	if on("npusmi") || on("headroom") || on("pods") || on("npuhealth") {
		d.NPU = npusmi.New(*w.npusmi, npusmiDeps(d), logger.With("collector", "npusmi"))
	}
	if on("pods") {
		plog := logger.With("collector", "pods")
		d.Pods = pods.NewWatcher(*w.pods, plog)
		d.Pods.Refresh(context.Background())
		d.Pods.Start(context.Background())
		*started = append(*started, closeFunc(func() error {
			if err := d.Pods.Close(); err != nil {
				plog.Debug("closing the kubelet connection", "err", err)
			}
			return nil
		}))
	}
	if on("cannlog") {
		clog := logger.With("collector", "cannlog")
		c, err := cannlog.New(*w.cannlog, w.cannlogDeps(d), clog)
		if err != nil {
			return nil, fmt.Errorf("cannlog collector: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.Start(ctx)
		*started = append(*started, closeFunc(func() error {
			cancel()
			if err := c.Close(); err != nil {
				clog.Warn("final checkpoint of the CANN log state failed", "err", err)
			}
			return nil
		}))
		d.Logs = c
	}
	return d, nil
}

// sharedValues returns Deps with the values of the shared flags and the
// identity store, before any runner is built.
func (w *collectorWiring) sharedValues() *Deps {
	paths := *w.paths
	paths.KubeletLogs = w.pods.KubeletLogs
	return &Deps{Paths: paths, NPUSMI: *w.npuSMI, Identities: &ascend.Identities{}}
}

// npusmiDeps is what the npusmi collector gets from Deps: the npu-smi
// tool, --path.procfs (npu-smi's pids are checked against it) and the
// chips' identities for ascend_npu_info.
func npusmiDeps(d *Deps) npusmi.Deps {
	return npusmi.Deps{Tool: d.NPUSMI, Procfs: d.Paths.Procfs, Identities: d.Identities}
}

// cannlogDeps is what main wires into the cannlog collector from Deps:
// --path.procfs, the bounds of the workload memory (the headroom model's
// flags; the memory is kept in the log state and its state file), the pod
// of a device (the kubelet), the pod of a discovered process (its own
// cgroup) and npu-smi's process table.
func (w *collectorWiring) cannlogDeps(d *Deps) cannlog.Deps {
	deps := cannlog.Deps{Procfs: d.Paths.Procfs, WorkloadTTL: w.learn.workloadTTL, MaxWorkloads: w.learn.maxWorkloads}
	if d.Pods != nil {
		deps.PodOfDevice = d.Pods.PodOfDevice
	}
	if procfs := d.Paths.Procfs; procfs != "" {
		// The owner of a discovered root's files is the pod its process's
		// own cgroup names (else its uid): identity a tenant cannot write
		// (docs/security.md).
		kubeletLogs := d.Paths.KubeletLogs
		deps.PodOfProcess = func(pid int) (cannlog.ProcessPod, bool) {
			ref, ok, err := pods.ReadProcessCgroup(procfs, pid)
			if err != nil || !ok {
				return cannlog.ProcessPod{}, false
			}
			pod := cannlog.ProcessPod{UID: ref.PodUID}
			if kubeletLogs != "" {
				// The names of the pod, from the kubelet's log layout
				// (/var/log/pods/<ns>_<pod>_<uid>).
				if layout, err := pods.LoadKubeletLayout(kubeletLogs); err == nil {
					if o, ok := layout.Owner(kubeletLogs, ref); ok {
						pod.Namespace, pod.Pod, pod.Container = o.Namespace, o.Pod, o.Container
					}
				}
			}
			return pod, true
		}
	}
	if v := d.npuView(); v != nil {
		// Each process npu-smi lists is read from its own log root, found
		// through --path.procfs after each npu-smi run; the same table
		// says which processes run and on which chip.
		deps.Processes = ProcessTable{NPU: v}
	}
	return deps
}

// newPods builds the pods collector over the kubelet watcher and the
// chips of the scrape's npu-smi run; each NPU process's pod comes from its
// own cgroup (collectors/pods) where npu-smi runs.
func (w *collectorWiring) newPods(d *Deps, _ map[string]collector.Collector, _ *slog.Logger) (collector.Collector, io.Closer, error) {
	return pods.New(*w.pods, w.podsDeps(d)), nil, nil
}

// podsDeps is what the pods collector gets from Deps.
func (w *collectorWiring) podsDeps(d *Deps) pods.Deps {
	deps := pods.Deps{Watcher: d.Pods, Chips: PhyChips{NPU: d.npuView(), Reported: *w.enabled["npusmi"]}, Procfs: d.Paths.Procfs}
	if d.NPU != nil {
		deps.Processes = npuProcesses{d.NPU}
	}
	return deps
}

// newHCCN starts the hccn_tool sweep. The chip list comes from npu-smi
// where a collector runs it; otherwise the sweep reads /dev/davinciN.
func (w *collectorWiring) newHCCN(d *Deps, _ map[string]collector.Collector, logger *slog.Logger) (collector.Collector, io.Closer, error) {
	if err := w.hccn.Validate(); err != nil {
		return nil, nil, err
	}
	c := hccn.New(*w.hccn, hccnDeps(d), logger)
	c.Start()
	return c, closeFunc(func() error { c.Stop(); return nil }), nil
}

// hccnDeps is what the hccn collector gets from Deps.
func hccnDeps(d *Deps) hccn.Deps {
	deps := hccn.Deps{DevFS: d.Paths.DevFS}
	if v := d.npuView(); v != nil {
		deps.Chips = HCCNChips{NPU: v}
	}
	return deps
}

// newHealth starts the npu-smi detail sweep over the chips of the shared
// npu-smi runner, with its binary and timeout; it publishes each chip's
// identity to Deps.Identities, where ascend_npu_info reads it.
func (w *collectorWiring) newHealth(d *Deps, _ map[string]collector.Collector, logger *slog.Logger) (collector.Collector, io.Closer, error) {
	if err := w.health.Validate(); err != nil {
		return nil, nil, err
	}
	c, err := npuhealth.New(*w.health, w.healthDeps(d), logger)
	if err != nil {
		return nil, nil, err
	}
	c.Start()
	return c, closeFunc(func() error { c.Stop(); return nil }), nil
}

// healthDeps is what the npuhealth collector gets from Deps: the npusmi
// collector's tool and table, and the identity store it publishes to.
func (w *collectorWiring) healthDeps(d *Deps) npuhealth.Deps {
	return npuhealth.Deps{
		Tool:  d.NPUSMI,
		DevFS: d.Paths.DevFS,
		// A query whose every family is switched off is not asked.
		Skip:       npuhealth.QueriesOff(w.familiesOff()),
		Table:      healthTable{NPU: d.NPU},
		Identities: d.Identities,
	}
}

// newHeadroom builds the headroom collector over the joins of npu-smi's
// tables, the CANN logs and hccn_tool's live QP counts (join.go).
func (w *collectorWiring) newHeadroom(d *Deps, built map[string]collector.Collector, logger *slog.Logger) (collector.Collector, io.Closer, error) {
	if err := w.headroom.Validate(); err != nil {
		return nil, nil, err
	}
	// When the npusmi collector is on, it reports a failed npu-smi run
	// itself; headroom's failure for the same cause is then logged quietly.
	chips := Chips{NPU: d.npuView(), Reported: *w.enabled["npusmi"], phys: &phyOfChip{}}
	if d.Pods != nil {
		// A process's workload is its pod's owner (workload.go).
		chips.PodOfDevice = d.Pods.PodOfDevice
	}
	if d.Logs != nil {
		chips.Logs = d.Logs
	} else {
		logger.Warn("headroom collector runs without the cannlog collector: every process is modelled with HCCL's default settings and no communicators")
	}
	if qps, ok := built["hccn"].(LiveQPs); ok {
		// Where hccn_tool counts more live QPs than the logs explain, the
		// headroom model trusts the measurement.
		chips.QPs = qps
	}
	if err := w.learn.Validate(); err != nil {
		return nil, nil, err
	}
	deps := headroom.Deps{NPU: chips, Settings: chips}
	est := w.learn.estimator()
	if w.learn.qpSize {
		deps.Estimator = est
	}
	if lc, ok := chips.Logs.(learnStore); ok {
		deps.Workloads = lc
		if est != nil {
			// The learned sizes live in the CANN log state file.
			if err := lc.AttachExtension("headroom_qp_sizes", est); err != nil {
				logger.Warn("the learned QP sizes in the state file could not be read; learning starts over", "err", err)
			} else if w.learn.reset {
				logger.Info("--headroom.learn-reset: the learned QP sizes in the state file are dropped; the next checkpoint writes it without them")
			}
		}
	}
	return headroom.New(*w.headroom, deps, logger), nil, nil
}
