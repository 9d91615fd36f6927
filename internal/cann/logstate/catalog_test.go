package logstate

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

func TestCatalogConsistent(t *testing.T) {
	stages := map[string]bool{parse.StageInit: true, parse.StageLinkSetup: true, parse.StageExecution: true, parse.StageUnknown: true}
	roles := map[Role]bool{RoleOwn: true, RoleWaiting: true, RoleEither: true}
	audiences := map[Audience]bool{AudienceJobOwner: true, AudienceInfra: true}
	timers := map[Timer]bool{TimerConnect: true, TimerExec: true, TimerRDMA: true}
	first := map[string]Code{}
	for _, c := range Codes() {
		if len(c.Code) != 6 || c.Code[0] != 'E' {
			t.Errorf("bad code %q", c.Code)
		}
		if _, ok := first[c.Code]; ok {
			t.Errorf("%s: two rows in the code table", c.Code)
		}
		first[c.Code] = c
		if !stages[c.Stage] {
			t.Errorf("%s: bad stage %q", c.Code, c.Stage)
		}
		if c.Title == "" {
			t.Errorf("%s: no title", c.Code)
		}
		if !roles[c.Role] {
			t.Errorf("%s: bad role %q", c.Code, c.Role)
		}
		if !audiences[c.Audience] {
			t.Errorf("%s: bad audience %q", c.Code, c.Audience)
		}
		// A rank's own failure is not produced by a timer; every other
		// role needs one to bound how late it can follow its root.
		if (c.Role == RoleOwn) != (c.Timer == TimerNone) || c.Timer != TimerNone && !timers[c.Timer] {
			t.Errorf("%s: role %s with timer %q", c.Code, c.Role, c.Timer)
		}
		if c.Role == RoleWaiting && c.Why == "" {
			t.Errorf("%s: a waiting code says why (what the rank saw of its peers)", c.Code)
		}
	}
	for _, f := range Catalog() {
		if _, ok := first[f.Code]; !ok {
			t.Errorf("catalog row of %s: the code is not in the code table (codes.go)", f.Code)
		}
		if len(f.Fingerprint) == 0 {
			t.Errorf("catalog row of %s without a fingerprint: a code without wordings needs only its row in codes.go", f.Code)
		}
		for _, p := range f.Fingerprint {
			if p == "" {
				t.Errorf("%s: empty fingerprint part", f.Code)
			}
		}
	}
	// The codes the alert rules key on must be in the catalog so that
	// their series exist at 0 before the first event.
	for _, code := range []string{"EI0011", "EI0006", "EI0019", "EI0020", "EI0005", "EL0004", "EI0002", "EI0013"} {
		if _, ok := first[code]; !ok {
			t.Errorf("catalog lacks %s", code)
		}
	}
}

// TestFaultTableJSON: the mixin's form of the table has every code once,
// in table order, with its role and audience.
func TestFaultTableJSON(t *testing.T) {
	b, err := FaultTableJSON()
	if err != nil {
		t.Fatal(err)
	}
	var got faultTableJSON
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Codes) != len(codes) {
		t.Fatalf("%d codes, want %d", len(got.Codes), len(codes))
	}
	for i, c := range codes {
		g := got.Codes[i]
		if g.Code != c.Code || g.Role != c.Role || g.Audience != c.Audience || g.Stage != c.Stage {
			t.Errorf("row %d: %+v, want %s %s %s %s", i, g, c.Code, c.Stage, c.Role, c.Audience)
		}
	}
}

// TestRoleOf: the settled codes (HCOMM 8958adbf, codes.go) and the default
// for a code outside the table.
func TestRoleOf(t *testing.T) {
	for code, want := range map[string]Role{
		"EI0011": RoleOwn, "EI0006": RoleWaiting, "EI0002": RoleWaiting,
		"EI0012": RoleEither, "EI0013": RoleEither, "EI9999": RoleEither, "EI0009": RoleEither,
		"EI0099": RoleEither,
	} {
		if got, _ := RoleOf(code); got != want {
			t.Errorf("RoleOf(%s) = %s, want %s", code, got, want)
		}
	}
}

