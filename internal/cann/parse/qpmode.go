package parse

import "bytes"

// QP mode lines: what HCCL prints when it decides how many QPs a RoCE
// connection gets (HCOMM-HEAD, RUN_INFO, run/plog):
//
//	HCCL_RDMA_QPS_PER_CONNECTION is set to [%u] but it is not effective in offline mode.
//	HCCL_RDMA_QPS_PER_CONNECTION is set to [%u] but current devType[%d] does not support multi-QP.
//
// (transport_ibverbs.cc:599/:602 GetQpsPerConnection, also
// transport_direct_npu.cc:459/:462; the link then gets 1 QP), and
//
//	[MultiQp][MulQpInfo] Init Success,Device PhyId[%d] MultiQp config from type[%s]
//
// (multi_qpInfo_manager.cc:109; %s is DEV_CFG (hccn_tool -s multi_qp),
// DEV_NSLB, ENV_HCCL_RDMA_QP_PORT_CONFIG_PATH or
// ENV_HCCL_RDMA_QPS_PER_CONNECTION: the source multi-QP came from).

var (
	markQPSSetTo  = []byte("HCCL_RDMA_QPS_PER_CONNECTION is set to [")
	markBut       = []byte("] but ")
	markOffline   = []byte("] but it is not effective in offline mode")
	markNoMultiQP = []byte("does not support multi-QP")
	tagMulQpInfo  = []byte("[MultiQp][MulQpInfo] Init Success")
)

// QPMode is what one QP mode line says.
type QPMode struct {
	// Offline: the process runs in graph (offline) mode, where every RoCE
	// link gets one QP whatever HCCL_RDMA_QPS_PER_CONNECTION says.
	Offline bool
	// NoMultiQP: the device type does not support multi-QP; 1 QP per link.
	NoMultiQP bool
	// MultiQPFrom is the source of an enabled multi-QP configuration
	// (MultiQPFrom* values, or the printed text when HCCL adds one).
	MultiQPFrom string
	// DevicePhyID is the device the multi-QP line names; -1 otherwise.
	DevicePhyID int
}

// Sources of a multi-QP configuration, in HCCL's precedence order.
const (
	MultiQPFromDevCfg   = "DEV_CFG"
	MultiQPFromNSLB     = "DEV_NSLB"
	MultiQPFromPortPath = "ENV_HCCL_RDMA_QP_PORT_CONFIG_PATH"
	MultiQPFromEnv      = "ENV_HCCL_RDMA_QPS_PER_CONNECTION"
)

// maxMultiQPFrom bounds the stored source text (it becomes a label value).
const maxMultiQPFrom = 48

// ParseQPMode reads a QP mode line; ok is false for any other message.
func ParseQPMode(msg []byte) (QPMode, bool) {
	m := QPMode{DevicePhyID: -1}
	if bytes.HasPrefix(msg, markQPSSetTo) {
		if !bytes.Contains(msg, markBut) {
			return QPMode{}, false // what Classify requires too
		}
		switch {
		case bytes.Contains(msg, markOffline):
			m.Offline = true
		case bytes.Contains(msg, markNoMultiQP):
			m.NoMultiQP = true
		default:
			return QPMode{}, false
		}
		return m, true
	}
	if !bytes.HasPrefix(msg, tagMulQpInfo) {
		return QPMode{}, false
	}
	from, ok := BracketField(msg, "MultiQp config from type")
	if !ok || len(from) == 0 || len(from) > maxMultiQPFrom || !printableASCII(from) {
		return QPMode{}, false
	}
	m.MultiQPFrom = string(from)
	if v, ok := BracketInt(msg, "PhyId"); ok {
		m.DevicePhyID = v
	}
	return m, true
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
