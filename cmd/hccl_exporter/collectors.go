package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npuhealth"
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/podresources"
	"github.com/hccl-exporter/hccl_exporter/exporter"
)

var collectorSpecs = []exporter.Spec{
	{Name: "npusmi", Help: "NPU memory, health, power and processes from npu-smi info.", DefaultEnabled: true},
	{Name: "cannlog", Help: "effective HCCL settings and HCCL fault codes from CANN plogs and screen logs, and which chip each process of the logs runs on.", DefaultEnabled: true},
	{Name: "pods", Help: "which pod holds each NPU, from the kubelet's PodResources API (--pods.kubelet-socket).", DefaultEnabled: true},
	{Name: "headroom", Help: "NPU memory headroom before HCCL link setup (joins npu-smi's process table with the CANN logs).", DefaultEnabled: true},
	{Name: "npuhealth", Help: "NPU hardware health from npu-smi's detail queries (error codes, HBM ECC, PCIe/HCCS/SIO errors, utilisation by engine) and the chip count (background sweep).", DefaultEnabled: true},
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
	npusmi      *npusmi.Config
	cannlog     *cannlogFlags
	headroom    *headroom.Config
	learn       *learnFlags
	hccn        *hccn.Config
	pods        *podresources.Config
	health      *npuhealth.Config
}

