package join

// The joins: what the collectors see separately (npu-smi's chips and
// process table, the processes the CANN logs describe, the pods the kubelet
// assigned chips to) and which of them belong together. The collectors stay
// independent of each other; main wires their views here.
//
// The matching itself (the rules, over data types only) is internal/join;
// these adapters feed it from the collectors and hand its results back.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	headroomc "github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npuhealth"
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/pods"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/join"
)

// npuView is what the joins need of the npusmi collector: the scrape's shared
// npu-smi run, and the last successful one without running npu-smi.
type npuView interface {
	Snapshot(ctx context.Context) (*npusmi.Snapshot, error)
	Latest() (snap *npusmi.Snapshot, at time.Time, ok bool)
}

// Logs is what the joins need of the CANN logs (the cannlog collector: the
// log state's processes, with the host pids of its table of roots).
type Logs interface {
	Devices() []logstate.ProcessDevice
	ProcessVars(key logstate.ProcessKey, names ...string) (logstate.ProcessView, bool)
}

// Chips joins npu-smi's chips and process table with the CANN logs for the
// headroom model: it is both its headroom.NPUSource and its
// headroom.SettingsSource. Logs may be nil (no cannlog collector): every
// process then keeps its host pid and has no settings.
type Chips struct {
	NPU  npuView
	Logs Logs
	// QPs is hccn_tool's live QP count per chip (nil without the hccn
	// collector); only fresh readings reach the model.
	QPs LiveQPs
	// Reported says the npusmi collector reports npu-smi failures itself:
	// Chips then wraps its error in collector.ErrDependency.
	Reported bool
	// PodOfDevice names the pod holding a physical NPU (the kubelet's
	// answer; nil without the pods collector): a process's workload is
	// then its pod's owner (workload.go).
	PodOfDevice func(phy int) (namespace, pod, container string, ok bool)
	// phys keeps the chip → physical id mapping of the latest npu-smi run
	// for podWorkload (nil: mapped on every call).
	phys *phyOfChip
}

var (
	_ headroomc.NPUSource      = Chips{}
	_ headroomc.SettingsSource = Chips{}
)

// LiveQPs is what the headroom join needs of the hccn collector: the live
// QP count per chip of its latest sweep, without running hccn_tool.
type LiveQPs interface {
	ActiveQPs() []hccn.QPReading
}

// Chips returns the chips' HBM and the process table of the scrape's
// npu-smi run, each process under the pid and directory the logs know it by.
func (c Chips) Chips(ctx context.Context) ([]headroom.ChipMemory, []headroom.ChipProcess, error) {
	snap, err := c.NPU.Snapshot(ctx)
	if err != nil {
		if c.Reported {
			err = fmt.Errorf("%w: %w", collector.ErrDependency, err)
		}
		return nil, nil, err
	}
	live := c.freshQPs()
	chips := make([]headroom.ChipMemory, 0, len(snap.Chips))
	for _, ch := range snap.Chips {
		m := headroom.ChipMemory{NPU: ch.NPU, Chip: ch.Chip, HBMUsedBytes: -1, HBMTotalBytes: -1, Name: ch.Name, Driver: snap.DriverVersion}
		if ch.HBMUsedBytes.OK && ch.HBMTotalBytes.OK {
			m.HBMUsedBytes, m.HBMTotalBytes = ch.HBMUsedBytes.V, ch.HBMTotalBytes.V
		}
		if r, ok := live[ascend.ChipID{NPU: ch.NPU, Chip: ch.Chip}]; ok {
			m.LiveQPs, m.LiveQPsKnown = float64(r.ActiveQPs), true
			m.LiveQPNs, m.LiveQPNsKnown = r.QPNs, r.QPNs != nil
		}
		chips = append(chips, m)
	}
	var devs []logstate.ProcessDevice
	if c.Logs != nil {
		devs = c.Logs.Devices()
	}
	procs := make([]headroom.ChipProcess, 0, len(snap.Processes))
	for _, m := range match(snap, devs) {
		procs = append(procs, headroom.ChipProcess{NPU: m.Row.NPU, Chip: m.Row.Chip, PID: m.Log.Key.PID, LogDir: m.Log.Key.Dir})
	}
	return chips, procs, nil
}

// freshQPs are the live QP counts of the latest hccn sweep by (npu, chip),
// when that sweep is fresh: a stale count says nothing about the present.
func (c Chips) freshQPs() map[ascend.ChipID]hccn.QPReading {
	if c.QPs == nil {
		return nil
	}
	out := map[ascend.ChipID]hccn.QPReading{}
	for _, r := range c.QPs.ActiveQPs() {
		if r.Fresh {
			out[ascend.ChipID{NPU: r.NPU, Chip: r.Chip}] = r
		}
	}
	return out
}

// Settings translates the effective HCCL settings and live communicators of
// the process of a row returned by Chips into the headroom model's input.
func (c Chips) Settings(row headroom.ChipProcess) (headroom.ProcessSettings, bool) {
	if c.Logs == nil {
		return headroom.ProcessSettings{}, false
	}
	key := logstate.ProcessKey{Dir: row.LogDir, PID: row.PID}
	p, ok := c.Logs.ProcessVars(key, join.SettingVars...)
	if !ok {
		return headroom.ProcessSettings{}, false
	}
	s := join.Settings(p)
	c.remember(&s, key, row, p)
	return s, true
}

