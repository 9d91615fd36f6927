package logstate

import (
	"bytes"
	"slices"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Fault is one wording of the fault catalog: the plog lines that count as a
// code. A code may have several rows, one per fingerprint; what the code is
// (stage, title, role, audience, remedy) is its row in the fault-code table
// (codes.go), and every row's code must be there (a test checks it).
type Fault struct {
	Code string
	// Fingerprint lists substrings that must ALL occur in a plog ERROR line
	// for the line to count as this code (source "plog").
	Fingerprint []string
	// Resource is the resource label of the events this row counts: what
	// EI0007 says it failed to allocate (Resources). Empty for other codes.
	Resource string
	// Incident names a failure that HCCL logs as a cause line followed by
	// a summary line (a failed QP create: the adapter's `ra … qp create
	// fail`, then the transport's `create qp failed`). A cause row opens
	// the incident for its process; a Summary row closes an open one
	// without counting, and counts only when no cause line preceded it, so
	// one failed QP counts once whichever lines the build prints.
	Incident string
	Summary  bool
	// Repeat names how HCCL repeats one event in the plog (repeats.go):
	// repeatCQE (EI0013: one event per process, remote address and CQE
	// time), repeatTimeout (EI0002: one per process and timeout, not per
	// exception callback). Empty: every matching line is an event.
	Repeat string
}

// Resources are the values of the resource label of hccl_fault_events_total,
// a fixed set: EI0007's resource_type (HCOMM-HEAD adapter_hccp.cc,
// adapter_rts.cc, transport_ibverbs.cc: "qp", "DeviceMemory", "HostMemory",
// "event", "stream", …) folded into the kinds an operator acts on
// differently; empty for every other code.
const (
	ResourceNone         = ""
	ResourceQP           = parse.ResourceQP
	ResourceQPState      = parse.ResourceQPState
	ResourceDeviceMemory = parse.ResourceDeviceMemory
	ResourceHostMemory   = parse.ResourceHostMemory
	ResourceOther        = parse.ResourceOther
)

// Resources lists the values of the resource label.
var Resources = []string{ResourceNone, ResourceQP, ResourceQPState, ResourceDeviceMemory, ResourceHostMemory, ResourceOther}

// incidentQPCreate is the Incident of the QP-create rows.
const incidentQPCreate = "qp_create"

// catalog is the wordings of the fault-code table (codes.go): plog
// fingerprints from the HCCL docs, HCOMM sources and MindCluster faultdiag's
// knowledge base. A code may have none (it reaches the exporter through
// screen logs only). The first matching fingerprint wins, so one plog line
// counts once; fingerprints are chosen so that one incident, which prints
// several ERROR lines, counts once (e.g. EI0006 keys on "wait socket
// establish timeout", not on the "Transport init error" that follows it).
// A wording that HCCL raises under a code for a different failure than the
// code's usual one gets a row of its own with its own resource (as EI0007's
// device-memory rows and its QP rows), placed before the code's generic
// rows.
var catalog = []Fault{
	{Code: "EI0001", Fingerprint: []string{"[InitGroupStage][EnvConfig]"}},
	{Code: "EI0002", Repeat: repeatTimeout, Fingerprint: []string{"Task run failed", "taskType[Notify Wait]"}},
	// HCCL prints one timeout as three lines, "Task run failed, base
	// information is …", "…, groupRank information is …" and "…, opData
	// information is …" (HCCL docs task_exec_stage.md): only the first
	// counts.
	// Each exception callback of the timed-out tasks prints them again;
	// HCCL reports EI0002 once per process (TaskExceptionHandler's static
	// errMsgFlag_, HCOMM-HEAD task_exception_handler.cc): one event per
	// process and timeout (repeatTimeout).
	{Code: "EI0002", Repeat: repeatTimeout, Fingerprint: []string{"[TaskExecStage][Timeout]", "Task run failed, base information"}},
	{Code: "EI0004", Fingerprint: []string{"[InitGroupStage][RanktableConfig]"}},
	{Code: "EI0005", Fingerprint: []string{"CMD information", "check fail"}},
	{Code: "EI0005", Fingerprint: []string{"[ParameterConflict]"}},
	{Code: "EI0006", Fingerprint: []string{"wait socket establish timeout"}},
	// EI0007 "Failed to allocate resource[qp]" is a QP create that failed
	// for a reason other than out-of-memory (EI0011): HCOMM-HEAD
	// transport_ibverbs.cc:711 raises it whenever the adapter's create
	// fails, and users hit it with HBM to spare (vllm-ascend #9005, fixed by
	// a driver/firmware upgrade). "resource[DeviceMemory] with info
	// [size:N]" is an HCCL device allocation that failed in builds before
	// the exact-size EI0011 (Jan 2026). The resource label tells them apart.
	//
	// Device memory: HCOMM-init adapter_rts.cc "[Malloc][Mem]errNo[…]
	// aclrtMalloc failed" (EI0007 DeviceMemory); HCOMM-HEAD adapter_rts.cc:713
	// "[Malloc][Mem]errNo[…] aclrtMallocWithCfg failed" and :790
	// "[InitGroupStage][Resource]errNo[…] rtMalloc failed" (EI0007
	// DeviceMemory at :784; the out-of-memory case is EI0011 below).
	{Code: "EI0007", Resource: ResourceDeviceMemory, Fingerprint: []string{"[Malloc][Mem]errNo[", "aclrtMalloc failed"}},
	{Code: "EI0007", Resource: ResourceDeviceMemory, Fingerprint: []string{"[Malloc][Mem]errNo[", "aclrtMallocWithCfg failed"}},
	{Code: "EI0007", Resource: ResourceDeviceMemory, Fingerprint: []string{"[InitGroupStage][Resource]errNo[", "rtMalloc failed"}},
	{Code: "EI0008", Fingerprint: []string{"[InitChannelStage][VersionConflict]"}},
	// EI0009 with reason "The network port is down": RDMA init returned
	// HCCP_ELINKDOWN (328004) (HCOMM-HEAD adapter_hccp.cc:933, :972, :1028),
	// which logs "[InitGroupStage][Resource]rdma init failed because RoCE
	// link status is down" (:975, :1031). The remedy is HCOMM's own EI0009
	// Solution (error_code.cc). A QP that never reaches the ready state
	// ("[Connect][Qp]get qp status timeout", transport_ibverbs.cc:897, :944)
	// fails transport init the same way; HCOMM raises no code there, the
	// screen then shows EI0009 "Transport init error" (vllm-ascend #3162).
	{Code: "EI0009", Fingerprint: []string{"RoCE link status is down"}},
	{Code: "EI0009", Fingerprint: []string{"[Connect][Qp]get qp status timeout"}},
	// EI0011 prints the size of the failed allocation. The range forms
	// ("[size: [0.25MB, 3MB], …]", "262144~3145728") are a QP at link setup
	// (plog "ra qp create fail, reason: out of memory"); from Jan 2026 any
	// HCCL device allocation that fails with ACL_ERROR_RT_MEMORY_ALLOCATION
	// is EI0011 with the exact size (plog "[Malloc][Mem] rtMalloc failed,
	// Reason: out of memory"): a size of 2 × buffer + 1 MiB is the cclBuffer.
	{Code: "EI0011", Fingerprint: []string{"ra qp create fail", "out of memory"}, Incident: incidentQPCreate},
	{Code: "EI0011", Fingerprint: []string{"[Malloc][Mem] rtMalloc failed", "out of memory"}},
	// A5 (ascend950 orion_adapter_hccp.cc) reports EI0011 when RaQpCreate
	// returns ROCE_ENOMEM_RET (328100), and its "[Create][RaQp] … ra qp create
	// fail" line has no "out of memory" text: the return code tells.
	{Code: "EI0011", Fingerprint: []string{"ra qp create fail", "ret[328100]"}, Incident: incidentQPCreate},
	// Any other QP-create failure (after the EI0011 rows: first match wins):
	// the adapter's cause lines (HCOMM-HEAD adapter_hccp.cc: "[Create][RaQp]…
	// ra qp create fail", "[Create][RaQp]… ra qp create with attrs fail",
	// :3116 "[Create][RaAiQp]… ra ai qp create fail" for the AI CPU QPs of
	// A3 AICPU mode, and "this package does not support hrtRaAiQpCreate"
	// when the driver is too old for them), then the transport's summary
	// line (transport_ibverbs.cc:717 and transport_direct_npu.cc:549
	// "[InitGroupStage][Resource]create qp failed, localDeviceId[…]";
	// "[Create][Qp]create qp failed, …" in HCOMM-init), which HCCL prints
	// after every failed create, out-of-memory included.
	// A QP state change (ModifyQp) that failed: EI0007 with resource_info
	// ModifyQp (adapter_hccp.cc:224-227), then "[InitGroupStage][Resource]
	// errNo[…] ra qp modify fail." (:237). The QP exists; the link to the
	// peer did not come up. Not an exhaustion: resource qp_state, which
	// feeds neither HCCLQPResourceExhausted nor the workload memory.
	{Code: "EI0007", Resource: ResourceQPState, Fingerprint: []string{"ra qp modify fail"}},
	{Code: "EI0007", Resource: ResourceQP, Incident: incidentQPCreate, Fingerprint: []string{"ra ai qp create fail"}},
	{Code: "EI0007", Resource: ResourceQP, Incident: incidentQPCreate, Fingerprint: []string{"does not support hrtRaAiQpCreate"}},
	{Code: "EI0007", Resource: ResourceQP, Incident: incidentQPCreate, Fingerprint: []string{"ra qp create with attrs fail"}},
	{Code: "EI0007", Resource: ResourceQP, Incident: incidentQPCreate, Fingerprint: []string{"ra qp create fail"}},
	{Code: "EI0007", Resource: ResourceQP, Incident: incidentQPCreate, Summary: true, Fingerprint: []string{"create qp failed, localDeviceId["}},
	// HCOMM heartbeat.cc raises EI0013 for every error CQE of a
	// communicator, each after a "[Heartbeat]find cqe error, localIP[…],
	// remoteIP[…]" ERROR line, whatever its status (12 is the
	// retransmission timeout; a peer that exited gives others).
	// HcclGetCommAsyncError prints it again at every call while the CQE is
	// recorded, so a polling framework repeats it; the heartbeat thread
	// prints the CQE once, when it finds it: `[HeartbeatAbnormal][ROCE CQE
	// ERROR]cqe error status[…], time:[…], …, remoteIP{…deviceIp[…]}`
	// (heartbeat.cc:1747, the real 2025 capture's only line of its CQE).
	// One event per process, remote address and CQE time (repeatCQE).
	{Code: "EI0013", Repeat: repeatCQE, Fingerprint: []string{"[ROCE CQE ERROR]", "cqe error status["}},
	{Code: "EI0013", Repeat: repeatCQE, Fingerprint: []string{"find cqe error, localIP["}},
	{Code: "EI0014", Fingerprint: []string{"[InitGroupStage][RanktableCheck]"}},
	{Code: "EI0015", Fingerprint: []string{"topo exchange", "get socket timeout"}},
	// socket type[2] is the host NIC (cluster negotiation), EI0019; types 0
	// and 1 are the NPU NIC (parameter plane, port 16666), EI0020 (HCOMM
	// reports EI0019 for HOST_NIC_TYPE, EI0020 otherwise).
	{Code: "EI0019", Fingerprint: []string{"socket type[2]", "Please check the port status"}},
	{Code: "EI0020", Fingerprint: []string{"socket type[0]", "Please check the port status"}},
	{Code: "EI0020", Fingerprint: []string{"socket type[1]", "Please check the port status"}},
	// The driver reports an out-of-memory while HCCL allocates its cclBuffer
	// (2 × HCCL_BUFFSIZE + 1 MiB per communicator) as EL0004 in builds before
	// the exact-size EI0011. HCCL's own plog line then is mem_device.cc's
	// "[DeviceMem][Alloc]rt_malloc error, … size[N Byte]"; CCLBufferManager's
	// "Create ccl buffer size[…] fail" line cannot print on an out-of-memory
	// (it follows a successful allocation check), so it is not a fingerprint.
	//
	// EL0004 is the runtime's generic out-of-memory: in screen logs it is
	// HCCL's only where the report says "requested by HCCL module" or its
	// traceback names HcclAllocComResourceByTiling (vllm-ascend #3141);
	// every other EL0004 is another component's (ascend_cann_fault_events_total).
	{Code: "EL0004", Fingerprint: []string{"[DeviceMem][Alloc]rt_malloc error"}},
}

// codeInfo is the per-code view of the catalog.
type codeInfo struct {
	Stage, Title, Remedy string
}

// catalogIndex is built once from the code table and the catalog.
type catalogIndex struct {
	codes  map[string]codeInfo
	rows   map[string]int // code → index in the code table
	order  []string       // codes in table order
	prints []fingerprint
	// resources are the resource label values of each code's rows, in
	// catalog order ("" for a code without rows): the series that start
	// at 0.
	resources map[string][]string
}

type fingerprint struct {
	code     string
	resource string
	incident string
	summary  bool
	repeat   string
	parts    [][]byte
}

func buildCatalog(table []Code, rows []Fault) *catalogIndex {
	ix := &catalogIndex{codes: map[string]codeInfo{}, rows: map[string]int{}, resources: map[string][]string{}}
	for i, c := range table {
		if _, ok := ix.codes[c.Code]; ok {
			continue // the first row of a code wins; a test forbids a second
		}
		ix.codes[c.Code] = codeInfo{Stage: c.Stage, Title: c.Title, Remedy: c.Remedy}
		ix.rows[c.Code] = i
		ix.order = append(ix.order, c.Code)
	}
	for _, r := range rows {
		if !slices.Contains(ix.resources[r.Code], r.Resource) {
			ix.resources[r.Code] = append(ix.resources[r.Code], r.Resource)
		}
		if len(r.Fingerprint) > 0 {
			fp := fingerprint{code: r.Code, resource: r.Resource, incident: r.Incident, summary: r.Summary, repeat: r.Repeat}
			for _, s := range r.Fingerprint {
				fp.parts = append(fp.parts, []byte(s))
			}
			ix.prints = append(ix.prints, fp)
		}
	}
	for _, code := range ix.order {
		if len(ix.resources[code]) == 0 {
			ix.resources[code] = []string{ResourceNone}
		}
	}
	return ix
}

// match returns the code of the first fingerprint whose parts all occur in msg.
func (ix *catalogIndex) match(msg []byte) (string, bool) {
	if fp := ix.matchRow(msg); fp != nil {
		return fp.code, true
	}
	return "", false
}

// matchRow returns the first fingerprint whose parts all occur in msg, or nil.
func (ix *catalogIndex) matchRow(msg []byte) *fingerprint {
next:
	for i := range ix.prints {
		fp := &ix.prints[i]
		for _, p := range fp.parts {
			if !bytes.Contains(msg, p) {
				continue next
			}
		}
		return fp
	}
	return nil
}

func (ix *catalogIndex) stage(code string) string {
	if ci, ok := ix.codes[code]; ok {
		return ci.Stage
	}
	return parse.StageUnknown
}

// defaultCatalog is the index of catalog, built once and never modified.
var defaultCatalog = buildCatalog(codes, catalog)

// Catalog returns a copy of the catalog's wordings, for documentation and
// the offline diagnose report.
func Catalog() []Fault {
	out := make([]Fault, len(catalog))
	for i, f := range catalog {
		f.Fingerprint = append([]string(nil), f.Fingerprint...)
		out[i] = f
	}
	return out
}

// CodeInfo returns the stage, title and remedy of a code of the table.
func CodeInfo(code string) (stage, title, remedy string, ok bool) {
	ci, ok := defaultCatalog.codes[code]
	if !ok {
		return parse.StageUnknown, "", "", false
	}
	return ci.Stage, ci.Title, ci.Remedy, true
}
