package nodegen

import (
	"fmt"
	"io"
	"time"
)

// The screen reports a generated node's screen log holds, in the shapes
// CANN's error manager prints (docs/cannlog.md):
//
//   - EI0001-EI0020: the new style, `[PID: n] <time> <errTitle>(<code>):
//     <ErrMessage>`, the message being HCOMM's template
//     (src/legacy/ascend910/common/error_code/error_code.cc:16-232, the
//     hcomm_g_msg JSON at 8958adbf) with its %s filled; EI0011's is the
//     captured one (shared sample train-ei0011.log).
//   - EJ0001-EJ0004: the same style, with the HCCP messages of the older
//     error-code JSON (HCOMM's has no EJ code).
//   - EI9999: the error manager's inner-error pair, `<code>: Inner Error!`
//     then `<code>: [PID: n] <time> <detail>`, as captured for EZ9999
//     (InternLM/lmdeploy#2855), with the detail MindCluster's knowledge
//     graph matches EI9999 by ("connected p2p timeout").
//   - EL0004: the captured HCCL cclBuffer report (vllm-ascend#3141, shared
//     sample train-el0004-cclbuffer-oom.log): the runtime's code, counted
//     as HCCL's because its traceback names HCCL's allocation.
//   - The made-up EZ1xxx codes past the catalog (many distinct codes, for
//     the label cap): the older style `<code>: [PID: n] <time> <message>`
//     with the operator message of the EZ9999 capture.
var reportMessages = map[string]string{
	"EI0001": "Value 0 for environment variable HCCL_BUFFSIZE is invalid. Expected value: an integer greater than or equal to 1.",
	"EI0002": "A timeout occurs when the Notify register waits for execution. Waiting peer rank: 4; task information: streamID:[90], taskID[686], taskType[Notify Wait]; communication operator information: HcomAllReduce; communicator: hccl_world_group.",
	"EI0003": "Failed to verify parameters of operator HcomBroadcast (operator name). Value -1 for parameter root is invalid. The expected value is [0, 63].",
	"EI0004": "Failed to parse the ranktable file /etc/hccl/rank_table.json. Reason: the file is not valid JSON.",
	"EI0005": "The arguments for collective communication are inconsistent between ranks, operator HcomAllReduce, group hccl_world_group, parameter count, local rank 16512, remote rank 8320.",
	"EI0006": "Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck",
	"EI0007": "Failed to allocate resource qp with info send_cq_depth:32768. Reason: Resources are exhausted.",
	"EI0008": "The ops (cann-hccl) versions are inconsistent. The local version is 9.2.0, while the remote version is 9.1.0.",
	"EI0009": "Device 3 transport init error. Reason: the remote device did not answer.",
	"EI0010": "P2P communication failed. Reason: Device ID 0 in module 0 and device ID 9 in module 1 are not on the same plane.",
	"EI0011": "Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.",
	"EI0012": "SDMA memory copy task exception occurred. Remote rank: 5. Base information: streamID:[12], taskID[301]. Task information: taskType[SDMA]. Communicator information: hccl_world_group.",
	"EI0013": "An error CQE occurred during operator execution. Local information: server 10.0.0.1, device ID 2, device IP 192.168.10.2. Peer information: server 10.0.0.2, device ID 2, device IP 192.168.10.12.",
	"EI0014": "Value 0x3000000 for ranktable variable superDeviceId is invalid. Expected value: unique in superPod super_pod_id_0.",
	"EI0015": "Failed to collect cluster information of the communicator based on rootInfo detection. Reason: No rank in the communicator can connect to the root node within the timeout period. List of unconnected ranks: \"[1,]\".",
	"EI0016": "Value Disable for config \"tls\" is invalid. Expected value: \"All ranks are consistent.\".",
	"EI0017": "Config group_count is missing in the ranktable file.",
	"EI0018": "An error CQE occurred during operator execution. Local information: server 10.0.0.1, device ID 6, device IP 192.168.10.6. Peer information: server 10.0.0.3, device ID 6, device IP 192.168.10.26.",
	"EI0019": "Failed to enable listening for the host network adapter socket. Reason: The IP address 192.168.1.100 and port 50001 have already been bound.",
	"EI0020": "Failed to enable listening for the NPU network adapter socket. Reason: The IP address 192.1.3.198 add port 16666 have already been bound.",
	"EI9999": "connected p2p timeout",
	"EJ0001": "Failed to initialize the HCCP process. Reason: Maybe the last training process is running.",
	"EJ0002": "The network port is down.Suggest: check the optical module and the cable of the port",
	"EJ0003": "Failed to bind the IP port. Reason: the port 16666 is in use",
	"EJ0004": "Check ip fail. Reason: the device IP is not configured",
}

// writeReport writes one report of fault f by pid at t.
func writeReport(w io.Writer, f Fault, pid int, t time.Time) {
	at := plogTime(t)
	switch {
	case f.Code == "EL0004":
		fmt.Fprintf(w, "EL0004: [PID: %d] %s Failed to allocate memory.\n", pid, at)
		fmt.Fprint(w, "        Possible Cause: Available memory is insufficient.\n")
		fmt.Fprint(w, "        TraceBack (most recent call last):\n")
		fmt.Fprint(w, "        Failed to allocate resource[DeviceMemory] with info [size:2147483648]. Reason: Memory resources are exhausted.\n")
		fmt.Fprint(w, "        Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module. ret = 2\n")
	case f.Code == "EI9999":
		fmt.Fprintf(w, "EI9999: Inner Error!\n")
		fmt.Fprintf(w, "EI9999: [PID: %d] %s %s\n", pid, at, reportMessages[f.Code])
	case f.Catalog:
		fmt.Fprintf(w, "[PID: %d] %s %s(%s): %s\n", pid, at, f.Title, f.Code, reportMessages[f.Code])
	default:
		fmt.Fprintf(w, "%s: [PID: %d] %s Op MatmulAllReduce has 1 uncontiguous input.\n", f.Code, pid, at)
	}
}
