package parse

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// LineKind is the kind of an HCCL run-log message the state keeps.
type LineKind uint8

// Kinds of HCCL messages, whatever the era's wording.
const (
	KindNone LineKind = iota
	// KindSettings: effective HCCL settings (ParseHCCLEnv).
	KindSettings
	// KindCommunicator: a communicator created, with its rank count and,
	// in the newest era, its server count (ParseCommunicator).
	KindCommunicator
	// KindLocalRank: `[LocalRank Key Info]` of the communicator just
	// printed (ParseLocalRankKeyInfo).
	KindLocalRank
	// KindCommDestroy: `Entry-HcclCommDestroy` (CommDestroy).
	KindCommDestroy
	// KindCCLBuffer: `Create ccl buffer success … size[N]`, one line per
	// allocation (ParseCCLBuffer).
	KindCCLBuffer
	// KindCommConfig: `[Load] comm config of [name]: bufferSize[N]…`
	// (ParseCommConfig).
	KindCommConfig
	// KindTransport: `create hccl transport:communicator[tag]…`, one line
	// per RDMA QP or per HCCS/PCIe link (ParseTransport).
	KindTransport
	// KindListen: `[Start][Vnic|Nic]Listen on ip[…] … devPhyId[P]`: the
	// parameter-plane listener of the process's device, which names its
	// physical id in eras whose communicator lines do not (ListenDevice).
	KindListen
	// KindQPMode: how many QPs HCCL gives a RoCE link — one in graph
	// (offline) mode or on devices without multi-QP, and where an enabled
	// multi-QP configuration came from (ParseQPMode).
	KindQPMode
	// KindAIVBuffer: `[HCCL_TRACE][CreateCommAIVbuffer] OpbaseMode|OffloadMode`
	// (ParseAIVBuffer).
	KindAIVBuffer
	// KindCCLRelease: `[HCCL_TRACE][ReleaseCCLbuffer]Release …, size[N]`
	// (ParseCCLRelease).
	KindCCLRelease
	// KindSelectAlg: `[SelectAlg] newTag[…] algName[…] …` and its second
	// line (ParseSelectAlg).
	KindSelectAlg
	// KindQPAttrs: `[ConstructQpAttrs][attr]sendCqDepth[…]…` (ParseQPAttrs).
	KindQPAttrs
)

var kindNames = [...]string{"none", "settings", "communicator", "local_rank", "comm_destroy", "ccl_buffer", "comm_config", "transport", "listen", "qp_mode",
	"aiv_buffer", "ccl_release", "select_alg", "qp_attrs"}

func (k LineKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "none"
}

// Wording is one era's form of an HCCL message: the prefix the message
// starts with (after the plog header and tid) and a line of that era.
type Wording struct {
	Kind LineKind
	Era  string
	// Prefix starts the message: what Classify's tags must recognise
	// (TestWordingsParse checks Sample against it and Kind).
	Prefix string
	// Sample is a whole plog line of that era: real where Source says
	// "real", else rebuilt from HCCL's format string.
	Sample string
	Source string
}

// Eras as docs/cannlog.md names them.
const (
	Era2023     = "2023"
	Era2024     = "2024 – Feb 2025"
	Era2025     = "Mar – Nov 2025"
	Era2026     = "Dec 2025 →"
	EraAscend95 = "Ascend 950"
	EraAll      = "every era"
)

