// Package comm owns what an HCCL communicator is as the CANN logs print it:
// its shape (ranks, servers, super pods, modules, device), its own config,
// the buffer and links its run log shows set up so far, and the link sets
// (one per operator tag) it built. The log state (internal/cann/logstate)
// fills these from plog lines; the headroom model (internal/headroom) reads
// them. It belongs to neither, so neither depends on the other: the model
// does not know how the logs are kept, and no translation between the two
// has to be kept in step. Pure data: no parsing, no I/O.
package comm

import "time"

// Communicator is one live HCCL communicator of a process, as the CANN
// logs show it (from any era's creation lines, with what its run log shows
// set up so far); a destroyed communicator is simply absent and unknown
// ints are < 0.
type Communicator struct {
	Name     string // the identifier, e.g. "127.0.0.1%enp_60000_0_1765367607599032"
	RankSize int
	// ServerNum and SuperPodNum come from `[Communicator Key Info]` (Dec
	// 2025 on); -1 where the era does not print them.
	ServerNum   int
	SuperPodNum int
	// ModuleNum (moduleNum) counts the HCCS meshes: above ServerNum a
	// server's ranks span two modules (910B A+X); -1 where not printed.
	ModuleNum int
	// MultiModuleDiffDeviceNum and MultiSuperPodDiffServerNum are the
	// `[Communicator Key Info]` switches multiModuleDiffDeviceNumMode and
	// multiSuperPodDiffServerNumMode (1: HCCL links same-server ranks over
	// RoCE); -1 where not printed.
	MultiModuleDiffDeviceNum   int
	MultiSuperPodDiffServerNum int
	// DeviceType is HCCL's deviceType[N] (hcclenv.DevType*), -1 unknown.
	DeviceType int
	// UserRank and DevicePhyID come from the `[LocalRank Key Info]` line
	// that follows (DevicePhyID also from phydevId[] of older eras); -1
	// when it was not seen.
	UserRank    int
	DevicePhyID int
	// SuperPodID, SuperPodMode (useSuperPodMode) and StandardCard
	// (isStandardCard: a PCIe card) also come from `[LocalRank Key Info]`;
	// "" and -1 when not printed.
	SuperPodID   string
	SuperPodMode int
	StandardCard int
	// BufferSizeBytes is the communicator's own buffer size from `[Load]
	// comm config` (HcclCommConfig.hcclBufferSize); 0 means HCCL_BUFFSIZE.
	BufferSizeBytes uint64
	// BufferName is its `[Load] comm config` bufferName (HcclCommConfig):
	// communicators of the process with the same non-empty name share one
	// cclBuffer. "" when not printed.
	BufferName string
	// CCLBufferBytes is what `Create ccl buffer success` lines show
	// allocated for it: 0 until its first collective (HCCL allocates the
	// cclBuffer lazily, together with link setup).
	CCLBufferBytes uint64
	// EstablishedQPs counts its `create hccl transport:` lines with `rdma
	// qpn[` (one per QP, over every link set it built); RoCEPeers and
	// OtherPeers count the distinct remote ranks linked by RoCE QPs and by
	// links without QP (HCCS, PCIe, SIO).
	EstablishedQPs uint64
	RoCEPeers      int
	OtherPeers     int
	// AllRanksOps: a link set of an AlltoAll-family or send/recv/batch
	// operator was logged (tag AllToAll…, Send…, Recv…, BatchSendRecv…):
	// those link every remote rank, not one plane per device index (MC2
	// tags set it too).
	AllRanksOps bool
	// OpBaseTags and GraphTags: link sets with op-base tags
	// ("<Collective>_<identifier>") and graph-mode tags ("Hcom…") were
	// logged; the QP depth depends on the mode.
	OpBaseTags bool
	GraphTags  bool
	// Captures counts ACL graph captures that re-created RoCE links: QP
	// lines under an op-base tag that extends an earlier tag of the same
	// collective (HCCL appends a capture counter to a repeated tag while
	// the stream is capturing). LastCaptureQPs are the QPs of the latest
	// capture and LastCaptureAt the time printed on its latest QP line.
	Captures       int
	LastCaptureQPs uint64
	LastCaptureAt  time.Time
	// MC2: a link set of an MC2 operator (MoE dispatch/combine, tag
	// `<identifier><opType>_mc2`, HCOMM op_base_mc2.cc) was logged; like
	// AllRanksOps it links every remote rank (AllRanksOps is set too).
	MC2 bool
	// ExpansionMode is the communicator's own HcclCommConfig
	// opExpansionMode (`[Load] comm config info of [c]: … opExpansionMode[N]`,
	// HCOMM comm_config.cc) as HCCL_OP_EXPANSION_MODE spells it (HOST,
	// AI_CPU, AIV, AIV_ONLY); "" when not printed or 0 (the variable then
	// applies). It overrides the process's variable (CommConfig::
	// SetConfigOpExpansionMode).
	ExpansionMode string
	// AIVOpBase and AIVOffload: its AIV buffers of that mode were
	// allocated (`[HCCL_TRACE][CreateCommAIVbuffer] OpbaseMode|OffloadMode`,
	// HCOMM ccl_buffer_manager.cc:140,150): 36 MiB + 4 MiB each, the
	// offload set for graph mode and ACL graph captures.
	AIVOpBase, AIVOffload bool
	// ObservedQPBytes and ObservedCaptureQPBytes are the size of its latest
	// op-base and captured QP from the depths HCCL printed before creating
	// it (`[ConstructQpAttrs][attr]…`, adapter_hccp.cc:2460): max_send_wr ×
	// 64 + sendCqDepth × 32; 0 when not printed.
	ObservedQPBytes, ObservedCaptureQPBytes uint64
	// LinkSets are the link sets (one per operator tag, HCCL's resMap_
	// entries) logged for the communicator, in the order they appeared
	// (the log state keeps at most a bounded number per communicator).
	LinkSets []LinkSet
}

