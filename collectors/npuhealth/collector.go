package npuhealth

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/npufault"
)

// Config holds the collector's own flags (--npuhealth.*).
type Config struct {
	// Interval is the time between the starts of two sweeps.
	Interval time.Duration
	// FaultCodeFile is a faultCode.json that replaces the classification
	// built into the binary (internal/npufault); "" keeps the built-in one.
	FaultCodeFile string
}

// Deps are what main gives the collector besides its own flags.
type Deps struct {
	// Tool is the npu-smi binary and the timeout of one call
	// (--npusmi.path, --npusmi.timeout), the one the npusmi collector's
	// table runs too. Zero fields: npu-smi from PATH, 10s.
	Tool vendorcli.Tool
	// DevFS is where /dev/davinciN are counted (--path.devfs; "" is /dev).
	DevFS string
	// Skip names the query types not asked: those whose every family is
	// switched off (QueriesOff).
	Skip map[string]bool
	// Table is the chip list the sweep reads (the npusmi collector's).
	Table Table
	// Identities receives each chip's identity from `npu-smi info -t
	// board` (VDie ID, serial number, product name), where the npusmi
	// collector reads it for ascend_npu_info; nil: kept to itself.
	Identities *ascend.Identities
}

// settings are what the sweep runs by: the collector's Config and, from
// Deps, the npu-smi tool, /dev and the query types not asked.
type settings struct {
	Config
	vendorcli.Tool
	DevFS string
	Skip  map[string]bool
}

// queryFamilies: the families each query type feeds that a switch can
// turn off; a type whose families are all off is not asked at all.
var queryFamilies = map[string][]string{
	"volt":       {"ascend_npu_voltage_volts"},
	"common":     {"ascend_npu_aicore_frequency_hertz", "ascend_npu_aicore_rated_frequency_hertz"},
	"ecc-enable": {"ascend_npu_hbm_ecc_enabled"},
}

// QueriesOff returns the query types not to ask when the given families
// are switched off.
func QueriesOff(familiesOff map[string]bool) map[string]bool {
	out := map[string]bool{}
	for typ, fams := range queryFamilies {
		all := true
		for _, f := range fams {
			all = all && familiesOff[f]
		}
		if all {
			out[typ] = true
		}
	}
	return out
}

// AddFlags registers --npuhealth.interval and --npuhealth.fault-code-file
// (main registers --path.devfs with the other host paths and gives it in
// Deps).
func AddFlags(app *kingpin.Application, rules *flagcheck.Rules) *Config {
	cfg := &Config{}
	rules.Flag(app, "npuhealth.interval", "How often one background sweep asks npu-smi's detail queries (npu-smi info -t "+
		"health|ecc|pcie-err|hccs|sio-info|memory|usages|board -i N -c C) of every chip, one call at a time and never "+
		"inside a scrape. "+
		"Scrapes serve the latest sweep; per-chip values older than two intervals are not served.", flagcheck.DurationIn(10*time.Second, flagcheck.MaxInterval, "a duration from 10s to 24h (a sweep makes about 8 npu-smi calls per chip)")).
		Default("60s").DurationVar(&cfg.Interval)
	rules.Flag(app, "npuhealth.fault-code-file", "A fault-code table in the format of MindCluster's device plugin faultCode.json (e.g. "+
		"/usr/local/faultCode.json) that replaces the one built into the binary (MindCluster's default table): gives each "+
		"active error code the class label of ascend_npu_error_code (RestartNPU, SeparateNPU, …); a code neither lists "+
		"is class=\"unknown\". Read at start.", flagcheck.FileOrEmpty).
		Default("").StringVar(&cfg.FaultCodeFile)
	return cfg
}

// Validate rejects settings the sweep cannot work with.
func (c Config) Validate() error {
	if c.Interval < 10*time.Second {
		return fmt.Errorf("--npuhealth.interval=%s: must be at least 10s (a sweep makes about 8 npu-smi calls per chip, each starting DCMI)", c.Interval)
	}
	return nil
}