// Wordings lists every wording the state reads, by kind and era
// (reference: cann-log-eras.md §3–§6). Classify dispatches on the prefixes
// in this table; a test parses every Sample and docs/cannlog.md lists every
// row. Settings lines are listed by form; their variables are in
// internal/hcclenv.
var Wordings = []Wording{
	{KindSettings, Era2023, "environmental variable ",
		"[EVENT] HCCL(6615,python3):2023-01-29-10:14:37.306.833 [externalinput.cc:374][6615][6615]environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[600]", "real (MindCluster fixture)"},
	{KindSettings, Era2023, "ExecTimeOut is set to timeOut[",
		"[EVENT] HCCL(55,python):2023-12-28-06:25:51.049.901 [externalinput.cc:969][55]ExecTimeOut is set to timeOut[120]", "real (MindCluster fixture)"},
	{KindSettings, Era2024, "HCCL_",
		"[INFO] HCCL(1017,python):2024-08-01-14:45:28.498.861 [externalinput.cc:1472][1017]HCCL_RDMA_TIMEOUT set by default to [20]", "real (MindCluster fixture)"},
	{KindSettings, Era2024, "HCCL_",
		"[INFO] HCCL(412002,python):2024-11-19-16:25:58.519.645 [externalinput.cc:1715][412002]HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]", "format string (HCOMM externalinput.cc)"},
	{KindSettings, Era2024, "environmental variable ",
		"[INFO] HCCL(412002,python):2024-11-19-16:25:58.519.645 [externalinput.cc:1739][412002]environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [4]", "format string (HCOMM externalinput.cc)"},
	{KindSettings, Era2025, "HCCL_",
		"[INFO] HCCL(114725,python3):2025-06-19-09:27:24.674.788 [externalinput.cc:407] [114725]HCCL_CONNECT_TIMEOUT set by environment to [130]s", "real (MindCluster fixture)"},
	{KindSettings, Era2026, "[HCCL_ENV]",
		"[INFO] HCCL(1595259,alltoall_test):2026-01-06-15:38:29.881.877 [externalinput.cc:598] [1595259][HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [120]s", "real (sample plog)"},
	{KindSettings, EraAscend95, "[Init][EnvVarParam]",
		`[INFO] HCCL(100,python):2026-03-01-10:00:00.000.000 [env_config.cc:10] [100][Init][EnvVarParam]Env config "HCCL_IF_IP" is not set. Default value is used.`, "format string (HCCL 950)"},

	{KindCommunicator, Era2023, "[status:init]",
		"[TRACE] HCCL(12337,python):2023-07-04-21:46:57.092.002 [status:init] " +
			"[hcom.cc:194][hccl-12337-0-1688478416-hccl_world_group][76]hcom init by file success,take time [248118]us, " +
			"rankTablePath[/home/ma-user/rank_table/jobstart_hccl.json], rankNum[128], rank[76],server[192.168.102.141], " +
			"device[4]", "real (MindCluster fixture, debug/plog)"},
	{KindCommunicator, Era2025, "[HCCL_TRACE]hcom init by file success",
		"[INFO] HCCL(300,python):2025-05-01-10:00:00.000.000 [hcom_common.cc:120] [300][HCCL_TRACE]hcom init by file success,take " +
			"time [248118]us, rankTablePath[/r.json], rankNum[16], rank[3],server[10.0.0.1], device[3]", "format string (HCOMM hcom_common.cc)"},
	{KindCommunicator, Era2024, "Entry-HcclCommInit",
		"[INFO] HCCL(10916,python3.9):2024-07-24-19:39:32.092.789 [op_base.cc:413][10916]Entry-HcclCommInitRootInfo:ranks[2048], " +
			"rank[0], rootinfo: host ip[172.16.13.183] port[64000] nicDeploy[1] " +
			"identifier[172.16.13.183%eth0_64000_0_1721821172092650], deviceLogicId[0]", "real (MindCluster fixture)"},
	{KindCommunicator, Era2025, "Entry-HcclCommInit",
		"[INFO] HCCL(2111667,python):2025-10-24-11:16:52.718.970 [op_base.cc:1292] " +
			"[2111667]Entry-HcclCommInitRootInfoInner:ranks[4], rank[2], rootinfo: host ip[127.10.0.1] port[60000] " +
			"nicDeploy[1] identifier[127.10.0.1%enp_60000_0_1761275812718970], deviceLogicId[2]", "real (HCCL debug_thinking.md)"},
	{KindCommunicator, Era2024, "[HCCL_TRACE]SetupAgent",
		"[INFO] HCCL(10916,python3.9):2024-07-24-19:39:34.075.962 [topoinfo_detect.cc:208][10916][HCCL_TRACE]SetupAgent " +
			"rankNum[2048], rank[0], rootInfo identifier[172.16.13.183%eth0_64000_0_1721821172092650], " +
			"server[172.16.13.183%eth0], logicDevId[0], phydevId[0], deviceIp[29.59.17.126]", "real (MindCluster fixture)"},
	{KindCommunicator, Era2025, "[HCCL_TRACE][Flat]SetupAgent",
		"[INFO] HCCL(114725,python3):2025-06-19-09:27:26.620.939 [topoinfo_detect.cc:506] [114725][HCCL_TRACE][Flat]SetupAgent " +
			"rankNum[3], rank[0], rootInfo identifier[1.1.1.1%enp189s0f0_60000_0_1750325244673428], " +
			"server[1.1.1.1%enp189s0f0], serverPort[60000]deviceType[2], logicDevId[0], phydevId[0], deviceIp[1.1.1.11]", "real (MindCluster fixture)"},
	{KindCommunicator, Era2025, "[HCCL_TRACE][Hierarchical]SetupAgent",
		"[INFO] HCCL(400,python3):2025-06-19-09:27:26.620.939 [topoinfo_detect.cc:520] [400][HCCL_TRACE][Hierarchical]SetupAgent " +
			"rankNum[32], rank[5], rootInfo identifier[1.1.1.1%eth0_60000_0_1750325244673428], server[1.1.1.2%eth0], " +
			"serverPort[60000]deviceType[4], logicDevId[5], phydevId[5], deviceIp[1.1.1.15]", "format string (HCOMM topoinfo_detect.cc)"},
	{KindCommunicator, Era2025, "hcclCommInitInfo:",
		"[INFO] HCCL(1382,python3.8):2025-08-05-19:48:49.502.614 [hccl_comm.cc:129] " +
			"[1382]hcclCommInitInfo:commId[hccl-1382-5-1754394529-hccl_world_group], rank[0], totalRanks[2], " +
			"serverId[%bond4.24], deviceType[4],logicDevId[11], identifier[group_name_17271]", "real (MindCluster fixture)"},
	{KindCommunicator, Era2026, "[Communicator Key Info]",
		"[INFO] HCCL(858941,all_reduce_test):2025-12-10-19:53:28.131.350 [hccl_communicator_attrs.cc:327] [858941][Communicator " +
			"Key Info]identifier[127.0.0.1%enp_60000_0_1765367607599032] rankSize[8] serverNum[1] moduleNum[1] " +
			"superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", "real (sample plog)"},
	{KindLocalRank, Era2026, "[LocalRank Key Info]",
		"[INFO] HCCL(858941,all_reduce_test):2025-12-10-19:53:28.131.357 [hccl_communicator_attrs.cc:330] [858941][LocalRank Key " +
			"Info]userRank[6] hostIp[127.0.0.1] devicePhyId[6] server[127.0.0.1] deviceIp[0.0.0.0] superPodId[0] " +
			"useSuperPodMode[0] isStandardCard[0]", "real (sample plog)"},
	{KindCommDestroy, EraAll, "Entry-HcclCommDestroy",
		"[INFO] HCCL(858941,all_reduce_test):2025-12-10-19:53:40.000.000 [op_base.cc:2000] [858941]Entry-HcclCommDestroy: op_base comm destroy begin", "format string (HCOMM op_base.cc)"},
	{KindCommDestroy, EraAll, "Entry-HcclCommDestroy",
		"[INFO] HCCL(858941,all_reduce_test):2026-08-15-10:00:00.000.000 [op_base.cc:3744] [858941]Entry-HcclCommDestroy op_base comm destroy " +
			"complete, take time [5210]us, group[127.0.0.1%enp_60000_0_1765367607599032], deviceLogicId[0].", "format string (HCOMM op_base.cc:3744)"},

	{KindCCLBuffer, EraAll, "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success",
		"[INFO] HCCL(69396,python3):2024-04-07-18:35:55.266.793 " +
			"[ccl_buffer_manager.cc:38][69396][HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer " +
			"ptr[0x124140400000], size[209715200]", "real (MindCluster fixture)"},
	{KindCommConfig, Era2026, "[Load] comm config of ",
		"[INFO] HCCL(500,python):2026-01-07-10:00:00.000.000 [hccl_comm_config.cc:80] [500][Load] comm config of [group_name_3]: " +
			"bufferSize[104857600], deterministic[0], trafficClass[132], serviceLevel[4], commEngine[0], threadNum[0], " +
			"notifyNumPerThread[0]", "format string (HCOMM-init hccl_comm_config.cc)"},
	{KindCommConfig, Era2026, "[Load] comm config info of ",
		"[INFO] HCCL(500,python):2026-08-15-10:00:00.000.000 [comm_config.cc:122] [500][Load] comm config info of [group_name_3]: " +
			"configSize[136], version[8], opExpansionMode[1]", "format string (HCOMM-HEAD comm_config.cc CommConfig::Load)"},
	{KindListen, Era2024, "[Start][Vnic]Listen on ip[",
		"[INFO] HCCL(5210,python):2024-09-12-10:21:07.412.551 [network_manager.cc:540][5210][Start][Vnic]Listen on " +
			"ip[192.168.1.199], port[16666] success, devPhyId[3], devLogicId[3], isAutoPort[0]", "format string (HCOMM network_manager.cc)"},
	{KindListen, Era2025, "[Start][Vnic]Listen on ip[",
		"[INFO] HCCL(114664,python3):2025-06-19-09:27:26.512.004 [network_manager.cc:561] [114664][Start][Vnic]Listen on " +
			"ip[192.168.2.192], port[16666] sucess, devPhyId[7], devLogicId[7], isAutoPort[0]", "real (message quoted in cann-log-eras.md; header rebuilt)"},
	{KindListen, Era2025, "[Start][Nic]Listen on ip[",
		"[INFO] HCCL(114664,python3):2025-06-19-09:27:26.530.118 [network_manager.cc:590] [114664][Start][Nic]Listen on " +
			"ip[10.1.0.7], port[16666] sucess, devPhyId[7], devLogicId[7], isAutoPort[0]", "format string (HCOMM network_manager.cc)"},
	{KindQPMode, Era2026, "HCCL_RDMA_QPS_PER_CONNECTION is set to [",
		"[INFO] HCCL(7301,python3):2026-08-15-09:59:59.000.000 [transport_ibverbs.cc:599] [7301]HCCL_RDMA_QPS_PER_CONNECTION is " +
			"set to [4] but it is not effective in offline mode.", "format string (HCOMM-HEAD transport_ibverbs.cc:599)"},
	{KindQPMode, Era2026, "HCCL_RDMA_QPS_PER_CONNECTION is set to [",
		"[INFO] HCCL(7302,python3):2026-08-15-09:59:59.000.000 [transport_ibverbs.cc:602] [7302]HCCL_RDMA_QPS_PER_CONNECTION is " +
			"set to [4] but current devType[0] does not support multi-QP.", "format string (HCOMM-HEAD transport_ibverbs.cc:602)"},
	{KindQPMode, Era2026, "[MultiQp][MulQpInfo] Init Success",
		"[INFO] HCCL(7303,python3):2026-08-15-09:59:59.000.000 [multi_qpInfo_manager.cc:109] [7303][MultiQp][MulQpInfo] Init " +
			"Success,Device PhyId[3] MultiQp config from type[DEV_CFG]", "format string (HCOMM-HEAD multi_qpInfo_manager.cc:109)"},
	{KindAIVBuffer, Era2026, "[HCCL_TRACE][CreateCommAIVbuffer] ",
		"[INFO] HCCL(7304,python3):2026-08-15-10:00:00.000.000 [ccl_buffer_manager.cc:140] [7304][HCCL_TRACE][CreateCommAIVbuffer] OpbaseMode",
		"format string (HCOMM ccl_buffer_manager.cc:140)"},
	{KindAIVBuffer, Era2026, "[HCCL_TRACE][CreateCommAIVbuffer] ",
		"[INFO] HCCL(7304,python3):2026-08-15-10:00:00.000.000 [ccl_buffer_manager.cc:150] [7304][HCCL_TRACE][CreateCommAIVbuffer] OffloadMode",
		"format string (HCOMM ccl_buffer_manager.cc:150)"},
	{KindCCLRelease, Era2026, "[HCCL_TRACE][ReleaseCCLbuffer]Release ",
		"[INFO] HCCL(7304,python3):2026-08-15-10:00:00.000.000 [ccl_buffer_manager.cc:174] [7304][HCCL_TRACE][ReleaseCCLbuffer]Release cclBuffer. " +
			"buffer ptr[0x124140400000], size[420478976]", "format string (HCOMM ccl_buffer_manager.cc:174)"},
	{KindSelectAlg, Era2026, "[SelectAlg] newTag[",
		"[INFO] HCCL(7304,python3):2026-08-15-10:00:00.000.000 [coll_alg_operator.cc:192] [7304][SelectAlg] newTag[AllReduce_" +
			"10.20.0.11%eth0_60000_0_1765367607599032NHRAllReduceMeshExecutor_host] algName[AllReduceMeshExecutor] userRank[0] topoType[2] " +
			"algType[level0:fullmesh,level1:NHR,level2:ring] userRankSize[128] level0Size[8] moduleNum_[16] level2Size[0] ",
		"format string (HCOMM coll_alg_operator.cc:192, HCCL_CONFIG_INFO at INFO)"},
	{KindSelectAlg, Era2026, " [HCCL_ALG]: [SelectAlg] newTag[",
		"[INFO] HCCL(7304,python3):2026-08-15-10:00:00.000.000 [coll_alg_operator.cc:198] [7305] [HCCL_ALG]: [SelectAlg] newTag[AllReduce_" +
			"10.20.0.11%eth0_60000_0_1765367607599032NHRAllReduceMeshExecutor_host] opExpansionMode[HOST] isZeroCopy[0] retryEnable[0] " +
			"isOpBase[1] isCapture[0] aivCoreLimit[48] .",
		"format string (HCOMM coll_alg_operator.cc:198, HCCL_CONFIG_INFO with HCCL_DEBUG_CONFIG=ALG: config_log.h:31)"},
	{KindQPAttrs, Era2026, "[ConstructQpAttrs][attr]",
		"[INFO] HCCL(7304,python3):2026-08-15-10:00:00.000.000 [adapter_hccp.cc:2460] [7305][ConstructQpAttrs][attr]sendCqDepth[16384], " +
			"recvCqDepth[128], max_send_wr[16384], max_recv_wr[128]", "format string (HCOMM adapter_hccp.cc:2460)"},
	{KindTransport, EraAll, "create hccl transport:",
		"[INFO] HCCL(412001,python):2024-11-19-16:25:31.462.844 [transport_ibverbs.cc:247][412233]create hccl " +
			"transport:communicator[AllReduce_10.20.0.11%eth0_60000_0_1732004711518342], local rank[0], ip[192.168.10.10], " +
			"remote rank[4], ip[192.168.11.10], transporttype[ROCE], rdma qpn[1290], rdma qp sport[50213], rdma TC[132], " +
			"rdma SL[4]", "format string (HCOMM transport_ibverbs.cc)"},
	{KindTransport, EraAll, "create hccl transport:",
		"[INFO] HCCL(412001,python):2024-11-19-16:25:31.412.137 [transport_p2p.cc:156][412233]create hccl " +
			"transport:communicator[AllReduce_10.20.0.11%eth0_60000_0_1732004711518342], local rank[0], remote rank[1], " +
			"transporttype[HCCS]", "format string (HCOMM transport_p2p.cc)"},
}

