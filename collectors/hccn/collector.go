package hccn

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
)

// Config holds the collector's flags.
type Config struct {
	// Path is the hccn_tool binary. DefaultPath falls back to hccn_tool in
	// PATH; it is resolved at every sweep.
	Path string
	// Timeout kills one call (its whole process group) after this long.
	Timeout time.Duration
	// Interval is the time between the starts of two sweeps.
	Interval time.Duration
	// SlowInterval is how often the rarely changing commands (optical,
	// tls, speed) are asked; in between a sweep carries their last
	// answer over. 0 asks them at every sweep.
	SlowInterval time.Duration
}

// Deps are what main gives the collector besides its own flags.
type Deps struct {
	// Chips lists the node's chips (npu-smi's view); nil: the sweep lists
	// the /dev/davinciN nodes under DevFS.
	Chips ChipSource
	// DevFS is the host's /dev (--path.devfs, shared with npuhealth);
	// "" is /dev.
	DevFS string
}

// AddFlags registers the --hccn.* flags.
func AddFlags(app *kingpin.Application, rules *flagcheck.Rules) *Config {
	cfg := &Config{}
	rules.Flag(app, "hccn.path", "The hccn_tool binary (RoCE NIC tool of the Ascend driver), run as '<path> -i <phy_id> -<command> -g' without a shell. "+
		"The default falls back to hccn_tool in PATH; where neither exists the collector exports only hccl_exporter_hccn_tool_up 0.", flagcheck.Executable).
		Default(DefaultPath).StringVar(&cfg.Path)
	rules.Flag(app, "hccn.timeout", "Kill one hccn_tool call (its whole process group) after this long. A device that is resetting holds a call for minutes; "+
		"its other calls are skipped until the next sweep, so the other devices are still read.", flagcheck.Positive(10*time.Minute)).
		Default("5s").DurationVar(&cfg.Timeout)
	rules.Flag(app, "hccn.interval", "How often one background sweep reads every device (one hccn_tool call at a time: the tool answers 'busy' to a second caller). "+
		"Scrapes read the latest sweep and never wait for one.", flagcheck.DurationIn(time.Second, flagcheck.MaxInterval, "a duration from 1s to 24h (each sweep makes one call per command per NPU chip)")).
		Default("30s").DurationVar(&cfg.Interval)
	rules.Flag(app, "hccn.slow-interval", "How often the rarely changing commands (-optical, -tls, -speed) are called; sweeps in between "+
		"export their last answer. Each call is a line in the host's /var/log/hccn_tool/hccn.log and holds the tool's lock "+
		"(docs/hccn.md, \"Load on the node\"). 0 calls them at every sweep.", flagcheck.DurationIn(0, 7*flagcheck.MaxInterval, "0 (every sweep) or a duration up to 168h, not below --hccn.interval")).
		Default("10m").DurationVar(&cfg.SlowInterval)
	return cfg
}

// Validate rejects settings the sweep cannot work with.
func (c Config) Validate() error {
	if c.Timeout <= 0 {
		return fmt.Errorf("--hccn.timeout=%s: must be positive", c.Timeout)
	}
	if c.Interval < time.Second {
		return fmt.Errorf("--hccn.interval=%s: must be at least 1s (each sweep makes one call per command per NPU chip)", c.Interval)
	}
	if c.SlowInterval < 0 {
		return fmt.Errorf("--hccn.slow-interval=%s: must be 0 (every sweep) or positive", c.SlowInterval)
	}
	return nil
}

// Collector sweeps hccn_tool in the background and exports the latest sweep.
type Collector struct {
	cfg    Config
	logger *slog.Logger
	chips  ChipSource
	devDir string
	loc    *time.Location
	// exec, resolve and now are replaced in tests.
	exec    func(ctx context.Context, bin string, args []string) output
	resolve func() (string, error)
	now     func() time.Time

	latest sweep.Latest[published]

	calls sweep.Calls // by command and result

	// Owned by the sweep goroutine.
	down           map[int]*downTracker
	slow           map[int]slowReading // by phy id: the last answers of the slow commands
	lastMapWarning string
	wasAbsent      bool
	wasIncomplete  bool
	firstDone      bool

	loop sweep.Loop
}