// TestCatalogFingerprints maps one real or realistic plog message per
// fingerprint row to its code, and checks that every row is exercised.
func TestCatalogFingerprints(t *testing.T) {
	tests := []struct{ msg, code string }{
		// The groupRank and opData lines of the same timeout count no
		// more (HCCL docs task_exec_stage.md prints all three).
		{"[2111665][TaskExecStage][Timeout][Host]Task run failed, groupRank information is group:[127.10.0.1%enp_60000_0_1761275812718970], user define information[], rankSize[4], rankId[0].", ""},
		{"[2111665][TaskExecStage][Timeout][Host]Task run failed, opData information is timeStamp:[2025-10-24-11:16:55.493.816], deviceId[0], index[21], count[256], reduceType[sum], src[0x12c0c0013000], dst[0x12c0c0014000], dataType[float32].", ""},
		// The heartbeat's frame of a CQE matches EI0013 (its repeats are
		// told apart after the match: TestFaultRepeats).
		{"[2040666][TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], time:[2025-09-15 08:38:12.776654]", "EI0013"},
		{"[3729526][InitGroupStage][EnvConfig]errNo[0x0000000005000001] In init env variable param, parse HCCL_RDMA_SL failed. errno[1]", "EI0001"},
		{"[5160][TaskExceptionHandler][Callback]Task run failed, base information is streamID:[90], taskID[686], taskType[Notify Wait], tag[x]", "EI0002"},
		{"[858274][TaskExecStage][Timeout][HOST]Task run failed, base information is streamID:[1740], taskID[23], tag[AllReduce_127.0.0.1%enp_60000_0_1765367469951573], AlgType(level 0-1-2):[fullmesh-ring-NHR].", "EI0002"},
		{"[1104629][InitGroupStage][RanktableConfig]errNo[0x0000000005010001] path /ranktable.json is not a valid real path", "EI0004"},
		{"[5160]CMD information count check fail. local[16512], remote[8320]", "EI0005"},
		{"[3743951][InitChannelStage][ParameterConflict]CMD information tag check fail. local[AllGather_x], remote[AllReduce_x]", "EI0005"},
		{"[3743951][InitChannelStage][ParameterConflict]op type differs", "EI0005"},
		{"[18744][Wait][LinkEstablish]wait socket establish timeout, role[1] rank[1] timeout[120 s]", "EI0006"},
		{"[5160][InitChannelStage][VersionConflict]The ops (cann-hccl) versions are inconsistent.", "EI0008"},
		{"[HrtRaQpCreateWithAttr] ra qp create fail, reason: out of memory. qpInfo:[x], return: ret[12]", "EI0011"},
		// HCOMM heartbeat.cc: one line per error CQE, each raising EI0013.
		{"[8970][Heartbeat]find cqe error, localIP[127.11.0.1], remoteIP[127.11.0.2]", "EI0013"},
		{"[5151][InitGroupStage][RanktableCheck]devices have same superDeviceId[0x3000000] in superPod[super_pod_id_0]", "EI0014"},
		{"[1041362][InitGroupStage][RanktableDetect]topo exchange server get socket timeout! timeout[120 s]", "EI0015"},
		{"[7988][InitGroupStage][RanktableDetect]topo exchange agent get socket timeout! timeout[120] ", "EI0015"},
		{"[1][InitChannelStage][RanktableDetect] socket type[2], listen on ip[192.168.1.100] and specific port[50001] fail. Please check the port status and whether the port is being used by other process.", "EI0019"},
		{"[1][InitGroupStage][RanktableDetect] socket type[0], listen on ip[192.168.2.199] and specific port[16666] fail. Please check the port status and whether the port is being used by other process.", "EI0020"},
		{"[1][InitGroupStage][RanktableDetect] socket type[1], listen on ip[192.168.2.199] and specific port[16666] fail. Please check the port status and whether the port is being used by other process.", "EI0020"},
		{"[5151][DeviceMem][Alloc]rt_malloc error, ret[207001], size[2097152000 Byte]", "EL0004"},
		// A5: the QP-create line has no "out of memory"; ROCE_ENOMEM_RET (328100) makes it EI0011.
		{"[Create][RaQp]errNo[0x0000000005000013] ra qp create fail. call RaGetNotifyBaseAddr, params: rdmaHandle[0x1], flag[0], qpMode[2], connHandle[(nil)]. return: ret[328100]", "EI0011"},
		// A QP-create failure without "out of memory" or that code is EI0007, not EI0011.
		{"[Create][RaQp]errNo[0x0000000005000013] ra qp create fail. params: flag[0], qpMode[2]. return: ret[-1]", "EI0007"},
		// Exact-size EI0011 (HCOMM from Jan 2026) and the EI0007 DeviceMemory form before it.
		{"[5151][Malloc][Mem] rtMalloc failed, Reason: out of memory, return[207001], para: devPtrAddr[0x0], size[420478976 Byte].", "EI0011"},
		{"[5151][Malloc][Mem]errNo[0x0000000005000003] aclrtMalloc failed, return[207001], para: devPtrAddr[0x0], size[420478976 Byte], isTsMem[0].", "EI0007"},
		// HCOMM-HEAD wordings (format strings of libochao-huawei/hcomm @ 8958adbf03).
		{"[Malloc][Mem]errNo[0x0000000005000004] aclrtMallocWithCfg failed, return[507899], para: devPtr[(nil)], size[420478976 Byte].", "EI0007"},      // adapter_rts.cc:713
		{"[InitGroupStage][Resource]errNo[0x0000000005000004] rtMalloc failed, return[107002], para: devPtrAddr[(nil)], size[1048576 Byte].", "EI0007"}, // adapter_rts.cc:790
		{"[InitGroupStage][Resource]rdma init failed because RoCE link status is down, please check the network adapter configuration.", "EI0009"},      // adapter_hccp.cc:975
		{"[Connect][Qp]get qp status timeout_=[120000 ms], qp_status=[0]", "EI0009"},                                                                    // transport_ibverbs.cc:897
		{"[Connect][Qp]get qp status timeout_=[120000 ms], qp_status=[0], index[1]", "EI0009"},                                                          // transport_ibverbs.cc:944
		{"[Create][RaAiQp]errNo[0x0000000005000013] ra ai qp create fail. return: ret[-1]", "EI0007"},                                                   // adapter_hccp.cc:3116
		{"[InitGroupStage][Resource]errNo[0x0000000005000013] ra qp modify fail. return: ret[-1]", "EI0007"},                                            // adapter_hccp.cc:237 (resource qp_state)
		{"this package does not support hrtRaAiQpCreate for device, please change new package", "EI0007"},                                               // adapter_hccp.cc:3098
		{"[Create][RaQp]errNo[0x0000000005000013] ra qp create with attrs fail. qpInfo:[x], return: ret[-12]", "EI0007"},                                // adapter_hccp.cc:3054
		{"[hrtRaAiQpCreate] ra qp create fail, reason: out of memory. qpInfo:[x], return: ret[328100]", "EI0011"},                                       // CHK_OOM_RET, adapter_hccp.cc:42
		{"[InitGroupStage][Resource]create qp failed, localDeviceId[3], qpMode[2]", "EI0007"},                                                           // transport_ibverbs.cc:717
		{"[Create][Qp]create qp failed, localDeviceId[3], qpMode[2]", "EI0007"},                                                                         // HCOMM-init transport_ibverbs.cc:623
		{"[InitGroupStage][RanktableCheck]the IP address in the ranktable is inconsistent with the IP address of the network adapter.", "EI0014"},       // adapter_hccp.cc:946
		// Lines that must not map.
		{"[hrtRaQpCreateWithAttrs]create qp failed because of memory error, you can try to unset HCCL_RDMA_PCIE_DIRECT_POST_NOSTRICT and execute again", ""}, // adapter_hccp.cc:3047, before the EI0011 line CCLBufferManager's failure line cannot print on an out-of-memory.
		{"[5151][CCLBufferManager][CreateCCLbuffer]Create ccl buffer size[2147483648] fail,please check environmental variable HCCL_BUFFSIZE.", ""},
		{"[18744][InitChannelStage][Timeout]Transport init error! createLink para:rank[1]", ""},
		{"[18744][Wait][LinksEstablishCompleted] is failed. ret[9].", ""},
		{"[1041085][InitGroupStage][RanktableDetect] TopoDetect ERROR occur !!! fault_type[1]", ""},
		{"ra_hdc_lite_period_poll_cqe : [create][ra_hdc_period_poll]failed CQE status[12], wr[0]", ""},
		{"[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x1], size[209715200]", ""},
	}
	rowHit := make([]bool, len(defaultCatalog.prints))
	for _, tc := range tests {
		code, ok := defaultCatalog.match([]byte(tc.msg))
		if code != tc.code || ok != (tc.code != "") {
			t.Errorf("match(%q) = %q, want %q", tc.msg, code, tc.code)
		}
		for i, fp := range defaultCatalog.prints {
			if fp.code == code && containsAll(tc.msg, fp.parts) {
				rowHit[i] = true
				break
			}
		}
	}
	for i, hit := range rowHit {
		if !hit {
			t.Errorf("fingerprint row %d (%s %q) has no test line", i, defaultCatalog.prints[i].code, defaultCatalog.prints[i].parts)
		}
	}
}