// Classify says what kind of HCCL message msg is, by its first bytes
// (the prefixes of Wordings). It is the hot-path pre-check for INFO,
// WARNING, EVENT and TRACE lines of HCCL: a switch on the first byte and a
// few prefix tests, plus the untagged "set by" scan of IsEnvLine.
func Classify(msg []byte) LineKind {
	if len(msg) == 0 {
		return KindNone
	}
	if msg[0] == ' ' && bytes.HasPrefix(msg[1:], tagHCCLAlg) {
		// HCCL_CONFIG_INFO's own prefix `[file:line] [tid] [HCCL_ALG]: `.
		msg = msg[1:]
	}
	switch msg[0] {
	case '[':
		switch {
		case bytes.HasPrefix(msg, tagHCCLEnv), bytes.HasPrefix(msg, tagEnvVarParam):
			return KindSettings
		case bytes.HasPrefix(msg, tagCommKeyInfo):
			return KindCommunicator
		case bytes.HasPrefix(msg, tagLocalRankKeyInfo):
			return KindLocalRank
		case bytes.HasPrefix(msg, tagHCCLTrace):
			rest := msg[len(tagHCCLTrace):]
			switch {
			case bytes.HasPrefix(rest, markCreateCCL):
				return KindCCLBuffer
			case bytes.HasPrefix(rest, markAIVBuffer):
				return KindAIVBuffer
			case bytes.HasPrefix(rest, markReleaseCCL):
				return KindCCLRelease
			case bytes.HasPrefix(rest, markSetupAgent), bytes.HasPrefix(rest, markFlatSetup), bytes.HasPrefix(rest, markHierSetup),
				bytes.HasPrefix(rest, markInitByFile):
				return KindCommunicator
			}
		case bytes.HasPrefix(msg, tagLoadCommConfig), bytes.HasPrefix(msg, tagLoadCommConfigInfo):
			return KindCommConfig
		case bytes.HasPrefix(msg, tagStartVnicListen), bytes.HasPrefix(msg, tagStartNicListen):
			return KindListen
		case bytes.HasPrefix(msg, tagMulQpInfo):
			return KindQPMode
		case bytes.HasPrefix(msg, tagSelectAlg), bytes.HasPrefix(msg, tagHCCLAlg) && bytes.HasPrefix(msg[len(tagHCCLAlg):], tagSelectAlg):
			return KindSelectAlg
		case bytes.HasPrefix(msg, tagQPAttrs):
			return KindQPAttrs
		case bytes.HasPrefix(msg, tagStatusInit):
			if bytes.Contains(msg, markInitByFile) {
				return KindCommunicator
			}
		}
	case 'E':
		switch {
		case bytes.HasPrefix(msg, markCommInit):
			return KindCommunicator
		case bytes.HasPrefix(msg, markCommDestroy):
			return KindCommDestroy
		}
	case 'c':
		if bytes.HasPrefix(msg, markTransport) {
			return KindTransport
		}
	case 'h':
		if bytes.HasPrefix(msg, markCommInitInfo) {
			return KindCommunicator
		}
	case 'H':
		// Before IsEnvLine, which would read the configured value again.
		if bytes.HasPrefix(msg, markQPSSetTo) && bytes.Contains(msg, markBut) {
			return KindQPMode
		}
	}
	if IsEnvLine(msg) {
		return KindSettings
	}
	return KindNone
}

