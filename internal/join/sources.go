package join

// The views: what the collectors see of one npu-smi run (its chips, its
// process table, each row's process of the CANN logs), built here on the
// domain's side from the shared run (internal/npusmi) and the log state,
// so that no collector reads another and main holds no adapter.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// NPU is what the views read of npu-smi: the scrape's shared run, and the
// last successful one without running npu-smi (*npusmi.Runner).
type NPU interface {
	Snapshot(ctx context.Context) (*npusmi.Snapshot, error)
	Latest() (snap *npusmi.Snapshot, at time.Time, ok bool)
}

// Logs is what the headroom view reads of the CANN logs (the log
// follower: the log state's processes, with the host pids of its table of
// roots).
type Logs interface {
	Devices() []logstate.ProcessDevice
	ProcessVars(key logstate.ProcessKey, names ...string) (logstate.ProcessView, bool)
}

// Chips lists the chips of snap with the physical id npu-smi prints (A3,
// 950), as Match and PhyIDs take them.
func Chips(snap *npusmi.Snapshot) []ascend.Chip { return snap.PhyChips() }

// MatchRun is Match over an npu-smi run.
func MatchRun(snap *npusmi.Snapshot, devs []logstate.ProcessDevice) []Matched {
	return Match(Chips(snap), snap.Processes, devs)
}

// Headroom builds the headroom model's input from one npu-smi run and the
// CANN logs; it is both collectors/headroom's NPUSource and its
// SettingsSource. What writes (binding each process to its workload in the
// log state, feeding the QP-size estimator) runs once per npu-smi run, when
// a scrape first meets the run; a scrape otherwise only reads. Logs may be
// nil (no log follower): every process then keeps its host pid and has no
// settings.
type Headroom struct {
	npu NPU
	cfg HeadroomDeps

	mu sync.Mutex
	// run is the npu-smi run the fields below are of.
	run    *npusmi.Snapshot
	chips  []headroom.ChipMemory
	procs  []headroom.ChipProcess
	phy    map[ascend.ChipID]int
	bound  map[logstate.ProcessKey]string // workload ids bound for run
	driver string
}

// HeadroomDeps are the sources of the headroom view besides npu-smi.
type HeadroomDeps struct {
	// Logs is the CANN log state (nil: none).
	Logs Logs
	// Workloads binds processes to workloads in the log state and reads
	// what is remembered about one (nil: nothing is remembered).
	Workloads WorkloadStore
	// QPs is hccn_tool's live QP count per chip of its latest sweep (nil
	// without the hccn collector); only fresh readings reach the model.
	QPs func() []ascend.QPReading
	// PodOfDevice names the pod holding a physical NPU (the kubelet's
	// answer; nil without the pods collector): a process's workload is
	// then its pod's owner (workload.go).
	PodOfDevice func(phy int) (namespace, pod, container string, ok bool)
	// Estimator learns QP sizes from each run's chips (nil: off; a
	// *headroom.Estimator); Model is the configuration its samples are
	// taken under.
	Estimator Learner
	Model     headroom.Config
	// Reported says the npusmi collector reports npu-smi failures itself:
	// the view then wraps its error in collector.ErrDependency.
	Reported bool
}

// Learner is what the headroom view needs of the QP-size estimator.
type Learner interface {
	Learned(driver string) *headroom.LearnedSizes
	Observe(s headroom.ChipSample) (accepted bool, reason string)
}

// NewHeadroom returns the headroom view over npu and deps.
func NewHeadroom(npu NPU, deps HeadroomDeps) *Headroom {
	return &Headroom{npu: npu, cfg: deps}
}

