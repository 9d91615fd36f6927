// Package join owns the attribution of what the collectors see separately:
// npu-smi's chips and process table, the processes the CANN logs describe,
// and which of them belong together. The collectors themselves stay
// independent of each other; cmd/hccl_exporter only wires their views
// through this package.
//
// The rules, in the order they are tried for one row of npu-smi's process
// table:
//   - the host pid npu-smi prints, when the CANN logs know it;
//   - the "Process id in container" npu-smi prints on A3, when the logs
//     know that pid instead (a containerised job names its plogs after the
//     pid inside its container);
//   - otherwise the row stays on its host pid and the headroom model treats
//     the process as unknown to the logs (HCCL defaults).
//
// Where several CANN log directories hold a process with the chosen pid
// (pods with their own pid namespaces), the first directory in name order
// is taken.
package join

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/podresources"
	"github.com/hccl-exporter/hccl_exporter/exporter"
)

// NPU is what the joins need of the npusmi collector: the scrape's shared
// npu-smi run, and the last successful one without running npu-smi.
type NPU interface {
	Snapshot(ctx context.Context) (*npusmi.Snapshot, error)
	Latest() (snap *npusmi.Snapshot, at time.Time, ok bool)
}

// Logs is what the joins need of the CANN log state (*cannlog.State).
type Logs interface {
	Keys(pid int) []cannlog.ProcessKey
	ProcessVars(key cannlog.ProcessKey, names ...string) (cannlog.ProcessView, bool)
}

// Chips joins npu-smi's chips and process table with the CANN logs for the
// headroom model: it is both its headroom.NPUSource and its
// headroom.SettingsSource. Logs may be nil (no cannlog collector): every
// process then keeps its host pid and has no settings.
type Chips struct {
	NPU  NPU
	Logs Logs
	// Reported says the npusmi collector reports npu-smi failures itself:
	// Chips then wraps its error in exporter.ErrDependency.
	Reported bool
}

var (
	_ headroom.NPUSource      = Chips{}
	_ headroom.SettingsSource = Chips{}
)

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
	chips := make([]headroom.ChipMemory, 0, len(snap.Chips))
	for _, ch := range snap.Chips {
		m := headroom.ChipMemory{NPU: ch.NPU, Chip: ch.Chip, HBMUsedBytes: -1, HBMTotalBytes: -1}
		if ch.HBMUsedBytes.OK && ch.HBMTotalBytes.OK {
			m.HBMUsedBytes, m.HBMTotalBytes = ch.HBMUsedBytes.V, ch.HBMTotalBytes.V
		}
		chips = append(chips, m)
	}
	procs := make([]headroom.ChipProcess, 0, len(snap.Processes))
	for _, p := range snap.Processes {
		key, _ := c.logProcess(p)
		procs = append(procs, headroom.ChipProcess{NPU: p.NPU, Chip: p.Chip, PID: key.PID, LogDir: key.Dir})
	}
	return chips, procs, nil
}

// logProcess is the process of the CANN logs that row p of npu-smi's
// process table is; ok is false when the logs know neither of its pids (the
// key then holds the host pid and no directory).
func (c Chips) logProcess(p npusmi.Process) (cannlog.ProcessKey, bool) {
	if c.Logs == nil {
		return cannlog.ProcessKey{PID: p.PID}, false
	}
	if keys := c.Logs.Keys(p.PID); len(keys) > 0 {
		return keys[0], true
	}
	if cpid, err := strconv.Atoi(p.ContainerPID); err == nil && cpid > 0 {
		if keys := c.Logs.Keys(cpid); len(keys) > 0 {
			return keys[0], true
		}
	}
	return cannlog.ProcessKey{PID: p.PID}, false
}

// settingVars are the variables the headroom model reads.
var settingVars = []string{"HCCL_RDMA_QPS_PER_CONNECTION", "HCCL_BUFFSIZE", "HCCL_INTRA_ROCE_ENABLE"}

// Settings translates the effective HCCL settings and live communicators of
// the process of a row returned by Chips into the headroom model's input.
func (c Chips) Settings(row headroom.ChipProcess) (headroom.ProcessSettings, bool) {
	if c.Logs == nil {
		return headroom.ProcessSettings{}, false
	}
	p, ok := c.Logs.ProcessVars(cannlog.ProcessKey{Dir: row.LogDir, PID: row.PID}, settingVars...)
	if !ok {
		return headroom.ProcessSettings{}, false
	}
	return toSettings(p), true
}

func toSettings(p cannlog.ProcessView) headroom.ProcessSettings {
	s := headroom.ProcessSettings{PID: p.PID}
	if v, ok := p.Env["HCCL_RDMA_QPS_PER_CONNECTION"]; ok && v.HasNumber {
		s.QPsPerConnection, s.QPsKnown = v.Number, true
	}
	if v, ok := p.Env["HCCL_BUFFSIZE"]; ok && v.HasNumber {
		s.BuffSizeBytes, s.BuffSizeKnown = v.Number, true
	}
	if v, ok := p.Env["HCCL_INTRA_ROCE_ENABLE"]; ok && v.HasNumber {
		s.IntraRoCE = v.Number == 1
	}
	for _, cm := range p.Communicators {
		s.Communicators = append(s.Communicators, headroom.Communicator{Name: cm.Name, RankSize: cm.RankSize, ServerNum: cm.ServerNum})
	}
	return s
}

// Liveness reports a pid alive while the last successful npu-smi run listed
// it (as host pid or as pid in its container), without running npu-smi
// itself. A containerised exporter without the host's pid namespace still
// sees the host pids there. A nil NPU (no collector runs npu-smi) is ready
// at once and knows no pid.
type Liveness struct{ NPU NPU }

var _ cannlog.LivenessReady = Liveness{}

// Alive reports whether the last npu-smi run listed pid.
func (n Liveness) Alive(pid int) bool {
	if n.NPU == nil {
		return false
	}
	snap, _, ok := n.NPU.Latest()
	if !ok {
		return false
	}
	cpid := strconv.Itoa(pid)
	for _, p := range snap.Processes {
		if p.PID == pid || p.ContainerPID == cpid {
			return true
		}
	}
	return false
}

// Ready reports whether npu-smi has answered at least once: until then its
// silence about a pid says nothing, and the cannlog collector keeps processes
// it would otherwise expire.
func (n Liveness) Ready() bool {
	if n.NPU == nil {
		return true
	}
	_, _, ok := n.NPU.Latest()
	return ok
}

// HCCNChips gives the hccn sweep the chips of the last successful npu-smi
// run: the chip ↔ physical id mapping does not change while the node runs.
// It runs npu-smi (the shared run) only until one run has succeeded. The
// sweep runs in the background, so this never delays a scrape.
type HCCNChips struct{ NPU NPU }

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
	NPU NPU
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