var (
	tagStartVnicListen = []byte("[Start][Vnic]Listen on ip[")
	tagStartNicListen  = []byte("[Start][Nic]Listen on ip[")
	tagHCCLTrace       = []byte("[HCCL_TRACE]")
	tagLoadCommConfig  = []byte("[Load] comm config of ")
	// tagLoadCommConfigInfo: `[Load] comm config info of [name]: configSize[…],
	// version[…], opExpansionMode[N]` (HCOMM-HEAD comm_config.cc).
	tagLoadCommConfigInfo = []byte("[Load] comm config info of ")
	tagStatusInit         = []byte("[status:init]")
	markCreateCCL         = []byte("[CreateCCLbuffer]Create ccl buffer success")
	markSetupAgent        = []byte("SetupAgent ")
	markFlatSetup         = []byte("[Flat]SetupAgent ")
	markHierSetup         = []byte("[Hierarchical]SetupAgent ")
	markInitByFile        = []byte("hcom init by file success")
	markCommInit          = []byte("Entry-HcclCommInit")
	markCommInitInfo      = []byte("hcclCommInitInfo:")
	markTransport         = []byte("create hccl transport:")
)

// Communicator is what a communicator-creation line says. Fields a wording
// does not print are -1 (ints) or false.
type Communicator struct {
	Identifier string
	RankSize   int
	// RankTable is the rank table file of a world group created from one
	// (`hcom init by file … rankTablePath[X]`, hcom_common.cc:1611), ""
	// otherwise: with the rank count, what the job's processes on every
	// node print alike about the world group.
	RankTable string
	ServerNum int // -1 before [Communicator Key Info]
	// SuperPodNum and ModuleNum come with ServerNum; -1 when not printed.
	SuperPodNum int
	ModuleNum   int
	// MultiModuleDiffDeviceNum and MultiSuperPodDiffServerNum are
	// multiModuleDiffDeviceNumMode[…] and multiSuperPodDiffServerNumMode[…]:
	// layouts whose modules (superpods) hold different device (server)
	// counts, for which HCCL links same-server ranks over RoCE
	// (IsSupportEnableRoce); -1 when not printed.
	MultiModuleDiffDeviceNum   int
	MultiSuperPodDiffServerNum int
	DeviceType                 int // deviceType[N]; -1 when not printed
	DevicePhyID                int // phydevId[N]; -1 when not printed
}