func containsAll(msg string, parts [][]byte) bool {
	code, _ := (&catalogIndex{prints: []fingerprint{{code: "x", parts: parts}}}).match([]byte(msg))
	return code == "x"
}

// TestHCOMMHeadWordings ingests the HCOMM-HEAD error wordings
// (testdata/hcomm-head, built from the format strings; its README lists
// each line's source): a failed QP create counts once whether HCCL prints
// its cause line, its summary line or both, and an out-of-memory one counts
// as EI0011 only.
func TestHCOMMHeadWordings(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 8, 15, 12, 0, 0, 0, time.UTC)}))
	ingestTree(t, st, "testdata/hcomm-head")
	want := map[string]uint64{"EI0007/qp": 4, "EI0007/device_memory": 2, "EI0011/": 1, "EI0009/": 2, "EI0014/": 1}
	got := map[string]uint64{}
	for k, fc := range st.faults {
		if k.source != FaultSourcePlog {
			t.Errorf("source %q", k.source)
		}
		got[k.code+"/"+k.resource] += fc.count
	}
	if !maps.Equal(got, want) {
		t.Errorf("faults %v, want %v", got, want)
	}
}

// TestScreenEI0007Resource labels real EI0007 screen reports (vllm-ascend
// #2754 old layout, repeated by the RuntimeError; #5947 new layout) with
// their resource, and keeps other codes' label empty.
func TestScreenEI0007Resource(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 17, 0, 0, 0, 0, time.UTC)}))
	ingestTree(t, st, "testdata/screen-log")
	var qp, other uint64
	for k, fc := range st.faults {
		switch {
		case k.code == "EI0007" && k.resource == ResourceQP:
			qp += fc.count
		case k.resource != "":
			other += fc.count
		}
	}
	if qp != 2 || other != 0 {
		t.Errorf("EI0007 resource=qp %d (want 2), other codes with a resource %d (want 0)", qp, other)
	}
}

