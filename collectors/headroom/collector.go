// Package headroom is the collector of the NPU memory headroom before HCCL
// link setup, and owns the --headroom.* flags: each scrape it fetches the
// model's inputs (npu-smi's chips and process table, the CANN logs' view of
// each process, through NPUSource and SettingsSource: internal/join's
// Headroom view, which also learns QP sizes once per npu-smi run), runs
// internal/headroom's Model and turns the result into const metrics. The
// model itself, its inputs and its configuration live in internal/headroom.
package headroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// NPUSource gives the chips' HBM and the process table of one npu-smi run.
// It is meant to share the run the npusmi collector makes in the same scrape.
type NPUSource interface {
	Chips(ctx context.Context) ([]model.ChipMemory, []model.ChipProcess, error)
}

// SettingsSource says what the CANN logs know about the process of a row
// of the NPUSource's process table.
type SettingsSource interface {
	Settings(p model.ChipProcess) (model.ProcessSettings, bool)
}

// Label values of the bound label and of the processes gauge.
const (
	boundLow      = "low"
	boundExpected = "expected"
	boundHigh     = "high"

	settingsKnown     = "known"
	settingsDefaulted = "defaulted"
)

var (
	qpMemoryDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_memory_bytes",
		"NPU memory the QPs of the HCCL link setup still ahead need on the chip: hccl_link_setup_pending_queue_pairs of the bound "+
			"× the size of a QP of its process's mode (HCCL's QP depths × 64 B per send WQE + 32 B per CQE); where the logs do not "+
			"tell the mode, --headroom.qp-bytes-low (bound=low) or --headroom.qp-bytes-high (expected, high). 0 when every link is set up.",
		[]string{"npu", "chip", "bound"}, nil)
	pendingQPsDesc = prometheus.NewDesc("hccl_link_setup_pending_queue_pairs",
		"RoCE QPs the chip's processes still create: per live communicator, its peers not yet linked × QPs per connection "+
			"(N + 1 for HCCL_RDMA_QPS_PER_CONNECTION = N > 1). bound=low: a ring across servers; expected: the link sets HCCL's "+
			"level-1 algorithms still create for what the job has run (the default algorithm's first set, auto-selection's other picks "+
			"per tag; every remote rank once an AlltoAll-family, send/recv or MC2 operator ran) plus the next ACL graph capture's "+
			"offload QPs of a capturing process; high: a full mesh to every remote rank. Minus live QPs hccn_tool counts beyond "+
			"the logs that are whole links of one communicator.",
		[]string{"npu", "chip", "bound"}, nil)
	unknownModeDesc = prometheus.NewDesc("hccl_link_setup_unknown_mode_queue_pairs",
		"Of hccl_link_setup_pending_queue_pairs{bound=\"expected\"}, the QPs whose mode (op-base or graph, product, expansion mode) "+
			"the logs do not tell: sized as the largest a real mode makes them, --headroom.qp-bytes-high with one QP per link, half of it "+
			"(a multi-QP QP) with N + 1.",
		[]string{"npu", "chip"}, nil)
	slotsFreeDesc = prometheus.NewDesc("hccl_link_setup_queue_pair_slots_free",
		"QPs the chip's device can still create after the link setup ahead: HCCP's limit of 8192 per device (RS_QP_NUM_MAX) − live "+
			"QPs (hccn_tool, else the logs' established) − hccl_link_setup_pending_queue_pairs of the bound. Below zero the link setup "+
			"ahead fails with EI0007 resource[qp] (\"Exceeded the maximum QP limit\"), whatever HBM is free.",
		[]string{"npu", "chip", "bound"}, nil)
	establishedQPsDesc = prometheus.NewDesc("hccl_link_setup_established_queue_pairs",
		"RoCE QPs already created on the chip: its processes' `create hccl transport:` lines with a qpn, or hccn_tool's "+
			"live count where that is larger. Their memory is already in HBM used.",
		[]string{"npu", "chip"}, nil)
	cclBufferDesc = prometheus.NewDesc("hccl_ccl_buffer_bytes",
		"cclBuffer the chip's processes have allocated (`Create ccl buffer success` lines); already in HBM used.",
		[]string{"npu", "chip"}, nil)
	cclBufferPendingDesc = prometheus.NewDesc("hccl_ccl_buffer_pending_bytes",
		"cclBuffer of the chip's communicators that have not run their first collective: 2 × buffer size (their [Load] "+
			"comm config, else HCCL_BUFFSIZE) + 1 MiB each, allocated lazily together with link setup; in AIV expansion mode "+
			"plus 40 MiB + 32 KiB of AIV buffers each.",
		[]string{"npu", "chip"}, nil)
	headroomDesc = prometheus.NewDesc("hccl_link_setup_headroom_bytes",
		"HBM total − HBM used − hccl_link_setup_queue_pair_memory_bytes{bound=\"expected\"} − hccl_ccl_buffer_pending_bytes: below zero "+
			"the link setup HCCL will do on the chip does not fit and fails with EI0011. Links already set up are not subtracted again. "+
			"Each QP is sized as hccl_link_setup_queue_pair_size_bytes{product,mode} says, whose source label tells which size was used: "+
			"learned (measured on this node, --headroom.learn-qp-size), modelled (HCCL's QP depths) or flag.",
		[]string{"npu", "chip"}, nil)
	foreignQPsDesc = prometheus.NewDesc("ascend_roce_foreign_queue_pairs",
		"Live RoCE QPs on the chip (hccn_tool -qp_info) whose qpn no process on the chip logged in an HCCL `create hccl "+
			"transport:` line: other RDMA users (Mooncake, HIXL KV transfer, leftovers). Reported, not subtracted from "+
			"HCCL's link setup ahead. Absent while the logs print no qpns or the sweep is stale.",
		[]string{"npu", "chip"}, nil)
	// The capacity inputs: the mixin's capacity recording rules compute the
	// headroom under other settings from them (docs/headroom.md
	// "Capacity").
	pendingLinksDesc = prometheus.NewDesc("hccl_link_setup_pending_links",
		"RoCE links (not QPs) of the expected link setup ahead whose QP count follows HCCL_RDMA_QPS_PER_CONNECTION "+
			"(op-base links on 910B and A3; not capture, graph-mode or single-QP links): × 1 QP at QPS 1, × N + 1 at N > 1.",
		[]string{"npu", "chip"}, nil)
	linkQPBytesDesc = prometheus.NewDesc("hccl_link_setup_pending_link_queue_pair_bytes",
		"Bytes of one QP of hccl_link_setup_pending_links, with one QP per link (multi_qp=\"false\") and with multi-QP "+
			"(multi_qp=\"true\", HCCL halves the depths), averaged over the chip's communicators; 0 with no link ahead.",
		[]string{"npu", "chip", "multi_qp"}, nil)
	pendingBufferCommsDesc = prometheus.NewDesc("hccl_ccl_buffer_pending_communicators",
		"cclBuffers ahead sized by HCCL_BUFFSIZE (communicators without their own buffer size that have not run their first collective): each 2 × HCCL_BUFFSIZE + 1 MiB.",
		[]string{"npu", "chip"}, nil)
	fixedPendingDesc = prometheus.NewDesc("hccl_link_setup_fixed_pending_bytes",
		"Memory of the link setup ahead that neither HCCL_RDMA_QPS_PER_CONNECTION nor HCCL_BUFFSIZE changes (capture, graph-mode and "+
			"single-QP links, AIV buffers, buffers of their own size) less allocated cclBuffers no communicator claimed yet (can be negative): "+
			"HBM free − this − pending_links × QPs per link × QP bytes − pending cclBuffers × (2 × HCCL_BUFFSIZE + 1 MiB) is "+
			"hccl_link_setup_headroom_bytes at the current settings.",
		[]string{"npu", "chip"}, nil)
	processesDesc = prometheus.NewDesc("hccl_link_setup_processes",
		"Processes on the chip whose CANN logs the model reads, by where their HCCL settings came from: settings_source=known (printed), "+
			"settings_source=defaulted (an HCCL default assumed for a value not printed; served only where above 0). Processes whose logs are not read are "+
			"ascend_npu_processes{cann_logs=\"missing\"}: their link setups ahead are not counted, so the chip's pending QPs and headroom are then not a verdict.",
		[]string{"npu", "chip", "settings_source"}, nil)
)

