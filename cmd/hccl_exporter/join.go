package main

// The joins: what the collectors see separately (npu-smi's chips and
// process table, the processes the CANN logs describe, the pods the kubelet
// assigned chips to) and which of them belong together. The collectors stay
// independent of each other; main wires their views here.
//
// A row of npu-smi's process table (a host pid on a chip) is matched to a
// process of the CANN logs (a log directory and the pid the process saw) by
// Match, trying in order:
//  0. the process found through --path.procfs for that host pid: its root
//     and its pid in its own namespace (NSpid) are known, nothing is guessed;
//  1. the host pid, when the logs know it and it drives this chip or its
//     device is unknown;
//  2. the "Process id in container" npu-smi prints on A3, likewise (a
//     containerised job names its plogs after the pid in its container);
//  3. the device: the one process, not matched by pid to another row, whose
//     plogs print the chip's physical id (devicePhyId[] of [LocalRank Key
//     Info], phydevId[] of SetupAgent, devPhyId[] of the NIC listener) —
//     the only way on A2, where npu-smi prints host pids only and a pod's
//     plogs name container pids; the most recently written one when
//     several claim the chip (a finished job and its successor);
//  4. otherwise the row stays on its host pid and the headroom model treats
//     the process as unknown to the logs (HCCL defaults).
//
// A pid known in several log directories (pods with their own pid
// namespaces) is taken from the directory whose process drives the row's
// chip; when none says, from the first directory in name order.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/logstate"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/podresources"
	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
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

// How a row was matched, the joined_by label.
const (
	ByProcfs       = "procfs"
	ByPID          = "pid"
	ByContainerPID = "container_pid"
	ByDevice       = "device"
)

// Matched is a row of npu-smi's process table and the log process it is.
type Matched struct {
	Row npusmi.Process
	// Log is the process of the CANN logs; its PID is the host pid and
	// its Dir empty when By is "".
	Log logstate.ProcessDevice
	By  string // ByPID, ByContainerPID, ByDevice or "" (not in the logs)
}

// Match matches every row of snap's process table to a process of the
// logs (package comment: the rules). It is pure.
func Match(snap *npusmi.Snapshot, devs []logstate.ProcessDevice) []Matched {
	phyOf := map[podresources.Chip]int{}
	for phy, c := range PhyIDs(snap) {
		phyOf[c] = phy
	}
	byPID := map[int][]logstate.ProcessDevice{}
	byHost := map[int]logstate.ProcessDevice{}
	for _, d := range devs {
		byPID[d.Key.PID] = append(byPID[d.Key.PID], d)
		if d.HostPID > 0 {
			byHost[d.HostPID] = d
		}
	}
	out := make([]Matched, len(snap.Processes))
	claimed := map[logstate.ProcessKey]bool{}
	// Rule 0 first, so that no guess takes a process /proc has placed.
	for _, d := range byHost {
		claimed[d.Key] = true
	}
	// pick chooses among the processes with one pid: the one driving the
	// chip; else one whose device is unknown, preferring one no other row
	// took (two pods' pid 156 on two chips) over one another row took (a
	// process npu-smi lists on two chips).
	pick := func(cands []logstate.ProcessDevice, phy int, phyKnown bool) (logstate.ProcessDevice, bool) {
		var free, taken *logstate.ProcessDevice
		for i := range cands {
			d := &cands[i]
			if d.HostPID > 0 {
				continue // placed by /proc (rule 0), never guessed onto another row
			}
			if phyKnown && d.DevicePhyID == phy {
				return *d, true
			}
			if d.DevicePhyID >= 0 && phyKnown {
				continue // drives another chip: another process with this pid
			}
			switch {
			case !claimed[d.Key] && free == nil:
				free = d
			case claimed[d.Key] && taken == nil:
				taken = d
			}
		}
		if free != nil {
			return *free, true
		}
		if taken != nil {
			return *taken, true
		}
		return logstate.ProcessDevice{}, false
	}
	for i, p := range snap.Processes {
		out[i] = Matched{Row: p, Log: logstate.ProcessDevice{Key: logstate.ProcessKey{PID: p.PID}, Label: strconv.Itoa(p.PID), DevicePhyID: -1}}
		if d, ok := byHost[p.PID]; ok {
			out[i].Log, out[i].By = d, ByProcfs
			continue
		}
		phy, phyKnown := phyOf[podresources.Chip{NPU: p.NPU, Chip: p.Chip}]
		if d, ok := pick(byPID[p.PID], phy, phyKnown); ok {
			out[i].Log, out[i].By = d, ByPID
			claimed[d.Key] = true
			continue
		}
		if cpid, err := strconv.Atoi(p.ContainerPID); err == nil && cpid > 0 {
			if d, ok := pick(byPID[cpid], phy, phyKnown); ok {
				out[i].Log, out[i].By = d, ByContainerPID
				claimed[d.Key] = true
			}
		}
	}
	for i, m := range out {
		if m.By != "" {
			continue
		}
		phy, ok := phyOf[podresources.Chip{NPU: m.Row.NPU, Chip: m.Row.Chip}]
		if !ok {
			continue
		}
		var best *logstate.ProcessDevice
		for j := range devs {
			d := &devs[j]
			if d.DevicePhyID == phy && !claimed[d.Key] && (best == nil || d.LastWrite.After(best.LastWrite)) {
				best = d
			}
		}
		if best != nil {
			out[i].Log, out[i].By = *best, ByDevice
			claimed[best.Key] = true
		}
	}
	return out
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
	// Chips then wraps its error in exporter.ErrDependency.
	Reported bool
	// PodOfDevice names the pod holding a physical NPU (the kubelet's
	// answer; nil without the pods collector): a process's workload is
	// then its pod's owner (workload.go).
	PodOfDevice func(phy int) (namespace, pod, container string, ok bool)
}