// Table is the chip list the sweep reads: the npusmi collector's accepted
// `npu-smi info` table, shared with the scrapes (cmd/hccl_exporter adapts
// the npusmi collector to it).
type Table interface {
	// Chips returns the chips of the last accepted table (running npu-smi
	// info through the shared runner when its last run is older than
	// --npusmi.min-interval).
	Chips(ctx context.Context) ([]ascend.ChipID, error)
	// InFlight is closed when the table's run in flight ends; nil when none.
	InFlight() <-chan struct{}
}

// Collector sweeps the detail queries in the background and exports the
// latest sweep.
type Collector struct {
	cfg    settings
	logger *slog.Logger
	table  Table
	codes  npufault.Classes
	// exec and now are replaced in tests.
	exec func(ctx context.Context, args []string) vendorcli.Result
	now  func() time.Time

	latest sweep.Latest[view]

	calls sweep.Calls // by type and result
	types []string    // the query types asked (not Skip)

	// Owned by the sweep, whose chips may be read at once (sweep.go): mu
	// guards what they share.
	mu          sync.Mutex
	unsupported map[ascend.ChipID]map[string]bool
	altWorks    map[string]bool
	// cardOff: the card's per-card query (npu, type) did not give every
	// chip its block (card.go); its chips are asked the chip form until
	// restart.
	cardOff   map[cardKey]bool
	lastChips []ascend.ChipID
	hasTable  bool
	sweeps    int
	failing   bool
	entries   map[ascend.ChipID]*chipEntry // each chip's latest answered reading
	turns     map[ascend.ChipID]*chipTurn
	finished  *Sweep // the last sweep that ran to its end

	// stuck counts, per chip, calls left behind that still run (sweep.go);
	// abandonAfter is how long past its timeout a call is waited for, and
	// slowAfter how long it holds the sweep before the next chip starts.
	stuckMu      sync.Mutex
	stuck        map[ascend.ChipID]int
	abandonAfter time.Duration
	slowAfter    time.Duration

	loop sweep.Loop

	// ids receives each chip's identity with every published view.
	ids *ascend.Identities
}

// New returns a collector reading the chips of deps.Table and publishing
// each chip's identity to deps.Identities (see Deps for what a zero field
// means). It loads the fault-code file, so a wrong path fails at start,
// not silently at every scrape.
// cfg's values were checked when the flags were parsed (Validate).
func New(cfg Config, deps Deps, logger *slog.Logger) (*Collector, error) {
	return newCollector(cfg, deps, logger)
}

// newCollector is New, for tests.
func newCollector(cfg Config, deps Deps, logger *slog.Logger) (*Collector, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 60 * time.Second
	}
	set := settings{
		Config: cfg, Tool: deps.Tool.Or(vendorcli.NPUSMI),
		DevFS: cmp.Or(deps.DevFS, "/dev"), Skip: deps.Skip,
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ids := deps.Identities
	if ids == nil {
		ids = &ascend.Identities{}
	}
	c := &Collector{
		cfg: set, logger: logger, table: deps.Table, now: time.Now, ids: ids,
		unsupported: map[ascend.ChipID]map[string]bool{}, altWorks: map[string]bool{}, cardOff: map[cardKey]bool{},
		entries: map[ascend.ChipID]*chipEntry{}, turns: map[ascend.ChipID]*chipTurn{}, stuck: map[ascend.ChipID]int{},
		abandonAfter: abandonAfter, slowAfter: min(max(set.Timeout/5, time.Second), set.Timeout),
	}
	for _, t := range queryTypes {
		if !deps.Skip[t] {
			c.types = append(c.types, t) // a type not asked has no call counters
		}
	}
	codes, err := npufault.Default()
	if cfg.FaultCodeFile != "" {
		codes, err = npufault.Load(cfg.FaultCodeFile, "--npuhealth.fault-code-file")
	}
	if err != nil {
		return nil, err
	}
	c.codes = codes
	c.exec = func(ctx context.Context, args []string) vendorcli.Result {
		return vendorcli.Run(ctx, c.cfg.Path, args, c.cfg.Timeout, maxOutputBytes)
	}
	return c, nil
}

