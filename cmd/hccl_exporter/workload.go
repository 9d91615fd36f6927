package main

import (
	"sync"

	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/join"
)

// The workload join: which workload a process on a chip belongs to, so
// that the CANN log state remembers its link sets and failures under an
// identity its next process shares (logstate/workload.go), and the
// headroom model expects them from that process's start.
//
// Identity, in order:
//  1. the pod the kubelet assigns the chip to: "k8s/<namespace>/<owner>",
//     the owner being the pod's name minus its generated suffix
//     (logstate.WorkloadOfPod);
//  2. otherwise (bare metal, no kubelet): its settings set and the shape of
//     its first communicator, "host/<settings>/<ranks>x<servers>"
//     (logstate.WorkloadOfShape), which the log state keeps under the
//     process's owner (its uid and container: another tenant printing the
//     same shape is another workload);
//  3. otherwise none: nothing is remembered for the process.

// WorkloadBinder is what the workload join needs of the CANN logs (the
// cannlog collector); Logs without it remember nothing.
type WorkloadBinder interface {
	BindWorkload(key logstate.ProcessKey, id string) (logstate.WorkloadView, bool)
}

// remember binds the process of row to its workload and hands the model
// what is remembered about the workload.
func (c Chips) remember(s *headroom.ProcessSettings, key logstate.ProcessKey, row headroom.ChipProcess, p logstate.ProcessView) {
	b, ok := c.Logs.(WorkloadBinder)
	if !ok {
		return
	}
	id := c.podWorkload(row)
	if id == "" && len(p.Communicators) > 0 {
		id = logstate.WorkloadOfShape(p.Settings, p.Communicators[0])
	}
	v, ok := b.BindWorkload(key, id)
	if !ok {
		return
	}
	s.Workload = v.ID
	s.Remembered, s.Failures = join.Workload(v)
}

// podWorkload is the workload of the pod holding row's chip, "" unknown.
func (c Chips) podWorkload(row headroom.ChipProcess) string {
	if c.PodOfDevice == nil || c.NPU == nil {
		return ""
	}
	snap, _, ok := c.NPU.Latest()
	if !ok {
		return ""
	}
	phy, ok := c.phys.of(snap, ascend.ChipID{NPU: row.NPU, Chip: row.Chip})
	if !ok {
		return ""
	}
	if ns, pod, _, ok := c.PodOfDevice(phy); ok {
		return logstate.WorkloadOfPod(ns, pod)
	}
	return ""
}

// phyOfChip maps chips to their physical ids (join.PhyIDs, inverted) for
// one npu-smi run, kept until the next run: the headroom join asks once per
// process of a scrape, and the mapping changes only with the run. A nil
// *phyOfChip maps anew on every call.
type phyOfChip struct {
	mu   sync.Mutex
	snap *npusmi.Snapshot
	phy  map[ascend.ChipID]int
}

func (p *phyOfChip) of(snap *npusmi.Snapshot, chip ascend.ChipID) (int, bool) {
	if p == nil {
		phy, ok := invertPhyIDs(snap)[chip]
		return phy, ok
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snap != snap {
		p.snap, p.phy = snap, invertPhyIDs(snap)
	}
	phy, ok := p.phy[chip]
	return phy, ok
}

// invertPhyIDs is join.PhyIDs of an npu-smi run by chip (each chip has at
// most one physical id there).
func invertPhyIDs(snap *npusmi.Snapshot) map[ascend.ChipID]int {
	byPhy := join.PhyIDs(joinChips(snap))
	out := make(map[ascend.ChipID]int, len(byPhy))
	for phy, chip := range byPhy {
		out[chip] = phy
	}
	return out
}