func addCollectorFlags(app *kingpin.Application) *collectorWiring {
	return &collectorWiring{
		enabled:     exporter.AddCollectorFlags(app, collectorSpecs),
		familiesOff: exporter.AddFamilyFlags(app, familyGroups),
		npusmi:      npusmi.AddFlags(app),
		cannlog:     addCannlogFlags(app),
		headroom:    addHeadroomFlags(app),
		learn:       addLearnFlags(app),
		hccn:        hccn.AddFlags(app),
		pods:        podresources.AddFlags(app),
		health:      npuhealth.AddFlags(app),
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
	if on("npusmi") || on("headroom") || on("pods") || on("npuhealth") {
		cfg := *w.npusmi
		cfg.Procfs = w.cannlog.cfg.Procfs // npu-smi's pids are checked against it
		npu = npusmi.New(cfg, logger.With("collector", "npusmi"))
	}
	if on("npusmi") {
		out["npusmi"] = npu
	}

	// The joins see npu-smi only through an interface: leave it nil, not a
	// nil *npusmi.Collector, when nothing runs npu-smi.
	var npuView npuView
	if npu != nil {
		npuView = npu
	}
	// When the npusmi collector is on, it reports a failed npu-smi run
	// itself; headroom's failure for the same cause is then logged quietly.
	chips := Chips{NPU: npuView, Reported: on("npusmi")}
	// The kubelet is asked first, so that the faults the CANN logs report
	// from the start are labelled with the pod of their device.
	var watcher *podresources.Watcher
	if on("pods") {
		watcher = podresources.NewWatcher(*w.pods, logger.With("collector", "pods"))
		watcher.Refresh(context.Background())
		watcher.Start(context.Background())
		cleanup = func() {
			if err := watcher.Close(); err != nil {
				logger.Debug("closing the kubelet connection", "err", err)
			}
		}
		w.cannlog.cfg.PodOfDevice = watcher.PodOfDevice
		chips.PodOfDevice = watcher.PodOfDevice
	}
	if on("cannlog") {
		if procfs := w.cannlog.cfg.Procfs; procfs != "" {
			// The owner of a discovered root's files is the pod its
			// process's own cgroup names (else its uid): identity a
			// tenant cannot write (docs/security.md).
			kubeletLogs := w.pods.KubeletLogs
			w.cannlog.cfg.PodOfProcess = func(pid int) (cannlog.ProcessPod, bool) {
				ref, ok, err := podresources.ReadProcessCgroup(procfs, pid)
				if err != nil || !ok {
					return cannlog.ProcessPod{}, false
				}
				pod := cannlog.ProcessPod{UID: ref.PodUID}
				if kubeletLogs != "" {
					// The names of the pod, from the kubelet's log layout
					// (/var/log/pods/<ns>_<pod>_<uid>).
					if layout, err := podresources.LoadKubeletLayout(kubeletLogs); err == nil {
						if o, ok := layout.Owner(kubeletLogs, ref); ok {
							pod.Namespace, pod.Pod, pod.Container = o.Namespace, o.Pod, o.Container
						}
					}
				}
				return pod, true
			}
		}
		if npuView != nil {
			// Each process npu-smi lists is read from its own log root,
			// found through --path.procfs after each npu-smi run; the same
			// table says which processes run and on which chip.
			w.cannlog.cfg.Processes = ProcessTable{NPU: npuView}
		}
		w.cannlog.cfg.WorkloadTTL, w.cannlog.cfg.MaxWorkloads = w.learn.workloadTTL, w.learn.maxWorkloads
		c, stop, err := w.cannlog.build(logger.With("collector", "cannlog"))
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("cannlog collector: %w", err)
		}
		stopWatcher := cleanup
		cleanup = func() { stop(); stopWatcher() }
		out["cannlog"] = c
		chips.Logs = c
	}
	if on("pods") {
		pc := podresources.New(watcher, PhyChips{NPU: npuView, Reported: on("npusmi")})
		if npu != nil {
			// Each NPU process's pod from its own cgroup (podresources).
			pc.SetProcessAttribution(&podresources.ProcessAttribution{
				Processes: npuProcesses{npu}, Procfs: w.cannlog.cfg.Procfs, KubeletLogs: w.pods.KubeletLogs,
			})
		}
		out["pods"] = pc
	}
	if on("hccn") {
		if err := w.hccn.Validate(); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("hccn collector: %w", err)
		}
		// The chip list comes from npu-smi where a collector runs it;
		// otherwise the sweep reads /dev/davinciN.
		var src hccn.ChipSource
		if npuView != nil {
			src = HCCNChips{NPU: npuView}
		}
		cfg := *w.hccn
		cfg.DevFS = w.health.DevFS // --path.devfs
		c := hccn.New(cfg, src, logger.With("collector", "hccn"))
		c.Start()
		stopLogs := cleanup
		cleanup = func() { c.Stop(); stopLogs() }
		out["hccn"] = c
		// Where hccn_tool counts more live QPs than the logs explain, the
		// headroom model trusts the measurement.
		chips.QPs = c
	}
	if on("npuhealth") {
		c, err := w.buildHealth(npu, logger.With("collector", "npuhealth"))
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		stopPrev := cleanup
		cleanup = func() { c.Stop(); stopPrev() }
		out["npuhealth"] = c
	}
	if on("headroom") {
		if err := w.headroom.Validate(); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("headroom collector: %w", err)
		}
		if chips.Logs == nil {
			logger.Warn("headroom collector runs without the cannlog collector: every process is modelled with HCCL's default settings and no communicators")
		}
		if err := w.learn.Validate(); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("headroom collector: %w", err)
		}
		hc := headroom.New(*w.headroom, chips, chips, logger.With("collector", "headroom"))
		var est *headroom.Estimator
		if w.learn.qpSize {
			est = headroom.NewEstimator(headroom.EstimatorConfig{MinObservations: w.learn.minObservations})
		}
		var stats headroom.WorkloadStatsSource
		if lc, ok := chips.Logs.(learnStore); ok {
			stats = lc
			if est != nil {
				// The learned sizes live in the CANN log state file.
				if err := lc.AttachExtension("headroom_qp_sizes", est); err != nil {
					logger.Warn("the learned QP sizes in the state file could not be read; learning starts over", "err", err)
				}
			}
		}
		hc.SetLearning(est, stats)
		out["headroom"] = hc
	}
	return out, cleanup, nil
}

// buildHealth starts the npu-smi detail sweep over the chips of the shared
// npu-smi runner, with its binary and timeout; ascend_npu_info then carries
// each chip's VDie ID from it.
func (w *collectorWiring) buildHealth(npu *npusmi.Collector, logger *slog.Logger) (*npuhealth.Collector, error) {
	if err := w.health.Validate(); err != nil {
		return nil, fmt.Errorf("npuhealth collector: %w", err)
	}
	cfg := *w.health
	cfg.Path, cfg.Timeout = w.npusmi.Path, w.npusmi.Timeout
	// A query whose every family is switched off is not asked.
	cfg.Skip = npuhealth.QueriesOff(w.familiesOff())
	c, err := npuhealth.New(cfg, npuhealth.NPUSMITable{C: npu}, logger)
	if err != nil {
		return nil, fmt.Errorf("npuhealth collector: %w", err)
	}
	npu.SetIdentity(c)
	c.Start()
	return c, nil
}