// LinkSetKind says what built a link set, from its operator tag.
type LinkSetKind string

// The link-set kinds.
const (
	LinkSetOpBase   LinkSetKind = "op_base"   // "<Op>_<identifier><level1><algName>…_host" (parse.ParseTag)
	LinkSetGraph    LinkSetKind = "graph"     // "Hcom<Collective>_…"
	LinkSetCapture  LinkSetKind = "capture"   // an op-base tag with "_Capture[N]"
	LinkSetMC2      LinkSetKind = "mc2"       // "<identifier><opType>_mc2"
	LinkSetSendRecv LinkSetKind = "send_recv" // "worldCommSendRecv_<src>_<dst>_<identifier>…", "worldBatchSendRecv_<identifier>…"
)

// LinkSet is one link set of a communicator: HCCL builds one per
// operator tag (resMap_[newTag], hccl_communicator_host.cc), with new QPs
// even to peers another tag already linked.
type LinkSet struct {
	Tag  string
	Kind LinkSetKind
	// Op is the collective in lower case without "hcom" ("allreduce",
	// "alltoallv", …; "mc2" for MC2 tags).
	Op string
	// Level1 is the level-1 name the tag carries as HCCL prints it
	// (HCCL_ALGO_LEVEL1_NAME_MAP: "ring", "H-D", "NHR", "NHR_V1",
	// "pipeline", "NB", "AHC", …), "" when none; Algo the same in the
	// model's lower case ("ring", "hd", "nhr", "nhr_v1", "pipeline", "nb",
	// "ahc").
	Level1 string
	Algo   string
	// Executor is the algName the tag carries (the executor HCCL
	// selected: "AllReduceMeshExecutor", …), "" when none. HCCL keys link
	// sets by it: each executor of a collective is a set of its own.
	Executor string
	// RoCEPeers are the distinct remote ranks it linked over RoCE, QPs its
	// `rdma qpn[` lines.
	RoCEPeers int
	QPs       uint64
}
