// Package headroom owns the model of NPU memory headroom before HCCL
// parameter-plane link setup (参数面建链); collectors/headroom exports it.
//
// EI0011 (Resource_Error_Insufficient_Device_Memory) kills a job when a chip
// has too little free HBM left to create the RoCE queue pairs (QPs) between
// ranks. This package estimates, per chip, the device memory of the link
// setup still ahead — the QPs the live communicators may still create, minus
// those the logs (or hccn_tool's live count) show created, in a low and a
// high bound because the per-QP size depends on the QP depth, which no log
// prints, plus the cclBuffers HCCL allocates lazily at a communicator's
// first collective — and subtracts it from the free HBM npu-smi reports, so
// an alert can fire before the job dies, and never for a job whose links
// are all set up (their QPs and buffers are already in HBM used).
//
// The model's inputs are its own data types (ChipMemory, ChipProcess,
// ProcessSettings) and the communicators as CANN prints them
// (comm.Communicator, the type the log state fills): internal/join fills
// them from npu-smi's tables and the CANN log state, and collectors/headroom
// fetches them each scrape and turns the result into const metrics. The
// package imports no log state, no Prometheus and no flag parser
// (cmd/hccl_exporter registers its flags), so that diagnose can run the
// model offline.
// HCCL's own facts (defaults, ranges, N + 1 QPs, buffer size) come from
// internal/hcclenv.
// Model is a pure function. docs/headroom.md explains the model. The
// collector learns the bytes of a QP per mode from the node's link setups
// (Estimator, estimator.go) and the model takes the link sets a process's
// workload ran before (memory.go; internal/join hands them over from the
// log state's workload memory).
package headroom

