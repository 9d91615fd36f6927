package npusmi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// Config holds the collector's own flags.
type Config struct {
	// MinInterval: a completed run younger than this is reused, so npu-smi
	// runs at most once per interval whatever the scrape load.
	MinInterval time.Duration
}

// Deps are what main gives the collector besides its own flags.
type Deps struct {
	// Tool is the npu-smi binary and the timeout of one run
	// (--npusmi.path, --npusmi.timeout), shared with the npuhealth sweep.
	// Zero fields: npu-smi from PATH, 10s.
	Tool vendorcli.Tool
	// Procfs is the host's /proc (--path.procfs), against which npu-smi's
	// pids are checked (pidns.go); empty skips the check.
	Procfs string
	// Identities gives each chip's VDie ID, serial number and product
	// name for ascend_npu_info (the npuhealth sweep publishes them); nil:
	// empty labels.
	Identities *ascend.Identities
}

// AddFlags registers the --npusmi.* flags: the tool, which main shares
// through Deps with every collector that runs npu-smi, and the collector's
// own Config.
func AddFlags(app *kingpin.Application) (*vendorcli.Tool, *Config) {
	tool, cfg := &vendorcli.Tool{}, &Config{}
	app.Flag("npusmi.path", "The npu-smi binary, run as '<path> info' without a shell; looked up in PATH when it has no slash.").
		Default("npu-smi").StringVar(&tool.Path)
	app.Flag("npusmi.timeout", "Kill npu-smi (its whole process group) when a run takes longer than this. "+
		"A scrape waits for a run only until its own deadline; later scrapes do not wait again for a run one gave up on, "+
		"and a run slower than a scrape may wait is served to the next scrape.").
		Default("10s").DurationVar(&tool.Timeout)
	app.Flag("npusmi.min-interval", "npu-smi runs at most once per this interval whatever the scrape load; scrapes in between reuse the last result.").
		Default("5s").DurationVar(&cfg.MinInterval)
	return tool, cfg
}

// Run results, the values of hccl_exporter_npu_smi_runs_total{result}.
const (
	resultSuccess    = "success"
	resultTimeout    = "timeout"
	resultExecError  = "exec_error"
	resultParseError = "parse_error"
)

var runResults = []string{resultSuccess, resultTimeout, resultExecError, resultParseError}

// result is one completed npu-smi run.
type result struct {
	snap     *Snapshot
	err      error
	at       time.Time // when the run finished
	duration time.Duration

	// unseen, under the collector's mu: the run landed after every caller
	// had stopped waiting for it, and no caller has been served it since;
	// servedTo is the scrape (collector.ScrapeOf) it was then served to.
	unseen   bool
	servedTo uint64
}

// call is a run in flight that concurrent callers wait on.
type call struct {
	done chan struct{}
	res  *result
	// began is when the run was started; abandoned, under the collector's
	// mu, that a caller stopped waiting for it (or that it was started for
	// a later scrape): its result is then unseen when it lands.
	began     time.Time
	abandoned bool
}

// Collector runs npu-smi (one run shared by all concurrent callers) and
// exports the ascend_npu_* series.
type Collector struct {
	cfg    Config
	tool   vendorcli.Tool
	procfs string // --path.procfs (pidns.go)
	logger *slog.Logger
	// exec and now are replaced in tests.
	exec func(ctx context.Context) ([]byte, error)
	now  func() time.Time

	mu            sync.Mutex
	inflight      *call
	last          *result // last completed run, success or failure
	good          *result // last successful run
	runs          map[string]float64
	parseWarnings float64
	failing       bool
	warnedCount   int // warnings of the last run, to log a change once
	expect        expectation
	foreignPIDs   bool       // the last checked run listed pids of another namespace
	pidsChecked   *Snapshot  // the run pidsVerdict is of
	pidsVerdict   pidVerdict // checkPIDNamespace of pidsChecked

	// ids gives each chip's VDie ID, serial number and product name for
	// ascend_npu_info (the npuhealth sweep publishes them from `npu-smi
	// info -t board`); nil: empty labels.
	ids *ascend.Identities
}

// InFlight returns a channel closed when the npu-smi info run in flight
// ends, or nil when none runs. Other npu-smi callers (the detail sweep) wait
// on it so that they do not meet the scrape's run inside DCMI, which
// answers one of them busy.
func (c *Collector) InFlight() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight == nil {
		return nil
	}
	return c.inflight.done
}

