package hccn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/sweep"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// command is one hccn_tool query the sweep makes per device.
type command struct {
	name  string // label value of hccl_exporter_hccn_tool_calls_total{command}
	parse func(c *Collector, r *Reading, stdout []byte) error
	// answer, when set, recognises an output that the tool exits non-zero
	// with but that is an answer, not a failure ("Optical module is not
	// present."): it is parsed and counted as success.
	answer func(stdout []byte) bool
	// slow: the answer changes rarely (the optical module, the TLS switch,
	// the port speed), so it is asked every --hccn.slow-interval and the
	// last answer is carried over in between (docs/hccn.md).
	slow bool
}

// commands run in this order per device: the cheap one-line answers first,
// -qp_info (one driver round trip per QP) last.
var commands = []command{
	{name: "link", parse: func(_ *Collector, r *Reading, b []byte) error {
		up, err := ParseLink(b)
		r.LinkUp, r.HasLink = up, err == nil
		return err
	}},
	{name: "net_health", parse: func(_ *Collector, r *Reading, b []byte) error {
		s, raw, err := ParseNetHealth(b)
		r.NetHealth, r.NetHealthRaw = s, raw
		return err
	}},
	{name: "link_stat", parse: func(c *Collector, r *Reading, b []byte) error {
		s, err := ParseLinkStat(b, c.loc)
		if err != nil {
			return err
		}
		r.LinkStat = &s
		r.LinkDownEvents = c.downEvents(r.PhyID, s)
		return nil
	}},
	{name: "stat", parse: func(_ *Collector, r *Reading, b []byte) error {
		s, err := ParseStat(b)
		r.Stat = s
		return err
	}},
	{name: "optical", parse: func(_ *Collector, r *Reading, b []byte) error {
		o, err := ParseOptical(b)
		if err == nil {
			r.Optical = &o
		}
		return err
	}, answer: func(b []byte) bool { return bytes.Contains(b, []byte(opticalNotPresent)) }, slow: true},
	{name: "tls", parse: func(_ *Collector, r *Reading, b []byte) error {
		on, err := ParseTLS(b)
		r.TLSEnabled, r.HasTLS = on, err == nil
		return err
	}, slow: true},
	{name: "speed", parse: func(_ *Collector, r *Reading, b []byte) error {
		v, known, err := ParseSpeed(b)
		r.SpeedBytesPerSecond, r.HasSpeed = v, known && err == nil
		return err
	}, slow: true},
	{name: "qp_info", parse: func(_ *Collector, r *Reading, b []byte) error {
		qps, err := ParseQPInfo(b)
		r.QPs, r.HasQPs = qps, err == nil
		return err
	}},
}

// Reading is what one sweep read from one device. A command that failed
// leaves its fields unset (Has… false, nil), so nothing stale is exported.
type Reading struct {
	Device
	// Results holds the result of every command called, by command name;
	// a command missing here was skipped after the device timed out.
	Results map[string]string

	LinkUp, HasLink bool
	LinkStat        *LinkStat
	LinkDownEvents  float64 // ascend_roce_link_down_events_total; valid with LinkStat
	NetHealth       string  // one of NetHealthStates; "" when not read
	NetHealthRaw    string  // as printed
	QPs             []QP
	HasQPs          bool
	Stat            map[string]uint64 // nil when not read
	// Optical is the optical module (-optical -g), nil when not read.
	Optical *Optical
	// TLSEnabled is the TLS switch (-tls -g) when HasTLS.
	TLSEnabled, HasTLS bool
	// SpeedBytesPerSecond is the port speed (-speed -g) when HasSpeed.
	SpeedBytesPerSecond float64
	HasSpeed            bool
}

// Sweep is one pass over every device. Sweeps handed out are shared and
// read-only.
type Sweep struct {
	Started, Finished time.Time
	// Absent: hccn_tool was not found; nothing else is set.
	Absent bool
	// Complete: every call of every device answered (success or
	// "unsupported"); Err lists what did not.
	Complete bool
	Err      error
	Devices  []Reading
}

// Duration is how long the sweep took.
func (s *Sweep) Duration() time.Duration { return s.Finished.Sub(s.Started) }

