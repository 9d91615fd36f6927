package npusmi

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// Config holds the --npusmi.* flags: how the one shared npu-smi run is
// made (main builds the npusmi.Runner every npu-smi consumer shares from
// it).
type Config struct {
	Run npusmi.RunnerConfig
}

// Deps are what main gives the collector besides its own flags.
type Deps struct {
	// Runner is the shared npu-smi run (built from Config.Run).
	Runner *npusmi.Runner
	// Procfs is the host's /proc (--path.procfs), against which npu-smi's
	// pids are checked (pidns.go); empty skips the check.
	Procfs string
	// Identities gives each chip's VDie ID, serial number and product
	// name for ascend_npu_info (the npuhealth sweep publishes them); nil:
	// empty labels.
	Identities *ascend.Identities
}

// AddFlags registers the --npusmi.* flags.
func AddFlags(app *kingpin.Application, rules *flagcheck.Rules) *Config {
	cfg := &Config{}
	rules.Flag(app, "npusmi.path", "The npu-smi binary, run as '<path> info' without a shell; looked up in PATH when it has no slash.", flagcheck.Executable).
		Default("npu-smi").StringVar(&cfg.Run.Tool.Path)
	rules.Flag(app, "npusmi.timeout", "Kill npu-smi (its whole process group) when a run takes longer than this. "+
		"A scrape waits for a run only until its own deadline; later scrapes do not wait again for a run one gave up on, "+
		"and a run slower than a scrape may wait is served to the next scrape.", flagcheck.Positive(10*time.Minute)).
		Default("10s").DurationVar(&cfg.Run.Tool.Timeout)
	rules.Flag(app, "npusmi.min-interval", "npu-smi runs at most once per this interval whatever the scrape load; scrapes in between reuse the last result.", flagcheck.DurationIn(0, flagcheck.MaxInterval, "0 (a run per scrape) or a duration up to 24h, such as 5s")).
		Default("5s").DurationVar(&cfg.Run.MinInterval)
	return cfg
}

// Collector exports the ascend_npu_* series of the shared npu-smi run.
type Collector struct {
	run    *npusmi.Runner
	procfs string // --path.procfs (pidns.go)
	logger *slog.Logger

	mu          sync.Mutex
	foreignPIDs bool             // the last checked run listed pids of another namespace
	pidsChecked *npusmi.Snapshot // the run pidsVerdict is of
	pidsVerdict pidVerdict       // checkPIDNamespace of pidsChecked

	// ids gives each chip's VDie ID, serial number and product name for
	// ascend_npu_info (the npuhealth sweep publishes them from `npu-smi
	// info -t board`); nil: empty labels.
	ids *ascend.Identities
}

// New returns the collector over deps.Runner; a nil Runner is built from
// cfg.Run (a collector of its own, as in tests).
func New(cfg Config, deps Deps, logger *slog.Logger) (*Collector, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	run := deps.Runner
	if run == nil {
		run = npusmi.NewRunner(cfg.Run, logger)
	}
	return &Collector{run: run, procfs: deps.Procfs, logger: logger, ids: deps.Identities}, nil
}

// Start does nothing: npu-smi runs when a scrape asks.
func (c *Collector) Start(context.Context) {}

// Close does nothing: no run outlives its waiters.
func (c *Collector) Close() error { return nil }

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
	get  func(*npusmi.Chip) ascend.Value
}

// chipGauges lists the per-chip value series: data, not code.
var chipGauges = []chipGauge{
	{newChipDesc("ascend_npu_hbm_used_bytes", "HBM in use on the NPU chip (npu-smi HBM-Usage)."),
		func(c *npusmi.Chip) ascend.Value { return c.HBMUsedBytes }},
	{newChipDesc("ascend_npu_hbm_total_bytes", "HBM capacity of the NPU chip (npu-smi HBM-Usage)."),
		func(c *npusmi.Chip) ascend.Value { return c.HBMTotalBytes }},
	{newChipDesc("ascend_npu_memory_used_bytes", "DDR memory in use on the NPU chip (npu-smi Memory-Usage; not shown where npu-smi prints 0 / 0)."),
		func(c *npusmi.Chip) ascend.Value { return c.MemoryUsedBytes }},
	{newChipDesc("ascend_npu_memory_total_bytes", "DDR memory capacity of the NPU chip (npu-smi Memory-Usage)."),
		func(c *npusmi.Chip) ascend.Value { return c.MemoryTotalBytes }},
	{newChipDesc("ascend_npu_hugepages_used_pages", "Hugepages in use on the NPU chip."),
		func(c *npusmi.Chip) ascend.Value { return c.HugepagesUsed }},
	{newChipDesc("ascend_npu_hugepages_total_pages", "Hugepages configured on the NPU chip."),
		func(c *npusmi.Chip) ascend.Value { return c.HugepagesTotal }},
	{newChipDesc("ascend_npu_aicore_utilization_ratio", "AI Core utilisation of the NPU chip, 0..1 (NPU Util on Ascend 950)."),
		func(c *npusmi.Chip) ascend.Value { return c.AICoreRatio }},
	{newChipDesc("ascend_npu_power_watts", "Power draw of the NPU chip as npu-smi reports it."),
		func(c *npusmi.Chip) ascend.Value { return c.PowerWatts }},
	{newChipDesc("ascend_npu_temperature_celsius", "Temperature of the NPU chip."),
		func(c *npusmi.Chip) ascend.Value { return c.TemperatureCelsius }},
}

func newChipDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, chipLabels, nil)
}

// Update runs (or reuses) npu-smi and sends the metrics of this scrape. On a
// failed run it sends only the hccl_exporter_npu_smi_* series and returns the error,
// so no stale per-chip value is served as fresh. It waits for a run no
// longer than ctx allows; the run goes on for the scrapes that follow.
func (c *Collector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	res, err := c.run.Result(ctx)
	st := c.run.Stats()
	for _, r := range npusmi.RunResults {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.CounterValue, st.Runs[r], r)
	}
	ch <- prometheus.MustNewConstMetric(warningsDesc, prometheus.CounterValue, st.ParseWarnings)
	if good := st.LastSuccess; good != nil {
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, float64(good.At.UnixNano())/1e9)
	}
	if err == nil {
		ch <- prometheus.MustNewConstMetric(durationDesc, prometheus.GaugeValue, res.Duration.Seconds())
		err = res.Err
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return err
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	sendSnapshot(ch, res.Snap, c.ids)
	c.reportPIDNamespace(ch, res.Snap)
	return nil
}

// sendSnapshot sends the series of one npu-smi snapshot.
func sendSnapshot(ch chan<- prometheus.Metric, s *npusmi.Snapshot, ids *ascend.Identities) {
	send := func(m prometheus.Metric) { ch <- m }
	phyIDs := ascend.PhysicalIDs(s.PhyChips())
	for i := range s.Chips {
		chip := &s.Chips[i]
		id := ids.Of(chip.ChipID)
		send(prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1,
			chip.NPU, chip.Chip, phyIDs[chip.ChipID], chip.Name, chip.BusID, s.Version, s.DriverVersion, id.VDieID, id.SerialNumber, id.ProductName))
		current := "UNKNOWN"
		for _, h := range npusmi.HealthStates {
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