// Start runs the first sweep at once and then one every Interval, until
// Close. It returns immediately.
func (c *Collector) Start(context.Context) {
	c.loop.Start(c.cfg.Interval, func(ctx context.Context) { c.runSweep(ctx) })
}

// Close ends the sweeps, killing a call in flight, and waits for them.
func (c *Collector) Close() error { c.loop.Stop(); return nil }

// Sweep runs one sweep now and publishes it, for tests; the background loop
// must not run at the same time.
func (c *Collector) Sweep(ctx context.Context) *Sweep {
	return c.runSweep(ctx)
}

func (c *Collector) runSweep(ctx context.Context) *Sweep {
	s := c.sweep(ctx)
	if ctx.Err() != nil && c.finished != nil {
		return s // shutting down: the last full sweep stays
	}
	c.mu.Lock()
	c.finished = s
	c.publishView(ctx)
	c.mu.Unlock()
	switch {
	case s.Err != nil && !c.failing:
		c.logger.Warn("npu-smi detail sweep incomplete", "chips", len(s.Readings), "duration", s.Finished.Sub(s.Started), "err", s.Err)
	case s.Err == nil && c.failing:
		c.logger.Info("npu-smi detail sweep complete again", "chips", len(s.Readings))
	}
	c.failing = s.Err != nil
	return s
}