import (
	"math"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// HCCL's defaults and limits, from the one definition of HCCL settings.
const (
	// HCCLDefaultQPsPerConnection is HCCL_RDMA_QPS_PER_CONNECTION when unset.
	HCCLDefaultQPsPerConnection = hcclenv.DefaultQPsPerConnection
	// HCCLMaxQPsPerConnection is the largest value HCCL accepts
	// (HCCL_QPS_PER_CONNECTION_MAX); it rejects larger ones at init.
	HCCLMaxQPsPerConnection = hcclenv.MaxQPsPerConnection
	// HCCLDefaultBuffSizeBytes is HCCL_BUFFSIZE when unset: 200 MB, where
	// HCCL's MB means MiB.
	HCCLDefaultBuffSizeBytes = hcclenv.DefaultBuffSizeBytes
)

// maxPlausibleBytes bounds every byte count the model accepts (4 EiB). Larger
// or non-finite inputs are treated as unknown, which keeps every sum finite.
const maxPlausibleBytes = 1 << 62

// ChipMemory is one chip's HBM as npu-smi reports it. A value that is not
// OK, a total ≤ 0, a negative used value or a non-finite one means npu-smi
// gave no usable number. LiveQPs is the chip's live RoCE QP count as
// hccn_tool measured it (ascend_roce_active_queue_pairs), when OK: a fresh
// measurement.
//
// LiveQPNs are the qpns of those live QPs when LiveQPNsKnown: Model tells
// HCCL's own (the qpns its processes logged) from other RDMA users'.
type ChipMemory struct {
	ascend.ChipID
	HBMUsedBytes  ascend.Value
	HBMTotalBytes ascend.Value
	LiveQPs       ascend.Value
	LiveQPNs      []uint32
	LiveQPNsKnown bool
	// Name is the chip's name as npu-smi prints it (910B3, 910_9392, …):
	// the product of communicators whose logs print no deviceType.
	Name string
	// Driver is the driver version npu-smi's header prints: learned QP
	// sizes are kept per driver (estimator.go).
	Driver string
}

// DeviceTypeOfChip maps npu-smi's chip name to HCCL's device type: 910B*
// is 910B, a name with 910_93 (or a 93xx model) the A3's 910_93; -1 when
// the name says neither.
func DeviceTypeOfChip(name string) int {
	n := strings.ToUpper(strings.TrimPrefix(strings.TrimSpace(name), "Ascend"))
	switch {
	case strings.HasPrefix(n, "910B"):
		return hcclenv.DevType910B
	case strings.HasPrefix(n, "910_93"), strings.HasPrefix(n, "910_9"):
		return hcclenv.DevType910_93
	}
	return -1
}

// ChipProcess is one row of npu-smi's process table: a pid using a chip.
// PID is the pid under which the CANN logs know the process (the host pid,
// or the pid inside its container) and LogDir the CANN log directory they
// are in, when the NPUSource found the process there; the SettingsSource
// receives the row back.
type ChipProcess struct {
	ascend.ChipID
	PID    int
	LogDir string
}

// ProcessSettings is what the CANN logs say about one process: the
// effective HCCL_RDMA_QPS_PER_CONNECTION, HCCL_BUFFSIZE (in bytes),
// HCCL_INTRA_ROCE_ENABLE and HCCL_INTER_HCCS_DISABLE, its live
// communicators, and the buffer bytes and QPs its log shows but could not
// tie to a communicator. The *Known flags are false when the log did not
// print the value (or printed one HCCL refuses).
type ProcessSettings struct {
	PID                     int
	QPsPerConnection        float64
	QPsKnown                bool
	BuffSizeBytes           float64
	BuffSizeKnown           bool
	IntraRoCE               bool
	InterHCCSDisabled       bool
	Communicators           []comm.Communicator
	UnattributedBufferBytes float64
	UnattributedQPs         float64
	// GraphMode: the process printed `… not effective in offline mode`
	// (graph mode: 1 QP per link, QP depth 128, ring links with several
	// sockets). SingleQP: 1 QP per link whatever
	// HCCL_RDMA_QPS_PER_CONNECTION says (graph mode; not `… does not
	// support multi-QP`, which a capture prints for its own set only).
	GraphMode bool
	SingleQP  bool
	// MultiQPFrom is where an enabled multi-QP configuration came from
	// (`[MultiQp][MulQpInfo] … config from type[X]`), "" when not printed.
	MultiQPFrom string
	// QPNs are the qpns its transport lines logged.
	QPNs []uint32
	// ExpansionMode is its HCCL_OP_EXPANSION_MODE as printed (AI_CPU, AIV,
	// HOST, …), "" when not printed.
	ExpansionMode string
	// Remembered are the link sets earlier processes of its workload ran
	// (workload memory, memory.go): expected from its start.
	Remembered []RememberedLinks
	// Workload is its workload's identity ("" unknown) and Failures the
	// link setups of the workload that failed before.
	Workload string
	Failures []RememberedFailure

	// Owner is who the kernel says wrote its logs (logstate: a pod, a uid;
	// a configured log root), "" unknown; OwnerKernel: the kernel named
	// it. Learned QP sizes are kept per owner (estimator.go).
	Owner       string
	OwnerKernel bool
}

// ChipHeadroom is the model's result for one chip.
type ChipHeadroom struct {
	NPU, Chip string

	// QPsLow and QPsHigh bound the RoCE QPs the chip's processes may still
	// create (link setup ahead): per communicator, the QPs towards peers
	// it may link to (a ring across servers: low; a full mesh: high) not
	// yet linked, × QPs per connection (N + 1 for N > 1).
	QPsLow, QPsHigh float64
	// QPsExpected are the QPs HCCL will create for what the job has shown
	// it runs (algorithmLinksAhead): the link sets its level-1 algorithms
	// still create, every remote rank once an all-ranks operator (AlltoAll
	// family, send/recv, MC2) ran, plus the next capture's offload QPs
	// while a process keeps capturing.
	QPsExpected float64
	// QPMemoryLowBytes, QPMemoryExpectedBytes and QPMemoryHighBytes are
	// their memory: per QP the size of its mode (qpModeBytes) where the
	// mode is known, else --headroom.qp-bytes-low for the low bound and
	// --headroom.qp-bytes-high for the others.
	QPMemoryLowBytes, QPMemoryExpectedBytes, QPMemoryHighBytes float64
	// UnknownModeQPs are the expected QPs whose mode, hence size, the
	// logs do not tell (sized at --headroom.qp-bytes-high).
	UnknownModeQPs float64
	// CaptureQPs are the QPs of the next ACL graph capture projected for
	// processes that are capturing (in QPsExpected and QPsHigh).
	CaptureQPs float64
	// SlotsFreeExpected and SlotsFreeHigh = HCCP's 8192 QPs per device −
	// live QPs (hccn_tool, else the logs' established) − QPsExpected or
	// QPsHigh: below zero the link setup ahead exceeds the device's QP
	// limit (EI0007 resource[qp]).
	SlotsFreeExpected, SlotsFreeHigh float64
	// EstablishedQPs are the QPs already created: from the logs, or
	// hccn_tool's live count where that is larger and the logs print no
	// qpns to match it with.
	EstablishedQPs float64
	// ForeignQPs, when ForeignQPsKnown, are live QPs on the chip whose
	// qpn no process on it logged: other RDMA users (Mooncake, HIXL,
	// leftovers). They hold NIC and device memory but are not HCCL's link
	// setup, so they are reported, not subtracted from what is ahead.
	ForeignQPs      float64
	ForeignQPsKnown bool
	// CCLBufferBytes is the cclBuffer allocated; CCLBufferPendingBytes
	// what communicators that have not run their first collective will
	// allocate then (2 × buffer size + 1 MiB each).
	CCLBufferBytes, CCLBufferPendingBytes float64
	// AIVBufferPendingBytes is the part of CCLBufferPendingBytes that is
	// AIV buffers (HCCL_OP_EXPANSION_MODE=AIV): 36 MiB + 4 MiB + 32 KiB
	// per communicator that has not run its first collective.
	AIVBufferPendingBytes float64

	// HBMKnown is false when npu-smi gave no usable HBM numbers for the
	// chip; FreeHBMBytes and HeadroomBytes are then 0 and must not be
	// exported.
	HBMKnown bool
	// FreeHBMBytes = total − used.
	FreeHBMBytes float64
	// HeadroomBytes = FreeHBMBytes − QPMemoryExpectedBytes −
	// CCLBufferPendingBytes; negative when the link setup HCCL will do
	// does not fit.
	HeadroomBytes float64

	// The capacity inputs (the mixin's capacity recording rules compute
	// the headroom under other settings from them): VarLinks are the
	// op-base links ahead (expected bound) whose QP count follows
	// HCCL_RDMA_QPS_PER_CONNECTION; VarQPBytesSingle and VarQPBytesMulti
	// the bytes of one of their QPs with one QP per link and with
	// multi-QP (averaged over their communicators); VarBufferComms the
	// pending cclBuffers sized by HCCL_BUFFSIZE; FixedPendingBytes the rest
	// of what is ahead, which neither variable changes (capture and
	// single-QP links, AIV buffers, buffers of their own size), less
	// allocated buffers no communicator claimed yet — so that
	// HeadroomBytes = FreeHBMBytes − FixedPendingBytes − VarLinks ×
	// QPs per link × bytes per QP − VarBufferComms × (2 × HCCL_BUFFSIZE +
	// 1 MiB) at the current settings.
	VarLinks, VarQPBytesSingle, VarQPBytesMulti float64
	VarBufferComms, FixedPendingBytes           float64

	// ProcessesKnown counts the chip's processes whose QP and buffer
	// settings all came from the CANN logs; ProcessesDefaulted those of
	// the logs for which at least one HCCL default was assumed (a value not
	// printed, or outside HCCL's range); ProcessesUnknown those whose logs
	// the exporter does not read at all. An unknown process has no known
	// communicators, so it adds nothing to the QP and buffer sums: on such
	// a chip "nothing pending" means "nothing seen", not "nothing ahead".
	ProcessesKnown, ProcessesDefaulted, ProcessesUnknown int

	// RememberedQPs are the QPs of QPsExpected that only the workload
	// memory expects: link sets an earlier process of the workload ran
	// that this one has not (memory.go).
	RememberedQPs float64
	// Product is the chip's name (npu-smi), the product learned QP sizes
	// are looked up for.
	Product string
}

// Model computes the headroom of every chip. It is pure: the result depends
// only on its arguments, and settings is called once per distinct process
// and chip. Chips come out in the order of chips, followed by chips that
// appear only in procs (HBM unknown) in order of first appearance. A nil
// settings means no CANN log view: every process is defaulted.
func Model(cfg Config, chips []ChipMemory, procs []ChipProcess, settings func(p ChipProcess) (ProcessSettings, bool)) []ChipHeadroom {
	cfg = cfg.sanitized()

	index := make(map[ascend.ChipID]int, len(chips))
	out := make([]ChipHeadroom, 0, len(chips))
	live := make([]float64, 0, len(chips)) // -1: no measurement
	devType := make([]int, 0, len(chips))  // from the chip's name, -1 unknown
	var liveQPNs [][]uint32                // nil: not listed
	for _, c := range chips {
		k := c.ChipID
		if _, dup := index[k]; dup {
			continue // npu-smi lists a chip once; keep the first if not
		}
		index[k] = len(out)
		h := ChipHeadroom{NPU: c.NPU, Chip: c.Chip, Product: c.Name}
		if used, total := c.HBMUsedBytes, c.HBMTotalBytes; used.OK && total.OK && validBytes(used.V) && validBytes(total.V) && total.V > 0 {
			h.HBMKnown = true
			h.FreeHBMBytes = total.V - used.V
		}
		out = append(out, h)
		devType = append(devType, DeviceTypeOfChip(c.Name))
		l := -1.0
		if c.LiveQPs.OK && c.LiveQPs.V >= 0 && c.LiveQPs.V <= maxPlausibleBytes {
			l = c.LiveQPs.V
		}
		live = append(live, l)
		var qpns []uint32
		if l >= 0 && c.LiveQPNsKnown {
			qpns = c.LiveQPNs
			if qpns == nil {
				qpns = []uint32{}
			}
		}
		liveQPNs = append(liveQPNs, qpns)
	}
	logged := make([]map[uint32]struct{}, len(out)) // qpns the chip's processes logged
	records := make([][]commRecord, len(out))       // per chip, what each communicator has ahead
	vars := make([]variablePart, len(out))          // per chip, what the two variables size

	type seenKey struct {
		chip ascend.ChipID
		pid  int
		dir  string
	}
	seen := make(map[seenKey]bool, len(procs))
	for _, p := range procs {
		k := p.ChipID
		if seen[seenKey{k, p.PID, p.LogDir}] {
			continue // one process counts once per chip
		}
		seen[seenKey{k, p.PID, p.LogDir}] = true
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ChipHeadroom{NPU: p.NPU, Chip: p.Chip})
			live = append(live, -1)
			devType = append(devType, -1)
			liveQPNs = append(liveQPNs, nil)
			logged = append(logged, nil)
			records = append(records, nil)
			vars = append(vars, variablePart{})
		}
		var s ProcessSettings
		var found bool
		if settings != nil {
			s, found = settings(p)
		}
		if found && devType[i] >= 0 {
			// The logs of this era print no deviceType: the chip's name
			// says which product the process runs on.
			comms := make([]comm.Communicator, len(s.Communicators))
			for j, c := range s.Communicators {
				if c.DeviceType < 0 {
					c.DeviceType = devType[i]
				}
				comms[j] = c
			}
			s.Communicators = comms
		}
		recs, v := addProcess(&out[i], cfg, s, found)
		records[i] = append(records[i], recs...)
		vars[i].add(v)
		if found && len(s.QPNs) > 0 {
			if logged[i] == nil {
				logged[i] = map[uint32]struct{}{}
			}
			for _, q := range s.QPNs {
				logged[i][q] = struct{}{}
			}
		}
	}

	for i := range out {
		h := &out[i]
		switch l := live[i]; {
		case liveQPNs[i] != nil && len(logged[i]) > 0:
			// hccn_tool lists the live qpns and the logs print HCCL's: the
			// QPs no process on the chip logged belong to other RDMA users
			// (Mooncake, HIXL on PD-disaggregated inference nodes,
			// leftovers). They are reported, not subtracted: HCCL's own
			// link setup still ahead is unchanged by them.
			own := 0
			for _, q := range liveQPNs[i] {
				if _, ok := logged[i][q]; ok {
					own++
				}
			}
			h.ForeignQPs, h.ForeignQPsKnown = float64(len(liveQPNs[i])-own), true
		case l > h.EstablishedQPs:
			// No qpns to match (a build without transport lines,
			// device-side QPs, no qpn list): where hccn_tool counts more
			// live QPs than the logs explain, links were set up that the
			// logs do not show. The measurement wins for the QP table;
			// the QPs come off what is ahead only as whole links of one
			// communicator they can be (explainLiveQPs), never spread
			// over the chip's processes.
			extra := l - h.EstablishedQPs
			h.EstablishedQPs = l
			explainLiveQPs(h, &vars[i], records[i], extra)
		}
		// HCCP's per-device QP table: the live count where hccn_tool
		// measured it, else what the logs show created.
		used := h.EstablishedQPs
		if l := live[i]; l >= 0 {
			used = l
		}
		h.SlotsFreeExpected = HCCPMaxQPsPerDevice - used - h.QPsExpected
		h.SlotsFreeHigh = HCCPMaxQPsPerDevice - used - h.QPsHigh
		v := vars[i]
		h.VarLinks = math.Max(0, v.links)
		if h.VarLinks > 0 {
			h.VarQPBytesSingle, h.VarQPBytesMulti = v.bytesSingle/v.links, v.bytesMulti/v.links
		}
		h.VarBufferComms = v.comms
		h.FixedPendingBytes = h.QPMemoryExpectedBytes + h.CCLBufferPendingBytes - v.qpMem - v.buffers
		if h.HBMKnown {
			h.HeadroomBytes = h.FreeHBMBytes - h.QPMemoryExpectedBytes - h.CCLBufferPendingBytes
		}
	}
	return out
}

