// Package headroom owns the model of NPU memory headroom before HCCL
// parameter-plane link setup (参数面建链) and the collector that exports it.
//
// EI0011 (Resource_Error_Insufficient_Device_Memory) kills a job when a chip
// has too little free HBM left to create the RoCE queue pairs (QPs) between
// ranks. This package estimates, per chip, how much device memory those QPs
// may take — a low and a high bound, because the per-QP size depends on the QP
// depth, which no log prints — and subtracts the high bound from the free HBM
// npu-smi reports, so an alert can fire before the job dies.
//
// The package joins two views that other collectors own (the npu-smi chip and
// process tables, and what the CANN logs say about each pid) through the small
// interfaces NPUSource and SettingsSource; it imports neither collector.
// Model is a pure function; Collector only fetches its inputs and turns the
// result into const metrics each scrape. docs/headroom.md explains the model.
package headroom

import "math"

// HCCL's documented defaults and limits (HCCL docs, hccl_env/*.md).
const (
	// HCCLDefaultQPsPerConnection is HCCL_RDMA_QPS_PER_CONNECTION when unset.
	HCCLDefaultQPsPerConnection = 1
	// HCCLMaxQPsPerConnection is the largest value HCCL accepts
	// (HCCL_QPS_PER_CONNECTION_MAX); it rejects larger ones at init.
	HCCLMaxQPsPerConnection = 32
	// HCCLDefaultBuffSizeBytes is HCCL_BUFFSIZE when unset: 200 MB, where
	// HCCL's MB means MiB.
	HCCLDefaultBuffSizeBytes = 200 << 20
)

// maxPlausibleBytes bounds every byte count the model accepts (4 EiB). Larger
// or non-finite inputs are treated as unknown, which keeps every sum finite.
const maxPlausibleBytes = 1 << 62

// ChipMemory is one chip's HBM as npu-smi reports it. A total ≤ 0, a negative
// used value or a non-finite one means npu-smi gave no usable number.
type ChipMemory struct {
	NPU, Chip     string
	HBMUsedBytes  float64
	HBMTotalBytes float64
}

// ChipProcess is one row of npu-smi's process table: a pid using a chip.
// PID is the pid under which the CANN logs know the process (the host pid,
// or the pid inside its container) and LogDir the CANN log directory they
// are in, when the NPUSource found the process there; the SettingsSource
// receives the row back.
type ChipProcess struct {
	NPU, Chip string
	PID       int
	LogDir    string
}

// Communicator is one live HCCL communicator of a process, from the CANN log
// line "[Communicator Key Info] … rankSize[N] serverNum[M]". ServerNum ≤ 0
// means unknown. A destroyed communicator is simply absent.
type Communicator struct {
	Name      string
	RankSize  int
	ServerNum int
}

// ProcessSettings is what the CANN logs say about one pid: the effective
// HCCL_RDMA_QPS_PER_CONNECTION, HCCL_BUFFSIZE (in bytes) and
// HCCL_INTRA_ROCE_ENABLE, and its live communicators. The *Known flags are
// false when the log did not print the value.
type ProcessSettings struct {
	PID              int
	QPsPerConnection float64
	QPsKnown         bool
	BuffSizeBytes    float64
	BuffSizeKnown    bool
	IntraRoCE        bool
	Communicators    []Communicator
}

// ChipHeadroom is the model's result for one chip.
type ChipHeadroom struct {
	NPU, Chip string

	// QPsLow and QPsHigh bound the number of QPs link setup needs on the
	// chip: a ring across servers (low) and a full mesh (high), summed over
	// the communicators of every process on the chip.
	QPsLow, QPsHigh float64
	// QPMemoryLowBytes = QPsLow × qp-bytes-low and QPMemoryHighBytes =
	// QPsHigh × qp-bytes-high.
	QPMemoryLowBytes, QPMemoryHighBytes float64
	// CCLBufferBytes = Σ over processes of 2 × HCCL_BUFFSIZE × communicators.
	CCLBufferBytes float64

	// HBMKnown is false when npu-smi gave no usable HBM numbers for the
	// chip; FreeHBMBytes and HeadroomBytes are then 0 and must not be
	// exported.
	HBMKnown bool
	// FreeHBMBytes = total − used.
	FreeHBMBytes float64
	// HeadroomBytes = FreeHBMBytes − QPMemoryHighBytes; negative when the
	// next link setup may not fit.
	HeadroomBytes float64

	// ProcessesKnown counts the chip's processes whose QP and buffer
	// settings all came from the CANN logs; ProcessesDefaulted those for
	// which at least one HCCL default was assumed (pid absent from the logs,
	// a value not printed, or a value outside HCCL's range). A pid absent
	// from the logs also has no known communicators, so it adds nothing to
	// the QP and buffer sums: the bounds may under-count on such chips.
	ProcessesKnown, ProcessesDefaulted int
}

