package cannlog

import (
	"bytes"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/parse"
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
}

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
	{Code: "EI0002", Stage: parse.StageExecution, Title: "Communication_Error_Timeout",
		Fingerprint: []string{"Task run failed", "taskType[Notify Wait]"},
		Remedy:      "Notify wait timed out (HCCL_EXEC_TIMEOUT): a peer rank is stuck or gone; find the first failing rank."},
	{Code: "EI0002", Stage: parse.StageExecution, Title: "Communication_Error_Timeout",
		Fingerprint: []string{"[TaskExecStage][Timeout]", "Task run failed"}},
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
	// EI0007 "Failed to allocate resource[qp]" is QP exhaustion at link
	// setup; "resource[DeviceMemory] with info [size:N]" is an HCCL device
	// allocation that failed in builds before the exact-size EI0011 (Jan
	// 2026). A QP-create failure without "out of memory" (or, on A5, without
	// ROCE_ENOMEM_RET) counts here, not as EI0011.
	// HCOMM-init adapter_rts.cc reports a failed aclrtMalloc as EI0007
	// resource[DeviceMemory].
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error",
		Fingerprint: []string{"[Malloc][Mem]errNo[", "aclrtMalloc failed"},
		Remedy: "HCCL could not allocate a resource at link setup. resource[qp]: the QPs are exhausted (too many connections × " +
			"HCCL_RDMA_QPS_PER_CONNECTION, or an old driver): fewer QPs per connection, fewer RoCE links, free memory, update the driver. " +
			"resource[DeviceMemory] with a size: an HCCL device allocation; a size of about 2 × HCCL_BUFFSIZE is its cclBuffer (lower HCCL_BUFFSIZE)."},
	{Code: "EI0008", Stage: parse.StageLinkSetup, Title: "Package_Error_Incorrect_HCCL_Version",
		Fingerprint: []string{"[InitChannelStage][VersionConflict]"},
		Remedy:      "CANN/HCCL versions differ between ranks; install the same version on every node."},
	{Code: "EI0009", Stage: parse.StageLinkSetup, Title: "Communication_Error_Initialize_Transport",
		Remedy: "Transport initialisation failed between devices."},
	{Code: "EI0010", Stage: parse.StageLinkSetup, Title: "Communication_Error_P2P",
		Remedy: "P2P between devices failed; set HCCL_INTRA_ROCE_ENABLE=1 when devices are not on the same plane."},
	// EI0011 prints the size of the failed allocation. The range forms
	// ("[size: [0.25MB, 3MB], …]", "262144~3145728") are a QP at link setup
	// (plog "ra qp create fail, reason: out of memory"); from Jan 2026 any
	// HCCL device allocation that fails with ACL_ERROR_RT_MEMORY_ALLOCATION
	// is EI0011 with the exact size (plog "[Malloc][Mem] rtMalloc failed,
	// Reason: out of memory"): a size of 2 × buffer + 1 MiB is the cclBuffer.
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"ra qp create fail", "out of memory"},
		Remedy: "Not enough free NPU memory for an HCCL allocation at link setup. A size of 0.25–3 MB (or the range form) is a QP: " +
			"free memory (batch size, other processes), lower HCCL_RDMA_QPS_PER_CONNECTION (recommended 1..8; N > 1 makes N + 1 QPs per connection), " +
			"use algorithms with fewer RoCE links. A size of about 2 × HCCL_BUFFSIZE + 1 MiB is the cclBuffer: lower HCCL_BUFFSIZE or the number of " +
			"communicators — except for MoE/MC2 operators that require a large HCCL_BUFFSIZE: free memory there."},
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"[Malloc][Mem] rtMalloc failed", "out of memory"}},
	// A5 (ascend950 orion_adapter_hccp.cc) reports EI0011 when RaQpCreate
	// returns ROCE_ENOMEM_RET (328100), and its "[Create][RaQp] … ra qp create
	// fail" line has no "out of memory" text: the return code tells.
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"ra qp create fail", "ret[328100]"}},
	// Any other QP-create failure (after the EI0011 rows: first match wins).
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error",
		Fingerprint: []string{"ra qp create fail"}},
	{Code: "EI0012", Stage: parse.StageExecution, Title: "Execution_Error_SDMA",
		Remedy: "SDMA copy task exception (page fault or HCCS link)."},
	{Code: "EI0013", Stage: parse.StageExecution, Title: "Execution_Error_ROCE_CQE",
		Fingerprint: []string{"cqe error status[12]"},
		Remedy:      "RoCE retransmission timed out (error CQE 12): check the parameter-plane network, HCCL_RDMA_TIMEOUT and HCCL_RDMA_RETRY_CNT."},
	{Code: "EI0014", Stage: parse.StageInit, Title: "Config_Error_Ranktable",
		Fingerprint: []string{"[InitGroupStage][RanktableCheck]"},
		Remedy:      "The ranktable or cluster information failed its checks."},
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
	{Code: "EJ0001", Stage: parse.StageInit, Title: "HCCP_Process_Initialization_Failure"},
	// "The network port is down": the RoCE port link setup needs.
	{Code: "EJ0002", Stage: parse.StageLinkSetup, Title: "Environment_Error",
		Remedy: "The NPU's RoCE network port is down, so link setup cannot reach its peers: check `hccn_tool -i <phy> -link -g`, the optical module and the switch port (RoCELinkDown)."},
	{Code: "EJ0003", Stage: parse.StageInit, Title: "Communication_Error_Bind_IP_Port"},
	{Code: "EJ0004", Stage: parse.StageInit, Title: "Invalid_Argument_IP_Address"},
	// The driver reports an out-of-memory while HCCL allocates its cclBuffer
	// (2 × HCCL_BUFFSIZE + 1 MiB per communicator) as EL0004 in builds before
	// the exact-size EI0011. HCCL's own plog line then is mem_device.cc's
	// "[DeviceMem][Alloc]rt_malloc error, … size[N Byte]"; CCLBufferManager's
	// "Create ccl buffer size[…] fail" line cannot print on an out-of-memory
	// (it follows a successful allocation check), so it is not a fingerprint.
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
}

type fingerprint struct {
	code  string
	parts [][]byte
}

func buildCatalog(rows []Fault) *catalogIndex {
	ix := &catalogIndex{codes: map[string]codeInfo{}}
	for _, r := range rows {
		if _, ok := ix.codes[r.Code]; !ok {
			ix.codes[r.Code] = codeInfo{Stage: r.Stage, Title: r.Title, Remedy: r.Remedy}
			ix.order = append(ix.order, r.Code)
		} else if r.Remedy != "" && ix.codes[r.Code].Remedy == "" {
			ci := ix.codes[r.Code]
			ci.Remedy = r.Remedy
			ix.codes[r.Code] = ci
		}
		if len(r.Fingerprint) > 0 {
			fp := fingerprint{code: r.Code}
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
next:
	for _, fp := range ix.prints {
		for _, p := range fp.parts {
			if !bytes.Contains(msg, p) {
				continue next
			}
		}
		return fp.code, true
	}
	return "", false
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
