package headroom

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// What the collector learns on the node and remembers per workload: the
// QP sizes it measures (estimator.go) and the workload memory's series
// (memory.go, logstate/workload.go).

// WorkloadStatsSource reports the workload memory's size (the cannlog
// collector).
type WorkloadStatsSource interface {
	WorkloadStats() logstate.WorkloadStats
}

// Sources of hccl_link_setup_queue_pair_size_bytes.
const (
	sizeLearned  = "learned"
	sizeModelled = "modelled"
	sizeFlag     = "flag"
)

var (
	observedBytesDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_observed_bytes",
		"Device memory of one RoCE QP measured on this node: the median over every owner's link-setup bursts (HBM used after − before ÷ QPs created, "+
			"on a chip of one owner that allocated nothing else meanwhile; outliers rejected; inside the mode's plausibility band) per product "+
			"(npu-smi's chip name), driver version and QP mode. What the model uses is per owner and, for the node, what owners agree on "+
			"(hccl_link_setup_queue_pair_learned_owners, hccl_link_setup_queue_pair_size_bytes).",
		[]string{"product", "driver", "mode"}, nil)
	observationsDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_observations_total",
		"Link-setup bursts learned from (hccl_link_setup_queue_pair_observed_bytes), per product, driver version and QP mode; kept in the state file.",
		[]string{"product", "driver", "mode"}, nil)
	learnedOwnersDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_learned_owners",
		"Owners (pods, uids: the kernel's identity of a process's logs; configured log roots) with a QP size learned from their own link-setup "+
			"bursts, per product, driver version and QP mode. Each owner's size sizes its own QPs; the node's size (hccl_link_setup_queue_pair_size_bytes"+
			"{source=\"learned\"}) needs at least 2 kernel-named owners agreeing within 10 %.",
		[]string{"product", "driver", "mode"}, nil)
	refusedDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_bursts_refused_total",
		"Bursts of QP creation not learned from because the chip may have done something else meanwhile, its bytes per QP are outside the mode's "+
			"plausibility band, or its processes have no one known owner, by reason (docs/headroom.md \"Learned QP sizes\").",
		[]string{"reason"}, nil)
	modelledBytesDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_modelled_bytes",
		"Device memory of one RoCE QP per mode from HCCL's queue depths (64 B per send WQE + 32 B per CQE): the default and the fallback of the learned size.",
		[]string{"mode"}, nil)
	sizeDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_size_bytes",
		"Device memory of one RoCE QP the headroom model uses for a mode on a product of this node (hccl_link_setup_headroom_bytes), and where it comes from: "+
			"source=learned (the node's size: at least 2 owners' learned sizes agree), modelled (HCCL's depths) or flag (--headroom.qp-bytes-high). "+
			"A process whose owner learned a size of its own uses that one.",
		[]string{"product", "mode", "source"}, nil)
	rememberedQPsDesc = prometheus.NewDesc("hccl_link_setup_remembered_queue_pairs",
		"Of hccl_link_setup_pending_queue_pairs{bound=\"expected\"}, the QPs only the workload memory expects: link sets (AlltoAll-family, ACL graph "+
			"capture) an earlier process of the same workload ran and this one has not yet.",
		[]string{"npu", "chip"}, nil)
	failureDesc = prometheus.NewDesc("hccl_workload_link_setup_failure_timestamp_seconds",
		"When a link setup of the workload of a process on the chip last failed for want of memory or QPs (EI0011, EI0007 resource[qp]), as remembered "+
			"across restarts; stage is the fault's stage.",
		[]string{"npu", "chip", "workload", "code", "resource", "stage"}, nil)
	workloadsDesc = prometheus.NewDesc("hccl_workload_memory_workloads",
		"Workloads the memory remembers (--headroom.workload-memory-max bounds them).", nil, nil)
	workloadsDroppedDesc = prometheus.NewDesc("hccl_workload_memory_dropped_total",
		"Workloads the memory forgot: reason=expired (not seen for --headroom.workload-memory-ttl), capacity (the one seen longest ago, past --headroom.workload-memory-max).",
		[]string{"reason"}, nil)
)

// allModes are the QP modes of the size table.
var allModes = []model.QPMode{model.QPMode910BOpBase, model.QPMode910BOpBaseMultiQP, model.QPModeGraph, model.QPModeA3Host, model.QPModeA3HostMultiQP, model.QPModeA3AICPU, model.QPModeA3AICPUMultiQP}