// New returns a collector for cfg over deps (see Deps for what a zero
// field means).
func New(cfg Config, deps Deps, logger *slog.Logger) *Collector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Collector{
		cfg: cfg, tool: deps.Tool.Or(vendorcli.NPUSMI), procfs: deps.Procfs,
		logger: logger, now: time.Now, runs: map[string]float64{}, ids: deps.Identities,
	}
	c.exec = func(ctx context.Context) ([]byte, error) {
		return runNPUSMI(ctx, c.tool.Path, c.tool.Timeout)
	}
	return c
}

// Snapshot returns the result of the shared npu-smi run: a run finished less
// than MinInterval ago (successful or not) is reused, a run in flight is
// joined, otherwise one is started. ctx only bounds the wait of this caller;
// the run itself is bounded by Timeout and finishes for the others.
// The returned Snapshot is shared: do not modify it.
func (c *Collector) Snapshot(ctx context.Context) (*Snapshot, error) {
	res, err := c.result(ctx)
	if err != nil {
		return nil, err
	}
	return res.snap, res.err
}

// Latest returns the last successful snapshot and when it was taken, without
// running npu-smi; ok is false when no run has succeeded yet. It may be old:
// callers decide how old is too old.
func (c *Collector) Latest() (snap *Snapshot, at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.good == nil {
		return nil, time.Time{}, false
	}
	return c.good.snap, c.good.at, true
}

// behindMaxAge bounds the age of a run served to the scrape after the one
// that gave up on it (see result): past it, the run is not served.
const behindMaxAge = 2 * time.Minute

// ErrBehind is returned to a scrape that does not wait for the run in
// flight: one an earlier scrape gave up on, or one started for the scrape
// after the one served the last run.
var ErrBehind = errors.New("npu-smi is still running a run that no scrape waits for (it is slower than a scrape may wait)")

// result returns the run a caller gets: the last one while younger than
// MinInterval, or a new one it starts (or joins) and waits for until ctx's
// deadline. npu-smi slower than the scrape deadline (a driver in trouble)
// would fail every scrape that way, and make each wait its whole deadline
// while the CANN-log series wait with it; so once a scrape gave up on a run:
//   - later callers do not wait for that run again: they fail at once
//     (ErrBehind), but for the collectors of the scrape that was served the
//     last run (below), which all get that run;
//   - when it lands, no scrape has seen it yet; if it took longer than the
//     next caller could wait, that caller's scrape is served it (once, and
//     only within behindMaxAge; hccl_exporter_npu_smi_last_success_timestamp_seconds
//     says when it ran) and the next run starts in the background for the
//     scrape after. A run quick enough to wait for is run and waited for
//     again, as before.
//
// A run is never served to two scrapes past MinInterval: values a scrape
// got are not served again as if fresh.
func (c *Collector) result(ctx context.Context) (*result, error) {
	scrape := collector.ScrapeOf(ctx)
	c.mu.Lock()
	now := c.now()
	if c.last != nil && now.Sub(c.last.at) < c.cfg.MinInterval {
		res := c.last
		c.mu.Unlock()
		return res, nil
	}
	if c.inflight != nil && c.inflight.abandoned {
		res := c.last
		since := now.Sub(c.inflight.began)
		c.mu.Unlock()
		if res != nil && scrape != 0 && res.servedTo == scrape {
			return res, nil
		}
		return nil, fmt.Errorf("%w (running for %s)", ErrBehind, since.Round(time.Millisecond))
	}
	if c.last != nil && c.last.unseen && now.Sub(c.last.at) < behindMaxAge {
		if dl, ok := ctx.Deadline(); ok && c.last.duration >= time.Until(dl) {
			res := c.last
			res.unseen, res.servedTo = false, scrape
			if c.inflight == nil {
				c.inflight = &call{done: make(chan struct{}), abandoned: true, began: now}
				go c.run(c.inflight)
			}
			c.mu.Unlock()
			return res, nil
		}
	}
	cl := c.inflight
	if cl == nil {
		cl = &call{done: make(chan struct{}), began: now}
		c.inflight = cl
		go c.run(cl)
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.res, nil
	case <-ctx.Done():
		c.mu.Lock()
		cl.abandoned = true
		c.mu.Unlock()
		return nil, fmt.Errorf("waiting for npu-smi: %w", ctx.Err())
	}
}

