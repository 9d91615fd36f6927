// Package nodegen generates deterministic node fixtures for hccl_exporter
// scale and ingest benchmarks: the `npu-smi info` table of an Atlas A3-style
// node (N NPUs × D dies, P processes in the process table, realistic HBM
// values), a CANN log root with one plog per process (an [HCCL_ENV] block,
// C `[Communicator Key Info]` lines with distinct communicator ids, INFO noise
// of other modules) and, optionally, a training screen log with fault reports
// of K distinct codes.
//
// The same Spec and Seed always give the same bytes, so measurements can be
// repeated and compared. Plan a node with New, then either write the whole
// tree with WriteTree or stream single parts with WriteNPUSMI, WritePlog and
// WriteScreenLog (for example into a generator of large log trees).
package nodegen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// Spec says what node to generate. Zero fields take the defaults of
// DefaultSpec where noted.
type Spec struct {
	NPUs        int // NPU cards, printed as NPU IDs 0..NPUs-1
	ChipsPerNPU int // chips (dies) per NPU: 2 on Atlas A3 (Ascend 910_93), 1 on A2
	// Processes are training processes in npu-smi's process table, each with
	// its own plog; they are spread round-robin over the chips.
	Processes int
	// Communicators per process: one [Communicator Key Info] line each,
	// with ids distinct within the process (processes share the ids, as the
	// ranks of one job do).
	Communicators int
	// Servers is the serverNum of the world communicator (nodes in the job);
	// 0 means 8.
	Servers int
	// FaultCodes is the number of distinct codes reported in the screen log:
	// the fault catalog's codes first (26 of them), then made-up EZ1xxx
	// codes. 0 writes no screen log.
	FaultCodes int
	// EventsPerCode is how many reports of each code the screen log holds;
	// 0 means 1.
	EventsPerCode int
	// NoiseLines is the number of INFO lines of other modules (GE, RUNTIME,
	// ASCENDCL) appended to each plog.
	NoiseLines int
	// QPsPerConnection is HCCL_RDMA_QPS_PER_CONNECTION; 0 prints HCCL's
	// default (1) as a default.
	QPsPerConnection int
	// BuffsizeMB is HCCL_BUFFSIZE in MB; 0 prints HCCL's default (200) as a
	// default.
	BuffsizeMB int
	// PIDBase is the pid of the first process; 0 means 300001.
	PIDBase int
	// Start is the time of the first log line (CANN prints local time
	// without a zone; only the wall-clock fields are used). Zero means
	// 2026-01-06 15:38:29.
	Start time.Time
	// Seed drives every random choice (HBM use, temperatures, power, …).
	Seed uint64
}

// DefaultSpec is the worst-case node of the scale analysis: 16 NPUs × 2 dies,
// 64 processes with 8 communicators each, no fault codes.
func DefaultSpec() Spec {
	return Spec{NPUs: 16, ChipsPerNPU: 2, Processes: 64, Communicators: 8, Seed: 1}
}

// Limits keep a typo from filling a disk; they are far above any real node.
const (
	MaxNPUs          = 256
	MaxChipsPerNPU   = 8
	MaxProcesses     = 1 << 16
	MaxCommunicators = 1 << 12
	MaxFaultCodes    = 26 + 9000
)

// Chip is one chip (die) block of the npu-smi table.
type Chip struct {
	NPU, Chip, PhyID      int
	BusID                 string
	HBMUsedMB, HBMTotalMB int
	AICorePercent, TempC  int
	PowerWatts            float64 // printed as `-` when 0 (the second die of an A3 NPU)
	Processes             []int   // indexes into Node.Processes
}

// Communicator is one [Communicator Key Info] line of a process.
type Communicator struct {
	ID                  string
	RankSize, ServerNum int
	UserRank            int
}

// Process is one training process: a row of npu-smi's process table and a plog.
type Process struct {
	PID           int
	Name          string
	NPU, Chip     int
	MemoryMB      int
	Communicators []Communicator
	Start         time.Time // time of its first plog line
}

// Fault is one code reported in the screen log.
type Fault struct {
	Code, Title string
	Catalog     bool // the code is in the exporter's fault catalog
}

// Node is a planned node: everything the writers print, decided up front
// from the Spec and its seed.
type Node struct {
	Spec      Spec
	Chips     []Chip
	Processes []Process
	Faults    []Fault
}

const (
	hbmTotalMB     = 65536 // 64 GiB per die (Ascend 910_93)
	npuSMIVersion  = "24.1.rc2.3"
	processName    = "python3"
	hostIP         = "10.0.0.11"
	defaultQPs     = 1
	defaultBuffMB  = 200
	defaultPIDBase = 300001
)

var defaultStart = time.Date(2026, 1, 6, 15, 38, 29, 870_000_000, time.UTC)

