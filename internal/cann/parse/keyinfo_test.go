package parse

import "testing"

func TestParseCommunicatorKeyInfo(t *testing.T) {
	msg := "[858941][Communicator Key Info]identifier[127.0.0.1%enp_60000_0_1765367607599032] rankSize[8] serverNum[1] moduleNum[1] superPodNum[0]"
	got, ok := ParseCommunicatorKeyInfo([]byte(msg))
	want := CommunicatorInfo{Identifier: "127.0.0.1%enp_60000_0_1765367607599032", RankSize: 8, ServerNum: 1}
	if !ok || got != want {
		t.Fatalf("got %+v %v, want %+v", got, ok, want)
	}
	for _, bad := range []string{
		"[Communicator Key Info]identifier[] rankSize[8] serverNum[1]",
		"[Communicator Key Info]identifier[x] rankSize[a] serverNum[1]",
		"[Communicator Key Info]identifier[x] rankSize[8]",
		"[Communicator Key Info]identifier[x rankSize[8] serverNum[1]",
		"identifier[x] rankSize[8] serverNum[1]",
		"[Communicator Key Info]identifier[x] rankSize[99999999999] serverNum[1]",
	} {
		if got, ok := ParseCommunicatorKeyInfo([]byte(bad)); ok {
			t.Errorf("ParseCommunicatorKeyInfo(%q) = %+v, want failure", bad, got)
		}
	}
}

func TestParseLocalRankKeyInfo(t *testing.T) {
	msg := "[858941][LocalRank Key Info]userRank[6] hostIp[127.0.0.1] devicePhyId[6] server[127.0.0.1] deviceIp[0.0.0.0]"
	got, ok := ParseLocalRankKeyInfo([]byte(msg))
	if !ok || got != (LocalRankInfo{UserRank: 6, DevicePhyID: 6, SuperPodMode: -1, StandardCard: -1}) {
		t.Fatalf("got %+v %v", got, ok)
	}
	if got, ok := ParseLocalRankKeyInfo([]byte("[LocalRank Key Info]userRank[3]")); !ok || got.DevicePhyID != -1 {
		t.Errorf("without devicePhyId: %+v %v", got, ok)
	}
}

func TestCommDestroy(t *testing.T) {
	if id, ok := CommDestroy([]byte("[1]Entry-HcclCommDestroy: op_base comm destroy begin")); !ok || id != "" {
		t.Errorf("got %q %v", id, ok)
	}
	if id, ok := CommDestroy([]byte("[1]Entry-HcclCommDestroy: identifier[g1] begin")); !ok || id != "g1" {
		t.Errorf("got %q %v", id, ok)
	}
	// HCOMM-HEAD op_base.cc:3744: printed once the communicator is gone.
	if id, ok := CommDestroy([]byte("Entry-HcclCommDestroy op_base comm destroy complete, take time [5210]us, group[group_name_3], deviceLogicId[0].")); !ok || id != "group_name_3" {
		t.Errorf("got %q %v", id, ok)
	}
	if _, ok := CommDestroy([]byte("[1]Entry-HcclCommInitRootInfoInner:ranks[4]")); ok {
		t.Error("init line taken for destroy")
	}
}

func TestBracketField(t *testing.T) {
	msg := []byte("userRank[6] rank[2] xrank[9]")
	if v, ok := BracketField(msg, "rank"); !ok || string(v) != "2" {
		t.Errorf("rank = %q %v", v, ok)
	}
	if _, ok := BracketField(msg, "nothing"); ok {
		t.Error("found missing field")
	}
}

func TestBracketInt(t *testing.T) {
	msg := []byte("rankSize[8] serverNum[] userRank[-1] big[1234567890] hex[0x10] ok[123456789] rank[3]")
	for _, tc := range []struct {
		name string
		want int
		ok   bool
	}{
		{"rankSize", 8, true},
		{"rank", 3, true}, // not the tail of userRank
		{"ok", 123456789, true},
		{"serverNum", 0, false}, // empty
		{"userRank", 0, false},  // negative
		{"big", 0, false},       // more than 9 digits
		{"hex", 0, false},
		{"absent", 0, false},
	} {
		if n, ok := BracketInt(msg, tc.name); n != tc.want || ok != tc.ok {
			t.Errorf("BracketInt(%s) = %d, %v; want %d, %v", tc.name, n, ok, tc.want, tc.ok)
		}
	}
}

func TestStageKeywords(t *testing.T) {
	tests := []struct{ msg, stage, reason string }{
		{"[1041362][InitGroupStage][RanktableDetect]topo exchange server get socket timeout!", StageInit, "RanktableDetect"},
		{"[3729526][InitGroupStage][EnvConfig]errNo[0x0000000005000001] In init env", StageInit, "EnvConfig"},
		{"[18744][InitChannelStage][Timeout]Transport init error!", StageLinkSetup, "Timeout"},
		{"[3743951][InitChannelStage][ParameterConflict]CMD information tag check fail.", StageLinkSetup, "ParameterConflict"},
		{"[858274][TaskExecStage][Timeout][HOST]Task run failed", StageExecution, "Timeout"},
		{"[2040666][TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12]", StageExecution, "HeartbeatAbnormal"},
		{"[1][TaskExecStage][Not Supported]x", StageExecution, "NotSupported"},
		{"[1][TaskExecStage][Whatever]x", StageExecution, StageUnknown},
		{"[18744][Wait][LinkEstablish]wait socket establish timeout", StageUnknown, StageUnknown},
		{"[1][OtherStage][Timeout]", StageUnknown, StageUnknown},
		{"Stage][", StageUnknown, StageUnknown},
		{"[InitGroupStage][", StageUnknown, StageUnknown},
		// Socket-listen failures print the level-1 keyword swapped
		// (HCOMM hccl_socket.cc): the stage follows the socket type.
		{"[1][InitChannelStage][RanktableDetect] socket type[2], listen on ip[192.168.1.100] and specific port[50001] fail. Please check the port status", StageInit, "RanktableDetect"},
		{"[1][InitGroupStage][RanktableDetect] socket type[0], listen on ip[192.168.2.199] and specific port[16666] fail. Please check the port status", StageLinkSetup, "RanktableDetect"},
		{"[1][InitGroupStage][RanktableDetect] socket type[1], listen on ip[192.168.2.199] and specific port[16666] fail.", StageLinkSetup, "RanktableDetect"},
	}
	for _, tc := range tests {
		stage, reason := StageKeywords([]byte(tc.msg))
		if stage != tc.stage || reason != tc.reason {
			t.Errorf("StageKeywords(%q) = %s/%s, want %s/%s", tc.msg, stage, reason, tc.stage, tc.reason)
		}
	}
}