// Chips returns the chips' HBM and the process table of the scrape's
// npu-smi run, each process under the pid and directory the logs know it by.
// The scrape's run is read once; a run not seen before is first bound and
// learned from (see Headroom).
func (h *Headroom) Chips(ctx context.Context) ([]headroom.ChipMemory, []headroom.ChipProcess, error) {
	snap, err := h.npu.Snapshot(ctx)
	if err != nil {
		if h.cfg.Reported {
			err = fmt.Errorf("%w: %w", collector.ErrDependency, err)
		}
		return nil, nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	live := h.freshQPs()
	chips := make([]headroom.ChipMemory, 0, len(snap.Chips))
	for _, ch := range snap.Chips {
		m := headroom.ChipMemory{ChipID: ch.ChipID, Name: ch.Name, Driver: snap.DriverVersion}
		if ch.HBMUsedBytes.OK && ch.HBMTotalBytes.OK {
			m.HBMUsedBytes, m.HBMTotalBytes = ch.HBMUsedBytes, ch.HBMTotalBytes
		}
		if r, ok := live[ch.ChipID]; ok {
			m.LiveQPs = ascend.Value{V: float64(r.ActiveQPs), OK: true}
			m.LiveQPNs, m.LiveQPNsKnown = r.QPNs, r.QPNs != nil
		}
		chips = append(chips, m)
	}
	var devs []logstate.ProcessDevice
	if h.cfg.Logs != nil {
		devs = h.cfg.Logs.Devices()
	}
	procs := make([]headroom.ChipProcess, 0, len(snap.Processes))
	for _, m := range MatchRun(snap, devs) {
		procs = append(procs, headroom.ChipProcess{ChipID: m.Row.ChipID, PID: m.Log.Key.PID, LogDir: m.Log.Key.Dir})
	}
	if snap != h.run {
		h.run, h.chips, h.procs, h.driver = snap, chips, procs, snap.DriverVersion
		h.phy = invertPhyIDs(snap)
		h.bind(procs)
		h.learn(chips, procs)
	}
	return chips, procs, nil
}

// freshQPs are the live QP counts of the latest hccn sweep by chip, when
// that sweep is fresh: a stale count says nothing about the present.
func (h *Headroom) freshQPs() map[ascend.ChipID]ascend.QPReading {
	if h.cfg.QPs == nil {
		return nil
	}
	out := map[ascend.ChipID]ascend.QPReading{}
	for _, r := range h.cfg.QPs() {
		if r.Fresh {
			out[r.ChipID] = r
		}
	}
	return out
}

// Settings translates the effective HCCL settings and live communicators of
// the process of a row returned by Chips into the headroom model's input,
// with what its workload's memory holds. It only reads.
func (h *Headroom) Settings(row headroom.ChipProcess) (headroom.ProcessSettings, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.settingsLocked(row)
}

// ProcessTable gives the log follower npu-smi's process table of the last
// successful run, without running npu-smi: discovery, coverage, liveness
// and hccl_process_info read it.
type ProcessTable struct{ NPU NPU }

// NPUProcesses lists the rows of the last successful npu-smi run.
func (p ProcessTable) NPUProcesses() ([]ascend.Process, time.Time, bool) {
	snap, at, ok := p.NPU.Latest()
	if !ok {
		return nil, time.Time{}, false
	}
	return snap.Processes, at, true
}

// Match pairs every row of the last successful npu-smi run with the process
// of the logs it is (Match, the rules), in row order.
func (p ProcessTable) Match(devs []logstate.ProcessDevice) ([]Matched, bool) {
	snap, _, ok := p.NPU.Latest()
	if !ok {
		return nil, false
	}
	return MatchRun(snap, devs), true
}

// HCCNChips gives the hccn sweep the chips of the last successful npu-smi
// run: the chip ↔ physical id mapping does not change while the node runs.
// It runs npu-smi (the shared run) only until one run has succeeded. The
// sweep runs in the background, so this never delays a scrape.
type HCCNChips struct{ NPU NPU }

// Chips lists npu-smi's chips with the Phy-ID it prints (A3, 950).
func (h HCCNChips) Chips(ctx context.Context) ([]ascend.Chip, error) {
	snap, _, ok := h.NPU.Latest()
	if !ok {
		var err error
		if snap, err = h.NPU.Snapshot(ctx); err != nil {
			return nil, err
		}
	}
	return Chips(snap), nil
}

// Pods gives the pods collector the chips of the scrape's npu-smi run by
// physical id and its process table.
type Pods struct {
	NPU NPU
	// Reported: the npusmi collector reports npu-smi failures itself.
	Reported bool
}

// ChipsByPhyID runs (or joins) the scrape's npu-smi run and maps its chips.
func (p Pods) ChipsByPhyID(ctx context.Context) (map[int]ascend.ChipID, error) {
	snap, err := p.NPU.Snapshot(ctx)
	if err != nil {
		if p.Reported {
			err = fmt.Errorf("%w: %w", collector.ErrDependency, err)
		}
		return nil, err
	}
	return PhyIDs(Chips(snap)), nil
}

// NPUProcesses lists the process table of the scrape's npu-smi run.
func (p Pods) NPUProcesses(ctx context.Context) ([]ascend.Process, error) {
	snap, err := p.NPU.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Processes, nil
}

// Health gives the npuhealth sweep the chips of the shared npu-smi run and
// the run in flight, which its detail queries wait out.
type Health struct{ NPU *npusmi.Runner }

// Chips lists the chips of the shared npu-smi run.
func (t Health) Chips(ctx context.Context) ([]ascend.ChipID, error) {
	snap, err := t.NPU.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ascend.ChipID, 0, len(snap.Chips))
	for _, c := range snap.Chips {
		out = append(out, c.ChipID)
	}
	return out, nil
}

// InFlight is closed when the npu-smi run in flight ends; nil when none.
func (t Health) InFlight() <-chan struct{} { return t.NPU.InFlight() }
