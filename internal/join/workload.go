package join

import (
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
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

// WorkloadStore is what the workload join needs of the CANN log state:
// binding a process to its workload (once per npu-smi run) and reading
// what is remembered about a workload (every scrape).
type WorkloadStore interface {
	BindWorkload(key logstate.ProcessKey, id string) (logstate.WorkloadView, bool)
	Workload(id string) (logstate.WorkloadView, bool)
}

// bind binds every process of a new npu-smi run to its workload and keeps
// the ids for Settings. Called with h.mu held.
func (h *Headroom) bind(procs []headroom.ChipProcess) {
	h.bound = map[logstate.ProcessKey]string{}
	if h.cfg.Logs == nil || h.cfg.Workloads == nil {
		return
	}
	for _, row := range procs {
		key := logstate.ProcessKey{Dir: row.LogDir, PID: row.PID}
		if key.Dir == "" {
			continue // not a process of the logs
		}
		id := h.podWorkload(row)
		if id == "" {
			p, ok := h.cfg.Logs.ProcessVars(key, SettingVars...)
			if !ok || len(p.Communicators) == 0 {
				continue
			}
			id = logstate.WorkloadOfShape(p.Settings, p.Communicators[0])
		}
		// The log state scopes the id by the process's owner: what is
		// read back each scrape is the id it keeps (v.ID).
		if v, ok := h.cfg.Workloads.BindWorkload(key, id); ok {
			h.bound[key] = v.ID
		}
	}
}

// podWorkload is the workload of the pod holding row's chip, "" unknown.
func (h *Headroom) podWorkload(row headroom.ChipProcess) string {
	if h.cfg.PodOfDevice == nil {
		return ""
	}
	phy, ok := h.phy[row.ChipID]
	if !ok {
		return ""
	}
	if ns, pod, _, ok := h.cfg.PodOfDevice(phy); ok {
		return logstate.WorkloadOfPod(ns, pod)
	}
	return ""
}

// invertPhyIDs is PhyIDs of an npu-smi run by chip (each chip has at most
// one physical id there).
func invertPhyIDs(snap *npusmi.Snapshot) map[ascend.ChipID]int {
	byPhy := PhyIDs(Chips(snap))
	out := make(map[ascend.ChipID]int, len(byPhy))
	for phy, chip := range byPhy {
		out[chip] = phy
	}
	return out
}

// learn feeds the QP-size estimator one sample per chip of a new npu-smi
// run: HBM and the QPs its processes' logs show, under the model's
// configuration. Called with h.mu held, after bind.
func (h *Headroom) learn(chips []headroom.ChipMemory, procs []headroom.ChipProcess) {
	est := h.cfg.Estimator
	if est == nil {
		return
	}
	cfg := h.cfg.Model
	cfg.Now = time.Now()
	cfg.Learned = est.Learned(h.driver)
	for _, sample := range headroom.Samples(cfg, chips, procs, h.settingsLocked) {
		est.Observe(sample)
	}
}

// settingsLocked is Settings with h.mu held.
func (h *Headroom) settingsLocked(row headroom.ChipProcess) (headroom.ProcessSettings, bool) {
	if h.cfg.Logs == nil {
		return headroom.ProcessSettings{}, false
	}
	key := logstate.ProcessKey{Dir: row.LogDir, PID: row.PID}
	p, ok := h.cfg.Logs.ProcessVars(key, SettingVars...)
	if !ok {
		return headroom.ProcessSettings{}, false
	}
	s := Settings(p)
	if id := h.bound[key]; id != "" && h.cfg.Workloads != nil {
		if v, ok := h.cfg.Workloads.Workload(id); ok {
			s.Workload = v.ID
			s.Remembered, s.Failures = Workload(v)
		}
	}
	return s, true
}
