package main

import (
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
//     (logstate.WorkloadOfShape);
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
	s.Workload = id
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
	for phy, chip := range join.PhyIDs(joinChips(snap)) {
		if chip == (ascend.ChipID{NPU: row.NPU, Chip: row.Chip}) {
			if ns, pod, _, ok := c.PodOfDevice(phy); ok {
				return logstate.WorkloadOfPod(ns, pod)
			}
			return ""
		}
	}
	return ""
}