// New returns a collector of cfg (its flags, checked when they were
// parsed: Validate) over deps.Chips, or the /dev/davinciN under deps.DevFS
// when it is nil. Call Start to begin sweeping.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Collector, error) {
	return newCollector(cfg, deps, logger), nil
}

// newCollector is New, for tests.
func newCollector(cfg Config, deps Deps, logger *slog.Logger) *Collector {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Collector{
		cfg: cfg, logger: logger, chips: deps.Chips, devDir: cmp.Or(deps.DevFS, "/dev"), loc: time.Local,
		now: time.Now, down: map[int]*downTracker{}, slow: map[int]slowReading{},
	}
	c.exec = func(ctx context.Context, bin string, args []string) output {
		return runTool(ctx, bin, args, c.cfg.Timeout)
	}
	c.resolve = func() (string, error) { return resolve(c.cfg.Path) }
	return c
}

// Start runs the first sweep at once and then one every Interval, until
// Close. It returns immediately.
func (c *Collector) Start(context.Context) { c.loop.Start(c.cfg.Interval, c.runSweep) }

// Close ends the sweeps, killing a call in flight, and waits for them.
func (c *Collector) Close() error { c.loop.Stop(); return nil }

// runSweep makes one sweep, publishes it and logs changes of state once.
func (c *Collector) runSweep(ctx context.Context) {
	s := c.sweep(ctx)
	if !c.latest.Publish(ctx, func() *published { return c.publish(s) }) {
		return // shutting down: the last full sweep stays
	}
	switch {
	case s.Absent:
		if !c.wasAbsent {
			c.logger.Info("hccn_tool not found: RoCE NIC metrics are off until it is installed; exporting hccl_exporter_hccn_tool_up 0", "err", s.Err)
		}
	case !s.Complete:
		if !c.wasIncomplete {
			c.logger.Warn("hccn_tool sweep incomplete", "devices", len(s.Devices), "duration", s.Duration(), "err", s.Err)
		}
	case c.wasAbsent || c.wasIncomplete || !c.firstDone:
		c.logger.Info("hccn_tool sweep complete", "devices", len(s.Devices), "duration", s.Duration())
	}
	c.wasAbsent, c.wasIncomplete, c.firstDone = s.Absent, !s.Absent && !s.Complete, true
}

// Sweep runs one sweep now and publishes it, for tests and benchmarks; the
// background loop must not run at the same time (one call at a time).
func (c *Collector) Sweep(ctx context.Context) *Sweep {
	c.runSweep(ctx)
	return c.latest.Load().sweep
}

// Latest returns the last finished sweep without waiting; ok is false before
// the first one. The sweep is shared: do not modify it.
func (c *Collector) Latest() (s *Sweep, ok bool) {
	p := c.latest.Load()
	if p == nil {
		return nil, false
	}
	return p.sweep, true
}

// FreshFor is how old a sweep may be and still count as the present: two
// intervals plus the per-call timeout, so one late or slow sweep does not
// make the readings stale.
func (c *Collector) FreshFor() time.Duration { return 2*c.cfg.Interval + c.cfg.Timeout }

// ActiveQPs returns, per chip whose `-qp_info -g` answered in the latest
// sweep, its live QP count. It never runs hccn_tool; chips that did not
// answer are absent (not zero). The headroom model reads this view.
func (c *Collector) ActiveQPs() []ascend.QPReading {
	s, ok := c.Latest()
	if !ok || s.Absent {
		return nil
	}
	fresh := c.now().Sub(s.Finished) <= c.FreshFor()
	var out []ascend.QPReading
	for i := range s.Devices {
		r := &s.Devices[i]
		if r.HasQPs {
			qpns := make([]uint32, len(r.QPs))
			for j, q := range r.QPs {
				qpns[j] = q.QPN
			}
			out = append(out, ascend.QPReading{ChipID: r.ChipID, PhyID: r.PhyID, ActiveQPs: len(r.QPs), QPNs: qpns, At: s.Finished, Fresh: fresh})
		}
	}
	return out
}