// worldGroup names the communicator HCCL creates from a ranktable file
// (graph mode, `hcom init by file`).
const worldGroup = "hccl_world_group"

// WorldGroup is the identifier of every graph-mode job's world group: a
// name HCCL gives it on every node of every job, so no job's identity.
const WorldGroup = worldGroup

// ParseCommunicator reads every era's communicator-creation line:
// `[Communicator Key Info]identifier[X] rankSize[N] serverNum[M] … superPodNum[S]`,
// `Entry-HcclCommInit*:ranks[N], … identifier[X]`,
// `[HCCL_TRACE][Flat|Hierarchical]SetupAgent rankNum[N], … rootInfo identifier[X] … deviceType[T] … phydevId[P]`,
// `hcclCommInitInfo:… totalRanks[N], … deviceType[T], … identifier[X]`, and
// `hcom init by file success … rankNum[N]` (graph mode: the world group).
func ParseCommunicator(msg []byte) (Communicator, bool) {
	c := Communicator{ServerNum: -1, SuperPodNum: -1, ModuleNum: -1, DeviceType: -1, DevicePhyID: -1,
		MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1}
	var ranksField string
	switch {
	case bytes.HasPrefix(msg, tagCommKeyInfo):
		ci, ok := ParseCommunicatorKeyInfo(msg)
		if !ok {
			return Communicator{}, false
		}
		c.Identifier, c.RankSize, c.ServerNum = ci.Identifier, ci.RankSize, ci.ServerNum
		if n, ok := BracketInt(msg, "superPodNum"); ok {
			c.SuperPodNum = n
		}
		if n, ok := BracketInt(msg, "moduleNum"); ok {
			c.ModuleNum = n
		}
		if n, ok := BracketInt(msg, "multiModuleDiffDeviceNumMode"); ok {
			c.MultiModuleDiffDeviceNum = n
		}
		if n, ok := BracketInt(msg, "multiSuperPodDiffServerNumMode"); ok {
			c.MultiSuperPodDiffServerNum = n
		}
		return c, true
	case bytes.HasPrefix(msg, markCommInit):
		ranksField = "ranks"
	case bytes.HasPrefix(msg, markCommInitInfo):
		ranksField = "totalRanks"
	case bytes.HasPrefix(msg, tagStatusInit) || bytes.HasPrefix(msg, tagHCCLTrace) && bytes.HasPrefix(msg[len(tagHCCLTrace):], markInitByFile):
		if !bytes.Contains(msg, markInitByFile) {
			return Communicator{}, false
		}
		n, ok := BracketInt(msg, "rankNum")
		if !ok || n <= 0 {
			return Communicator{}, false
		}
		c.Identifier, c.RankSize = worldGroup, n
		if p, ok := BracketField(msg, "rankTablePath"); ok {
			c.RankTable = string(p)
		}
		return c, true
	case bytes.HasPrefix(msg, tagHCCLTrace):
		ranksField = "rankNum"
	default:
		return Communicator{}, false
	}
	n, ok := BracketInt(msg, ranksField)
	if !ok || n <= 0 {
		return Communicator{}, false
	}
	id, ok := BracketField(msg, "identifier")
	if !ok || len(id) == 0 || bytes.ContainsAny(id, "[ ") {
		return Communicator{}, false
	}
	c.Identifier, c.RankSize = string(id), n
	if t, ok := BracketInt(msg, "deviceType"); ok {
		c.DeviceType = t
	} else if t, ok := intAfter(msg, "]deviceType["); ok {
		// serverPort[60000]deviceType[2]: no separator in the format.
		c.DeviceType = t
	}
	if p, ok := BracketInt(msg, "phydevId"); ok {
		c.DevicePhyID = p
	}
	return c, true
}