// Collector exports the headroom model's result each scrape.
type Collector struct {
	cfg      model.Config
	npu      NPUSource
	settings SettingsSource
	logger   *slog.Logger
	// est learns QP sizes (nil: learning off); workloads reports the
	// workload memory's size (nil: none). See learn.go.
	est       *model.Estimator
	workloads WorkloadStatsSource
}

// Deps are what main gives the collector besides its flags (cfg).
type Deps struct {
	// NPU gives the chips and process table of the scrape's npu-smi run.
	NPU NPUSource
	// Settings gives each process's settings from the CANN logs; nil when
	// no CANN log view is available: every process then counts as
	// defaulted.
	Settings SettingsSource
	// Estimator holds the QP sizes learned (--headroom.learn-qp-size; nil:
	// off). The collector only reads it: the view behind NPU feeds it once
	// per npu-smi run.
	Estimator *model.Estimator
	// Workloads reports the workload memory's size for its series (the
	// cannlog collector's log state; nil: none).
	Workloads WorkloadStatsSource
}

// New returns a collector of cfg (its flags, checked when they were
// parsed: Validate) over deps.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Collector, error) {
	if deps.NPU == nil {
		return nil, errors.New("headroom: no npu-smi view")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg.Model, npu: deps.NPU, settings: deps.Settings, logger: logger, est: deps.Estimator, workloads: deps.Workloads}, nil
}