var (
	upDesc = prometheus.NewDesc("hccl_exporter_hccn_tool_up",
		"1 when the last hccn_tool sweep read every call of every NPU chip (a command the product does not support counts as "+
			"read); 0 when a call failed, timed out or was busy, before the first sweep, and where hccn_tool is not "+
			"installed.",
		nil, nil)
	lastSweepDesc = prometheus.NewDesc("hccl_exporter_hccn_tool_last_sweep_timestamp_seconds",
		"Unix time the last hccn_tool sweep finished (whether complete or not).", nil, nil)
	sweepDurationDesc = prometheus.NewDesc("hccl_exporter_hccn_tool_last_sweep_duration_seconds",
		"How long the last hccn_tool sweep took (all devices, one call at a time).", nil, nil)
	callsDesc = prometheus.NewDesc("hccl_exporter_hccn_tool_calls_total",
		"hccn_tool calls by command (link, net_health, link_stat, stat, optical, tls, speed, qp_info) and result (success, timeout, busy, unsupported, error, parse_error).",
		[]string{"command", "result"}, nil)

	chipLabels = []string{"npu", "chip"}
	linkUpDesc = prometheus.NewDesc("ascend_roce_link_up",
		"RoCE port link state of the NPU chip: 1 UP, 0 DOWN (hccn_tool -link -g).", chipLabels, nil)
	linkDownDesc = prometheus.NewDesc("ascend_roce_link_down_events_total",
		"Link up-to-down transitions the NPU chip's RoCE port counted since driver load or the last -link_stat -c (hccn_tool "+
			"-link_stat -g; counted from the change records on drivers that print no down count).",
		chipLabels, nil)
	linkUpCountDesc = prometheus.NewDesc("ascend_roce_link_up_events_total",
		"Times the NPU chip's RoCE port came up since driver load or the last -link_stat -c (hccn_tool -link_stat -g, link up count: npu-exporter's npu_chip_link_up_num).",
		chipLabels, nil)
	healthDesc = prometheus.NewDesc("ascend_roce_network_health",
		"Reachability of the RoCE port's detect IP (hccn_tool -net_health -g): one series per chip, value 1, labelled with the current status only. Success = reachable; Init = no detect IP set or not probed yet.",
		[]string{"npu", "chip", "status"}, nil)
	laneLabels         = []string{"npu", "chip", "lane"}
	opticalPresentDesc = prometheus.NewDesc("ascend_roce_optical_present",
		"1 when the NPU chip's RoCE port has an optical module, 0 when hccn_tool -optical -g says not present (a port without one is always DOWN).", chipLabels, nil)
	opticalTempDesc = prometheus.NewDesc("ascend_roce_optical_temperature_celsius",
		"Temperature of the port's optical module (hccn_tool -optical -g temperature).", chipLabels, nil)
	opticalVccDesc = prometheus.NewDesc("ascend_roce_optical_vcc_volts",
		"Supply voltage of the port's optical module (hccn_tool -optical -g Vcc).", chipLabels, nil)
	opticalTxPowerDesc = prometheus.NewDesc("ascend_roce_optical_tx_power_watts",
		"Transmit power of one lane of the optical module (hccn_tool -optical -g Tx Power<lane>; lane 0 for single-lane modules).", laneLabels, nil)
	opticalRxPowerDesc = prometheus.NewDesc("ascend_roce_optical_rx_power_watts",
		"Receive power of one lane of the optical module (hccn_tool -optical -g Rx Power<lane>): near 0 means no light from the far end.", laneLabels, nil)
	opticalRxPowerMinDesc = prometheus.NewDesc("ascend_roce_optical_rx_power_min_watts",
		"Receive power of the weakest lane of the port's optical module (hccn_tool -optical -g Rx Power<lane>, the smallest): near "+
			"0 means a lane gets no light from the far end (per lane: ascend_roce_optical_rx_power_watts, "+
			"--hccn.optical-detail).", chipLabels, nil)
	opticalTxBiasDesc = prometheus.NewDesc("ascend_roce_optical_tx_bias_amperes",
		"Laser bias current of one lane of the optical module (hccn_tool -optical -g Tx Bias<lane>).", laneLabels, nil)
	tlsEnabledDesc = prometheus.NewDesc("ascend_roce_tls_enabled",
		"1 when the TLS switch of the chip's RoCE port is on (hccn_tool -tls -g tls switch[1]). Every rank of a job must agree, or communicator init or link setup fails.", chipLabels, nil)
	speedDesc = prometheus.NewDesc("ascend_roce_link_speed_bytes_per_second",
		"Speed of the chip's RoCE port (hccn_tool -speed -g `Speed: N Mb/s`, in bytes per second); absent while the port reports Unknown.", chipLabels, nil)
	activeQPsDesc = prometheus.NewDesc("ascend_roce_active_queue_pairs",
		"RoCE queue pairs that exist now on the NPU chip's port, every user's (hccn_tool -qp_info -g, total_qp_count): a measurement, not a model.",
		chipLabels, nil)
)