// Model computes the headroom of every chip. It is pure: the result depends
// only on its arguments, and settings is called once per distinct pid and
// chip. Chips come out in the order of chips, followed by chips that appear
// only in procs (HBM unknown) in order of first appearance. A nil settings
// means no CANN log view: every process is defaulted.
func Model(cfg Config, chips []ChipMemory, procs []ChipProcess, settings func(p ChipProcess) (ProcessSettings, bool)) []ChipHeadroom {
	cfg = cfg.sanitized()

	type key struct{ npu, chip string }
	index := make(map[key]int, len(chips))
	out := make([]ChipHeadroom, 0, len(chips))
	for _, c := range chips {
		k := key{c.NPU, c.Chip}
		if _, dup := index[k]; dup {
			continue // npu-smi lists a chip once; keep the first if not
		}
		index[k] = len(out)
		h := ChipHeadroom{NPU: c.NPU, Chip: c.Chip}
		if validBytes(c.HBMUsedBytes) && validBytes(c.HBMTotalBytes) && c.HBMTotalBytes > 0 {
			h.HBMKnown = true
			h.FreeHBMBytes = c.HBMTotalBytes - c.HBMUsedBytes
		}
		out = append(out, h)
	}

	type seenKey struct {
		chip key
		pid  int
		dir  string
	}
	seen := make(map[seenKey]bool, len(procs))
	for _, p := range procs {
		k := key{p.NPU, p.Chip}
		if seen[seenKey{k, p.PID, p.LogDir}] {
			continue // one process counts once per chip
		}
		seen[seenKey{k, p.PID, p.LogDir}] = true
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ChipHeadroom{NPU: p.NPU, Chip: p.Chip})
		}
		var s ProcessSettings
		var found bool
		if settings != nil {
			s, found = settings(p)
		}
		addProcess(&out[i], cfg, s, found)
	}

	for i := range out {
		h := &out[i]
		h.QPMemoryLowBytes = h.QPsLow * cfg.QPBytesLow
		h.QPMemoryHighBytes = h.QPsHigh * cfg.QPBytesHigh
		if h.HBMKnown {
			h.HeadroomBytes = h.FreeHBMBytes - h.QPMemoryHighBytes
		}
	}
	return out
}

// addProcess adds one process's QPs and buffers to its chip's sums.
func addProcess(h *ChipHeadroom, cfg Config, s ProcessSettings, found bool) {
	qps, buff := cfg.DefaultQPsPerConnection, cfg.DefaultBuffSizeBytes
	defaulted := !found
	if found && s.QPsKnown && s.QPsPerConnection >= 1 && s.QPsPerConnection <= HCCLMaxQPsPerConnection {
		qps = s.QPsPerConnection
	} else {
		defaulted = true
	}
	if found && s.BuffSizeKnown && s.BuffSizeBytes > 0 && validBytes(s.BuffSizeBytes) {
		buff = s.BuffSizeBytes
	} else {
		defaulted = true
	}
	if defaulted {
		h.ProcessesDefaulted++
	} else {
		h.ProcessesKnown++
	}
	if !found {
		return
	}
	for _, c := range s.Communicators {
		low, high := linkPeers(c.RankSize, c.ServerNum, s.IntraRoCE)
		h.QPsLow += low * qps
		h.QPsHigh += high * qps
	}
	h.CCLBufferBytes += 2 * buff * float64(len(s.Communicators))
}

// linkPeers bounds how many ranks one rank of a communicator sets up RoCE
// links to. The high bound is a full mesh to every rank on another server;
// the low bound a ring across servers. Ranks are assumed spread evenly over
// servers; integer division makes ranksPerServer the smallest server's share,
// so the high bound also holds for the rank with the most remote peers when
// the spread is uneven.
//
//   - rankSize ≤ 1: no peers.
//   - serverNum unknown (≤ 0): high assumes every rank on its own server
//     (rankSize − 1), low assumes one server (0 without intra-server RoCE).
//   - serverNum > rankSize cannot happen (every server hosts a rank); it is
//     capped at rankSize.
//   - one server: no RoCE peers unless HCCL_INTRA_ROCE_ENABLE=1.
//   - intraRoCE: intra-server links use RoCE too, so high becomes
//     rankSize − 1 and low a ring over all ranks, min(rankSize − 1, 2).
func linkPeers(rankSize, serverNum int, intraRoCE bool) (low, high float64) {
	if rankSize <= 1 {
		return 0, 0
	}
	ranks := float64(rankSize)
	ring := func(n float64) float64 { return math.Min(n-1, 2) }
	if intraRoCE {
		return ring(ranks), ranks - 1
	}
	if serverNum <= 0 {
		return 0, ranks - 1
	}
	servers := float64(min(serverNum, rankSize))
	perServer := math.Max(1, math.Floor(ranks/servers))
	return ring(servers), ranks - perServer
}

// validBytes reports whether v is a usable byte count.
func validBytes(v float64) bool {
	return v >= 0 && v <= maxPlausibleBytes // false for NaN
}
