package parse

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// TestWordingsParse parses the sample line of every row of Wordings: the
// header must parse, Classify must find the row's kind, and the kind's
// parser must read it.
func TestWordingsParse(t *testing.T) {
	for _, w := range Wordings {
		var p PlogLine
		if !ParsePlog([]byte(w.Sample), &p) {
			t.Errorf("%s %s: header does not parse: %s", w.Era, w.Kind, w.Sample)
			continue
		}
		if !bytes.HasPrefix(p.Msg, []byte(w.Prefix)) {
			t.Errorf("%s %s: message %q does not start with the row's prefix %q", w.Era, w.Kind, p.Msg, w.Prefix)
		}
		if got := Classify(p.Msg); got != w.Kind {
			t.Errorf("%s: Classify(%q) = %s, want %s", w.Era, p.Msg, got, w.Kind)
			continue
		}
		var ok bool
		switch w.Kind {
		case KindSettings:
			ok = len(ParseHCCLEnv(p.Msg)) > 0
		case KindCommunicator:
			var c Communicator
			c, ok = ParseCommunicator(p.Msg)
			ok = ok && c.RankSize > 0 && c.Identifier != ""
		case KindLocalRank:
			_, ok = ParseLocalRankKeyInfo(p.Msg)
		case KindCommDestroy:
			_, ok = CommDestroy(p.Msg)
		case KindCCLBuffer:
			var n uint64
			n, ok = ParseCCLBuffer(p.Msg)
			ok = ok && n > 0
		case KindCommConfig:
			_, ok = ParseCommConfig(p.Msg)
		case KindTransport:
			_, ok = ParseTransport(p.Msg)
		case KindListen:
			var phy int
			phy, ok = ListenDevice(p.Msg)
			ok = ok && phy >= 0
		case KindAIVBuffer:
			_, ok = ParseAIVBuffer(p.Msg)
		case KindCCLRelease:
			_, ok = ParseCCLRelease(p.Msg)
		case KindSelectAlg:
			_, ok = ParseSelectAlg(p.Msg)
		case KindQPAttrs:
			_, ok = ParseQPAttrs(p.Msg)
		case KindQPMode:
			var m QPMode
			m, ok = ParseQPMode(p.Msg)
			ok = ok && (m.Offline || m.NoMultiQP || m.MultiQPFrom != "")
		}
		if !ok {
			t.Errorf("%s %s: the kind's parser rejects %q", w.Era, w.Kind, p.Msg)
		}
	}
}

func msgOf(t *testing.T, line string) []byte {
	t.Helper()
	var p PlogLine
	if !ParsePlog([]byte(line), &p) {
		t.Fatalf("header: %s", line)
	}
	return p.Msg
}

func wording(t *testing.T, kind LineKind, era, contains string) string {
	t.Helper()
	for _, w := range Wordings {
		if w.Kind == kind && w.Era == era && strings.Contains(w.Sample, contains) {
			return w.Sample
		}
	}
	t.Fatalf("no %s wording of %s with %q", kind, era, contains)
	return ""
}