// HCCNChips gives the hccn sweep the chips of the last successful npu-smi
// run: the chip ↔ physical id mapping does not change while the node runs.
// It runs npu-smi (the shared run) only until one run has succeeded. The
// sweep runs in the background, so this never delays a scrape.
type HCCNChips struct{ NPU npuView }

var _ hccn.ChipSource = HCCNChips{}

// Chips lists npu-smi's chips with the Phy-ID it prints (A3, 950).
func (h HCCNChips) Chips(ctx context.Context) ([]ascend.Chip, error) {
	snap, _, ok := h.NPU.Latest()
	if !ok {
		var err error
		if snap, err = h.NPU.Snapshot(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]ascend.Chip, 0, len(snap.Chips))
	for _, c := range snap.Chips {
		out = append(out, ascend.Chip{ChipID: ascend.ChipID{NPU: c.NPU, Chip: c.Chip}, PhyID: c.PhyID})
	}
	return out, nil
}

// joinChips and joinRows are npu-smi's chips and process rows as
// internal/join takes them.
func joinChips(snap *npusmi.Snapshot) []ascend.Chip {
	out := make([]ascend.Chip, len(snap.Chips))
	for i, c := range snap.Chips {
		out[i] = ascend.Chip{ChipID: ascend.ChipID{NPU: c.NPU, Chip: c.Chip}, PhyID: c.PhyID}
	}
	return out
}

func joinRows(snap *npusmi.Snapshot) []join.Row {
	out := make([]join.Row, len(snap.Processes))
	for i, p := range snap.Processes {
		out[i] = join.Row{NPU: p.NPU, Chip: p.Chip, PID: p.PID, ContainerPID: p.ContainerPID}
	}
	return out
}

// match is join.Match over an npu-smi run.
func match(snap *npusmi.Snapshot, devs []logstate.ProcessDevice) []join.Matched {
	return join.Match(joinChips(snap), joinRows(snap), devs)
}

// PhyChips maps physical chip ids to the chips of the scrape's npu-smi run
// for the pods collector.
type PhyChips struct {
	NPU npuView
	// Reported: the npusmi collector reports npu-smi failures itself.
	Reported bool
}

var _ pods.ChipMap = PhyChips{}

// ChipsByPhyID runs (or joins) the scrape's npu-smi run and maps its chips.
func (p PhyChips) ChipsByPhyID(ctx context.Context) (map[int]ascend.ChipID, error) {
	snap, err := p.NPU.Snapshot(ctx)
	if err != nil {
		err = npuSMIAbsent(err)
		if p.Reported {
			err = fmt.Errorf("%w: %w", collector.ErrDependency, err)
		}
		return nil, err
	}
	return join.PhyIDs(joinChips(snap)), nil
}

// ProcessTable gives the cannlog collector npu-smi's process table of the
// last successful run, without running npu-smi: discovery, coverage,
// liveness and hccl_process_info read it.
type ProcessTable struct{ NPU npuView }

var _ cannlog.ProcessTable = ProcessTable{}

// NPUProcesses lists the rows of the last successful npu-smi run.
func (p ProcessTable) NPUProcesses() ([]cannlog.NPUProcess, time.Time, bool) {
	snap, at, ok := p.NPU.Latest()
	if !ok {
		return nil, time.Time{}, false
	}
	out := make([]cannlog.NPUProcess, 0, len(snap.Processes))
	for _, r := range snap.Processes {
		out = append(out, cannlog.NPUProcess{NPU: r.NPU, Chip: r.Chip, PID: r.PID})
	}
	return out, at, true
}

// Match pairs every row of the last successful npu-smi run with the process
// of the logs it is (Match, the rules above), in row order.
func (p ProcessTable) Match(devs []logstate.ProcessDevice) ([]cannlog.MatchedRow, bool) {
	snap, _, ok := p.NPU.Latest()
	if !ok {
		return nil, false
	}
	ms := match(snap, devs)
	out := make([]cannlog.MatchedRow, len(ms))
	for i, m := range ms {
		out[i] = cannlog.MatchedRow{NPUProcess: cannlog.NPUProcess{NPU: m.Row.NPU, Chip: m.Row.Chip, PID: m.Row.PID},
			ContainerPID: m.Row.ContainerPID, By: m.By}
		if m.By != "" {
			out[i].Key = m.Log.Key
		}
	}
	return out, true
}

// npuSMIAbsent marks npu-smi's not-found error as the pods collector's
// ErrNoNPUSMI (the logs-only mode); other errors are returned as they are.
func npuSMIAbsent(err error) error {
	if errors.Is(err, npusmi.ErrNotFound) {
		return fmt.Errorf("%w: %w", pods.ErrNoNPUSMI, err)
	}
	return err
}

// healthTable adapts the npusmi collector to the npu-smi table the
// npuhealth sweep reads.
type healthTable struct{ NPU *npusmi.Collector }

var _ npuhealth.Table = healthTable{}

// Chips lists the chips of the shared npu-smi run.
func (t healthTable) Chips(ctx context.Context) ([]ascend.ChipID, error) {
	snap, err := t.NPU.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ascend.ChipID, 0, len(snap.Chips))
	for _, c := range snap.Chips {
		out = append(out, ascend.ChipID{NPU: c.NPU, Chip: c.Chip})
	}
	return out, nil
}

// InFlight is closed when the npu-smi run in flight ends; nil when none.
func (t healthTable) InFlight() <-chan struct{} { return t.NPU.InFlight() }