var (
	callsDesc = prometheus.NewDesc("hccl_exporter_npu_smi_detail_calls_total",
		"npu-smi detail calls (npu-smi info -t <type>) by type and result (success, timeout, busy, unsupported, error, parse_error). "+
			"An unsupported type is asked once per chip until restart; busy (DCMI -8020) is asked again at the next sweep.",
		[]string{"type", "result"}, nil)
	lastSweepDesc = prometheus.NewDesc("hccl_exporter_npu_smi_detail_last_sweep_timestamp_seconds",
		"Unix time the last npu-smi detail sweep finished (whether every call answered or not).", nil, nil)
	staleChipsDesc = prometheus.NewDesc("hccl_exporter_npu_smi_detail_stale_chips",
		"Chips of the last accepted npu-smi info table whose latest detail reading is older than two --npuhealth.interval "+
			"(or that have not answered in that long since they appeared): their ascend_npu_* series are not served. A hung chip, or one the sweep's budget did not reach.",
		nil, nil)

	chipsDesc = prometheus.NewDesc("ascend_npu_chips",
		"NPU chips in the last accepted npu-smi info table (the npusmi collector's; a smaller table is accepted only once several "+
			"runs agree). Fewer than ascend_npu_device_files, or than the node had: a chip is lost.", nil, nil)
	devFilesDesc = prometheus.NewDesc("ascend_npu_device_files",
		"/dev/davinciN device files under --path.devfs (one per NPU chip the driver created).", nil, nil)

	chipLabels    = []string{"npu", "chip"}
	errorCodeDesc = prometheus.NewDesc("ascend_npu_error_code",
		"1 per error code active on the chip (npu-smi info -t health -i N -c C, Error Code, upper-case hex); class is its handling "+
			"level in MindCluster's faultCode.json (RestartNPU, SeparateNPU, …: the table built in, or --npuhealth.fault-code-file), else unknown.",
		[]string{"npu", "chip", "code", "class"}, nil)
	errorCodesDesc = prometheus.NewDesc("ascend_npu_error_codes",
		"Error codes active on the chip (npu-smi info -t health); 0 when none.", chipLabels, nil)
	eccErrorsDesc = prometheus.NewDesc("ascend_npu_hbm_ecc_errors_total",
		"HBM ECC errors of the chip since driver load (npu-smi info -t ecc, HBM Single|Double Bit Error Count).", []string{"npu", "chip", "bit"}, nil)
	eccLifetimeDesc = prometheus.NewDesc("ascend_npu_hbm_ecc_lifetime_errors",
		"HBM ECC errors of the chip over its life (npu-smi info -t ecc, HBM … Aggregate Total Err Cnt).", []string{"npu", "chip", "bit"}, nil)
	eccPagesDesc = prometheus.NewDesc("ascend_npu_hbm_ecc_pages",
		"HBM pages of the chip isolated for double-bit ECC errors (state=isolated) and waiting to be isolated at the next chip "+
			"reset (state=pending, npu-smi Next-Isolated). Single-bit pages are never isolated (npu-smi prints a constant "+
			"0): no series.", []string{"npu", "chip", "bit", "state"}, nil)
	eccEnabledDesc = prometheus.NewDesc("ascend_npu_hbm_ecc_enabled",
		"1 when HBM ECC is enabled on the chip's NPU (npu-smi info -t ecc-enable, HBM ECC-Enable Status).", chipLabels, nil)
	pcieDesc = prometheus.NewDesc("ascend_npu_pcie_errors_total",
		"PCIe error counters of the chip (npu-smi info -t pcie-err): tx, rx, lcrc, ecrc, retry; 310P: pcs_rx, phy_lane, dl_lcrc, dl_dcrc. "+
			"Their sum: ascend_npu_pcie_chip_errors_total.", []string{"npu", "chip", "type"}, nil)
	pcieChipDesc = prometheus.NewDesc("ascend_npu_pcie_chip_errors_total",
		"PCIe error counters of the chip summed over their types (npu-smi info -t pcie-err: tx, rx, lcrc, ecrc and retry; "+
			"310P: pcs_rx, phy_lane, dl_lcrc, dl_dcrc); per type: ascend_npu_pcie_errors_total (--npuhealth.pcie-types).", chipLabels, nil)
	hccsHealthyDesc = prometheus.NewDesc("ascend_npu_hccs_healthy",
		"1 when the chip's HCCS interconnect reports OK (npu-smi info -t hccs, hccs health status), 0 for NOK.", chipLabels, nil)
	linkLabels     = []string{"npu", "chip", "link"}
	hccsErrorsDesc = prometheus.NewDesc("ascend_npu_hccs_errors_total",
		"CRC errors on the HCCS link (npu-smi info -t hccs, hccs error count; link is the hardware link number npu-smi -lane takes: 1-7 on A2 and Atlas 900 A3 SuperPoD, 2-7 on an Atlas 9000 A3 SuperPoD die).", linkLabels, nil)
	hccsRetriesDesc = prometheus.NewDesc("ascend_npu_hccs_retries_total",
		"Retries on the HCCS link (npu-smi info -t hccs, hccs retry count).", linkLabels, nil)
	hccsTxDesc = prometheus.NewDesc("ascend_npu_hccs_transmit_packets_total",
		"Packets (flits of 20 bytes) sent on the HCCS link (npu-smi info -t hccs, hccs tx packets).", linkLabels, nil)
	hccsRxDesc = prometheus.NewDesc("ascend_npu_hccs_receive_packets_total",
		"Packets (flits of 20 bytes) received on the HCCS link (npu-smi info -t hccs, hccs rx packets).", linkLabels, nil)
	hccsChipErrorsDesc = prometheus.NewDesc("ascend_npu_hccs_chip_errors_total",
		"CRC errors on all HCCS links of the chip (npu-smi info -t hccs, hccs error count summed); per link: ascend_npu_hccs_errors_total (--npuhealth.hccs-links).", chipLabels, nil)
	hccsChipRetriesDesc = prometheus.NewDesc("ascend_npu_hccs_chip_retries_total",
		"Retries on all HCCS links of the chip (npu-smi info -t hccs, hccs retry count summed); per link: ascend_npu_hccs_retries_total (--npuhealth.hccs-links).", chipLabels, nil)
	hccsMinLanesDesc = prometheus.NewDesc("ascend_npu_hccs_min_lanes",
		"Fewest lanes up on any HCCS link of the chip (npu-smi info -t hccs, hccs lane mode): 4 on a healthy A2; fewer means a "+
			"degraded link (which: ascend_npu_hccs_lanes, --npuhealth.hccs-links).", chipLabels, nil)
	hccsTxBytesDesc = prometheus.NewDesc("ascend_npu_hccs_transmit_bytes_total",
		"Bytes sent on all HCCS links of the chip (npu-smi info -t hccs, hccs tx bytes summed: packets × 20); rate() is npu-exporter's hccs bandwidth total.", chipLabels, nil)
	hccsRxBytesDesc = prometheus.NewDesc("ascend_npu_hccs_receive_bytes_total",
		"Bytes received on all HCCS links of the chip (npu-smi info -t hccs, hccs rx bytes summed: packets × 20).", chipLabels, nil)
	hccsLanesDesc = prometheus.NewDesc("ascend_npu_hccs_lanes",
		"Lanes up on the HCCS link (npu-smi info -t hccs, hccs lane mode): 4 on a healthy A2 link; fewer means a degraded link.", linkLabels, nil)
	sioDesc = prometheus.NewDesc("ascend_npu_sio_errors_total",
		"Errors on the die-to-die SIO link of an Atlas A3 chip (npu-smi info -t sio-info), by direction (transmit, receive).", []string{"npu", "chip", "direction"}, nil)
	hbmTempDesc = prometheus.NewDesc("ascend_npu_hbm_temperature_celsius",
		"HBM temperature of the chip (npu-smi info -t memory, HBM Temperature(C)).", chipLabels, nil)
	utilDesc = prometheus.NewDesc("ascend_npu_utilization_ratio",
		"Utilisation of the chip by engine, 0..1 (npu-smi info -t usages: aicore, aivector, aicube, aicpu, ctrlcpu; overall = NPU Utilization on newer drivers).", []string{"npu", "chip", "engine"}, nil)
	voltDesc = prometheus.NewDesc("ascend_npu_voltage_volts",
		"Voltage of the chip (npu-smi info -t volt -i N -c C, Voltage(V)).", chipLabels, nil)
	freqDesc = prometheus.NewDesc("ascend_npu_aicore_frequency_hertz",
		"Current AI Core frequency of the chip (npu-smi info -t common -i N, Aicore curFreq(MHZ)); below the rated one while the chip is throttled or idle.", chipLabels, nil)
	ratedFreqDesc = prometheus.NewDesc("ascend_npu_aicore_rated_frequency_hertz",
		"Rated AI Core frequency of the chip (npu-smi info -t common -i N, Aicore Freq(MHZ)).", chipLabels, nil)
	hbmBWDesc = prometheus.NewDesc("ascend_npu_hbm_bandwidth_utilization_ratio",
		"HBM bandwidth utilisation of the chip, 0..1 (npu-smi info -t usages, HBM Bandwidth Usage Rate).", chipLabels, nil)
)

