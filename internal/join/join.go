// Package join owns the matching of what separate sources see of one node:
// a row of npu-smi's process table (a host pid on a chip) and the process of
// the CANN logs it is, a physical chip id and the chip npu-smi lists, and the
// translation of a log process into the headroom model's input. It works on
// data types only (npu-smi rows and chips as plain values, the log state's
// views, the model's inputs) and runs no tool: cmd/hccl_exporter feeds it
// from the collectors, diagnose from a bundle.
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
package join

import (
	"strconv"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// How a row was matched, the joined_by label.
const (
	ByProcfs       = "procfs"
	ByPID          = "pid"
	ByContainerPID = "container_pid"
	ByDevice       = "device"
)

// Matched is a row of npu-smi's process table and the log process it is.
type Matched struct {
	Row ascend.Process
	// Log is the process of the CANN logs; its PID is the host pid and
	// its Dir empty when By is "".
	Log logstate.ProcessDevice
	By  string // ByPID, ByContainerPID, ByDevice or "" (not in the logs)
}

// Match matches every row of npu-smi's process table to a process of the
// logs (package comment: the rules), in row order. chips is the table's
// chip list (the physical ids of rule 3). It is pure.
func Match(chips []ascend.Chip, rows []ascend.Process, devs []logstate.ProcessDevice) []Matched {
	phyOf := map[ascend.ChipID]int{}
	for phy, c := range PhyIDs(chips) {
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
	out := make([]Matched, len(rows))
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
	for i, p := range rows {
		out[i] = Matched{Row: p, Log: logstate.ProcessDevice{Key: logstate.ProcessKey{PID: p.PID}, Label: strconv.Itoa(p.PID), DevicePhyID: -1}}
		if d, ok := byHost[p.PID]; ok {
			out[i].Log, out[i].By = d, ByProcfs
			continue
		}
		phy, phyKnown := phyOf[p.ChipID]
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
		phy, ok := phyOf[m.Row.ChipID]
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

// PhyIDs maps the physical id of each chip of an npu-smi table to its npu
// and chip. A3 (910_93) and A5 tables print the phy id of every chip. Tables
// without it (910, A2 910B, 310) list one chip per NPU, and there the NPU id
// is the physical id (the N of /dev/davinciN, the id the Ascend device
// plugin and HCCL's devicePhyId use). A table without phy ids and several
// chips on an NPU (310P Duo cards) cannot be mapped: those chips are left
// out rather than guessed.
func PhyIDs(chips []ascend.Chip) map[int]ascend.ChipID {
	perNPU := map[string]int{}
	for _, c := range chips {
		perNPU[c.NPU]++
	}
	out := make(map[int]ascend.ChipID, len(chips))
	for _, c := range chips {
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
		out[phy] = c.ChipID
	}
	return out
}

// SettingVars are the variables the headroom model reads.
var SettingVars = []string{hcclenv.QPsPerConnection, hcclenv.BuffSize, hcclenv.IntraRoCEEnable, hcclenv.InterHCCSDisable,
	hcclenv.OpExpansionMode}

// Settings translates what the CANN logs kept of a process (its effective
// HCCL settings, read with SettingVars, and live communicators) into the
// headroom model's input. A value HCCL refuses has no number there
// (internal/hcclenv), so it counts as not printed.
func Settings(p logstate.ProcessView) headroom.ProcessSettings {
	s := headroom.ProcessSettings{PID: p.PID,
		UnattributedBufferBytes: float64(p.UnattributedBufferBytes), UnattributedQPs: float64(p.UnattributedQPs),
		// `… does not support multi-QP.` on 910B/910_93 comes from a
		// captured (offload) or device-direct link set only
		// (transport_ibverbs.cc:592-610, transport_manager.cc:1558,1563):
		// it says nothing of the process's op-base sets. Elsewhere the
		// device type already gives one QP per link (qpsPerLink).
		GraphMode: p.QPMode.Offline, SingleQP: p.QPMode.Offline, MultiQPFrom: p.QPMode.MultiQPFrom,
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
	// The log state's view is already a copy (Process, Processes): the
	// model reads the same comm.Communicator the logs filled.
	s.Communicators = p.Communicators
	// Learned QP sizes are per owner: the kernel's word on who wrote the
	// logs, never a printed line.
	s.Owner, s.OwnerKernel = p.Owner, p.OwnerKernel
	return s
}

// Workload translates what the log state's workload memory keeps of a
// process's workload into the model's input: the link sets its earlier
// processes ran and the link setups that failed.
func Workload(v logstate.WorkloadView) ([]headroom.RememberedLinks, []headroom.RememberedFailure) {
	var links []headroom.RememberedLinks
	for _, l := range v.Links {
		links = append(links, headroom.RememberedLinks{RankSize: l.RankSize, ServerNum: l.ServerNum, AllRanks: l.AllRanks, MC2: l.MC2,
			Capture: l.Capture, CaptureQPs: l.CaptureQPs})
	}
	var failures []headroom.RememberedFailure
	for _, f := range v.Failures {
		failures = append(failures, headroom.RememberedFailure{Code: f.Code, Resource: f.Resource, Stage: f.Stage, At: f.At})
	}
	return links, failures
}