// run executes npu-smi once and publishes the result to every waiter.
func (c *Collector) run(cl *call) {
	begin := c.now()
	out, err := c.exec(context.Background())
	var snap *Snapshot
	kind := resultSuccess
	switch {
	case errors.Is(err, ErrTimeout):
		kind = resultTimeout
	case err != nil:
		kind = resultExecError
	default:
		if snap, err = Parse(out); err != nil {
			kind = resultParseError
			err = fmt.Errorf("parse npu-smi info output: %w", err)
		}
	}
	if snap != nil {
		// Only run touches the expectation, and one run at a time.
		accepted, cerr := c.expect.check(snap)
		switch {
		case cerr != nil:
			snap, kind = nil, resultParseError
			err = fmt.Errorf("parse npu-smi info output: %w", cerr)
		case accepted:
			c.logger.Warn("npu-smi has listed the same smaller table several runs in a row; taking it as the node's chips now",
				"chips", len(snap.Chips), "runs", acceptRuns)
		}
	}
	end := c.now()
	res := &result{snap: snap, err: err, at: end, duration: end.Sub(begin)}

	c.mu.Lock()
	res.unseen = cl.abandoned
	c.runs[kind]++
	if snap != nil {
		c.parseWarnings += float64(len(snap.Warnings))
		c.good = res
	}
	c.last = res
	c.inflight = nil
	wasFailing := c.failing
	c.failing = err != nil
	logWarnings := false
	if snap != nil {
		logWarnings = len(snap.Warnings) > 0 && len(snap.Warnings) != c.warnedCount
		c.warnedCount = len(snap.Warnings)
	}
	c.mu.Unlock()

	// The registry logs the error of every failed scrape; here only the
	// changes of state and the details worth a look are logged.
	switch {
	case err == nil && wasFailing:
		c.logger.Info("npu-smi works again", "chips", len(snap.Chips))
	case err != nil && !wasFailing:
		c.logger.Debug("npu-smi run failed", "result", kind, "err", err)
	}
	if snap != nil {
		for _, w := range snap.Warnings {
			c.logger.Debug("npu-smi output row dropped", "warning", w)
		}
		if logWarnings {
			c.logger.Warn("npu-smi output had rows or values that could not be read", "count", len(snap.Warnings), "first", snap.Warnings[0])
		}
	}
	cl.res = res
	close(cl.done)
}

var (
	upDesc = prometheus.NewDesc("hccl_exporter_npu_smi_up",
		"1 when the last npu-smi info run succeeded and parsed, 0 otherwise.", nil, nil)
	lastSuccessDesc = prometheus.NewDesc("hccl_exporter_npu_smi_last_success_timestamp_seconds",
		"Unix time the last successful npu-smi info run finished.", nil, nil)
	runsDesc = prometheus.NewDesc("hccl_exporter_npu_smi_runs_total",
		"npu-smi info runs by result (success, timeout, exec_error, parse_error); scrapes within --npusmi.min-interval reuse a run.",
		[]string{"result"}, nil)
	durationDesc = prometheus.NewDesc("hccl_exporter_npu_smi_last_run_duration_seconds",
		"How long the last npu-smi info run took.", nil, nil)
	warningsDesc = prometheus.NewDesc("hccl_exporter_npu_smi_parse_warnings_total",
		"Rows or values of npu-smi info output dropped because they did not parse or failed validation.", nil, nil)

	chipLabels = []string{"npu", "chip"}
	infoDesc   = prometheus.NewDesc("ascend_npu_info",
		"NPU chip identity from npu-smi info (value 1); empty label where npu-smi does not print it. phy_id is the physical id "+
			"(/dev/davinciN, npu-exporter's id): the Phy-ID npu-smi prints (A3, 950), else the NPU ID of a one-chip NPU. driver_version is the Version "+
			"of its header line; vdie_id the chip's VDie ID from npu-smi info -t board; serial_number and product_name its "+
			"board's Serial Number and Product Name from npu-smi info -t board -i N (the npuhealth sweep; empty until it "+
			"answered, and on products that print none).",
		[]string{"npu", "chip", "phy_id", "name", "bus_id", "npu_smi_version", "driver_version", "vdie_id", "serial_number", "product_name"}, nil)
	healthDesc = prometheus.NewDesc("ascend_npu_health_status",
		"NPU chip health as npu-smi prints it (OK, Warning, Alarm, Critical, UNKNOWN): one series per chip, value 1, "+
			"labelled with the current status only.",
		[]string{"npu", "chip", "status"}, nil)
	processMemoryDesc = prometheus.NewDesc("ascend_npu_process_memory_bytes",
		"Device memory used by a process on an NPU chip (npu-smi process table).",
		[]string{"npu", "chip", "pid", "process"}, nil)
)

// chipGauge is one per-chip gauge and the Chip field it reads.
type chipGauge struct {
	desc *prometheus.Desc
	get  func(*Chip) Value
}