// sweep reads every device once, one call at a time, and returns the result.
func (c *Collector) sweep(ctx context.Context) *Sweep {
	s := &Sweep{Started: c.now()}
	bin, err := c.resolve()
	if err != nil {
		s.Finished, s.Err = c.now(), err
		s.Absent = errors.Is(err, ErrNotFound)
		return s
	}
	devs := c.devices(ctx)
	if len(devs) == 0 {
		s.Finished = c.now()
		s.Err = errors.New("no NPU chip found to read (npu-smi listed none and there is no /dev/davinciN)")
		return s
	}
	var problems []string
	for _, d := range devs {
		r := Reading{Device: d, Results: make(map[string]string, len(commands))}
		prev, carry := c.slow[d.PhyID]
		carry = carry && c.cfg.SlowInterval > 0 && c.now().Sub(prev.at) < c.cfg.SlowInterval
		slowOK := true
		for _, cmd := range commands {
			if ctx.Err() != nil {
				break
			}
			if cmd.slow && carry {
				// Asked less than --hccn.slow-interval ago, and answered.
				r.Optical, r.TLSEnabled, r.HasTLS = prev.r.Optical, prev.r.TLSEnabled, prev.r.HasTLS
				r.SpeedBytesPerSecond, r.HasSpeed = prev.r.SpeedBytesPerSecond, prev.r.HasSpeed
				r.Results[cmd.name] = prev.r.Results[cmd.name]
				continue
			}
			args := []string{"-i", strconv.Itoa(d.PhyID), "-" + cmd.name, "-g"}
			out := c.exec(ctx, bin, args)
			result, err := classify(out)
			if err != nil && result == sweep.Error && cmd.answer != nil && !out.TimedOut && cmd.answer(out.Stdout) {
				result, err = sweep.Success, nil
			}
			if err == nil {
				if perr := cmd.parse(c, &r, out.Stdout); perr != nil {
					result, err = sweep.ParseError, perr
				}
			}
			r.Results[cmd.name] = result
			c.calls.Add(cmd.name, result, 1)
			if cmd.slow && result != sweep.Success && result != sweep.Unsupported {
				slowOK = false
			}
			if err != nil {
				c.logger.Debug("hccn_tool call failed", "phy_id", d.PhyID, "command", cmd.name, "result", result, "err", err)
			}
			if result != sweep.Success && result != sweep.Unsupported {
				problems = append(problems, fmt.Sprintf("phy_id %d -%s: %s: %v", d.PhyID, cmd.name, result, err))
			}
			// A device that hangs (a reset holds every call for about
			// 5 minutes inside the tool) costs one timeout per sweep, not
			// one per command: the other devices are read on time.
			if result == sweep.Timeout {
				break
			}
		}
		if !carry && slowOK && ctx.Err() == nil && r.Results["speed"] != "" {
			// Every slow command answered: keep them for the slow interval.
			c.slow[d.PhyID] = slowReading{at: c.now(), r: r}
		} else if !carry {
			delete(c.slow, d.PhyID) // ask again at the next sweep
		}
		s.Devices = append(s.Devices, r)
	}
	s.Finished = c.now()
	if ctx.Err() != nil {
		problems = append(problems, "sweep cancelled: "+ctx.Err().Error())
	}
	s.Complete = len(problems) == 0
	if !s.Complete {
		sort.Strings(problems)
		s.Err = fmt.Errorf("%d hccn_tool call(s) failed: %s", len(problems), strings.Join(problems, "; "))
	}
	return s
}

// devices lists the devices to read: npu-smi's chips where available, else
// the /dev/davinciN nodes.
func (c *Collector) devices(ctx context.Context) []Device {
	var chips []ascend.Chip
	if c.chips != nil {
		var err error
		if chips, err = c.chips.Chips(ctx); err != nil {
			c.logger.Debug("npu-smi chip list unavailable; reading /dev/davinciN instead", "err", err)
			chips = nil
		}
	}
	var nodes []int
	if len(chips) == 0 {
		nodes = davinciNodes(c.devDir)
	}
	devs, warnings := MapDevices(chips, nodes)
	if w := strings.Join(warnings, "; "); w != c.lastMapWarning {
		c.lastMapWarning = w
		if w != "" {
			c.logger.Warn("some NPU chips cannot be mapped to hccn_tool's physical ids", "warnings", w)
		}
	}
	return devs
}

// downTracker keeps the link-down count of a device whose driver prints
// no `link down count`: it counts the LINK DOWN records newer than the
// newest one seen before, because the driver keeps only the last 10 records
// and their number alone stops growing at 10.
type downTracker struct {
	total  float64
	newest time.Time
}

// downEvents returns ascend_roce_link_down_events_total for a device.
// Only the sweep goroutine calls it.
func (c *Collector) downEvents(phy int, s LinkStat) float64 {
	if s.HasDownCount {
		delete(c.down, phy)
		return float64(s.DownCount)
	}
	t, seen := c.down[phy]
	if !seen {
		t = &downTracker{total: float64(s.DownRecords())}
		c.down[phy] = t
	}
	newest := t.newest
	for _, r := range s.Records {
		if seen && !r.Up && r.At.After(t.newest) {
			t.total++
		}
		if r.At.After(newest) {
			newest = r.At
		}
	}
	t.newest = newest
	return t.total
}

// slowReading is the last complete answer of a device's slow commands.
type slowReading struct {
	at time.Time
	r  Reading
}