// intAfter reads the number inside the brackets that follow marker (which
// ends with '[').
func intAfter(msg []byte, marker string) (int, bool) {
	i := bytes.Index(msg, []byte(marker))
	if i < 0 {
		return 0, false
	}
	v := msg[i+len(marker):]
	end := bytes.IndexByte(v, ']')
	if end <= 0 || end > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(string(v[:end]))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// ParseCCLBuffer reads the size of one `Create ccl buffer success. buffer
// ptr[…], size[N]` line. What one line covers changed between builds (two
// lines of HCCL_BUFFSIZE each in 2024, three with the 1 MiB expansion buffer
// in mid-2025, one block of 2 × HCCL_BUFFSIZE + 1 MiB from Nov 2025): sum
// them.
func ParseCCLBuffer(msg []byte) (uint64, bool) {
	v, ok := BracketField(msg, "size")
	if !ok {
		return 0, false
	}
	return parseUint(v)
}

// CommConfig is `[Load] comm config of [name]: bufferSize[N], …`: the
// communicator's own buffer size in bytes (HcclCommConfig.hcclBufferSize),
// which overrides HCCL_BUFFSIZE for it.
type CommConfig struct {
	Name        string
	BufferBytes uint64
	// BufferName is HcclCommConfig.bufferName (HCOMM-HEAD: `…, bufferName[%s], …`):
	// communicators of one process with the same non-empty name share one
	// cclBuffer. "" when not printed or empty.
	BufferName string
	// ExpansionMode is set by the `[Load] comm config info of` line (Info
	// true, BufferBytes then 0): HcclCommConfig's opExpansionMode as
	// HCCL_OP_EXPANSION_MODE spells it, by CommConfig::
	// SetConfigOpExpansionMode: 1 HOST, 2 AI_CPU, 3 AIV, 4 AIV_ONLY; ""
	// for 0 (the variable applies) and values HCCL ignores.
	ExpansionMode string
	Info          bool
}

// commConfigExpansionModes maps HcclCommConfig.opExpansionMode
// (COMM_CONFIG_OPEXPANSION_*, HCOMM-HEAD comm_config.cc) to the variable's
// spelling.
var commConfigExpansionModes = map[uint64]string{1: "HOST", 2: "AI_CPU", 3: "AIV", 4: "AIV_ONLY"}

// maxBufferName bounds a stored bufferName.
const maxBufferName = 128

// ParseCommConfig reads a `[Load] comm config of [name]: bufferSize[N]` line.
func ParseCommConfig(msg []byte) (CommConfig, bool) {
	info := bytes.HasPrefix(msg, tagLoadCommConfigInfo)
	if !info && !bytes.HasPrefix(msg, tagLoadCommConfig) {
		return CommConfig{}, false
	}
	rest := msg[len(tagLoadCommConfig):]
	if info {
		rest = msg[len(tagLoadCommConfigInfo):]
	}
	if len(rest) < 2 || rest[0] != '[' {
		return CommConfig{}, false
	}
	end := bytes.Index(rest, []byte("]:"))
	if end <= 1 {
		return CommConfig{}, false
	}
	name := rest[1:end]
	if bytes.ContainsAny(name, "[] ") {
		return CommConfig{}, false
	}
	if info {
		v, ok := BracketField(rest[end:], "opExpansionMode")
		if !ok {
			return CommConfig{}, false
		}
		n, ok := parseUint(v)
		if !ok {
			return CommConfig{}, false
		}
		return CommConfig{Name: string(name), Info: true, ExpansionMode: commConfigExpansionModes[n]}, true
	}
	v, ok := BracketField(rest[end:], "bufferSize")
	if !ok {
		return CommConfig{}, false
	}
	n, ok := parseUint(v)
	if !ok {
		return CommConfig{}, false
	}
	cc := CommConfig{Name: string(name), BufferBytes: n}
	if bn, ok := BracketField(rest[end:], "bufferName"); ok && len(bn) <= maxBufferName && printableASCII(bn) {
		cc.BufferName = string(bn)
	}
	return cc, true
}

// Transport is one `create hccl transport:` line: an RDMA QP (HasQPN) or
// a link without QP (HCCS, PCIe, SIO).
type Transport struct {
	// Tag is the operator tag the link set was built for, e.g.
	// "AllReduce_<identifier>" (op-base) or "HcomAllReduce_<n>_0" (graph).
	Tag        string
	RemoteRank int
	Type       string // ROCE, HCCS, PCIE, SIO, HCCS_SW, …
	HasQPN     bool
	// QPN is the `rdma qpn[…]` value: the qpn `hccn_tool -qp_info -g`
	// lists for the QP (0 when HasQPN is false or it did not parse).
	QPN uint32
}

// Identifier is the communicator identifier in the tag: what follows the
// first '_' (`AllReduce_` + identifier in op-base mode).
func (t Transport) Identifier() string {
	if i := strings.IndexByte(t.Tag, '_'); i >= 0 {
		return t.Tag[i+1:]
	}
	return t.Tag
}

// ParseTransport reads a `create hccl transport:communicator[tag], local
// rank[L], [ip[…], ]remote rank[R], [ip[…], ]transporttype[T][, rdma qpn[Q]…]`
// line. Only lines with `rdma qpn[` are QPs (one line per QP).
func ParseTransport(msg []byte) (Transport, bool) {
	if !bytes.HasPrefix(msg, markTransport) {
		return Transport{}, false
	}
	rest := msg[len(markTransport):]
	tag, ok := BracketField(rest, "communicator")
	if !ok || len(tag) == 0 || bytes.ContainsAny(tag, "[ ") {
		return Transport{}, false
	}
	rr, ok := intAfter(rest, "remote rank[")
	if !ok {
		return Transport{}, false
	}
	typ, ok := BracketField(rest, "transporttype")
	if !ok || len(typ) == 0 || len(typ) > 16 {
		return Transport{}, false
	}
	v, qpn := BracketField(rest, "qpn")
	t := Transport{Tag: string(tag), RemoteRank: rr, Type: string(typ), HasQPN: qpn}
	if n, ok := parseUint(v); ok && n <= math.MaxUint32 {
		t.QPN = uint32(n)
	}
	return t, true
}

func parseUint(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// EI0011Allocation is what an EI0011 report says about the allocation that
// failed: "Failed to allocate %s bytes of NPU memory." with %s the range
// forms of a QP ("[size: [0.25MB, 3MB], Affected by QP depth
// configuration.]", "262144~3145728"; QPRange) or, in HCOMM from Jan 2026,
// the exact size of any HCCL device allocation (SizeBytes).
type EI0011Allocation struct {
	QPRange   bool
	SizeBytes int64
}

var (
	markEI0011      = []byte("EI0011")
	markAllocate    = []byte("Failed to allocate ")
	markBytesOfNPU  = []byte(" bytes of NPU memory")
	markSizeRangeQP = []byte("[size: [")
)

// ParseEI0011Allocation reads the allocation of an EI0011 report line
// (screen log, either layout).
func ParseEI0011Allocation(line []byte) (EI0011Allocation, bool) {
	if !bytes.Contains(line, markEI0011) {
		return EI0011Allocation{}, false
	}
	i := bytes.Index(line, markAllocate)
	if i < 0 {
		return EI0011Allocation{}, false
	}
	rest := line[i+len(markAllocate):]
	if bytes.HasPrefix(rest, markSizeRangeQP) {
		return EI0011Allocation{QPRange: true}, true
	}
	end := bytes.Index(rest, markBytesOfNPU)
	if end <= 0 || end > 41 {
		return EI0011Allocation{}, false
	}
	v := rest[:end]
	if lo, hi, ok := bytes.Cut(v, []byte("~")); ok {
		if _, ok1 := parseUint(lo); ok1 {
			if _, ok2 := parseUint(hi); ok2 {
				return EI0011Allocation{QPRange: true}, true
			}
		}
		return EI0011Allocation{}, false
	}
	n, ok := parseUint(v)
	if !ok || n == 0 || n > 1<<62 {
		return EI0011Allocation{}, false
	}
	return EI0011Allocation{SizeBytes: int64(n)}, true
}

// ListenDevice reads the physical device id of a `[Start][Vnic|Nic]Listen
// on ip[…], port[…] success, devPhyId[P], devLogicId[L], …` line.
func ListenDevice(msg []byte) (phy int, ok bool) {
	if !bytes.HasPrefix(msg, tagStartVnicListen) && !bytes.HasPrefix(msg, tagStartNicListen) {
		return 0, false
	}
	return BracketInt(msg, "devPhyId")
}