// memoSettings calls settings once per process and scrape.
func memoSettings(settings func(model.ChipProcess) (model.ProcessSettings, bool)) func(model.ChipProcess) (model.ProcessSettings, bool) {
	type k struct {
		pid int
		dir string
	}
	type r struct {
		s  model.ProcessSettings
		ok bool
	}
	seen := map[k]r{}
	return func(p model.ChipProcess) (model.ProcessSettings, bool) {
		key := k{p.PID, p.LogDir}
		if v, ok := seen[key]; ok {
			return v.s, v.ok
		}
		s, ok := settings(p)
		seen[key] = r{s, ok}
		return s, ok
	}
}

// driverOf is the node's driver version (npu-smi prints one per node).
func driverOf(chips []model.ChipMemory) string {
	for _, c := range chips {
		if c.Driver != "" {
			return c.Driver
		}
	}
	return ""
}

// learn sends the learned sizes, the workload memory's series and each
// chip's remembered link-setup failures. It only reads: the estimator is
// fed once per npu-smi run by the view behind NPUSource (internal/join).
func (c *Collector) learn(ch chan<- prometheus.Metric, cfg model.Config, chips []model.ChipMemory, procs []model.ChipProcess, lookup func(model.ChipProcess) (model.ProcessSettings, bool)) {
	byChip := map[ascend.ChipID][]model.ChipProcess{}
	for _, p := range procs {
		k := p.ChipID
		byChip[k] = append(byChip[k], p)
	}
	products := map[string]bool{}
	for _, chip := range chips {
		if chip.Name != "" {
			products[chip.Name] = true
		}
		failures := map[[3]string]model.RememberedFailure{}
		workloadOf := map[[3]string]string{}
		for _, p := range byChip[chip.ChipID] {
			if lookup == nil {
				break
			}
			s, ok := lookup(p)
			if !ok {
				continue
			}
			for _, f := range s.Failures {
				k := [3]string{s.Workload, f.Code, f.Resource}
				if old, seen := failures[k]; !seen || f.At.After(old.At) {
					failures[k], workloadOf[k] = f, s.Workload
				}
			}
		}
		for k, f := range failures {
			ch <- prometheus.MustNewConstMetric(failureDesc, prometheus.GaugeValue, float64(f.At.UnixMilli())/1000,
				chip.NPU, chip.Chip, workloadOf[k], f.Code, f.Resource, f.Stage)
		}
	}
	for _, m := range allModes {
		ch <- prometheus.MustNewConstMetric(modelledBytesDesc, prometheus.GaugeValue, m.Bytes(), m.Name)
	}
	sorted := make([]string, 0, len(products))
	for p := range products {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		for _, m := range allModes {
			v, src := m.Bytes(), sizeModelled
			switch {
			case cfg.QPBytesSetByUser:
				v, src = cfg.QPBytesHigh, sizeFlag
			case cfg.Learned != nil:
				if l, ok := cfg.Learned.Lookup(p, m.Name); ok {
					v, src = l, sizeLearned
				}
			}
			ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, v, p, m.Name, src)
		}
	}
	if c.est != nil {
		keys, refused := c.est.Snapshot()
		for _, l := range keys {
			if l.Inlier > 0 {
				ch <- prometheus.MustNewConstMetric(observedBytesDesc, prometheus.GaugeValue, l.Median, l.Key.Product, l.Key.Driver, l.Key.Mode)
			}
			ch <- prometheus.MustNewConstMetric(observationsDesc, prometheus.CounterValue, float64(l.Total), l.Key.Product, l.Key.Driver, l.Key.Mode)
			ch <- prometheus.MustNewConstMetric(learnedOwnersDesc, prometheus.GaugeValue, float64(l.Owners), l.Key.Product, l.Key.Driver, l.Key.Mode)
		}
		for _, r := range model.RefusedReasons {
			ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(refused[r]), r)
		}
	}
	if c.workloads != nil {
		st := c.workloads.WorkloadStats()
		ch <- prometheus.MustNewConstMetric(workloadsDesc, prometheus.GaugeValue, float64(st.Workloads))
		for _, r := range []string{logstate.WorkloadDroppedExpired, logstate.WorkloadDroppedCapacity} {
			ch <- prometheus.MustNewConstMetric(workloadsDroppedDesc, prometheus.CounterValue, float64(st.Dropped[r]), r)
		}
	}
}