// New validates spec, fills its defaults and plans the node.
func New(spec Spec) (*Node, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	s := spec.withDefaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	n := &Node{Spec: s}

	nChips := s.NPUs * s.ChipsPerNPU
	for i := 0; i < nChips; i++ {
		npu, die := i/s.ChipsPerNPU, i%s.ChipsPerNPU
		c := Chip{
			NPU: npu, Chip: die, PhyID: i,
			BusID:      fmt.Sprintf("%04X:%02X:00.0", (0x10+4*npu+die)/256, (0x10+4*npu+die)%256),
			HBMTotalMB: hbmTotalMB,
			TempC:      36 + rng.IntN(14),
		}
		if die == 0 {
			c.PowerWatts = 90 + float64(rng.IntN(1200))/10
		}
		n.Chips = append(n.Chips, c)
	}
	for i := 0; i < s.Processes; i++ {
		ci := i % nChips
		n.Chips[ci].Processes = append(n.Chips[ci].Processes, i)
		n.Processes = append(n.Processes, Process{
			PID:   s.PIDBase + i,
			Name:  processName,
			NPU:   n.Chips[ci].NPU,
			Chip:  n.Chips[ci].Chip,
			Start: s.Start.Add(time.Duration(i) * 7 * time.Millisecond),
		})
	}
	// HBM: a die's base use (runtime, firmware) plus its processes, which
	// share 55..95% of what is left; some dies end up nearly full.
	for ci := range n.Chips {
		c := &n.Chips[ci]
		base := 2800 + rng.IntN(500)
		used := base
		if k := len(c.Processes); k > 0 {
			share := (hbmTotalMB - base - 256) / k
			for _, pi := range c.Processes {
				m := share * (55 + rng.IntN(41)) / 100
				n.Processes[pi].MemoryMB = m
				used += m
			}
			c.AICorePercent = 20 + rng.IntN(76)
		}
		c.HBMUsedMB = used
	}
	ranksHere := max(1, min(s.Processes, nChips))
	stamp := s.Start.UnixMicro()
	for pi := range n.Processes {
		p := &n.Processes[pi]
		for g := 0; g < s.Communicators; g++ {
			cm := Communicator{
				ID:       fmt.Sprintf("%s%%enp189s0f0_%d_%d_%d", hostIP, 60000+g, g, stamp+int64(g)),
				UserRank: pi % ranksHere,
			}
			switch {
			case g == 0: // world: every rank of every server
				cm.RankSize, cm.ServerNum = s.Servers*ranksHere, s.Servers
			case g%2 == 1: // tensor-parallel style: inside the node
				cm.RankSize, cm.ServerNum = min(ranksHere, 8), 1
				cm.UserRank %= cm.RankSize
			default: // data-parallel style: one rank per server
				cm.RankSize, cm.ServerNum = s.Servers, s.Servers
				cm.UserRank = 0
			}
			p.Communicators = append(p.Communicators, cm)
		}
	}
	catalog := catalogCodes()
	for i := 0; i < s.FaultCodes; i++ {
		if i < len(catalog) {
			n.Faults = append(n.Faults, catalog[i])
			continue
		}
		n.Faults = append(n.Faults, Fault{Code: fmt.Sprintf("EZ%04d", 1000+i-len(catalog))})
	}
	return n, nil
}

func (s Spec) validate() error {
	for _, f := range []struct {
		name      string
		v, lo, hi int
	}{
		{"NPUs", s.NPUs, 1, MaxNPUs},
		{"ChipsPerNPU", s.ChipsPerNPU, 1, MaxChipsPerNPU},
		{"Processes", s.Processes, 0, MaxProcesses},
		{"Communicators", s.Communicators, 0, MaxCommunicators},
		{"Servers", s.Servers, 0, 1 << 16},
		{"FaultCodes", s.FaultCodes, 0, MaxFaultCodes},
		{"EventsPerCode", s.EventsPerCode, 0, 1 << 20},
		{"NoiseLines", s.NoiseLines, 0, 1 << 30},
		{"QPsPerConnection", s.QPsPerConnection, 0, 32},
		{"BuffsizeMB", s.BuffsizeMB, 0, 1 << 20},
		{"PIDBase", s.PIDBase, 0, 1<<22 - MaxProcesses},
	} {
		if f.v < f.lo || f.v > f.hi {
			return fmt.Errorf("nodegen: %s = %d, want %d..%d", f.name, f.v, f.lo, f.hi)
		}
	}
	return nil
}

func (s Spec) withDefaults() Spec {
	if s.Servers == 0 {
		s.Servers = 8
	}
	if s.EventsPerCode == 0 {
		s.EventsPerCode = 1
	}
	if s.PIDBase == 0 {
		s.PIDBase = defaultPIDBase
	}
	if s.Start.IsZero() {
		s.Start = defaultStart
	}
	return s
}

// catalogCodes lists the codes of the exporter's fault-code table once each,
// in table order.
func catalogCodes() []Fault {
	var out []Fault
	for _, c := range logstate.Codes() {
		out = append(out, Fault{Code: c.Code, Title: c.Title, Catalog: true})
	}
	return out
}

// CatalogCodes is the number of distinct codes in the exporter's fault catalog.
func CatalogCodes() int { return len(catalogCodes()) }

// Counts are what a node holds, for checks and for the series formula.
type Counts struct {
	Chips, Processes, Communicators, FaultCodes, CatalogFaultCodes int
}

// Counts returns the node's totals; Communicators counts (process,
// communicator) pairs, as the exporter's series do.
func (n *Node) Counts() Counts {
	c := Counts{Chips: len(n.Chips), Processes: len(n.Processes), FaultCodes: len(n.Faults)}
	for _, p := range n.Processes {
		c.Communicators += len(p.Communicators)
	}
	for _, f := range n.Faults {
		if f.Catalog {
			c.CatalogFaultCodes++
		}
	}
	return c
}

// PlogName is the file name CANN gives a process's first plog:
// plog-<pid>_<17-digit creation time>.log.
func PlogName(p *Process) string {
	t := p.Start
	return "plog-" + strconv.Itoa(p.PID) + "_" + t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/1e6) + ".log"
}

// plogTime formats t as CANN prints it: 2026-01-06-15:38:29.870.111.
func plogTime(t time.Time) string {
	us := t.Nanosecond() / 1000
	return t.Format("2006-01-02-15:04:05") + fmt.Sprintf(".%03d.%03d", us/1000, us%1000)
}