// statCounter is one `-stat -g` counter exported as ascend_roce_*_total.
type statCounter struct {
	key  string // as hccn_tool prints it
	desc *prometheus.Desc
}

// statCounters are the -stat counters that matter for link setup and
// transfer health (DCMI dcmi_get_netdev_pkt_stats_info; HCCL's switch
// congestion guide for retransmissions). Data, not code: a row here is a
// series. Keys a build does not print give no series.
var statCounters = []statCounter{
	newStat("roce_new_pkt_rty_num", "ascend_roce_retransmitted_packets_total",
		"RoCE packet retransmissions. Rising during a job: the network drops packets (check the switch, PFC/ECN)."),
	newStat("roce_qp_status_err_num", "ascend_roce_qp_status_errors_total",
		"RoCE packets received while their queue pair was in an abnormal state."),
	newStat("roce_rx_err_pkt_num", "ascend_roce_rx_error_packets_total", "RoCE packets received with errors."),
	newStat("roce_tx_err_pkt_num", "ascend_roce_tx_error_packets_total", "RoCE packets that failed to send."),
	newStat("roce_out_of_order_num", "ascend_roce_out_of_order_packets_total",
		"RoCE packets out of order or lost (PSN errors); each triggers a retransmission."),
	newStat("roce_verification_err_num", "ascend_roce_verification_errors_total",
		"RoCE packets failing the ICRC, length or destination-port check."),
	newStat("roce_unexpected_ack_num", "ascend_roce_unexpected_acks_total",
		"Unexpected RoCE ACKs, discarded without affecting traffic."),
	newStat("roce_rx_all_pkt_num", "ascend_roce_rx_packets_total", "RoCE packets received."),
	newStat("roce_tx_all_pkt_num", "ascend_roce_tx_packets_total", "RoCE packets sent."),
	newStat("roce_rx_cnp_pkt_num", "ascend_roce_rx_cnp_packets_total", "Congestion notification packets (CNP) received."),
	newStat("roce_tx_cnp_pkt_num", "ascend_roce_tx_cnp_packets_total", "Congestion notification packets (CNP) sent."),
	newStat("roce_ecn_db_num", "ascend_roce_rx_ecn_packets_total", "ECN-marked packets received (printed by some builds only)."),
	newStat("mac_rx_pfc_pkt_num", "ascend_roce_rx_pfc_packets_total", "PFC pause frames received by the port."),
	newStat("mac_tx_pfc_pkt_num", "ascend_roce_tx_pfc_packets_total", "PFC pause frames sent by the port."),
	newStat("mac_rx_mac_pause_num", "ascend_roce_rx_pause_frames_total", "MAC (global) pause frames received."),
	newStat("mac_tx_mac_pause_num", "ascend_roce_tx_pause_frames_total", "MAC (global) pause frames sent."),
	newStat("mac_rx_bad_pkt_num", "ascend_roce_mac_rx_bad_packets_total", "Bad packets received at the MAC."),
	newStat("mac_tx_bad_pkt_num", "ascend_roce_mac_tx_bad_packets_total", "Bad packets sent at the MAC."),
	newStat("mac_rx_bad_oct_num", "ascend_roce_mac_rx_bad_bytes_total", "Bytes (octets) of the bad packets received at the MAC."),
	newStat("mac_tx_bad_oct_num", "ascend_roce_mac_tx_bad_bytes_total", "Bytes (octets) of the bad packets sent at the MAC."),
	newStat("mac_rx_total_oct_num", "ascend_roce_receive_bytes_total", "Bytes (octets) received by the port's MAC, every frame included."),
	newStat("mac_tx_total_oct_num", "ascend_roce_transmit_bytes_total", "Bytes (octets) sent by the port's MAC, every frame included."),
	newStat("mac_rx_fcs_err_pkt_num", "ascend_roce_mac_rx_fcs_errors_total", "Packets received with a bad frame check sequence (printed by some builds only)."),
}