var bits = [2]string{"single", "double"}

// published is a sweep with its metrics, built once per sweep.
type published struct {
	sweep   *Sweep
	metrics []prometheus.Metric // per-chip series and ascend_npu_chips
}

func (c *Collector) publish(s *Sweep) *published {
	p := &published{sweep: s}
	add := func(d *prometheus.Desc, t prometheus.ValueType, v float64, l ...string) {
		p.metrics = append(p.metrics, prometheus.MustNewConstMetric(d, t, v, l...))
	}
	if s.HasChips {
		add(chipsDesc, prometheus.GaugeValue, float64(s.Chips))
	}
	for i := range s.Readings {
		r := &s.Readings[i]
		n, ch := r.NPU, r.Chip
		if h := r.Health; h != nil {
			seen := map[string]bool{}
			for _, code := range h.Codes {
				if seen[code] {
					continue // a code printed twice is one active code
				}
				seen[code] = true
				add(errorCodeDesc, prometheus.GaugeValue, 1, n, ch, code, c.codes.Class(code))
			}
			add(errorCodesDesc, prometheus.GaugeValue, float64(len(seen)), n, ch)
		}
		if e := r.ECC; e != nil {
			for b := range bits {
				if v := e.Errors[b]; v.OK {
					add(eccErrorsDesc, prometheus.CounterValue, v.V, n, ch, bits[b])
				}
				if v := e.Lifetime[b]; v.OK {
					add(eccLifetimeDesc, prometheus.GaugeValue, v.V, n, ch, bits[b])
				}
				if b == 0 {
					// Single-bit pages are never isolated: npu-smi prints a
					// hard-coded 0 for Next-Isolated and the 950 manual calls
					// both reserved. Two series per chip that cannot move.
					continue
				}
				if v := e.Isolated[b]; v.OK {
					add(eccPagesDesc, prometheus.GaugeValue, v.V, n, ch, bits[b], "isolated")
				}
				if v := e.Pending[b]; v.OK {
					add(eccPagesDesc, prometheus.GaugeValue, v.V, n, ch, bits[b], "pending")
				}
			}
		}
		if r.ECCEnabled != nil {
			add(eccEnabledDesc, prometheus.GaugeValue, boolValue(*r.ECCEnabled), n, ch)
		}
		if len(r.PCIe) > 0 {
			// The chip's total, one series whatever the types: per type
			// the counters are behind --npuhealth.pcie-types (5 series a
			// chip that only the runbook's second step reads).
			sum := 0.0
			for typ, v := range r.PCIe {
				add(pcieDesc, prometheus.CounterValue, v, n, ch, typ)
				sum += v
			}
			add(pcieChipDesc, prometheus.CounterValue, sum, n, ch)
		}
		if h := r.HCCS; h != nil {
			if h.HasHealth {
				add(hccsHealthyDesc, prometheus.GaugeValue, boolValue(h.Healthy), n, ch)
			}
			for _, arr := range []struct {
				d *prometheus.Desc
				t prometheus.ValueType
				v []float64
			}{
				{hccsErrorsDesc, prometheus.CounterValue, h.Errors}, {hccsRetriesDesc, prometheus.CounterValue, h.Retries},
				{hccsTxDesc, prometheus.CounterValue, h.TxPackets}, {hccsRxDesc, prometheus.CounterValue, h.RxPackets},
				{hccsLanesDesc, prometheus.GaugeValue, h.Lanes},
			} {
				for i, v := range arr.v {
					if v == v { // NA in an array is no sample
						add(arr.d, arr.t, v, n, ch, strconv.Itoa(LinkNumber(i, len(arr.v))))
					}
				}
			}
			// The chip's totals, one series each whatever the links: per link
			// they are behind --npuhealth.hccs-links and -hccs-traffic.
			if v, ok := total(h.Errors, 1); ok {
				add(hccsChipErrorsDesc, prometheus.CounterValue, v, n, ch)
			}
			if v, ok := total(h.Retries, 1); ok {
				add(hccsChipRetriesDesc, prometheus.CounterValue, v, n, ch)
			}
			if v, ok := least(h.Lanes); ok {
				add(hccsMinLanesDesc, prometheus.GaugeValue, v, n, ch)
			}
			// npu-smi's hccs tx|rx bytes are the packets × 20.
			if tx, ok := total(h.TxPackets, 20); ok {
				add(hccsTxBytesDesc, prometheus.CounterValue, tx, n, ch)
			}
			if rx, ok := total(h.RxPackets, 20); ok {
				add(hccsRxBytesDesc, prometheus.CounterValue, rx, n, ch)
			}
		}
		for dir, v := range r.SIO {
			add(sioDesc, prometheus.CounterValue, v, n, ch, dir)
		}
		if r.HBMTemp.OK {
			add(hbmTempDesc, prometheus.GaugeValue, r.HBMTemp.V, n, ch)
		}
		if r.Volts.OK {
			add(voltDesc, prometheus.GaugeValue, r.Volts.V, n, ch)
		}
		if cm, ok := r.Common[ch]; ok {
			if cm.CurrentMHz.OK {
				add(freqDesc, prometheus.GaugeValue, cm.CurrentMHz.V*1e6, n, ch)
			}
			if cm.RatedMHz.OK {
				add(ratedFreqDesc, prometheus.GaugeValue, cm.RatedMHz.V*1e6, n, ch)
			}
		}
		if u := r.Usages; u != nil {
			for engine, v := range u.Engines {
				add(utilDesc, prometheus.GaugeValue, v, n, ch, engine)
			}
			if u.HBMBandwidth.OK {
				add(hbmBWDesc, prometheus.GaugeValue, u.HBMBandwidth.V, n, ch)
			}
		}
	}
	return p
}