// commRecord is what one communicator has ahead, kept per chip so that
// live QPs the logs do not show can be taken off the communicator they
// belong to (explainLiveQPs).
type commRecord struct {
	perLink                 float64 // QPs per op-base link
	linksLow, linksExpected float64 // op-base links ahead (captures excluded)
	linksHigh               float64
	lowB, expB, highB       float64 // bytes per QP of each bound
	unknownMode             bool
	// variable: its QPs per link follow HCCL_RDMA_QPS_PER_CONNECTION;
	// single and multi are the bytes of one QP with 1 and with N + 1.
	variable      bool
	single, multi float64
}

// variablePart is what HCCL_RDMA_QPS_PER_CONNECTION and HCCL_BUFFSIZE
// size of the expected demand ahead (ChipHeadroom.Var*).
type variablePart struct {
	links, bytesSingle, bytesMulti float64 // links; Σ links × bytes per QP
	qpMem                          float64 // their QP memory at the current settings
	comms, buffers                 float64 // cclBuffers sized by HCCL_BUFFSIZE and their bytes
}

func (v *variablePart) add(o variablePart) {
	v.links += o.links
	v.bytesSingle += o.bytesSingle
	v.bytesMulti += o.bytesMulti
	v.qpMem += o.qpMem
	v.comms += o.comms
	v.buffers += o.buffers
}

