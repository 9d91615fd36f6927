package parse

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sampleLines returns the lines of the captured logs in testdata, the seed
// corpus of every fuzz test.
func sampleLines(tb testing.TB) [][]byte {
	tb.Helper()
	files, _ := filepath.Glob("../logstate/testdata/cann-log/*/plog/*.log")
	screens, _ := filepath.Glob("../logstate/testdata/screen-log/*.log")
	var out [][]byte
	for _, f := range append(files, screens...) {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, bytes.Split(b, []byte("\n"))...)
	}
	return out
}

func FuzzPlogLine(f *testing.F) {
	for _, l := range sampleLines(f) {
		f.Add(l)
	}
	f.Add([]byte("[WARNING] HCCL(1,):2025-10-21 07:56:47.198.454 [a.cc:1] [2]ErrToWarn: x"))
	f.Add([]byte("[ERROR] HCCP(1,p):2025-10-21-07:56:47.198.454 [a.c:1]tid:5,x"))
	f.Add([]byte("[1] 2(3,4):5"))
	f.Fuzz(func(t *testing.T, line []byte) {
		var p PlogLine
		if !ParsePlog(line, &p) {
			return
		}
		if p.PID < 0 || len(p.Module) == 0 || len(p.Time) == 0 {
			t.Fatalf("accepted line with bad fields: %+v", p)
		}
		if len(p.Msg) > 0 && !bytes.HasSuffix(line, p.Msg) {
			t.Fatalf("message is not the end of the line")
		}
		ParsePlogTime(p.Time, time.UTC)
		StageKeywords(p.Msg)
		ParseCommunicatorKeyInfo(p.Msg)
		ParseLocalRankKeyInfo(p.Msg)
		CommDestroy(p.Msg)
	})
}

func FuzzHCCLEnv(f *testing.F) {
	for _, l := range sampleLines(f) {
		var p PlogLine
		if ParsePlog(l, &p) {
			f.Add(p.Msg)
		}
	}
	f.Add([]byte("[HCCL_ENV] A set by default to [1], B set by default to [0]"))
	f.Add([]byte(`Env config "HCCL_BUFFSIZE" is parsed.`))
	f.Add([]byte("[HCCL_ENV] X is not set, default value[1]"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, st := range ParseHCCLEnv(msg) {
			if envName(st.Name) != st.Name {
				t.Fatalf("setting with a name that is not a variable: %q", st.Name)
			}
			switch st.SetBy {
			case SetByDefault, SetByEnvironment, SetByGEOption, SetByUnset:
			default:
				t.Fatalf("bad set_by %q", st.SetBy)
			}
		}
	})
}