// TestQPIncidentPairing: interleaved threads of one process pair each
// summary line with one open cause line; a summary long after its cause
// counts on its own; the table of open incidents stays bounded.
func TestQPIncidentPairing(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 8, 15, 12, 0, 0, 0, time.UTC)}))
	src := &Source{Path: "/log/debug/plog/plog-9_1.log", Dir: "/log", Kind: SourcePlog}
	line := func(ts, msg string) {
		st.Ingest(src, []byte("[ERROR] HCCL(9,python3):2026-08-15-"+ts+" [x.cc:1] [9]"+msg))
	}
	line("10:00:00.000.001", "[Create][RaAiQp]errNo[0x1] ra ai qp create fail. return: ret[-1]")
	line("10:00:00.000.002", "[Create][RaAiQp]errNo[0x1] ra ai qp create fail. return: ret[-1]")
	line("10:00:00.000.003", "[InitGroupStage][Resource]create qp failed, localDeviceId[0], qpMode[2]")
	line("10:00:00.000.004", "[InitGroupStage][Resource]create qp failed, localDeviceId[0], qpMode[2]")
	line("10:00:00.000.005", "[InitGroupStage][Resource]create qp failed, localDeviceId[0], qpMode[2]") // third: no cause left
	line("10:01:00.000.001", "[Create][RaQp]errNo[0x1] ra qp create fail. params: flag[0], qpMode[2]. return: ret[-1]")
	line("10:02:00.000.001", "[InitGroupStage][Resource]create qp failed, localDeviceId[0], qpMode[2]") // a minute later: its own
	if n := st.faults[faultKey{code: "EI0007", resource: ResourceQP, source: FaultSourcePlog}].count; n != 5 {
		t.Errorf("EI0007 qp = %d, want 5", n)
	}
	for i := range maxOpenIncidents + 10 {
		st.mu.Lock()
		st.countsAsNew(&defaultCatalog.prints[0], "/d", i, time.Unix(0, 0))
		st.mu.Unlock()
	}
	if len(st.incidents) > maxOpenIncidents {
		t.Errorf("%d open incidents", len(st.incidents))
	}
}