// Start does nothing: the model runs when a scrape asks.
func (c *Collector) Start(context.Context) {}

// Close does nothing.
func (c *Collector) Close() error { return nil }

// Update sends the per-chip headroom metrics. When npu-smi fails it sends
// nothing and returns the error: headroom computed from an old sample would
// look current.
func (c *Collector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	chips, procs, err := c.npu.Chips(ctx)
	if err != nil {
		return fmt.Errorf("headroom: read npu-smi chips: %w", err)
	}
	if len(chips) == 0 && len(procs) == 0 {
		return fmt.Errorf("headroom: npu-smi listed no chips: %w", collector.ErrNoData)
	}
	var lookup func(model.ChipProcess) (model.ProcessSettings, bool)
	if c.settings != nil {
		lookup = memoSettings(c.settings.Settings)
	}
	cfg := c.cfg
	cfg.Now = time.Now()
	if c.est != nil {
		cfg.Learned = c.est.Learned(driverOf(chips))
	}
	result := model.Model(cfg, chips, procs, lookup)
	c.learn(ch, cfg, chips, procs, lookup)
	defaulted, unknown := 0, 0
	for _, h := range result {
		emit(ch, h)
		defaulted += h.ProcessesDefaulted
		unknown += h.ProcessesUnknown
	}
	if defaulted+unknown > 0 {
		c.logger.Debug("headroom assumed HCCL defaults or saw no CANN logs for some processes", "defaulted", defaulted, "unknown", unknown)
	}
	return nil
}

func emit(ch chan<- prometheus.Metric, h model.ChipHeadroom) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(qpMemoryDesc, h.QPMemoryLowBytes, h.NPU, h.Chip, boundLow)
	gauge(qpMemoryDesc, h.QPMemoryExpectedBytes, h.NPU, h.Chip, boundExpected)
	gauge(qpMemoryDesc, h.QPMemoryHighBytes, h.NPU, h.Chip, boundHigh)
	gauge(pendingQPsDesc, h.QPsLow, h.NPU, h.Chip, boundLow)
	gauge(pendingQPsDesc, h.QPsExpected, h.NPU, h.Chip, boundExpected)
	gauge(pendingQPsDesc, h.QPsHigh, h.NPU, h.Chip, boundHigh)
	gauge(unknownModeDesc, h.UnknownModeQPs, h.NPU, h.Chip)
	gauge(slotsFreeDesc, h.SlotsFreeExpected, h.NPU, h.Chip, boundExpected)
	gauge(slotsFreeDesc, h.SlotsFreeHigh, h.NPU, h.Chip, boundHigh)
	gauge(establishedQPsDesc, h.EstablishedQPs, h.NPU, h.Chip)
	gauge(cclBufferDesc, h.CCLBufferBytes, h.NPU, h.Chip)
	gauge(cclBufferPendingDesc, h.CCLBufferPendingBytes, h.NPU, h.Chip)
	if h.ForeignQPsKnown {
		gauge(foreignQPsDesc, h.ForeignQPs, h.NPU, h.Chip)
	}
	gauge(pendingLinksDesc, h.VarLinks, h.NPU, h.Chip)
	gauge(linkQPBytesDesc, h.VarQPBytesSingle, h.NPU, h.Chip, "false")
	gauge(linkQPBytesDesc, h.VarQPBytesMulti, h.NPU, h.Chip, "true")
	gauge(pendingBufferCommsDesc, h.VarBufferComms, h.NPU, h.Chip)
	if h.HBMKnown {
		gauge(fixedPendingDesc, h.FixedPendingBytes, h.NPU, h.Chip)
	}
	gauge(processesDesc, float64(h.ProcessesKnown), h.NPU, h.Chip, settingsKnown)
	if h.ProcessesDefaulted > 0 {
		// Only where some are: a zero per chip on every node whose
		// processes printed their settings.
		gauge(processesDesc, float64(h.ProcessesDefaulted), h.NPU, h.Chip, settingsDefaulted)
	}
	if h.HBMKnown {
		gauge(headroomDesc, h.HeadroomBytes, h.NPU, h.Chip)
	}
	gauge(rememberedQPsDesc, h.RememberedQPs, h.NPU, h.Chip)
}
