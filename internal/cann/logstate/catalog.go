package logstate

import (
	"bytes"
	"slices"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Fault is one row of the fault catalog. A code may have several rows, one
// per plog fingerprint; a row without a fingerprint only declares a code that
// appears in screen logs. All rows of a code share its stage, title and
// remedy (the first row's are used; a test checks they agree).
type Fault struct {
	Code  string
	Stage string // parse.StageInit, StageLinkSetup, StageExecution or StageUnknown
	Title string // errTitle at the time of writing; titles change between CANN versions
	// Fingerprint lists substrings that must ALL occur in a plog ERROR line
	// for the line to count as this code (source "plog").
	Fingerprint []string
	Remedy      string
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

// catalog is the fault table: codes from the HCCL fault-diagnosis docs and
// HCOMM's error JSON, plog fingerprints from the HCCL docs, HCOMM sources and
// MindCluster faultdiag's knowledge base. Extend it here; nothing else keys
// on codes. The first matching fingerprint wins, so one plog line counts
// once; fingerprints are chosen so that one incident, which prints several
// ERROR lines, counts once (e.g. EI0006 keys on "wait socket establish
// timeout", not on the "Transport init error" that follows it).
var catalog = []Fault{
	{Code: "EI0001", Stage: parse.StageInit, Title: "Config_Error_Invalid_Environment_Variable",
		Fingerprint: []string{"[InitGroupStage][EnvConfig]"},
		Remedy:      "An HCCL environment variable has an invalid value; fix it (the plog line names it and the allowed range)."},
	{Code: "EI0002", Stage: parse.StageExecution, Title: "Communication_Error_Timeout", Repeat: repeatTimeout,
		Fingerprint: []string{"Task run failed", "taskType[Notify Wait]"},
		Remedy:      "Notify wait timed out (HCCL_EXEC_TIMEOUT): a peer rank is stuck or gone; find the first failing rank."},
	// HCCL prints one timeout as three lines, "Task run failed, base
	// information is …", "…, groupRank information is …" and "…, opData
	// information is …" (HCCL docs task_exec_stage.md): only the first
	// counts.
	// Each exception callback of the timed-out tasks prints them again;
	// HCCL reports EI0002 once per process (TaskExceptionHandler's static
	// errMsgFlag_, HCOMM-HEAD task_exception_handler.cc): one event per
	// process and timeout (repeatTimeout).
	{Code: "EI0002", Stage: parse.StageExecution, Title: "Communication_Error_Timeout", Repeat: repeatTimeout,
		Fingerprint: []string{"[TaskExecStage][Timeout]", "Task run failed, base information"}},
	{Code: "EI0003", Stage: parse.StageExecution, Title: "Invalid_Argument_Collective_Communication_Operator",
		Remedy: "A collective operator was called with an invalid argument."},
	{Code: "EI0004", Stage: parse.StageInit, Title: "File_Operation_Error_Parse",
		Fingerprint: []string{"[InitGroupStage][RanktableConfig]"},
		Remedy:      "The ranktable file cannot be read or parsed; check its path and JSON."},
	{Code: "EI0005", Stage: parse.StageLinkSetup, Title: "Invalid_Argument",
		Fingerprint: []string{"CMD information", "check fail"},
		Remedy:      "Ranks called collectives with inconsistent arguments; compare the operator, count and data type across ranks."},
	{Code: "EI0005", Stage: parse.StageLinkSetup, Title: "Invalid_Argument",
		Fingerprint: []string{"[ParameterConflict]"}},
	{Code: "EI0006", Stage: parse.StageLinkSetup, Title: "Communication_Error_Get_Socket",
		Fingerprint: []string{"wait socket establish timeout"},
		Remedy:      "Link setup socket timed out (HCCL_CONNECT_TIMEOUT + 20 s): a peer did not reach link setup in time; check the peer's logs and network."},
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
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceDeviceMemory,
		Fingerprint: []string{"[Malloc][Mem]errNo[", "aclrtMalloc failed"},
		Remedy: "HCCL could not allocate a resource at link setup; the resource label (resource[…] in the screen log) says which. " +
			"qp: a queue-pair create failed for a reason other than out-of-memory — often an old NPU driver/firmware (HDK) for the CANN " +
			"version (upgrade it; vllm-ascend #9005 had > 20 GB HBM free), or the device's QPs used up: fewer QPs per connection " +
			"(HCCL_RDMA_QPS_PER_CONNECTION), fewer RoCE links, and check what else holds QPs on the chip (`hccn_tool -i <phy> -qp_info -g`: " +
			"Mooncake, HIXL, leftover processes). device_memory with a size: an HCCL device allocation; a size of about 2 × HCCL_BUFFSIZE " +
			"is its cclBuffer (lower HCCL_BUFFSIZE)."},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceDeviceMemory,
		Fingerprint: []string{"[Malloc][Mem]errNo[", "aclrtMallocWithCfg failed"}},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceDeviceMemory,
		Fingerprint: []string{"[InitGroupStage][Resource]errNo[", "rtMalloc failed"}},
	{Code: "EI0008", Stage: parse.StageLinkSetup, Title: "Package_Error_Incorrect_HCCL_Version",
		Fingerprint: []string{"[InitChannelStage][VersionConflict]"},
		Remedy:      "CANN/HCCL versions differ between ranks; install the same version on every node."},
	// EI0009 with reason "The network port is down": RDMA init returned
	// HCCP_ELINKDOWN (328004) (HCOMM-HEAD adapter_hccp.cc:933, :972, :1028),
	// which logs "[InitGroupStage][Resource]rdma init failed because RoCE
	// link status is down" (:975, :1031). The remedy is HCOMM's own EI0009
	// Solution (error_code.cc). A QP that never reaches the ready state
	// ("[Connect][Qp]get qp status timeout", transport_ibverbs.cc:897, :944)
	// fails transport init the same way; HCOMM raises no code there, the
	// screen then shows EI0009 "Transport init error" (vllm-ascend #3162).
	{Code: "EI0009", Stage: parse.StageLinkSetup, Title: "Communication_Error_Initialize_Transport",
		Fingerprint: []string{"RoCE link status is down"},
		Remedy: "Transport initialisation failed. Reason \"The network port is down\": the chip's RoCE port is down (RoCELinkDown); " +
			"HCOMM's own steps: 1. is the optical module in place (`hccn_tool -i <phy> -optical -g | grep present`), 2. is the NIC IP " +
			"configured (`hccn_tool -i <phy> -ip -g`), 3. is the switch connected (`hccn_tool -i <phy> -lldp -g`). Other reasons " +
			"(Create Dest error, QP status timeout): the peer named in createLink para failed or is unreachable; check its logs and " +
			"the link between the two (TLS switch and speed must match on both ends)."},
	{Code: "EI0009", Stage: parse.StageLinkSetup, Title: "Communication_Error_Initialize_Transport",
		Fingerprint: []string{"[Connect][Qp]get qp status timeout"}},
	{Code: "EI0010", Stage: parse.StageLinkSetup, Title: "Communication_Error_P2P",
		Remedy: "P2P between devices failed; set HCCL_INTRA_ROCE_ENABLE=1 when devices are not on the same plane."},
	// EI0011 prints the size of the failed allocation. The range forms
	// ("[size: [0.25MB, 3MB], …]", "262144~3145728") are a QP at link setup
	// (plog "ra qp create fail, reason: out of memory"); from Jan 2026 any
	// HCCL device allocation that fails with ACL_ERROR_RT_MEMORY_ALLOCATION
	// is EI0011 with the exact size (plog "[Malloc][Mem] rtMalloc failed,
	// Reason: out of memory"): a size of 2 × buffer + 1 MiB is the cclBuffer.
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"ra qp create fail", "out of memory"}, Incident: incidentQPCreate,
		Remedy: "An HCCL device-memory allocation failed; the report prints its size. A size of 0.25–3 MB (or the range form) is a QP at link setup: " +
			"free memory (batch size, other processes), lower HCCL_RDMA_QPS_PER_CONNECTION (recommended 1..8; N > 1 makes N + 1 QPs per connection), " +
			"use algorithms with fewer RoCE links. A size of about 2 × HCCL_BUFFSIZE + 1 MiB is the cclBuffer: lower HCCL_BUFFSIZE or the number of " +
			"communicators — except for MoE/MC2 operators that require a large HCCL_BUFFSIZE: free memory there."},
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"[Malloc][Mem] rtMalloc failed", "out of memory"}},
	// A5 (ascend950 orion_adapter_hccp.cc) reports EI0011 when RaQpCreate
	// returns ROCE_ENOMEM_RET (328100), and its "[Create][RaQp] … ra qp create
	// fail" line has no "out of memory" text: the return code tells.
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"ra qp create fail", "ret[328100]"}, Incident: incidentQPCreate},
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
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceQP, Incident: incidentQPCreate,
		Fingerprint: []string{"ra ai qp create fail"}},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceQP, Incident: incidentQPCreate,
		Fingerprint: []string{"does not support hrtRaAiQpCreate"}},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceQP, Incident: incidentQPCreate,
		Fingerprint: []string{"ra qp create with attrs fail"}},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceQP, Incident: incidentQPCreate,
		Fingerprint: []string{"ra qp create fail"}},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Resource: ResourceQP, Incident: incidentQPCreate, Summary: true,
		Fingerprint: []string{"create qp failed, localDeviceId["}},
	// EI0012 names the remote rank; its causes include the peer process
	// exiting (HCCL docs, EI0012): a consequence until the first failing
	// rank is ruled out.
	{Code: "EI0012", Stage: parse.StageExecution, Title: "Execution_Error_SDMA",
		Remedy: "SDMA copy task exception. Most often the remote rank it names exited or failed first: find the first failing rank " +
			"of the job; otherwise a page fault in the copy or, on A3, an HCCS link fault."},
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
	{Code: "EI0013", Stage: parse.StageExecution, Title: "Execution_Error_ROCE_CQE", Repeat: repeatCQE,
		Fingerprint: []string{"[ROCE CQE ERROR]", "cqe error status["}},
	{Code: "EI0013", Stage: parse.StageExecution, Title: "Execution_Error_ROCE_CQE", Repeat: repeatCQE,
		Fingerprint: []string{"find cqe error, localIP["},
		Remedy: "An error CQE on a RoCE connection. Most often the peer process exited first (find the first failing rank); " +
			"status 12 is a retransmission timeout: check the parameter-plane network between the two devices, HCCL_RDMA_TIMEOUT and HCCL_RDMA_RETRY_CNT."},
	{Code: "EI0014", Stage: parse.StageInit, Title: "Config_Error_Ranktable",
		Fingerprint: []string{"[InitGroupStage][RanktableCheck]"},
		Remedy: "The ranktable or cluster information failed its checks; the message names the value, the variable and what was " +
			"expected. Variable IP (\"the IP address in the ranktable is inconsistent with the IP address of the network adapter\", " +
			"HCCP_EINVALIDIPS): the device IP in the ranktable differs from the NIC's (`hccn_tool -i <phy> -ip -g`); fix the ranktable " +
			"or the NIC address."},
	{Code: "EI0015", Stage: parse.StageInit, Title: "Communication_Error_Ranktable_Detect",
		Fingerprint: []string{"topo exchange", "get socket timeout"},
		Remedy:      "Ranks did not reach the root during cluster-information negotiation; check that every rank started and can reach the root's host NIC."},
	{Code: "EI0016", Stage: parse.StageInit, Title: "Config_Error"},
	{Code: "EI0017", Stage: parse.StageInit, Title: "Config_Error_Ranktable"},
	{Code: "EI0018", Stage: parse.StageExecution, Title: "Execution_Error_UB_CQE"},
	// socket type[2] is the host NIC (cluster negotiation), EI0019; types 0
	// and 1 are the NPU NIC (parameter plane, port 16666), EI0020 (HCOMM
	// reports EI0019 for HOST_NIC_TYPE, EI0020 otherwise).
	{Code: "EI0019", Stage: parse.StageInit, Title: "Communication_Error_Bind_IP_Port",
		Fingerprint: []string{"socket type[2]", "Please check the port status"},
		Remedy:      "The host NIC port is already bound: another process uses it; set HCCL_HOST_SOCKET_PORT_RANGE or HCCL_IF_BASE_PORT."},
	{Code: "EI0020", Stage: parse.StageLinkSetup, Title: "Communication_Error_Bind_IP_Port",
		Fingerprint: []string{"socket type[0]", "Please check the port status"},
		Remedy:      "The NPU NIC port (16666) is already bound: several processes share a device; set HCCL_NPU_SOCKET_PORT_RANGE=auto."},
	{Code: "EI0020", Stage: parse.StageLinkSetup, Title: "Communication_Error_Bind_IP_Port",
		Fingerprint: []string{"socket type[1]", "Please check the port status"}},
	{Code: "EI9999", Stage: parse.StageUnknown, Title: "Inner_Error"},
	{Code: "EJ0001", Stage: parse.StageInit, Title: "HCCP_Process_Initialization_Failure",
		Remedy: "HCCP (the NPU-side network process) failed to start for this device. Most often the device is still held by a " +
			"previous process that has not exited (`npu-smi info` lists it; ascend_npu_process_memory_bytes): stop it and wait until " +
			"its memory is freed; otherwise check the driver (`npu-smi info`, dmesg) and reset the chip."},
	// "The network port is down": the RoCE port link setup needs.
	{Code: "EJ0002", Stage: parse.StageLinkSetup, Title: "Environment_Error",
		Remedy: "The NPU's RoCE network port is down, so link setup cannot reach its peers: check `hccn_tool -i <phy> -link -g`, the optical module and the switch port (RoCELinkDown)."},
	// EJ0003: HCCP could not bind its port, already bound by another
	// process (vllm-ascend #405): HCCLPortBindFailed.
	{Code: "EJ0003", Stage: parse.StageInit, Title: "Communication_Error_Bind_IP_Port",
		Remedy: "HCCP could not bind the IP and port: another process (often a previous run that has not exited) holds them; stop it or set HCCL_NPU_SOCKET_PORT_RANGE=auto."},
	{Code: "EJ0004", Stage: parse.StageInit, Title: "Invalid_Argument_IP_Address"},
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
	{Code: "EL0004", Stage: parse.StageInit, Title: "Memory_Allocation_Failure",
		Fingerprint: []string{"[DeviceMem][Alloc]rt_malloc error"},
		Remedy: "NPU memory ran out while HCCL allocated device memory, usually its buffers (2 × HCCL_BUFFSIZE + 1 MiB per communicator): " +
			"lower HCCL_BUFFSIZE or the number of communicators, or free memory."},
}