// TestFaultSeriesBornAtFirstEvent: an empty state serves no fault series
// (the alerts see a series born at its first event through
// hccl:fault_events:new10m, alerts/tests/faults.yml); an event makes its
// code's series for its source only.
func TestFaultSeriesBornAtFirstEvent(t *testing.T) {
	st := NewState(Options{})
	if n := testutil.CollectAndCount(st, "hccl_fault_events_total"); n != 0 {
		t.Errorf("%d fault series before any event, want 0", n)
	}
	st.Ingest(&Source{Path: "/screen/train.log", Kind: SourceScreen},
		[]byte("EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time."))
	if n := testutil.CollectAndCount(st, "hccl_fault_events_total"); n != 1 {
		t.Errorf("%d fault series after one screen event, want 1", n)
	}
}

// A failed QP state change in a plog (adapter_hccp.cc:237, after EI0007
// resource_info ModifyQp) is EI0007 resource="qp_state": the QP exists, so
// it is not the exhaustion HCCLQPResourceExhausted reads (resource="qp").
func TestPlogModifyQpIsQPState(t *testing.T) {
	st := NewState(testOptions(identClock()))
	src := &Source{Path: "/log/run/plog/plog-156_1.log", Kind: SourcePlog, Dir: "/log", PID: 156}
	ingestAll(st, src, "[ERROR] HCCL(156,python3):2026-01-07-10:00:01.000.000 [adapter_hccp.cc:237] [156][InitGroupStage][Resource]errNo[0x0000000005000013] ra qp modify fail. return: ret[-1]")
	got := faultLines(t, st, "EI0007")
	if len(got) != 1 || !strings.Contains(got[0], `resource="qp_state"`) {
		t.Fatalf("EI0007 series %v, want one with resource=\"qp_state\"", got)
	}
}