// addProcess adds one process's pending and established QPs and buffers to
// its chip's sums, and returns what each of its communicators has ahead.
func addProcess(h *ChipHeadroom, cfg Config, s ProcessSettings, found bool) ([]commRecord, variablePart) {
	var v variablePart
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
	switch {
	case !found:
		h.ProcessesUnknown++
		return nil, v
	case defaulted:
		h.ProcessesDefaulted++
	default:
		h.ProcessesKnown++
	}
	var pendingBuf, allocated, established float64
	// Communicators sharing a bufferName share one cclBuffer: it is
	// pending once, and not at all once any of them allocated it.
	shared := map[string]bool{} // name → allocated
	for _, c := range s.Communicators {
		if c.BufferName != "" && c.CCLBufferBytes > 0 {
			shared[c.BufferName] = true
		}
	}
	opBase, graph := false, s.GraphMode
	for _, c := range s.Communicators {
		opBase = opBase || c.OpBaseTags
		graph = graph || c.GraphTags
	}
	var recs []commRecord
	for _, c := range s.Communicators {
		d := demand(cfg, c, s, qps, buff, opBase, graph)
		h.QPsLow += d.qpsLow
		h.QPsExpected += d.qpsExpected + d.captureQPs
		h.QPsHigh += d.qpsHigh + d.captureQPs
		h.CaptureQPs += d.captureQPs
		h.RememberedQPs += rememberedQPs(cfg, c, s, qps, buff, opBase, graph, d)
		lowB, expB, highB, known := qpBytes(cfg, s, c, opBase, graph, d.perLink)
		expB, highB = learnedBytes(cfg, h.Product, s, c, opBase, graph, d.perLink, expB, highB)
		if !cfg.QPBytesSetByUser && c.ObservedQPBytes > 0 && float64(c.ObservedQPBytes) <= maxPlausibleBytes {
			// The depths HCCL printed for the communicator's latest QP
			// (`[ConstructQpAttrs]`) override the modelled and learned size.
			lowB, expB, highB, known = float64(c.ObservedQPBytes), float64(c.ObservedQPBytes), float64(c.ObservedQPBytes), true
		}
		capB := QPModeGraph.Bytes() // captured links are offload QPs (rule 19)
		switch {
		case cfg.QPBytesSetByUser:
			capB = cfg.QPBytesHigh
		case c.ObservedCaptureQPBytes > 0 && float64(c.ObservedCaptureQPBytes) <= maxPlausibleBytes:
			capB = float64(c.ObservedCaptureQPBytes) // printed for its latest captured QP
		default:
			if v, ok := cfg.Learned.Lookup(h.Product, QPModeGraph.Name); ok {
				capB = v // offline depths, as graph mode's: its learned size (estimator.go)
			}
		}
		h.QPMemoryLowBytes += d.qpsLow * lowB
		h.QPMemoryExpectedBytes += d.qpsExpected*expB + d.captureQPs*capB
		h.QPMemoryHighBytes += d.qpsHigh*highB + d.captureQPs*capB
		if !known {
			h.UnknownModeQPs += d.qpsExpected
		}
		r := commRecord{perLink: d.perLink, lowB: lowB, expB: expB, highB: highB, unknownMode: !known}
		if d.perLink > 0 {
			r.linksLow, r.linksExpected, r.linksHigh = d.qpsLow/d.perLink, d.qpsExpected/d.perLink, d.qpsHigh/d.perLink
		}
		if r.variable = followsQPSVariable(s, c); r.variable {
			r.single, r.multi = variableQPBytes(cfg, s, c, opBase, graph)
			// Learned sizes where the node measured the mode (estimator.go).
			r.single, _ = learnedBytes(cfg, h.Product, s, c, opBase, graph, 1, r.single, r.single)
			r.multi, _ = learnedBytes(cfg, h.Product, s, c, opBase, graph, 2, r.multi, r.multi)
			if !cfg.QPBytesSetByUser && c.ObservedQPBytes > 0 && float64(c.ObservedQPBytes) <= maxPlausibleBytes {
				// The printed size is that of the current QPs per link.
				if d.perLink > 1 {
					r.multi = float64(c.ObservedQPBytes)
				} else {
					r.single = float64(c.ObservedQPBytes)
				}
			}
			v.links += r.linksExpected
			v.bytesSingle += r.linksExpected * r.single
			v.bytesMulti += r.linksExpected * r.multi
			v.qpMem += d.qpsExpected * expB
		}
		if d.perLink > 0 && d.qpsHigh > 0 {
			recs = append(recs, r)
		}
		h.AIVBufferPendingBytes += d.aiv
		h.CCLBufferPendingBytes += d.aiv
		if c.BufferName != "" {
			if shared[c.BufferName] {
				d.buffer = 0
			} else if _, seen := shared[c.BufferName]; seen {
				d.buffer = 0 // counted with the first communicator of the name
			} else {
				shared[c.BufferName] = false
			}
		}
		pendingBuf += d.buffer
		if d.buffer > 0 && c.BufferSizeBytes == 0 {
			v.comms++
			v.buffers += d.buffer
		}
		allocated += float64(c.CCLBufferBytes)
		established += float64(c.EstablishedQPs)
	}
	// Buffer bytes the log could not tie to a communicator were allocated
	// for one whose link set has not been logged yet.
	un := nonNegative(s.UnattributedBufferBytes)
	h.CCLBufferPendingBytes += math.Max(0, pendingBuf-un)
	h.CCLBufferBytes += allocated + un
	h.EstablishedQPs += established + nonNegative(s.UnattributedQPs)
	return recs, v
}

// followsQPSVariable says whether the QPs per link of c's links ahead
// follow HCCL_RDMA_QPS_PER_CONNECTION: not where its process prints one QP
// per link (graph mode, no multi-QP), nor in graph mode, nor on a product
// without multi-QP (GetQpMode).
func followsQPSVariable(s ProcessSettings, c comm.Communicator) bool {
	if s.SingleQP || s.GraphMode || c.GraphTags && !c.OpBaseTags {
		return false
	}
	return c.DeviceType < 0 || c.DeviceType == hcclenv.DevType910B || c.DeviceType == hcclenv.DevType910_93
}

// variableQPBytes is the size of one of c's QPs with one QP per link and
// with multi-QP, as qpBytes sizes the expected bound.
func variableQPBytes(cfg Config, s ProcessSettings, c comm.Communicator, opBase, graph bool) (single, multi float64) {
	_, single, _, _ = qpBytes(cfg, s, c, opBase, graph, 1)
	_, multi, _, _ = qpBytes(cfg, s, c, opBase, graph, 2)
	return single, multi
}

// explainLiveQPs takes extra live QPs — counted by hccn_tool, shown by no
// log line — off what is ahead, as whole links of the first communicator
// on the chip they can be: a whole number k of its links (extra = k × its
// QPs per link, HCCL creating N + 1 QPs per link, transport_ibverbs.cc
// CreateQp) with k at most the links its high bound has ahead. Those k
// links are no longer ahead in any bound. QPs no single communicator
// explains (other RDMA users, a count between two link sets) are left
// alone: subtracting them chip-wide would take one process's QPs off
// another's demand.
func explainLiveQPs(h *ChipHeadroom, v *variablePart, recs []commRecord, extra float64) {
	for _, r := range recs {
		k := extra / r.perLink
		if k < 1 || k != math.Trunc(k) || k > r.linksHigh {
			continue
		}
		take := func(links float64) float64 { return math.Min(k, links) * r.perLink }
		low, exp, high := take(r.linksLow), take(r.linksExpected), take(r.linksHigh)
		h.QPsLow = math.Max(0, h.QPsLow-low)
		h.QPsExpected = math.Max(0, h.QPsExpected-exp)
		h.QPsHigh = math.Max(0, h.QPsHigh-high)
		h.QPMemoryLowBytes = math.Max(0, h.QPMemoryLowBytes-low*r.lowB)
		h.QPMemoryExpectedBytes = math.Max(0, h.QPMemoryExpectedBytes-exp*r.expB)
		h.QPMemoryHighBytes = math.Max(0, h.QPMemoryHighBytes-high*r.highB)
		if r.unknownMode {
			h.UnknownModeQPs = math.Max(0, h.UnknownModeQPs-exp)
		}
		if r.variable {
			links := math.Min(k, r.linksExpected)
			v.links -= links
			v.bytesSingle -= links * r.single
			v.bytesMulti -= links * r.multi
			v.qpMem -= exp * r.expB
		}
		return
	}
}

// commDemand is what one communicator may still create.
type commDemand struct {
	qpsLow, qpsExpected, qpsHigh float64
	captureQPs                   float64
	perLink                      float64
	buffer, aiv                  float64
}

// AIV buffers HCCL allocates per communicator and mode when an AIV
// executor is first selected (HCOMM ccl_buffer_manager.cc:130-152
// CreateCommAIVbuffer: AIV_DATA_SIZE 36 MiB + AIV_FLAG_SIZE 4 MiB for op
// base, another pair for offload — graph mode or an ACL graph capture),
// and the communicator info (AIV_COMM_INFO_SIZE 32 KiB, once per
// communicator op-base, per operator offload: hccl_communicator_host.cc
// AllocAlgResource).
const (
	aivModeBytes     = 36<<20 + 4<<20
	aivCommInfoBytes = 32 << 10
	aivBufferBytes   = aivModeBytes + aivCommInfoBytes
)

