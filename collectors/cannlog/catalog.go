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
	{Code: "EI0007", Stage: parse.StageInit, Title: "Resource_Error",
		Remedy: "HCCL could not allocate a resource; see the resource named in the report."},
	{Code: "EI0008", Stage: parse.StageLinkSetup, Title: "Package_Error_Incorrect_HCCL_Version",
		Fingerprint: []string{"[InitChannelStage][VersionConflict]"},
		Remedy:      "CANN/HCCL versions differ between ranks; install the same version on every node."},
	{Code: "EI0009", Stage: parse.StageLinkSetup, Title: "Communication_Error_Initialize_Transport",
		Remedy: "Transport initialisation failed between devices."},
	{Code: "EI0010", Stage: parse.StageLinkSetup, Title: "Communication_Error_P2P",
		Remedy: "P2P between devices failed; set HCCL_INTRA_ROCE_ENABLE=1 when devices are not on the same plane."},
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory",
		Fingerprint: []string{"ra qp create fail", "out of memory"},
		Remedy: "Not enough free NPU memory to create RoCE QPs at link setup: free memory (batch size, other processes), " +
			"lower HCCL_RDMA_QPS_PER_CONNECTION (recommended 1..8), use algorithms with fewer RoCE links."},
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
	{Code: "EJ0002", Stage: parse.StageUnknown, Title: "Environment_Error"},
	{Code: "EJ0003", Stage: parse.StageInit, Title: "Communication_Error_Bind_IP_Port"},
	{Code: "EJ0004", Stage: parse.StageInit, Title: "Invalid_Argument_IP_Address"},
	// The driver reports an out-of-memory while HCCL allocates its cclBuffer
	// (2 × HCCL_BUFFSIZE per communicator) as EL0004, not EI0011; HCCL's own
	// plog line is CCLBufferManager's "Create ccl buffer size[…] fail".
	{Code: "EL0004", Stage: parse.StageInit, Title: "Memory_Allocation_Failure",
		Fingerprint: []string{"Create ccl buffer size[", "] fail"},
		Remedy: "NPU memory ran out while HCCL allocated its buffers (2 × HCCL_BUFFSIZE MB per communicator): " +
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