func TestParseCommunicatorEveryEra(t *testing.T) {
	tests := []struct {
		line string
		want Communicator
	}{
		{wording(t, KindCommunicator, Era2023, "hcom init by file"),
			Communicator{Identifier: "hccl_world_group", RankSize: 128, RankTable: "/home/ma-user/rank_table/jobstart_hccl.json", ServerNum: -1, SuperPodNum: -1, ModuleNum: -1, MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: -1, DevicePhyID: -1}},
		{wording(t, KindCommunicator, Era2024, "Entry-HcclCommInitRootInfo"),
			Communicator{Identifier: "172.16.13.183%eth0_64000_0_1721821172092650", RankSize: 2048, ServerNum: -1, SuperPodNum: -1, ModuleNum: -1, MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: -1, DevicePhyID: -1}},
		{wording(t, KindCommunicator, Era2024, "SetupAgent"),
			Communicator{Identifier: "172.16.13.183%eth0_64000_0_1721821172092650", RankSize: 2048, ServerNum: -1, SuperPodNum: -1, ModuleNum: -1, MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: -1, DevicePhyID: 0}},
		{wording(t, KindCommunicator, Era2025, "[Flat]SetupAgent"),
			Communicator{Identifier: "1.1.1.1%enp189s0f0_60000_0_1750325244673428", RankSize: 3, ServerNum: -1, SuperPodNum: -1, ModuleNum: -1, MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: hcclenv.DevType910B, DevicePhyID: 0}},
		{wording(t, KindCommunicator, Era2025, "hcclCommInitInfo"),
			Communicator{Identifier: "group_name_17271", RankSize: 2, ServerNum: -1, SuperPodNum: -1, ModuleNum: -1, MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: hcclenv.DevType910_93, DevicePhyID: -1}},
		{wording(t, KindCommunicator, Era2026, "Communicator Key Info"),
			Communicator{Identifier: "127.0.0.1%enp_60000_0_1765367607599032", RankSize: 8, ServerNum: 1, SuperPodNum: 0, ModuleNum: 1, DeviceType: -1, DevicePhyID: -1}},
		// The two RoCE switches of [Communicator Key Info] (HCOMM-HEAD
		// hccl_communicator_attrs.cc; built from the format string).
		{"[INFO] HCCL(9,python3):2026-08-15-10:00:00.000.000 [hccl_communicator_attrs.cc:327] [9][Communicator Key Info]identifier[g] rankSize[24] serverNum[2] moduleNum[3] superPodNum[0] multiModuleDiffDeviceNumMode[1] multiSuperPodDiffServerNumMode[0]",
			Communicator{Identifier: "g", RankSize: 24, ServerNum: 2, SuperPodNum: 0, ModuleNum: 3, MultiModuleDiffDeviceNum: 1, MultiSuperPodDiffServerNum: 0, DeviceType: -1, DevicePhyID: -1}},
	}
	for _, tc := range tests {
		got, ok := ParseCommunicator(msgOf(t, tc.line))
		if !ok || got != tc.want {
			t.Errorf("ParseCommunicator(%s)\n got %+v %v\nwant %+v", tc.line, got, ok, tc.want)
		}
	}
	for _, bad := range []string{
		"Entry-HcclCommInitRootInfo:ranks[0], identifier[x]",
		"Entry-HcclCommInitRootInfo:ranks[4], identifier[]",
		"Entry-HcclCommInitRootInfo:ranks[4]",
		"hcclCommInitInfo:commId[x], totalRanks[abc], identifier[x]",
		"[HCCL_TRACE]SetupAgent rankNum[99999999999], rootInfo identifier[x]",
		"[status:init] [hcom.cc:1] hcom init by file success, rankNum[]",
	} {
		if got, ok := ParseCommunicator([]byte(bad)); ok {
			t.Errorf("ParseCommunicator(%q) = %+v, want failure", bad, got)
		}
	}
}

func TestParseTransportAndBuffers(t *testing.T) {
	roce, ok := ParseTransport(msgOf(t, wording(t, KindTransport, EraAll, "ROCE")))
	if !ok || roce != (Transport{Tag: "AllReduce_10.20.0.11%eth0_60000_0_1732004711518342", RemoteRank: 4, Type: "ROCE", HasQPN: true, QPN: 1290}) {
		t.Errorf("RoCE transport: %+v %v", roce, ok)
	}
	if id := roce.Identifier(); id != "10.20.0.11%eth0_60000_0_1732004711518342" {
		t.Errorf("identifier %q", id)
	}
	hccs, ok := ParseTransport(msgOf(t, wording(t, KindTransport, EraAll, "HCCS")))
	if !ok || hccs.HasQPN || hccs.Type != "HCCS" || hccs.RemoteRank != 1 {
		t.Errorf("HCCS transport: %+v %v", hccs, ok)
	}
	// Device-side form: no space before transporttype, no qpn.
	dev, ok := ParseTransport([]byte("create hccl transport:communicator[AllGather_g1], local rank[0], remote rank[9],transporttype[ROCE], atomicWrite[1]"))
	if !ok || dev.HasQPN || dev.RemoteRank != 9 || dev.Identifier() != "g1" {
		t.Errorf("device transport: %+v %v", dev, ok)
	}
	for _, bad := range []string{
		"create hccl transport:communicator[], remote rank[1], transporttype[ROCE]",
		"create hccl transport:communicator[x], remote rank[], transporttype[ROCE]",
		"create hccl transport:communicator[x], remote rank[1]",
		"create hccl transport:",
	} {
		if got, ok := ParseTransport([]byte(bad)); ok {
			t.Errorf("ParseTransport(%q) = %+v, want failure", bad, got)
		}
	}
	if n, ok := ParseCCLBuffer(msgOf(t, wording(t, KindCCLBuffer, EraAll, "size"))); !ok || n != 209715200 {
		t.Errorf("ccl buffer %v %v", n, ok)
	}
	if _, ok := ParseCCLBuffer([]byte("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x1], size[-1]")); ok {
		t.Error("negative size accepted")
	}
	cc, ok := ParseCommConfig(msgOf(t, wording(t, KindCommConfig, Era2026, "bufferSize")))
	if !ok || cc != (CommConfig{Name: "group_name_3", BufferBytes: 104857600}) {
		t.Errorf("comm config %+v %v", cc, ok)
	}
	// HCOMM-HEAD prints bufferName (format string, hccl_comm_config.cc):
	// communicators with the same name share one cclBuffer.
	head := "[Load] comm config of [moe_ep]: bufferSize[209715200], deterministic[0], trafficClass[132], serviceLevel[4], execTimeOut[1836]s, bufferName[moe_shared], hcclQos[0], symmetricMemoryStride[0], aclGraphZeroCopyEnable[0]"
	if cc, ok := ParseCommConfig([]byte(head)); !ok || cc != (CommConfig{Name: "moe_ep", BufferBytes: 209715200, BufferName: "moe_shared"}) {
		t.Errorf("HEAD comm config %+v %v", cc, ok)
	}
	if cc, ok := ParseCommConfig([]byte(strings.Replace(head, "moe_shared", "", 1))); !ok || cc.BufferName != "" {
		t.Errorf("empty bufferName: %+v %v", cc, ok)
	}
	for _, bad := range []string{"[Load] comm config of [g]: deterministic[0]", "[Load] comm config of g: bufferSize[1]", "[Load] comm config of [a b]: bufferSize[1]"} {
		if got, ok := ParseCommConfig([]byte(bad)); ok {
			t.Errorf("ParseCommConfig(%q) = %+v, want failure", bad, got)
		}
	}
}