var (
	_ headroom.NPUSource      = Chips{}
	_ headroom.SettingsSource = Chips{}
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
			err = fmt.Errorf("%w: %w", exporter.ErrDependency, err)
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
		if r, ok := live[[2]string{ch.NPU, ch.Chip}]; ok {
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
	for _, m := range Match(snap, devs) {
		procs = append(procs, headroom.ChipProcess{NPU: m.Row.NPU, Chip: m.Row.Chip, PID: m.Log.Key.PID, LogDir: m.Log.Key.Dir})
	}
	return chips, procs, nil
}

// freshQPs are the live QP counts of the latest hccn sweep by (npu, chip),
// when that sweep is fresh: a stale count says nothing about the present.
func (c Chips) freshQPs() map[[2]string]hccn.QPReading {
	if c.QPs == nil {
		return nil
	}
	out := map[[2]string]hccn.QPReading{}
	for _, r := range c.QPs.ActiveQPs() {
		if r.Fresh {
			out[[2]string{r.NPU, r.Chip}] = r
		}
	}
	return out
}

// settingVars are the variables the headroom model reads.
var settingVars = []string{hcclenv.QPsPerConnection, hcclenv.BuffSize, hcclenv.IntraRoCEEnable, hcclenv.InterHCCSDisable,
	hcclenv.OpExpansionMode}

// Settings translates the effective HCCL settings and live communicators of
// the process of a row returned by Chips into the headroom model's input.
func (c Chips) Settings(row headroom.ChipProcess) (headroom.ProcessSettings, bool) {
	if c.Logs == nil {
		return headroom.ProcessSettings{}, false
	}
	key := logstate.ProcessKey{Dir: row.LogDir, PID: row.PID}
	p, ok := c.Logs.ProcessVars(key, settingVars...)
	if !ok {
		return headroom.ProcessSettings{}, false
	}
	s := toSettings(p)
	c.remember(&s, key, row, p)
	return s, true
}

// toSettings reads the numbers cannlog kept: a value HCCL refuses has no
// number there (internal/hcclenv), so it counts as not printed.
func toSettings(p logstate.ProcessView) headroom.ProcessSettings {
	s := headroom.ProcessSettings{PID: p.PID,
		UnattributedBufferBytes: float64(p.UnattributedBufferBytes), UnattributedQPs: float64(p.UnattributedQPs),
		GraphMode: p.QPMode.Offline, SingleQP: p.QPMode.Offline || p.QPMode.NoMultiQP, MultiQPFrom: p.QPMode.MultiQPFrom,
		QPNs: p.QPNs}
	if v, ok := p.Env[hcclenv.QPsPerConnection]; ok && v.HasNumber {
		s.QPsPerConnection, s.QPsKnown = v.Number, true
	}
	if v, ok := p.Env[hcclenv.BuffSize]; ok && v.HasNumber {
		s.BuffSizeBytes, s.BuffSizeKnown = v.Number, true
	}
	if v, ok := p.Env[hcclenv.IntraRoCEEnable]; ok && v.HasNumber {
		s.IntraRoCE = v.Number == 1
	}
	if v, ok := p.Env[hcclenv.InterHCCSDisable]; ok && v.HasNumber {
		s.InterHCCSDisabled = v.Number == 1
	}
	if v, ok := p.Env[hcclenv.OpExpansionMode]; ok {
		s.ExpansionMode = v.Value
	}
	s.Communicators = p.Communicators
	return s
}

// HCCNChips gives the hccn sweep the chips of the last successful npu-smi
// run: the chip ↔ physical id mapping does not change while the node runs.
// It runs npu-smi (the shared run) only until one run has succeeded. The
// sweep runs in the background, so this never delays a scrape.
type HCCNChips struct{ NPU npuView }

var _ hccn.ChipSource = HCCNChips{}

// Chips lists npu-smi's chips with the Phy-ID it prints (A3, 950).
func (h HCCNChips) Chips(ctx context.Context) ([]hccn.ChipID, error) {
	snap, _, ok := h.NPU.Latest()
	if !ok {
		var err error
		if snap, err = h.NPU.Snapshot(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]hccn.ChipID, 0, len(snap.Chips))
	for _, c := range snap.Chips {
		out = append(out, hccn.ChipID{NPU: c.NPU, Chip: c.Chip, PhyID: c.PhyID})
	}
	return out, nil
}

// PhyIDs maps the physical id of each chip of an npu-smi table to its npu
// and chip. A3 (910_93) and A5 tables print the phy id of every chip. Tables
// without it (910, A2 910B, 310) list one chip per NPU, and there the NPU id
// is the physical id (the N of /dev/davinciN, the id the Ascend device
// plugin and HCCL's devicePhyId use). A table without phy ids and several
// chips on an NPU (310P Duo cards) cannot be mapped: those chips are left
// out rather than guessed.
func PhyIDs(snap *npusmi.Snapshot) map[int]podresources.Chip {
	perNPU := map[string]int{}
	for _, c := range snap.Chips {
		perNPU[c.NPU]++
	}
	out := make(map[int]podresources.Chip, len(snap.Chips))
	for _, c := range snap.Chips {
		id := c.PhyID
		if id == "" && perNPU[c.NPU] == 1 {
			id = c.NPU
		}
		phy, err := strconv.Atoi(id)
		if err != nil || phy < 0 {
			continue
		}
		if _, dup := out[phy]; dup {
			continue // npu-smi prints each phy id once; keep the first if not
		}
		out[phy] = podresources.Chip{NPU: c.NPU, Chip: c.Chip}
	}
	return out
}

// PhyChips maps physical chip ids to the chips of the scrape's npu-smi run
// for the podresources collector.
type PhyChips struct {
	NPU npuView
	// Reported: the npusmi collector reports npu-smi failures itself.
	Reported bool
}

var _ podresources.ChipMap = PhyChips{}

// ChipsByPhyID runs (or joins) the scrape's npu-smi run and maps its chips.
func (p PhyChips) ChipsByPhyID(ctx context.Context) (map[int]podresources.Chip, error) {
	snap, err := p.NPU.Snapshot(ctx)
	if err != nil {
		if p.Reported {
			err = fmt.Errorf("%w: %w", exporter.ErrDependency, err)
		}
		return nil, err
	}
	return PhyIDs(snap), nil
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
	ms := Match(snap, devs)
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