// aivPending is the AIV buffer memory communicator c will still allocate:
// the op-base set in AIV expansion mode until its
// `[CreateCommAIVbuffer] OpbaseMode` line (without such lines, until its
// first collective), and the offload set where graph mode or a capture is
// ahead (capturing, or the workload captured before) until its
// `OffloadMode` line, with one operator's communicator info.
func aivPending(s ProcessSettings, c comm.Communicator, captureAhead bool) float64 {
	mode := expansionMode(s, c)
	if !strings.EqualFold(mode, "AIV") && !strings.EqualFold(mode, "AIV_ONLY") && !c.AIVOpBase && !c.AIVOffload {
		return 0
	}
	graph := s.GraphMode || c.GraphTags && !c.OpBaseTags
	lines := c.AIVOpBase || c.AIVOffload
	var b float64
	if !graph && !c.AIVOpBase && (lines || c.CCLBufferBytes == 0) {
		b += aivBufferBytes
	}
	if (graph || captureAhead) && !c.AIVOffload {
		b += aivBufferBytes
	}
	return b
}

// demand applies HCCL's rules (docs/headroom.md) to one communicator.
// opBase and graph say which modes the process's link sets showed.
func demand(cfg Config, c comm.Communicator, s ProcessSettings, qps, buff float64, opBase, graph bool) commDemand {
	if c.RankSize <= 1 {
		return commDemand{} // a 1-rank communicator links nothing and never allocates its cclBuffer
	}
	var d commDemand
	c, memCapture := withRemembered(c, s)
	low, exp, high, ring := linkPeers(c, s.IntraRoCE, s.InterHCCSDisabled)
	linked := float64(max(c.RoCEPeers, 0))
	perLink := qpsPerLink(qps, c.DeviceType)
	if s.SingleQP {
		perLink = 1
	}
	d.perLink = perLink
	d.qpsLow = math.Max(0, low-linked) * perLink
	d.qpsExpected = math.Max(0, exp-linked) * perLink
	d.qpsHigh = math.Max(0, high-linked) * perLink
	if n, level := level1Plane(c, s.IntraRoCE, s.InterHCCSDisabled); n > 1 && !c.AllRanksOps {
		// The link sets the level-1 algorithms will still create
		// (rules 22-24), each to at most every remote rank.
		links, most := algorithmLinksAhead(c, n, level, high, isOpBaseComm(s, c, opBase, graph))
		d.qpsExpected = links * perLink
		// high stays the worst case: a full mesh not yet linked, or every
		// executor's set where those are more (new tags re-link peers).
		d.qpsHigh = math.Max(d.qpsHigh, most*perLink)
		d.qpsLow = math.Min(d.qpsLow, d.qpsExpected)
	}
	if s.GraphMode {
		// Graph mode: a ring link between servers has
		// ⌈4 · ring size / 12⌉ sockets, one QP each (comm_ring.cc
		// GetSocketsPerLink: rankSize × 4 RDMA tasks per link over an SQ
		// template of 12 WQEs); mesh links have one.
		d.qpsLow = math.Max(0, low-linked) * graphRingSockets(ring)
		d.qpsExpected = math.Max(d.qpsExpected, d.qpsLow)
		d.qpsHigh = math.Max(d.qpsHigh, d.qpsLow)
	}
	if c.Captures > 0 && c.LastCaptureQPs > 0 && float64(c.LastCaptureQPs) <= maxPlausibleBytes &&
		!cfg.Now.IsZero() && cfg.Now.Sub(c.LastCaptureAt) <= cfg.CaptureWindow {
		// A capturing process re-creates the captured operators' RoCE QPs
		// at each capture and keeps them while the graph lives: the next
		// capture is ahead.
		// Captured link sets are offload QPs: one per link, no multi-QP
		// (QPMode::OFFLOAD, transport_ibverbs.cc), at the graph size.
		d.captureQPs = float64(c.LastCaptureQPs)
	} else if memCapture > 0 {
		// The workload captured before and this process has not yet:
		// its first capture is ahead (memory.go).
		d.captureQPs = memCapture
	}
	d.aiv = aivPending(s, c, d.captureQPs > 0 || memCapture > 0)
	if c.CCLBufferBytes == 0 {
		b := buff
		if c.BufferSizeBytes > 0 && validBytes(float64(c.BufferSizeBytes)) {
			b = float64(c.BufferSizeBytes)
		}
		d.buffer = hcclenv.CCLBufferBytes(b)
	}
	return d
}

// graphRingSockets is the sockets, hence QPs, of one graph-mode ring link
// across a ring of n ranks: ⌈4n / 12⌉ (HCOMM-HEAD comm_ring.cc
// GetSocketsPerLink, HCCP_SQ_TEMPLATE_CAPACITY = 12), at least 1.
func graphRingSockets(n float64) float64 {
	return math.Max(1, math.Ceil(4*n/12))
}

// HCCP's provider sizes a QP's queues from their depths: 64 bytes per send
// WQE and 32 bytes per CQE. The receive side (64 WRs, CQ depth 64) adds
// about 6 KiB, below the model's precision, and is left out.
const (
	sendWQEBytes = 64
	cqeBytes     = 32
)

// HCCL's accepted QP depths (adapter_hccp.h QP_DEPTH_MIN, QP_DEPTH_MAX;
// adapter_hccp.cc CheckQpDepth: a power of two within them, for every
// depth ConstructQpAttrs sets). Every QPMode's depths satisfy it.
const (
	QPDepthMin = 128
	QPDepthMax = 32768
)

// HCCPMaxQPsPerDevice is HCCP's limit of QPs per RDMA device
// (rs_rdma.h RS_QP_NUM_MAX, checked in rs_rdma.c RsQpQueryInfo): it
// refuses the next with "Exceeded the maximum QP limit".
const HCCPMaxQPsPerDevice = 8192

// QPMode is one row of the QP-size table: a product, expansion mode and
// multi-QP setting, and HCCL's send-queue and send-CQ depths for it.
type QPMode struct {
	Name             string
	SQDepth, CQDepth float64
}

// Bytes is the device memory of one QP of the mode.
func (m QPMode) Bytes() float64 { return m.SQDepth*sendWQEBytes + m.CQDepth*cqeBytes }

// The QP modes (docs/headroom.md "QP size per mode" cites each depth).
var (
	QPMode910BOpBase        = QPMode{"910b_op_base", 32768, 32768}
	QPMode910BOpBaseMultiQP = QPMode{"910b_op_base_multi_qp", 16384, 16384}
	QPModeGraph             = QPMode{"graph", 128, 8192}
	QPModeA3Host            = QPMode{"a3_host", 8192, 8192}
	QPModeA3HostMultiQP     = QPMode{"a3_host_multi_qp", 4096, 4096}
	QPModeA3AICPU           = QPMode{"a3_ai_cpu", 2048, 2048}
	QPModeA3AICPUMultiQP    = QPMode{"a3_ai_cpu_multi_qp", 1024, 1024}
	// QPModeDeviceDirect: AIV's device-direct RoCE (AlltoAllDirectFullmeshAIVExecutor,
	// isNpuDirectRoce) sets send and send-CQ depth to SEND_QP_DEPTH_FOR_BSR = 512
	// (transport_manager.h). A mode of its own; the logs do not say which
	// AlltoAll executor ran, so the model sizes AlltoAll QPs by their
	// expansion mode's (larger) size and keeps this for reference.
	QPModeDeviceDirect = QPMode{"device_direct", 512, 512}
)