func FuzzScreenLine(f *testing.F) {
	for _, l := range sampleLines(f) {
		f.Add(l)
	}
	f.Add([]byte("RuntimeError: EI0007: [rank1]: EI0009:"))
	f.Add([]byte("EI0007: Failed to allocate resource[qp] with info [aicpu rank:7]"))
	f.Add([]byte("Allocation_Failure(EI0007): Failed to allocate resource[DeviceMemory"))
	f.Add([]byte("resource[]resource[HostMemory]"))
	// EI0007 since HCOMM f52cf295b0: no brackets.
	f.Add([]byte("EI0007: [PID: 7301] x Failed to allocate resource qp with info CreateOneQp. Reason: Resources are exhausted."))
	f.Add([]byte("Failed to allocate resource  with info "))
	f.Add([]byte("allocate resource DeviceMemory with info"))
	f.Add([]byte("(EngineCore_DP0 pid=96) ERROR 03-02 15:44:01 [core.py:1006] RuntimeError: EI0011: [PID: 1] x"))
	f.Add([]byte("[rank0]: [PID: 1] 2025-11-03-20:18:46.447.213 T(EI0011):"))
	f.Add([]byte("ERROR 04-30 03:58:27 [x]"))
	f.Add([]byte("[PID: 1] 2"))
	f.Add([]byte("echo EI0011: x"))
	// The shapes of vllm-ascend #7384 (watchdog), #5493 (untitled), #516
	// (older vLLM logger) and aclGetRecentErrMsg().
	f.Add([]byte("[rank11]:[E313 06:55:06.502248200 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread terminated with exception: [PID: 335] 2026-03-13-06:55:06.896.485 Execution_Error_ROCE_CQE(EI0013): An error"))
	f.Add([]byte("  what():  [Rank 1] HCCL watchdog thread terminated with exception: [PID: 335] x"))
	f.Add([]byte("EH9999[PID: 366] 2025-12-29-13:22:34.092.455 (EH9999):  [Query]"))
	f.Add([]byte("EH9999[PID: 366] 2025-12-29-13:22:34.092.455 (EH999"))
	f.Add([]byte("[ERROR] RecentErrMsg: [PID:646612] 2026-01-24-11:53:44.671.727 AclNN_Parameter_Error(EZ1001): Expected"))
	f.Add([]byte("(NPURayWorkerWrapper pid=13319, ip=10.240.34.141) ERROR 04-14 19:53:35 worker_base.py:581] EK9999: Inner Error!"))
	f.Add([]byte("[E1"))
	f.Add([]byte("[Rank 12"))
	f.Fuzz(func(t *testing.T, line []byte) {
		code, at := FindFaultCode(line)
		if code != nil && (len(code) != 6 || code[0] != 'E' || !bytes.Equal(line[at:at+6], code)) {
			t.Fatalf("bad code %q at %d", code, at)
		}
		if code != nil && !ContainsFaultCodeShape(line) {
			t.Fatalf("report %q not seen by the pre-check", line)
		}
		// A report keeps its code and offset whatever text follows it.
		if code != nil {
			ext := append(append([]byte(nil), line...), " EI0011: x"...)
			if c2, at2 := FindFaultCode(ext); !bytes.Equal(c2, code) || at2 != at {
				t.Fatalf("appending text changed the report of %q: %q at %d", line, c2, at2)
			}
		}
		MentionsHCCLAllocation(line)
		MentionsCommKernelTimeout(line)
		ScreenPID(line)
		switch r := ScreenResource(line); r {
		case "", ResourceQP, ResourceDeviceMemory, ResourceHostMemory, ResourceOther:
		default:
			t.Fatalf("resource %q outside the fixed set", r)
		}
		if raw := FindPlogTime(line); raw != nil {
			if _, ok := ParsePlogTime(raw, time.UTC); !ok && looksPlogTime(raw) {
				t.Logf("time-shaped but invalid: %q", raw)
			}
		}
	})
}

