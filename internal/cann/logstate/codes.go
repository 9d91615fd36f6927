package logstate

import (
	"encoding/json"
	"fmt"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Role says whose failure a fault code reports. diagnose groups incidents
// by it (diagnose/analyse/roles.go reads it from here) and the mixin's
// inhibitions follow it (mixin/lib/faultcodes.json is generated from
// FaultTableJSON; alerts/faulttable_test.go checks that the rules and the
// Alertmanager examples agree with it).
type Role string

const (
	// RoleOwn: a rank reports a failure of its own (its memory, port,
	// settings, ranktable). It can start an incident, and it starts
	// HCCLJobFailed, which holds back the job's consequences.
	RoleOwn Role = "local"
	// RoleWaiting: a rank reports that a peer did not answer in time (a
	// timer ran out). Always a consequence: held back while its job
	// failed, never a job's failure itself.
	RoleWaiting Role = "waiting"
	// RoleEither: raised both by a rank that fails on its own and by the
	// peers of a rank that failed or exited (a transport that cannot be set
	// up, an error CQE, an SDMA exception, an inner error). diagnose takes
	// it as a consequence when an earlier failure explains it, as a root
	// otherwise; Alertmanager cannot order events in time, so it holds it
	// back while the job's own-fault root is recent and never lets it
	// start HCCLJobFailed (one alone may be the only trace of a peer that
	// crashed without an HCCL code).
	RoleEither Role = "either"
)

// Timer names the HCCL timer whose expiry produces a waiting or either code:
// how long after a root such a code can still be its consequence
// (diagnose/analyse/roles.go turns it into seconds).
type Timer string

const (
	TimerNone    Timer = ""
	TimerConnect Timer = "connect" // HCCL_CONNECT_TIMEOUT + 20 s: link setup
	TimerExec    Timer = "exec"    // HCCL_EXEC_TIMEOUT: collectives
	TimerRDMA    Timer = "rdma"    // HCCL_RDMA_TIMEOUT × HCCL_RDMA_RETRY_CNT, about 30 s
)

// Audience is who acts on a code when it is the root cause, as the alerting
// policy's audience label names them.
type Audience string

const (
	AudienceJobOwner Audience = "job-owner"
	AudienceInfra    Audience = "infra"
)

// Code is one row of the fault-code table: what a code is, whose failure it
// reports and who acts on it. Its plog wordings are the catalog's rows of
// the same code (catalog.go).
type Code struct {
	Code  string
	Stage string // parse.StageInit, StageLinkSetup, StageExecution or StageUnknown
	Title string // errTitle at the time of writing; titles change between CANN versions
	Role  Role
	// Timer bounds how late a waiting or either code can follow its root;
	// none for RoleOwn.
	Timer    Timer
	Audience Audience
	// Why says, for a waiting code, what the reporting rank saw of its
	// peers (diagnose prints it).
	Why    string
	Remedy string
}

// codes is the fault-code table: one row per code HCCL (EI), HCCP (EJ) or
// the runtime on HCCL's behalf (EL0004) reports. Codes from the HCCL
// fault-diagnosis docs and HCOMM's error JSON (src/legacy/ascend910/common/
// error_code/error_code.cc); roles from where HCOMM raises each code. Adding
// a code: a row here, its wordings in catalog.go, then `make mixin`
// (CONTRIBUTING.md, "Add a fault code").
var codes = []Code{
	{Code: "EI0001", Stage: parse.StageInit, Title: "Config_Error_Invalid_Environment_Variable", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "An HCCL environment variable has an invalid value; fix it (the plog line names it and the allowed range)."},
	// Raised for a notify wait that timed out (task_exception_handler.cc:
	// TASK_NOTIFY_WAIT): this rank waited for a peer.
	{Code: "EI0002", Stage: parse.StageExecution, Title: "Communication_Error_Timeout", Role: RoleWaiting, Timer: TimerExec, Audience: AudienceJobOwner,
		Why:    "a peer did not answer a collective's notify in time",
		Remedy: "Notify wait timed out (HCCL_EXEC_TIMEOUT): a peer rank is stuck or gone; find the first failing rank."},
	{Code: "EI0003", Stage: parse.StageExecution, Title: "Invalid_Argument_Collective_Communication_Operator", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "A collective operator was called with an invalid argument."},
	{Code: "EI0004", Stage: parse.StageInit, Title: "File_Operation_Error_Parse", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "The ranktable file cannot be read or parsed; check its path and JSON."},
	// Ranks out of step report inconsistent arguments when a peer
	// restarted or failed mid-sequence.
	{Code: "EI0005", Stage: parse.StageLinkSetup, Title: "Invalid_Argument", Role: RoleWaiting, Timer: TimerConnect, Audience: AudienceJobOwner,
		Why:    "its peers called a collective with other arguments, as when a peer restarted or failed mid-sequence",
		Remedy: "Ranks called collectives with inconsistent arguments; compare the operator, count and data type across ranks."},
	{Code: "EI0006", Stage: parse.StageLinkSetup, Title: "Communication_Error_Get_Socket", Role: RoleWaiting, Timer: TimerConnect, Audience: AudienceJobOwner,
		Why:    "a peer did not connect at link setup in time",
		Remedy: "Link setup socket timed out (HCCL_CONNECT_TIMEOUT + 20 s): a peer did not reach link setup in time; check the peer's logs and network."},
	{Code: "EI0007", Stage: parse.StageLinkSetup, Title: "Resource_Error", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "HCCL could not allocate a resource at link setup; the resource label (resource[…] in the screen log) says which. " +
			"qp: a queue-pair create failed for a reason other than out-of-memory — often an old NPU driver/firmware (HDK) for the CANN " +
			"version (upgrade it; vllm-ascend #9005 had > 20 GB HBM free), or the device's QPs used up: fewer QPs per connection " +
			"(HCCL_RDMA_QPS_PER_CONNECTION), fewer RoCE links, and check what else holds QPs on the chip (`hccn_tool -i <phy> -qp_info -g`: " +
			"Mooncake, HIXL, leftover processes). device_memory with a size: an HCCL device allocation; a size of about 2 × HCCL_BUFFSIZE " +
			"is its cclBuffer (lower HCCL_BUFFSIZE)."},
	{Code: "EI0008", Stage: parse.StageLinkSetup, Title: "Package_Error_Incorrect_HCCL_Version", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "CANN/HCCL versions differ between ranks; install the same version on every node."},
	// Either: "The network port is down" is the rank's own RoCE port
	// (infrastructure's to fix, hence the audience and the cluster-wide
	// count of config infraCodes); "Create Dest error" and a QP that never
	// gets ready are the peer named in createLink para failing or gone
	// (vllm-ascend #3162).
	{Code: "EI0009", Stage: parse.StageLinkSetup, Title: "Communication_Error_Initialize_Transport", Role: RoleEither, Timer: TimerConnect, Audience: AudienceInfra,
		Remedy: "Transport initialisation failed. Reason \"The network port is down\": the chip's RoCE port is down (RoCELinkDown); " +
			"HCOMM's own steps: 1. is the optical module in place (`hccn_tool -i <phy> -optical -g | grep present`), 2. is the NIC IP " +
			"configured (`hccn_tool -i <phy> -ip -g`), 3. is the switch connected (`hccn_tool -i <phy> -lldp -g`). Other reasons " +
			"(Create Dest error, QP status timeout): the peer named in createLink para failed or is unreachable; check its logs and " +
			"the link between the two (TLS switch and speed must match on both ends)."},
	{Code: "EI0010", Stage: parse.StageLinkSetup, Title: "Communication_Error_P2P", Role: RoleEither, Timer: TimerConnect, Audience: AudienceJobOwner,
		Remedy: "P2P between devices failed; set HCCL_INTRA_ROCE_ENABLE=1 when devices are not on the same plane."},
	{Code: "EI0011", Stage: parse.StageLinkSetup, Title: "Resource_Error_Insufficient_Device_Memory", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "An HCCL device-memory allocation failed; the report prints its size. A size of 0.25–3 MB (or the range form) is a QP at link setup: " +
			"free memory (batch size, other processes), lower HCCL_RDMA_QPS_PER_CONNECTION (recommended 1..8; N > 1 makes N + 1 QPs per connection), " +
			"use algorithms with fewer RoCE links. A size of about 2 × HCCL_BUFFSIZE + 1 MiB is the cclBuffer: lower HCCL_BUFFSIZE or the number of " +
			"communicators — except for MoE/MC2 operators that require a large HCCL_BUFFSIZE: free memory there."},
	// Either (settled from HCOMM 8958adbf): TaskExceptionHandler raises
	// EI0012 on the rank whose SDMA or inline-reduce task raised a task
	// exception (task_exception_handler.cc:868, :1326, :1386; once per
	// process), naming the remote rank. HCOMM's own causes
	// (error_code.cc:143) are a network exception during the copy, the
	// peer process exiting (its memory goes away under the copy), or this
	// rank's own buffers (not allocated, too small, freed early). Two of
	// three are a peer's, one the rank's own: neither "own" (diagnose
	// before) nor "waiting" (the inhibitions before) alone. The copy can
	// run any time before the collective's notify wait would time out:
	// the exec timer.
	{Code: "EI0012", Stage: parse.StageExecution, Title: "Execution_Error_SDMA", Role: RoleEither, Timer: TimerExec, Audience: AudienceJobOwner,
		Remedy: "SDMA copy task exception. Most often the remote rank it names exited or failed first: find the first failing rank " +
			"of the job; otherwise a page fault in the copy or, on A3, an HCCS link fault."},
	// Either (HCOMM 8958adbf): heartbeat.cc:2020 (CheckErrorCqe) raises
	// EI0013 for every error CQE recorded for a communicator, naming the
	// local and the remote device. error_code.cc:154 gives two causes: the
	// network between the two devices (a flapping port: infrastructure's)
	// or the peer process exiting first, after which every rank still
	// sending to it gets error CQEs.
	{Code: "EI0013", Stage: parse.StageExecution, Title: "Execution_Error_ROCE_CQE", Role: RoleEither, Timer: TimerRDMA, Audience: AudienceInfra,
		Remedy: "An error CQE on a RoCE connection. Most often the peer process exited first (find the first failing rank); " +
			"status 12 is a retransmission timeout: check the parameter-plane network between the two devices, HCCL_RDMA_TIMEOUT and HCCL_RDMA_RETRY_CNT."},
	{Code: "EI0014", Stage: parse.StageInit, Title: "Config_Error_Ranktable", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "The ranktable or cluster information failed its checks; the message names the value, the variable and what was " +
			"expected. Variable IP (\"the IP address in the ranktable is inconsistent with the IP address of the network adapter\", " +
			"HCCP_EINVALIDIPS): the device IP in the ranktable differs from the NIC's (`hccn_tool -i <phy> -ip -g`); fix the ranktable " +
			"or the NIC address."},
	{Code: "EI0015", Stage: parse.StageInit, Title: "Communication_Error_Ranktable_Detect", Role: RoleWaiting, Timer: TimerConnect, Audience: AudienceJobOwner,
		Why:    "ranks did not reach the root of the communicator's negotiation in time",
		Remedy: "Ranks did not reach the root during cluster-information negotiation; check that every rank started and can reach the root's host NIC."},
	{Code: "EI0016", Stage: parse.StageInit, Title: "Config_Error", Role: RoleOwn, Audience: AudienceJobOwner},
	{Code: "EI0017", Stage: parse.StageInit, Title: "Config_Error_Ranktable", Role: RoleOwn, Audience: AudienceJobOwner},
	// The UB (A5) counterpart of EI0013.
	{Code: "EI0018", Stage: parse.StageExecution, Title: "Execution_Error_UB_CQE", Role: RoleEither, Timer: TimerRDMA, Audience: AudienceInfra},
	{Code: "EI0019", Stage: parse.StageInit, Title: "Communication_Error_Bind_IP_Port", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "The host NIC port is already bound: another process uses it; set HCCL_HOST_SOCKET_PORT_RANGE or HCCL_IF_BASE_PORT."},
	{Code: "EI0020", Stage: parse.StageLinkSetup, Title: "Communication_Error_Bind_IP_Port", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "The NPU NIC port (16666) is already bound: several processes share a device; set HCCL_NPU_SOCKET_PORT_RANGE=auto."},
	// Either (HCOMM 8958adbf): EI9999 is HCCL_RPT_CODE
	// (adapter_error_manager_pub.h:18), which RptInnerErrPrt reports
	// (adapter_error_manager_pub_extend.cc:44) for every RPT_CALL_ERR /
	// RPT_INNER_ERR_PRT: a socket listen or batch connect that timed out
	// waiting for peers (adapter_hccp.cc:1323, :1475, :1487), a P2P connect
	// timeout (p2p_mgmt.cc:330), a remote-op NIC connect failure
	// (comm_remote_access.cc:562) — a peer's — and the rank's own RDMA init
	// or host-NIC listen failing (network_manager.cc:216, :339, :2103) or
	// an IPC memory import (adapter_rts.cc:1344). Mostly link setup: the
	// connect timer.
	{Code: "EI9999", Stage: parse.StageUnknown, Title: "Inner_Error", Role: RoleEither, Timer: TimerConnect, Audience: AudienceJobOwner},
	{Code: "EJ0001", Stage: parse.StageInit, Title: "HCCP_Process_Initialization_Failure", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "HCCP (the NPU-side network process) failed to start for this device. Most often the device is still held by a " +
			"previous process that has not exited (`npu-smi info` lists it; ascend_npu_process_memory_bytes): stop it and wait until " +
			"its memory is freed; otherwise check the driver (`npu-smi info`, dmesg) and reset the chip."},
	// "The network port is down": the RoCE port link setup needs.
	{Code: "EJ0002", Stage: parse.StageLinkSetup, Title: "Environment_Error", Role: RoleOwn, Audience: AudienceInfra,
		Remedy: "The NPU's RoCE network port is down, so link setup cannot reach its peers: check `hccn_tool -i <phy> -link -g`, the optical module and the switch port (RoCELinkDown)."},
	// EJ0003: HCCP could not bind its port, already bound by another
	// process (vllm-ascend #405): HCCLPortBindFailed.
	{Code: "EJ0003", Stage: parse.StageInit, Title: "Communication_Error_Bind_IP_Port", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "HCCP could not bind the IP and port: another process (often a previous run that has not exited) holds them; stop it or set HCCL_NPU_SOCKET_PORT_RANGE=auto."},
	{Code: "EJ0004", Stage: parse.StageInit, Title: "Invalid_Argument_IP_Address", Role: RoleOwn, Audience: AudienceJobOwner},
	// EL0004 is counted as HCCL's only where HCCL allocated (catalog.go).
	{Code: "EL0004", Stage: parse.StageInit, Title: "Memory_Allocation_Failure", Role: RoleOwn, Audience: AudienceJobOwner,
		Remedy: "NPU memory ran out while HCCL allocated device memory, usually its buffers (2 × HCCL_BUFFSIZE + 1 MiB per communicator): " +
			"lower HCCL_BUFFSIZE or the number of communicators, or free memory."},
}

// Codes returns a copy of the fault-code table, in table order.
func Codes() []Code {
	return append([]Code(nil), codes...)
}

// CodeRow returns the table's row of code.
func CodeRow(code string) (Code, bool) {
	i, ok := defaultCatalog.rows[code]
	if !ok {
		return Code{}, false
	}
	return codes[i], true
}

// RoleOf is the role of code; a code outside the table is RoleEither with
// the connect timer (it may be either).
func RoleOf(code string) (Role, Timer) {
	if c, ok := CodeRow(code); ok {
		return c.Role, c.Timer
	}
	return RoleEither, TimerConnect
}

// faultTableJSON is the form of the table the mixin reads
// (mixin/lib/faultcodes.json): the columns the alerting policy derives its
// code lists from.
type faultTableJSON struct {
	Comment string          `json:"_comment"`
	Codes   []faultCodeJSON `json:"codes"`
}

type faultCodeJSON struct {
	Code     string   `json:"code"`
	Stage    string   `json:"stage"`
	Role     Role     `json:"role"`
	Audience Audience `json:"audience"`
	Title    string   `json:"title"`
}

// FaultTableJSON renders the table for the mixin; `make mixin` writes it to
// mixin/lib/faultcodes.json and mixin's tests check it is current.
func FaultTableJSON() ([]byte, error) {
	t := faultTableJSON{Comment: "Code generated by `make mixin` from internal/cann/logstate/codes.go. DO NOT EDIT: edit the table there."}
	for _, c := range codes {
		t.Codes = append(t.Codes, faultCodeJSON{Code: c.Code, Stage: c.Stage, Role: c.Role, Audience: c.Audience, Title: c.Title})
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("fault table: %w", err)
	}
	return append(b, '\n'), nil
}