// qpModeOf says which mode communicator c's QPs will have, from what its
// process printed: the mode of its own link sets' tags, else of the
// process's (opBase, graph), the device type of its key-info line and
// HCCL_OP_EXPANSION_MODE. ok is false where the logs do not tell.
func qpModeOf(s ProcessSettings, c comm.Communicator, opBase, graph bool, perLink float64) (QPMode, bool) {
	isGraph := s.GraphMode || c.GraphTags && !c.OpBaseTags
	isOpBase := !isGraph && (c.OpBaseTags || opBase && !graph)
	multi := perLink > 1
	switch {
	case isGraph && c.DeviceType == hcclenv.DevType910_93:
		// A3 AI CPU graph mode sizes its one QP by its sockets × 128
		// (transport_ibverbs.cc): not a fixed size.
		return QPMode{}, false
	case isGraph:
		return QPModeGraph, true
	case !isOpBase:
		return QPMode{}, false
	case c.DeviceType == hcclenv.DevType910B:
		if multi {
			return QPMode910BOpBaseMultiQP, true
		}
		return QPMode910BOpBase, true
	case c.DeviceType == hcclenv.DevType910_93:
		mode := expansionMode(s, c)
		host := strings.EqualFold(mode, "HOST") || strings.EqualFold(mode, "AIV") || strings.EqualFold(mode, "AIV_ONLY")
		switch {
		case host && multi:
			return QPModeA3HostMultiQP, true
		case host:
			return QPModeA3Host, true
		case multi:
			return QPModeA3AICPUMultiQP, true
		}
		return QPModeA3AICPU, true // AI CPU is A3's default expansion mode
	}
	return QPMode{}, false
}

// qpBytes is the device memory of one QP of communicator c for each
// bound: its mode's size where the mode is known (qpModeOf), else the
// flags' band, expected taking the band's high end. Flags the user set
// override every mode.
func qpBytes(cfg Config, s ProcessSettings, c comm.Communicator, opBase, graph bool, perLink float64) (low, exp, high float64, known bool) {
	if cfg.QPBytesSetByUser {
		return cfg.QPBytesLow, cfg.QPBytesHigh, cfg.QPBytesHigh, true
	}
	if m, ok := qpModeOf(s, c, opBase, graph, perLink); ok {
		b := m.Bytes()
		return b, b, b, true
	}
	return cfg.QPBytesLow, unknownModeQPBytes(cfg, perLink), unknownModeQPBytes(cfg, perLink), false
}

// unknownModeQPBytes sizes one QP of a link whose mode the logs do not
// tell, so that the link's QPs × this size is the largest pair a real mode
// produces: with one QP per link the band's high end (3 MiB, 910B op-base);
// with N + 1 QPs per link (multi-QP, op-base 910B or 910_93 only) each is a
// multi-QP QP, half the band's high end (MultiQpAdjustQpCapacity halves the
// depths: 1.5 MiB), unless one single-QP link (a mode without multi-QP) is
// more. Not N + 1 × 3 MiB: no mode has both.
func unknownModeQPBytes(cfg Config, perLink float64) float64 {
	if perLink <= 1 {
		return cfg.QPBytesHigh
	}
	return math.Max(cfg.QPBytesHigh/perLink, cfg.QPBytesHigh/2)
}

// QPsPerLink is qpsPerLink for users outside the model (diagnose).
func QPsPerLink(qps float64, deviceType int) float64 { return qpsPerLink(qps, deviceType) }

// qpsPerLink is the QPs HCCL creates per RoCE connection: N + 1 for
// HCCL_RDMA_QPS_PER_CONNECTION = N > 1, but multi-QP applies only on 910B
// and 910_93 (GetQpMode), so 1 on other known device types. An unknown
// device type or mode (op-base vs graph) keeps N + 1: the bound stays an
// upper bound.
func qpsPerLink(qps float64, deviceType int) float64 {
	if deviceType >= 0 && deviceType != hcclenv.DevType910B && deviceType != hcclenv.DevType910_93 {
		return 1
	}
	return hcclenv.QPsPerLink(qps)
}

// linkPeers bounds how many ranks one rank of a communicator sets up RoCE
// links to. The high bound is a full mesh to every rank it reaches over
// RoCE; the low bound a ring across servers (or superpods). Ranks are
// assumed spread evenly; integer division makes the per-server share the
// smallest server's, so the high bound also holds for the rank with the
// most remote peers when the spread is uneven.
//
//   - A3 superpod (useSuperPodMode 1, or deviceType 910_93 with superPodNum
//     printed) without HCCL_INTER_HCCS_DISABLE=TRUE: servers of one
//     superpod talk over HCCS (comm_base.cc IsSupportInterHccs), so RoCE
//     peers are the ranks in other superpods; one superpod: none.
//   - HCCL_INTRA_ROCE_ENABLE=1 on a PCIe card (isStandardCard 1), or on a
//     910B server whose ranks span two HCCS modules (moduleNum > serverNum):
//     same-server ranks use RoCE too: high rankSize − 1, low a ring over all
//     ranks. On a single HCCS mesh the variable adds no RoCE links.
//   - serverNum not printed (eras before Dec 2025): high is every rank not
//     already seen linked over HCCS/PCIe (those share the server); low 0.
//   - serverNum 1: no RoCE initialisation at all (hccl_communicator_attrs.cc).
//   - serverNum > rankSize cannot happen; it is capped at rankSize.
//
// The expected count is what HCCL's algorithms link (HCOMM
// topo_info_extractor.cc): a level-0 mesh inside the server (HCCS, or RoCE
// where same-server ranks use RoCE), and one level-1 plane per device
// index across servers (level 2 across superpods), where the rank links
// at most to the rank of its own device index in every other server —
// ring, H-D, NHR, NB and pipeline all stay in that plane. Only an
// AlltoAll-family or send/recv/batch operator links every remote rank:
// once one ran (AllRanksOps), expected is high. Without a server count
// (older eras) the planes are unknown and expected is high. Where the
// plane is known, demand replaces the plane's expected count by the link
// sets the level-1 algorithms still create in it (algorithmLinksAhead);
// the plane count here remains the expected bound where same-server ranks
// use RoCE (the algorithms then span level 0 too).
//
// The last result is the size of the ring the low bound assumes (graph
// mode sizes its ring links by it).
func linkPeers(c comm.Communicator, intraRoCE, interHCCSDisabled bool) (low, expected, high, ringSize float64) {
	ranks := float64(c.RankSize)
	ring := func(n float64) float64 { return math.Max(0, math.Min(n-1, 2)) }
	spread := func(groups int) (float64, float64, float64, float64) {
		g := float64(min(groups, c.RankSize))
		per := math.Max(1, math.Floor(ranks/g))
		high := ranks - per
		exp := math.Min(high, g-1)
		if c.AllRanksOps {
			exp = high
		}
		return ring(g), exp, high, g
	}
	if roceLevel0(c, intraRoCE) {
		high := ranks - 1
		exp := high
		if !c.AllRanksOps && c.ServerNum > 0 {
			g := float64(min(c.ServerNum, c.RankSize))
			per := math.Max(1, math.Floor(ranks/g))
			exp = math.Min(high, per-1+g-1)
		}
		return ring(ranks), math.Max(exp, ring(ranks)), high, ranks
	}
	superPod := c.SuperPodMode == 1 || c.DeviceType == hcclenv.DevType910_93 && c.SuperPodNum >= 1
	if superPod && !interHCCSDisabled && c.SuperPodNum >= 0 {
		if c.SuperPodNum <= 1 {
			return 0, 0, 0, 0
		}
		return spread(c.SuperPodNum)
	}
	if c.ServerNum < 0 {
		high := math.Max(0, ranks-1-float64(max(c.OtherPeers, 0)))
		return 0, high, high, 0
	}
	if c.ServerNum <= 1 {
		return 0, 0, 0, 0
	}
	return spread(level1Members(c))
}