func (c *Collector) sendCalls(ch chan<- prometheus.Metric) { c.calls.Send(ch, callsDesc, c.types) }

// queryTypes are the values of the calls counter's type label.
var queryTypes = sweep.Names(queries, func(q query) string { return q.typ })

// errFirstSweep: a scrape before the first sweep finished.
var errFirstSweep = fmt.Errorf("first npu-smi detail sweep still running: %w", collector.ErrNoData)

// Update sends each chip's latest reading. It never runs npu-smi and never
// waits. A chip whose reading is older than two intervals is not served
// (counted in hccl_exporter_npu_smi_detail_stale_chips): the call of that
// chip hangs, and its old values are not the present; the other chips are
// served.
func (c *Collector) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	c.sendCalls(ch)
	if n, err := countDeviceFiles(c.cfg.DevFS); err == nil {
		ch <- prometheus.MustNewConstMetric(devFilesDesc, prometheus.GaugeValue, float64(n))
	} else {
		c.logger.Debug("cannot count /dev/davinciN", "devfs", c.cfg.DevFS, "err", err)
	}
	v := c.latest.Load()
	if v == nil {
		return errFirstSweep
	}
	if v.sweep != nil {
		ch <- prometheus.MustNewConstMetric(lastSweepDesc, prometheus.GaugeValue, float64(v.sweep.Finished.UnixNano())/1e9)
	}
	for _, m := range v.head {
		ch <- m
	}
	now := c.now()
	stale, oldest := 0, time.Duration(0)
	for i := range v.chips {
		e := &v.chips[i]
		since := e.read
		if since.IsZero() {
			since = e.since
		}
		if age, old := sweep.Stale(now, since, c.cfg.Interval); old {
			stale++
			oldest = max(oldest, age)
			continue
		}
		for _, m := range e.metrics {
			ch <- m
		}
	}
	ch <- prometheus.MustNewConstMetric(staleChipsDesc, prometheus.GaugeValue, float64(stale))
	if stale > 0 && stale == len(v.chips) {
		return fmt.Errorf("no chip has a npu-smi detail reading younger than two --npuhealth.interval (%s; the oldest is %s old): their calls hang, old readings are not served: %w",
			c.cfg.Interval, oldest.Round(time.Second), collector.ErrNoData)
	}
	if v.sweep == nil && len(v.chips) > 0 && stale == 0 {
		served := 0
		for i := range v.chips {
			if !v.chips[i].read.IsZero() {
				served++
			}
		}
		if served == 0 {
			return errFirstSweep
		}
	}
	return nil
}

var davinciName = regexp.MustCompile(`^davinci[0-9]+$`)

// countDeviceFiles counts davinciN under devfs (davinci_manager and
// devmm_svm are not chips).
func countDeviceFiles(devfs string) (int, error) {
	ents, err := os.ReadDir(devfs)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if davinciName.MatchString(e.Name()) {
			n++
		}
	}
	return n, nil
}

// total sums a per-link array times unit (20 for packets to bytes: npu-smi's
// SINGLE_PACKETS_BYTES, a flit is 20 bytes); false when no link printed a
// value (NA).
func total(links []float64, unit float64) (float64, bool) {
	sum, ok := 0.0, false
	for _, v := range links {
		if v == v {
			sum, ok = sum+v*unit, true
		}
	}
	return sum, ok
}

// least is the smallest value a link printed; false when none did.
func least(links []float64) (float64, bool) {
	m, ok := 0.0, false
	for _, v := range links {
		if v == v && (!ok || v < m) {
			m, ok = v, true
		}
	}
	return m, ok
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