func newStat(key, name, help string) statCounter {
	return statCounter{key: key, desc: prometheus.NewDesc(name,
		help+" Cumulative since driver load or the last `hccn_tool -stat -c` (hccn_tool -stat -g "+key+").", chipLabels, nil)}
}

// errFirstSweep: a scrape before the first sweep finished.
var errFirstSweep = fmt.Errorf("first hccn_tool sweep still running: %w", collector.ErrNoData)

// published is a sweep with its metrics. Nothing a scrape exports changes
// between two sweeps (the call counters move only during one), so the const
// metrics are built once per sweep and re-sent, immutable, by every scrape.
type published struct {
	sweep   *Sweep
	metrics []prometheus.Metric
	err     error // what Update returns
}

// publish builds the metrics of a finished sweep.
func (c *Collector) publish(s *Sweep) *published {
	p := &published{sweep: s}
	if s.Absent {
		// Inference cards have no RoCE NIC: not an error, only up 0.
		p.metrics = []prometheus.Metric{prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)}
		return p
	}
	ch := make(chan prometheus.Metric, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ch {
			p.metrics = append(p.metrics, m)
		}
	}()
	c.sendCalls(ch)
	up := 0.0
	if s.Complete {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(lastSweepDesc, prometheus.GaugeValue, float64(s.Finished.UnixNano())/1e9)
	ch <- prometheus.MustNewConstMetric(sweepDurationDesc, prometheus.GaugeValue, s.Duration().Seconds())
	exportSweep(ch, s)
	close(ch)
	<-done
	if !s.Complete {
		// runSweep warns when sweeps become incomplete; every scrape
		// until a complete one still counts as failed.
		p.err = fmt.Errorf("%w: %w", collector.ErrLogged, s.Err)
	}
	return p
}

func (c *Collector) sendCalls(ch chan<- prometheus.Metric) { c.calls.Send(ch, callsDesc, commandNames) }

// commandNames are the values of the calls counter's command label.
var commandNames = sweep.Names(commands, func(c command) string { return c.name })

// Update sends the metrics of the latest sweep, built when it was
// published. It never runs hccn_tool and never waits, so it needs nothing
// of the scrape's ctx. An incomplete sweep returns its error after sending
// what it read; a missing hccn_tool is not an error (inference cards have
// no RoCE NIC): only hccl_exporter_hccn_tool_up 0 is sent. A sweep that finished
// more than two intervals ago is not served (up 0, call counters and the
// last sweep's time only): the sweep after it hangs.
func (c *Collector) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	p := c.latest.Load()
	if p == nil {
		c.sendCalls(ch)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return errFirstSweep
	}
	if s := p.sweep; !s.Absent {
		if age, stale := sweep.Stale(c.now(), s.Finished, c.cfg.Interval); stale {
			// The sweep in flight hangs (a hung hccn_tool costs a timeout
			// per chip and command): the last one is no longer the
			// present, whatever it said.
			c.sendCalls(ch)
			ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
			ch <- prometheus.MustNewConstMetric(lastSweepDesc, prometheus.GaugeValue, float64(s.Finished.UnixNano())/1e9)
			return fmt.Errorf("last hccn_tool sweep finished %s ago, more than two --hccn.interval (%s): the sweep in flight hangs, old readings are not served: %w",
				age.Round(time.Second), c.cfg.Interval, collector.ErrNoData)
		}
	}
	for _, m := range p.metrics {
		ch <- m
	}
	return p.err
}