// roceLevel0 reports whether HCCL links a communicator's same-server ranks
// over RoCE (HcclCommunicatorAttrs::IsSupportEnableRoce, HCOMM-HEAD
// hccl_communicator_attrs_host.cc:907): on 910B when
// HCCL_INTRA_ROCE_ENABLE=1 and the ranks are not one HCCS mesh (two
// modules) or sit on PCIe cards, or when multiModuleDiffDeviceNumMode is 1;
// on 910_93 when multiSuperPodDiffServerNumMode is 1, or
// multiModuleDiffDeviceNumMode is 1 across several superpods (the variable
// does not count there); elsewhere only HCCL_INTRA_ROCE_ENABLE=1 on a PCIe
// card. An unknown device type is read as 910B.
func roceLevel0(c comm.Communicator, intraRoCE bool) bool {
	multiModule := c.MultiModuleDiffDeviceNum == 1
	switch {
	case c.DeviceType == hcclenv.DevType910_93:
		return c.MultiSuperPodDiffServerNum == 1 || multiModule && c.SuperPodNum > 1
	case c.DeviceType == hcclenv.DevType910B || c.DeviceType < 0:
		return intraRoCE && (c.StandardCard == 1 || twoModules(c)) || multiModule
	}
	return intraRoCE && c.StandardCard == 1
}

// twoModules reports a 910B communicator whose servers each span two HCCS
// modules (A+X: moduleNum > serverNum), where HCCL_INTRA_ROCE_ENABLE links
// the modules over RoCE (HcclCommunicatorAttrs::IsSupportEnableRoce:
// !isSingleMeshAggregation_ || isStandardCard_).
func twoModules(c comm.Communicator) bool {
	return (c.DeviceType == hcclenv.DevType910B || c.DeviceType < 0) && c.ServerNum > 0 && c.ModuleNum > c.ServerNum
}

func nonNegative(v float64) float64 {
	if !(v > 0) || v > maxPlausibleBytes {
		return 0
	}
	return v
}

// validBytes reports whether v is a usable byte count.
func validBytes(v float64) bool {
	return v >= 0 && v <= maxPlausibleBytes // false for NaN
}

// expansionMode is communicator c's HCCL_OP_EXPANSION_MODE: its own
// HcclCommConfig opExpansionMode where the logs show one (it overrides
// the variable: CommConfig::SetConfigOpExpansionMode), else the process's.
func expansionMode(s ProcessSettings, c comm.Communicator) string {
	if c.ExpansionMode != "" {
		return c.ExpansionMode
	}
	return s.ExpansionMode
}

// Level-1 algorithms (AlgTypeLevel1) by the names the model and the tags
// use (CollAlgOperator::AppendTag, lower case).
const (
	algoRing     = "ring"
	algoHD       = "hd"
	algoNHR      = "nhr"
	algoPipeline = "pipeline"
)

// planeLevel says which plane a communicator's RoCE links run in.
type planeLevel int

const (
	planeServers   planeLevel = 1 // level 1: the rank's device index across servers
	planeSuperPods planeLevel = 2 // level 2: across superpods (A3)
)

// level1Plane is the size of the plane a rank's RoCE links stay in (rule
// 18) — servers, or superpods on an A3 superpod job — and which one; 0
// where the logs do not tell (no server count) or same-server ranks use
// RoCE too (rules 6, 17: the algorithms then span more than the plane).
func level1Plane(c comm.Communicator, intraRoCE, interHCCSDisabled bool) (int, planeLevel) {
	if roceLevel0(c, intraRoCE) {
		return 0, 0
	}
	superPod := c.SuperPodMode == 1 || c.DeviceType == hcclenv.DevType910_93 && c.SuperPodNum >= 1
	if superPod && !interHCCSDisabled && c.SuperPodNum >= 0 {
		if c.SuperPodNum <= 1 {
			return 0, 0
		}
		return min(c.SuperPodNum, c.RankSize), planeSuperPods
	}
	if c.ServerNum <= 1 {
		return 0, 0
	}
	return min(level1Members(c), c.RankSize), planeServers
}

// level1Members is the size of the level-1 plane across servers: HCCL's
// moduleNum (CollAlgOperator::SetTopoAttr; the HCCS meshes, two per A+X
// server) where printed, which the executors size by
// (coll_all_reduce_mesh_opbase_small_count_deterministic_executor.cc:91,
// CalcContextNumForPipeline), else serverNum.
func level1Members(c comm.Communicator) int {
	if c.ModuleNum > c.ServerNum {
		return c.ModuleNum
	}
	return c.ServerNum
}

// algoPeers is how many distinct ranks of an n-rank plane one rank links
// to with a level-1 algorithm (HCOMM-HEAD algorithm/base/communicator):
// ring and pipeline (a ring inside the plane, COMM_TAG_RING_INNER) the two
// neighbours (calc_ring_transport_req.cc); H-D the log2(n) partners of
// recursive halving-doubling (calc_hd_transport_req.cc, CalcLinksRelation),
// one more where n is not a power of two (the recursive step folding the
// extra ranks in); NHR and NB the ranks ±1, ±2, ±4 … away
// (calc_nhr_transport_req.cc, calc_nb_transport_req.cc: delta <<= 1 while
// delta < n, both directions, distinct); anything else the whole plane.
func algoPeers(algo string, n int) float64 {
	if n <= 1 {
		return 0
	}
	switch algo {
	case algoRing, algoPipeline:
		return float64(min(n-1, 2))
	case algoHD:
		p := 0
		for 1<<(p+1) <= n {
			p++
		}
		if n&(n-1) != 0 {
			p++
		}
		return float64(min(p, n-1))
	case algoNHR, "nb", "nhr_v1":
		peers := map[int]struct{}{}
		for d := 1; d < n; d <<= 1 {
			peers[d%n] = struct{}{}
			peers[(n-d%n)%n] = struct{}{}
		}
		return float64(len(peers))
	}
	return float64(n - 1)
}

// defaultLevel1Algo is the level-1 algorithm HCCL configures for a
// communicator without HCCL_ALGO (AlgConfigurator::GetDefaultAlgoLevel1V1,
// alg_configurator.cc): H-D where the plane has a power-of-two or at least
// HCCL_INTER_SERVER_RING_ALGO_MAX_SUPPORT_SERVER_NUM (8) members, ring
// otherwise; on 910_93 NHR instead of H-D. Level 2 (superpods) defaults
// to NHR (SetAlgoLevel2).
func defaultLevel1Algo(n int, devType int, level planeLevel) string {
	if level == planeSuperPods {
		return algoNHR
	}
	algo := algoRing
	if n >= 8 || n > 1 && n&(n-1) == 0 {
		algo = algoHD
	}
	if algo == algoHD && devType == hcclenv.DevType910_93 {
		algo = algoNHR
	}
	return algo
}