func TestClassifySkipsHotLines(t *testing.T) {
	for _, msg := range []string{
		"Entry-HcomAllReduce:tag[HcomAllReduce_6629421139219749105_0], inputPtr[0x12c3bcb06c00]",
		"hcom AllReduce success,take time [12]us",
		"[HCCL_TRACE]HcclCommInitRootInfo success,take time [2291804]us",
		"create hccl",
		"",
	} {
		if k := Classify([]byte(msg)); k != KindNone {
			t.Errorf("Classify(%q) = %s, want none", msg, k)
		}
	}
}

func TestParseEI0011Allocation(t *testing.T) {
	tests := []struct {
		line string
		want EI0011Allocation
		ok   bool
	}{
		{"[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.",
			EI0011Allocation{QPRange: true}, true},
		{"[PID: 7] 2026-06-01-10:00:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 262144~3145728 bytes of NPU memory.",
			EI0011Allocation{QPRange: true}, true},
		{"[PID: 7] 2026-06-01-10:00:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 420478976 bytes of NPU memory.",
			EI0011Allocation{SizeBytes: 420478976}, true},
		{"EI0011: [PID: 7] 2026-02-01-10:00:00.000.000 Failed to allocate 2097152 bytes of NPU memory.", EI0011Allocation{SizeBytes: 2097152}, true},
		{"Resource_Error_Insufficient_Device_Memory(EL0019): Failed to allocate 2097152 bytes", EI0011Allocation{}, false},
		{"(EI0011): Failed to allocate abc bytes of NPU memory.", EI0011Allocation{}, false},
		{"(EI0011): Failed to allocate 0 bytes of NPU memory.", EI0011Allocation{}, false},
		{"(EI0011): Failed to allocate 99999999999999999999 bytes of NPU memory.", EI0011Allocation{}, false},
		{"(EI0011): Failed to allocate 1~x bytes of NPU memory.", EI0011Allocation{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseEI0011Allocation([]byte(tc.line))
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseEI0011Allocation(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseQPMode reads the three QP mode lines (built from HCOMM-HEAD's
// format strings, transport_ibverbs.cc:599/:602, multi_qpInfo_manager.cc:109)
// and rejects look-alikes.
func TestParseQPMode(t *testing.T) {
	tests := []struct {
		msg  string
		want QPMode
		ok   bool
	}{
		{"HCCL_RDMA_QPS_PER_CONNECTION is set to [4] but it is not effective in offline mode.", QPMode{Offline: true, DevicePhyID: -1}, true},
		{"HCCL_RDMA_QPS_PER_CONNECTION is set to [8] but current devType[0] does not support multi-QP.", QPMode{NoMultiQP: true, DevicePhyID: -1}, true},
		{"[MultiQp][MulQpInfo] Init Success,Device PhyId[3] MultiQp config from type[ENV_HCCL_RDMA_QPS_PER_CONNECTION]", QPMode{MultiQPFrom: MultiQPFromEnv, DevicePhyID: 3}, true},
		{"[MultiQp][MulQpInfo] Init Success,Device PhyId[3] MultiQp config from type[DEV_NSLB]", QPMode{MultiQPFrom: MultiQPFromNSLB, DevicePhyID: 3}, true},
		{"[MultiQp][MulQpInfo] Init Success,Device PhyId[3] MultiQp config from type[]", QPMode{}, false},
		{"[MultiQp][MulQpInfo] Init Success,Device PhyId[3] MultiQp config from type[a b]", QPMode{}, false},
		{"HCCL_RDMA_QPS_PER_CONNECTION is set to [4] but something else.", QPMode{}, false},
		{"HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]", QPMode{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseQPMode([]byte(tc.msg))
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseQPMode(%q) = %+v %v, want %+v %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
	if Classify([]byte("HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]")) != KindSettings {
		t.Error("the default settings line must stay a settings line")
	}
}