// codeInfo is the per-code view of the catalog.
type codeInfo struct {
	Stage, Title, Remedy string
}

// catalogIndex is built once from Catalog.
type catalogIndex struct {
	codes  map[string]codeInfo
	order  []string // codes in catalog order
	prints []fingerprint
	// resources are the resource label values of each code's rows, in
	// catalog order: the series that start at 0.
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

func buildCatalog(rows []Fault) *catalogIndex {
	ix := &catalogIndex{codes: map[string]codeInfo{}, resources: map[string][]string{}}
	for _, r := range rows {
		if !slices.Contains(ix.resources[r.Code], r.Resource) {
			ix.resources[r.Code] = append(ix.resources[r.Code], r.Resource)
		}
		if _, ok := ix.codes[r.Code]; !ok {
			ix.codes[r.Code] = codeInfo{Stage: r.Stage, Title: r.Title, Remedy: r.Remedy}
			ix.order = append(ix.order, r.Code)
		} else if r.Remedy != "" && ix.codes[r.Code].Remedy == "" {
			ci := ix.codes[r.Code]
			ci.Remedy = r.Remedy
			ix.codes[r.Code] = ci
		}
		if len(r.Fingerprint) > 0 {
			fp := fingerprint{code: r.Code, resource: r.Resource, incident: r.Incident, summary: r.Summary, repeat: r.Repeat}
			for _, s := range r.Fingerprint {
				fp.parts = append(fp.parts, []byte(s))
			}
			ix.prints = append(ix.prints, fp)
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
var defaultCatalog = buildCatalog(catalog)

// Catalog returns a copy of the fault table, for documentation and the
// offline diagnose report.
func Catalog() []Fault {
	out := make([]Fault, len(catalog))
	for i, f := range catalog {
		f.Fingerprint = append([]string(nil), f.Fingerprint...)
		out[i] = f
	}
	return out
}

// CodeInfo returns the stage, title and remedy of a catalog code.
func CodeInfo(code string) (stage, title, remedy string, ok bool) {
	ci, ok := defaultCatalog.codes[code]
	if !ok {
		return parse.StageUnknown, "", "", false
	}
	return ci.Stage, ci.Title, ci.Remedy, true
}