// autoSelectedAlgo is what 910B's op-base auto-selection
// (CollAlgOperator::AutoSelectAlgTypeLevel1 → GetDefaultAlgoLevel1V2 →
// SelectAlgoTypeFor{AllReduce,ReduceScatter,AllGather}) picks by its cost
// model outside the pipeline case: ring costs (n − 1) latencies, NHR
// ⌈log2 n⌉, with the same bandwidth term, so NHR wins from n = 4 and ring
// below (ties go to ring); H-D ties with NHR on powers of two and loses
// otherwise (RHD's bandwidth term is larger), so it is never picked.
func autoSelectedAlgo(n int) string {
	if n <= 3 {
		return algoRing
	}
	return algoNHR
}

// isOpBaseComm says whether c's link sets will be op-base: its own tags,
// else its process's; false where unknown or graph.
func isOpBaseComm(s ProcessSettings, c comm.Communicator, opBase, graph bool) bool {
	if s.GraphMode || c.GraphTags && !c.OpBaseTags {
		return false
	}
	return c.OpBaseTags || opBase && !graph
}

// The executors 910B's op-base selector picks on a multi-server mesh
// (AllReduceOperator::SelectAlgfor910B → NonDeterministicSelector,
// all_reduce_operator.cc:550-580; the ReduceScatter and AllGather
// selectors likewise): each a link set of its own (resMap_[newTag], the
// tag carrying algName).
const (
	execAllReduceMesh       = "AllReduceMeshExecutor"
	execAllReducePipeline   = "AllReduceMeshOpbasePipelineExecutor"
	execAllReduceSmallCount = "AllReduceMeshOpbaseSmallCountDeterministicExecutor"
)

// opExecutors are the executors a collective's auto-selected op-base
// link sets can carry on a 910B multi-server mesh: the mesh executor
// (with the auto-selection's level-1 algorithm), the pipeline executor
// where a server has more than one rank (a ring in the plane), and for
// AllReduce the small-count executor under 512 KB (HCCL_SMALL_COUNT_512_KB).
func opExecutors(op string, ranksPerServer int) []string {
	var mesh, pipe string
	switch op {
	case "allreduce":
		mesh, pipe = execAllReduceMesh, execAllReducePipeline
	case "reducescatter":
		mesh, pipe = "ReduceScatterMeshExecutor", "ReduceScatterMeshOpbasePipelineExecutor"
	case "allgather":
		mesh, pipe = "AllGatherMeshExecutor", "AllGatherMeshOpbasePipelineExecutor"
	case "allgatherv":
		mesh, pipe = "AllGatherVMeshExecutor", "AllGatherVMeshOpbasePipelineExecutor"
	default:
		return nil
	}
	out := []string{mesh}
	if ranksPerServer > 1 {
		out = append(out, pipe)
	}
	if op == "allreduce" {
		out = append(out, execAllReduceSmallCount)
	}
	return out
}

// executorAlgo is the level-1 algorithm whose peers an executor's set
// links in an n-member plane: the pipeline executors a ring in the plane;
// the small-count executor H-D where the plane is a power of two or H-D
// was configured, ring where ring was, NHR otherwise (coll_all_reduce_
// mesh_opbase_small_count_deterministic_executor.cc:91-99, which sizes by
// moduleNum); any other executor the level-1 algorithm of its tag (algo),
// else the mesh executor's auto-selected one (auto), else def.
func executorAlgo(exec, algo, auto, def string, n int) string {
	switch {
	case strings.Contains(exec, "Pipeline"):
		return algoPipeline
	case strings.Contains(exec, "SmallCountDeterministic"):
		switch {
		case n&(n-1) == 0 || algo == algoHD:
			return algoHD
		case algo == algoRing:
			return algoRing
		}
		return algoNHR
	case algo != "":
		return algo
	case exec != "" && auto != "":
		return auto
	}
	return def
}

// algorithmLinksAhead counts the links (not QPs) the level-1 algorithms
// of communicator c will still create in its n-member plane (rules
// 22-24), expected and high:
//
//   - no link set yet: the first one's, with the default algorithm — on
//     910B op-base the auto-selection's pick, in graph mode or on other
//     products GetDefaultAlgoLevel1V1's, the larger of the two where the
//     mode is not known yet; high adds every other executor the first
//     collective can pick;
//   - each logged set whose executor's peers it has not all linked yet:
//     the rest of them;
//   - for each collective whose sets show the 910B op-base selector
//     (multi-server mesh): the executors it can still pick (opExecutors),
//     each a new tag with new QPs to all its peers, also peers other tags
//     linked (resMap_[newTag]). Expected takes AllReduce's small-count
//     set once AllReduce ran — every training step's scalar reductions
//     (loss, gradient norm) are under 512 KB — and high every one.
//
// Each set is capped at high, the remote ranks the rank may link at all.
func algorithmLinksAhead(c comm.Communicator, n int, level planeLevel, high float64, opBase bool) (expected, most float64) {
	capped := func(v float64) float64 { return math.Min(v, high) } // high: every remote rank the rank may link
	is910B := c.DeviceType == hcclenv.DevType910B || c.DeviceType < 0
	auto := is910B && level == planeServers
	def := defaultLevel1Algo(n, c.DeviceType, level)
	autoAlgo := ""
	if auto {
		autoAlgo = autoSelectedAlgo(n)
	}
	perServer := c.RankSize / max(n, 1)
	var sets []comm.LinkSet
	for _, l := range c.LinkSets {
		if l.Kind == comm.LinkSetOpBase || l.Kind == comm.LinkSetGraph {
			sets = append(sets, l)
		}
	}
	if len(sets) == 0 {
		first := algoPeers(def, n)
		switch {
		case auto && opBase:
			first = algoPeers(autoAlgo, n)
		case auto && !c.GraphTags:
			first = math.Max(first, algoPeers(autoAlgo, n))
		}
		expected = math.Max(0, capped(first)-float64(max(c.RoCEPeers, 0)))
		most = expected
		if auto && !c.GraphTags && c.RoCEPeers <= 0 {
			// Nothing linked yet: the first collective may be an
			// AllReduce that picks any of its executors.
			for _, e := range opExecutors("allreduce", perServer)[1:] {
				most += capped(algoPeers(executorAlgo(e, "", autoAlgo, def, n), n))
			}
		}
		return expected, most
	}
	seen := map[string]map[string]bool{} // collective → executors with a set
	for _, l := range sets {
		a := executorAlgo(l.Executor, l.Algo, autoAlgo, def, n)
		expected += math.Max(0, capped(algoPeers(a, n))-float64(l.RoCEPeers))
		if auto && l.Kind == comm.LinkSetOpBase && opExecutors(l.Op, perServer) != nil {
			if seen[l.Op] == nil {
				seen[l.Op] = map[string]bool{}
			}
			e := l.Executor
			if e == "" {
				// A tag without algName (releases before the executor
				// was appended): its level-1 name says which.
				e = opExecutors(l.Op, 1)[0]
				if l.Algo == algoPipeline && perServer > 1 {
					e = opExecutors(l.Op, perServer)[1]
				}
			}
			seen[l.Op][e] = true
		}
	}
	most = expected
	for op, execs := range seen {
		for _, e := range opExecutors(op, perServer) {
			if execs[e] {
				continue
			}
			links := capped(algoPeers(executorAlgo(e, "", autoAlgo, def, n), n))
			most += links
			if e == execAllReduceSmallCount {
				expected += links
			}
		}
	}
	return expected, most
}