// chipGauges lists the per-chip value series: data, not code.
var chipGauges = []chipGauge{
	{newChipDesc("ascend_npu_hbm_used_bytes", "HBM in use on the NPU chip (npu-smi HBM-Usage)."),
		func(c *Chip) Value { return c.HBMUsedBytes }},
	{newChipDesc("ascend_npu_hbm_total_bytes", "HBM capacity of the NPU chip (npu-smi HBM-Usage)."),
		func(c *Chip) Value { return c.HBMTotalBytes }},
	{newChipDesc("ascend_npu_memory_used_bytes", "DDR memory in use on the NPU chip (npu-smi Memory-Usage; not shown where npu-smi prints 0 / 0)."),
		func(c *Chip) Value { return c.MemoryUsedBytes }},
	{newChipDesc("ascend_npu_memory_total_bytes", "DDR memory capacity of the NPU chip (npu-smi Memory-Usage)."),
		func(c *Chip) Value { return c.MemoryTotalBytes }},
	{newChipDesc("ascend_npu_hugepages_used_pages", "Hugepages in use on the NPU chip."),
		func(c *Chip) Value { return c.HugepagesUsed }},
	{newChipDesc("ascend_npu_hugepages_total_pages", "Hugepages configured on the NPU chip."),
		func(c *Chip) Value { return c.HugepagesTotal }},
	{newChipDesc("ascend_npu_aicore_utilization_ratio", "AI Core utilisation of the NPU chip, 0..1 (NPU Util on Ascend 950)."),
		func(c *Chip) Value { return c.AICoreRatio }},
	{newChipDesc("ascend_npu_power_watts", "Power draw of the NPU chip as npu-smi reports it."),
		func(c *Chip) Value { return c.PowerWatts }},
	{newChipDesc("ascend_npu_temperature_celsius", "Temperature of the NPU chip."),
		func(c *Chip) Value { return c.TemperatureCelsius }},
}

func newChipDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, chipLabels, nil)
}

// Update runs (or reuses) npu-smi and sends the metrics of this scrape. On a
// failed run it sends only the hccl_exporter_npu_smi_* series and returns the error,
// so no stale per-chip value is served as fresh. It waits for a run no
// longer than ctx allows; the run goes on for the scrapes that follow.
func (c *Collector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	res, err := c.result(ctx)

	c.mu.Lock()
	runs := make(map[string]float64, len(c.runs))
	for k, v := range c.runs {
		runs[k] = v
	}
	warnings := c.parseWarnings
	good := c.good
	c.mu.Unlock()

	for _, r := range runResults {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.CounterValue, runs[r], r)
	}
	ch <- prometheus.MustNewConstMetric(warningsDesc, prometheus.CounterValue, warnings)
	if good != nil {
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, float64(good.at.UnixNano())/1e9)
	}
	if err == nil {
		ch <- prometheus.MustNewConstMetric(durationDesc, prometheus.GaugeValue, res.duration.Seconds())
		err = res.err
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return err
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	sendSnapshot(ch, res.snap, c.ids)
	c.reportPIDNamespace(ch, res.snap)
	return nil
}

// sendSnapshot sends the series of one npu-smi snapshot.
func sendSnapshot(ch chan<- prometheus.Metric, s *Snapshot, ids *ascend.Identities) {
	send := func(m prometheus.Metric) { ch <- m }
	chips := make([]ascend.Chip, len(s.Chips))
	for i, c := range s.Chips {
		chips[i] = ascend.Chip{ChipID: ascend.ChipID{NPU: c.NPU, Chip: c.Chip}, PhyID: c.PhyID}
	}
	phyIDs := ascend.PhysicalIDs(chips)
	for i := range s.Chips {
		chip := &s.Chips[i]
		cid := ascend.ChipID{NPU: chip.NPU, Chip: chip.Chip}
		id := ids.Of(cid)
		send(prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1,
			chip.NPU, chip.Chip, phyIDs[cid], chip.Name, chip.BusID, s.Version, s.DriverVersion, id.VDieID, id.SerialNumber, id.ProductName))
		current := "UNKNOWN"
		for _, h := range HealthStates {
			if strings.EqualFold(chip.Health, h) {
				current = h
			}
		}
		// Only the current status: the four zeros of a state set were 4
		// series per chip that no alert or panel reads (docs/scale.md).
		send(prometheus.MustNewConstMetric(healthDesc, prometheus.GaugeValue, 1, chip.NPU, chip.Chip, current))
		for _, g := range chipGauges {
			if v := g.get(chip); v.OK {
				send(prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v.V, chip.NPU, chip.Chip))
			}
		}
	}
	for _, p := range s.Processes {
		if p.MemoryBytes.OK {
			send(prometheus.MustNewConstMetric(processMemoryDesc, prometheus.GaugeValue, p.MemoryBytes.V,
				p.NPU, p.Chip, strconv.Itoa(p.PID), p.Name))
		}
	}
}