func exportSweep(ch chan<- prometheus.Metric, s *Sweep) {
	for i := range s.Devices {
		exportReading(ch, &s.Devices[i])
	}
}

func exportReading(ch chan<- prometheus.Metric, r *Reading) {
	if r.HasLink {
		v := 0.0
		if r.LinkUp {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(linkUpDesc, prometheus.GaugeValue, v, r.NPU, r.Chip)
	}
	if r.LinkStat != nil {
		ch <- prometheus.MustNewConstMetric(linkDownDesc, prometheus.CounterValue, r.LinkDownEvents, r.NPU, r.Chip)
		ch <- prometheus.MustNewConstMetric(linkUpCountDesc, prometheus.CounterValue, float64(r.LinkStat.UpCount), r.NPU, r.Chip)
	}
	if r.NetHealth != "" {
		// Only the current status: the nine zeros of a state set were 9
		// series per chip that no alert or panel reads (docs/scale.md).
		ch <- prometheus.MustNewConstMetric(healthDesc, prometheus.GaugeValue, 1, r.NPU, r.Chip, r.NetHealth)
	}
	if r.HasQPs {
		ch <- prometheus.MustNewConstMetric(activeQPsDesc, prometheus.GaugeValue, float64(len(r.QPs)), r.NPU, r.Chip)
	}
	if o := r.Optical; o != nil {
		if o.HasPresent {
			ch <- prometheus.MustNewConstMetric(opticalPresentDesc, prometheus.GaugeValue, boolValue(o.Present), r.NPU, r.Chip)
		}
		if o.HasTemperature {
			ch <- prometheus.MustNewConstMetric(opticalTempDesc, prometheus.GaugeValue, o.TemperatureC, r.NPU, r.Chip)
		}
		if o.HasVcc {
			ch <- prometheus.MustNewConstMetric(opticalVccDesc, prometheus.GaugeValue, o.VccVolts, r.NPU, r.Chip)
		}
		for _, l := range []struct {
			desc *prometheus.Desc
			m    map[string]float64
		}{{opticalTxPowerDesc, o.TxPowerW}, {opticalRxPowerDesc, o.RxPowerW}, {opticalTxBiasDesc, o.TxBiasA}} {
			for lane, v := range l.m {
				ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, v, r.NPU, r.Chip, lane)
			}
		}
		if len(o.RxPowerW) > 0 {
			weakest := math.Inf(1)
			for _, v := range o.RxPowerW {
				weakest = math.Min(weakest, v)
			}
			ch <- prometheus.MustNewConstMetric(opticalRxPowerMinDesc, prometheus.GaugeValue, weakest, r.NPU, r.Chip)
		}
	}
	if r.HasTLS {
		ch <- prometheus.MustNewConstMetric(tlsEnabledDesc, prometheus.GaugeValue, boolValue(r.TLSEnabled), r.NPU, r.Chip)
	}
	if r.HasSpeed {
		ch <- prometheus.MustNewConstMetric(speedDesc, prometheus.GaugeValue, r.SpeedBytesPerSecond, r.NPU, r.Chip)
	}
	for _, sc := range statCounters {
		if v, ok := r.Stat[sc.key]; ok {
			ch <- prometheus.MustNewConstMetric(sc.desc, prometheus.CounterValue, float64(v), r.NPU, r.Chip)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