func FuzzCRI(f *testing.F) {
	for _, l := range sampleLines(f) {
		f.Add(append([]byte("2025-11-03T12:18:46.447213000Z stderr F "), l...))
	}
	f.Add([]byte("2025-11-03T12:18:46Z stdout P "))
	f.Add([]byte(`{"log":"EI0011: x\n","stream":"stderr","time":"2025-11-03T12:18:46Z"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var c CRILine
		if ParseCRI(line, &c) {
			if !bytes.HasSuffix(line, c.Msg) || (string(c.Stream) != "stdout" && string(c.Stream) != "stderr") {
				t.Fatalf("bad CRI parse %+v", c)
			}
			ParseRFC3339(c.Time)
		}
		if IsDocker(line) {
			DockerComplete(line)
			_, _ = ParseDocker(line)
		}
	})
}

// FuzzHCCLLines runs every HCCL message parser on arbitrary messages,
// seeded with the wordings of every era.
func FuzzHCCLLines(f *testing.F) {
	for _, w := range Wordings {
		var p PlogLine
		if ParsePlog([]byte(w.Sample), &p) {
			f.Add(p.Msg)
		}
	}
	f.Add([]byte("create hccl transport:communicator[_], remote rank[1],transporttype[ROCE], rdma qpn["))
	f.Add([]byte("[Load] comm config of []: bufferSize[18446744073709551616]"))
	f.Add([]byte("[Load] comm config info of [g]: configSize[136], version[8], opExpansionMode[3]"))
	f.Add([]byte("[Load] comm config info of [g]: opExpansionMode[18446744073709551616]"))
	f.Add([]byte("create hccl transport:communicator[w3_mc2], local rank[0], remote rank[1], transporttype[ROCE], rdma qpn[5]"))
	f.Add([]byte("create hccl transport:communicator[AllReduce_wNHRAllReduceMeshExecutor_host_Capture3], local rank[0], remote rank[1], transporttype[ROCE], rdma qpn[5]"))
	f.Add([]byte("create hccl transport:communicator[worldCommSendRecv_0_8_wSendExecutor_host], local rank[0], remote rank[8], transporttype[ROCE], rdma qpn[5]"))
	f.Add([]byte(" [HCCL_ALG]: [SelectAlg] newTag[x] opExpansionMode[] isCapture[1]"))
	f.Add([]byte("[SelectAlg] newTag[AllReduce_w] algName[] moduleNum_[99999999999]"))
	f.Add([]byte("[ConstructQpAttrs][attr]sendCqDepth[-1], recvCqDepth[0], max_send_wr[2147483648], max_recv_wr[1]"))
	f.Add([]byte("[HCCL_TRACE][ReleaseCCLbuffer]Release cclBuffer. buffer ptr[0x1], size[]"))
	f.Add([]byte("[HCCL_TRACE][CreateCommAIVbuffer] OffloadModeX"))
	f.Add([]byte("HCCL_RDMA_QPS_PER_CONNECTION is set to [] but it is not effective in offline mode"))
	f.Add([]byte("[MultiQp][MulQpInfo] Init Success MultiQp config from type[x]"))
	f.Add([]byte("(EI0011): Failed to allocate 420478976 bytes of NPU memory."))
	f.Add([]byte("(EI0011): Failed to allocate 262144~3145728 bytes of NPU memory."))
	f.Fuzz(func(t *testing.T, msg []byte) {
		kind := Classify(msg)
		if c, ok := ParseCommunicator(msg); ok && (c.RankSize <= 0 || c.Identifier == "") {
			t.Fatalf("communicator without ranks or name: %+v", c)
		}
		if tr, ok := ParseTransport(msg); ok {
			if kind != KindTransport || tr.Tag == "" || tr.RemoteRank < 0 {
				t.Fatalf("transport %+v from a %s line", tr, kind)
			}
			_ = tr.Identifier()
		}
		ParseCCLBuffer(msg)
		if a, ok := ParseEI0011Allocation(msg); ok && (a.SizeBytes < 0 || a.QPRange == (a.SizeBytes > 0)) {
			t.Fatalf("EI0011 allocation %+v", a)
		}
		if cc, ok := ParseCommConfig(msg); ok && (kind != KindCommConfig || cc.Name == "") {
			t.Fatalf("comm config %+v from a %s line", cc, kind)
		}
		if phy, ok := ListenDevice(msg); ok && (kind != KindListen || phy < 0) {
			t.Fatalf("listener device %d from a %s line", phy, kind)
		}
		if tr, ok := ParseTransport(msg); ok {
			if ot, ok := ParseTag(tr.Tag, []string{"w"}); ok && ot.IdentifierKnown && ot.Identifier != "w" {
				t.Fatalf("tag %q tied to %q", tr.Tag, ot.Identifier)
			}
		}
		if _, ok := ParseAIVBuffer(msg); ok && kind != KindAIVBuffer {
			t.Fatalf("AIV buffer line from a %s line", kind)
		}
		if _, ok := ParseCCLRelease(msg); ok && kind != KindCCLRelease {
			t.Fatalf("cclBuffer release from a %s line", kind)
		}
		if sa, ok := ParseSelectAlg(msg); ok && (kind != KindSelectAlg || sa.NewTag == "" || sa.AlgName == "" && sa.ExpansionMode == "") {
			t.Fatalf("SelectAlg %+v from a %s line", sa, kind)
		}
		if a, ok := ParseQPAttrs(msg); ok && (kind != KindQPAttrs || a.SendCQDepth <= 0 || a.MaxSendWR <= 0) {
			t.Fatalf("QP attrs %+v from a %s line", a, kind)
		}
		if m, ok := ParseQPMode(msg); ok {
			if kind != KindQPMode || (!m.Offline && !m.NoMultiQP && m.MultiQPFrom == "") || len(m.MultiQPFrom) > maxMultiQPFrom {
				t.Fatalf("QP mode %+v from a %s line", m, kind)
			}
		}
	})
}
