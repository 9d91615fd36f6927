package logstate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestScreenCodesHCCLAndOthers: only HCCL's reports are HCCL faults.
// Other components' codes (an operator's EZ9999, the runtime's EE1001, a
// vector operator's E89999, an EL0004 HCCL did not request) are counted in
// ascend_cann_fault_events_total, a text mention of a code nowhere; an
// EL0004 whose report or traceback names HCCL is HCCL's; an MC2 kernel's
// 507014 is a communication timeout, not a root cause.
func TestScreenCodesHCCLAndOthers(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	feed := func(ns, pod string, lines ...string) {
		src := &Source{Path: "/var/log/pods/" + ns + "_" + pod + "/c/0.log", Kind: SourceScreen, Namespace: ns, Pod: pod, Container: "c"}
		for _, l := range lines {
			st.Ingest(src, []byte(l))
		}
	}
	feed("team-a", "a-0",
		"EZ9999: [PID: 6140] 2026-01-07-10:00:01.009.508 Op MatmulAllReduce has 1 uncontiguous input",
		`+ echo "EI0011: is what an out-of-memory QP prints"`,
		"grep EI0011: /logs/train.log",
	)
	feed("team-b", "b-0",
		"[PID: 10] 2026-01-07-10:00:02.000.000 Runtime_Error(EE1001): The argument is invalid.",
		"E89999: [PID: 10] 2026-01-07-10:00:03.000.000 op failed",
	)
	// EL0004 twice: once HCCL's (its traceback), once not.
	feed("llm", "w-0",
		"EL0004: [PID: 316198] 2026-01-07-10:00:04.827.496 Failed to allocate memory.",
		"        Possible Cause: Available memory is insufficient.",
		"        TraceBack (most recent call last):",
		"        Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module. ret = 2",
		"step 1 loss 2.0",
	)
	feed("llm", "w-1",
		"EL0004: [PID: 3132] 2026-01-07-10:00:05.417.528 Failed to allocate memory.",
		"        TraceBack (most recent call last):",
		"        alloc device memory failed, runtime result = 207001",
		"[PID: 4906] 2026-01-07-10:00:06.267.772 Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by HCCL module.",
	)
	feed("moe", "m-0",
		"EZ9999: [PID: 77] 2026-01-07-10:00:07.000.000 The error from device(chipId:0, dieId:0), serial number is 5.",
		"RuntimeError: aclnnMoeDistributeDispatchV2 failed, error code is 507014",
	)
	got := string(exposition(t, st))
	for _, want := range []string{
		`ascend_cann_fault_events_total{code="EZ9999",container="c",namespace="team-a",pod="a-0",reason="",source="screen"} 1`,
		`ascend_cann_fault_events_total{code="EE1001",container="c",namespace="team-b",pod="b-0",reason="",source="screen"} 1`,
		`ascend_cann_fault_events_total{code="E89999",container="c",namespace="team-b",pod="b-0",reason="",source="screen"} 1`,
		`ascend_cann_fault_events_total{code="EL0004",container="c",namespace="llm",pod="w-1",reason="",source="screen"} 1`,
		`ascend_cann_fault_events_total{code="EZ9999",container="c",namespace="moe",pod="m-0",reason="comm_kernel_timeout",source="screen"} 1`,
		`hccl_fault_events_total{code="EL0004",container="c",hccl_job="llm/w-0",namespace="llm",pod="w-0",resource="",source="screen",stage="init"} 1`,
		`hccl_fault_events_total{code="EL0004",container="c",hccl_job="llm/w-1",namespace="llm",pod="w-1",resource="",source="screen",stage="init"} 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "hccl_fault_events_total{") && !strings.HasSuffix(line, " 0") && !strings.Contains(line, `code="EL0004"`) {
			t.Errorf("an HCCL fault from other components' codes or a mention: %s", line)
		}
		if strings.HasPrefix(line, "hccl_fault_") && (strings.Contains(line, "EZ9999") || strings.Contains(line, "EE1001") || strings.Contains(line, "E89999")) {
			t.Errorf("another component's code in an HCCL series: %s", line)
		}
	}
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// TestFaultJobIsTheCommunicator: a fault whose process the logs tie to a
// communicator belongs to that communicator's job, on every node; its
// screen report (same pid, the pod of the process's device) too.
func TestFaultJobIsTheCommunicator(t *testing.T) {
	opts := testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)})
	opts.PodOfDevice = func(phy int) (string, string, string, bool) {
		return "train", fmt.Sprintf("llm-%d", phy), "pytorch", true
	}
	st := NewState(opts)
	for node, phy := range []int{3, 5} {
		dir := fmt.Sprintf("/node%d/ascend", node)
		src := &Source{Path: dir + "/run/plog/plog-156_1.log", Kind: SourcePlog, Dir: dir}
		for _, l := range []string{
			envLine(156, "2026-01-07-10:00:00.000.000", "HCCL_BUFFSIZE set by environment to [200]M"),
			fmt.Sprintf("[INFO] HCCL(156,python3):2026-01-07-10:00:00.100.000 [network_manager.cc:561] [156][Start][Vnic]Listen on ip[192.168.2.19], port[16666] sucess, devPhyId[%d], devLogicId[0], isAutoPort[0]", phy),
			"[INFO] HCCL(156,python3):2026-01-07-10:00:00.200.000 [x.cc:1] [156][Communicator Key Info]identifier[10.0.0.1%eth0_60000_0_1767780000] rankSize[16] serverNum[2] moduleNum[2] superPodNum[0]",
			"[INFO] HCCL(156,python3):2026-01-07-10:00:00.300.000 [x.cc:1] [156][Communicator Key Info]identifier[tp_group_1] rankSize[8] serverNum[1] moduleNum[1] superPodNum[0]",
			"[ERROR] HCCP(156,python3):2026-01-07-10:00:01.000.000 [ra_hdc.c:1] [156]ra qp create fail, out of memory",
		} {
			st.Ingest(src, []byte(l))
		}
	}
	screen := &Source{Path: "/var/log/pods/train_llm-5/pytorch/0.log", Kind: SourceScreen, Namespace: "train", Pod: "llm-5", Container: "pytorch"}
	st.Ingest(screen, []byte("[PID: 156] 2026-01-07-10:00:01.500.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 262144~3145728 bytes of NPU memory."))
	// A screen report of a pid no process of the pod's device has.
	other := &Source{Path: "/var/log/pods/train_llm-9/pytorch/0.log", Kind: SourceScreen, Namespace: "train", Pod: "llm-9", Container: "pytorch"}
	st.Ingest(other, []byte("[PID: 999] 2026-01-07-10:00:01.500.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed"))
	got := string(exposition(t, st))
	for _, want := range []string{
		`hccl_fault_events_total{code="EI0011",container="pytorch",hccl_job="10.0.0.1%eth0_60000_0_1767780000",namespace="train",pod="llm-3",resource="",source="plog",stage="link_setup"} 1`,
		`hccl_fault_events_total{code="EI0011",container="pytorch",hccl_job="10.0.0.1%eth0_60000_0_1767780000",namespace="train",pod="llm-5",resource="",source="plog",stage="link_setup"} 1`,
		`hccl_fault_events_total{code="EI0011",container="pytorch",hccl_job="10.0.0.1%eth0_60000_0_1767780000",namespace="train",pod="llm-5",resource="",source="screen",stage="link_setup"} 1`,
		`hccl_fault_events_total{code="EI0011",container="pytorch",hccl_job="train/llm-9",namespace="train",pod="llm-9",resource="",source="screen",stage="link_setup"} 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing %s\n%s", want, grepLines(got, "hccl_fault_events_total{code=\"EI0011\""))
		}
	}
}

// TestFaultSeriesExpire: a pod's fault series go FaultTTL after their
// latest event was read, counted; series without pod and job stay; a state file
// written before never brings them back.
func TestFaultSeriesExpire(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)}
	opts := testOptions(clock)
	opts.FaultTTL = time.Hour
	st := NewState(opts)
	pod := &Source{Path: "/var/log/pods/train_llm-0/c/0.log", Kind: SourceScreen, Namespace: "train", Pod: "llm-0", Container: "c"}
	bare := &Source{Path: "/data/train.log", Kind: SourceScreen}
	st.Ingest(pod, []byte("EI0011: [PID: 1] 2026-01-07-10:00:00.000.000 Failed"))
	st.Ingest(bare, []byte("EI0006: [PID: 2] 2026-01-07-10:00:00.000.000 Getting socket times out."))
	saved, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(exposition(t, st)); !strings.Contains(got, `pod="llm-0"`) {
		t.Fatalf("pod series missing before the TTL:\n%s", got)
	}
	clock.Advance(61 * time.Minute)
	got := string(exposition(t, st))
	if strings.Contains(got, `pod="llm-0"`) {
		t.Errorf("pod series still exported after the TTL:\n%s", grepLines(got, "llm-0"))
	}
	for _, want := range []string{
		"hccl_exporter_fault_series_expired_total 1", // one series: its counter and last-event time
		`hccl_fault_events_total{code="EI0006",container="",hccl_job="",namespace="",pod="",resource="",source="screen",stage="link_setup"} 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	// The pod's event can be counted again (a new pod of the same name).
	st.Ingest(pod, []byte("EI0011: [PID: 1] 2026-01-07-11:05:00.000.000 Failed"))
	if got := string(exposition(t, st)); !strings.Contains(got, `hccl_fault_events_total{code="EI0011",container="c",hccl_job="train/llm-0",namespace="train",pod="llm-0",resource="",source="screen",stage="link_setup"} 1`+"\n") {
		t.Errorf("a new event of the pod after expiry is not a fresh series:\n%s", grepLines(got, "llm-0"))
	}
	// Restoring the file written before expiry: expired at once.
	restored := NewState(opts)
	if err := restored.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	if got := string(exposition(t, restored)); strings.Contains(got, `pod="llm-0"`) || !strings.Contains(got, "hccl_exporter_fault_series_expired_total 1\n") {
		t.Errorf("restored state keeps the gone pod's series:\n%s", grepLines(got, "llm-0|expired"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range strings.Split(substr, "|") {
			if strings.Contains(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestFaultRepeats: HCCL prints one EI0013 CQE and one EI0002 timeout
// more than once; each counts once (docs/cannlog.md, repeats.go). The
// 2025 capture's only line of its CQE is the heartbeat frame (pid
// 2040034); pid 7301 has two CQEs (remotes .12 and .13), each with its
// frame and `find cqe error` lines repeated by polling; pid 7302's find
// lines come before the frame of the same CQE, and its last line, 30
// minutes later, is a new report; pid 858209 prints three callbacks of one
// timeout (HCOMM-HEAD wording), 858210 two (the 2024 Callback wording).
func TestFaultRepeats(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 8, 15, 12, 0, 0, 0, time.UTC)}))
	ingestTree(t, st, "testdata/repeats")
	want := map[string]uint64{"EI0013": 1 + 2 + 2, "EI0002": 1 + 1}
	for _, f := range st.Faults() {
		if w, ok := want[f.Code]; ok {
			if f.Count != w {
				t.Errorf("%s counted %d times, want %d (pids %v)", f.Code, f.Count, w, f.PIDs)
			}
			delete(want, f.Code)
		}
	}
	if len(want) > 0 {
		t.Errorf("not counted at all: %v", want)
	}
	var b bytes.Buffer
	for _, line := range bytes.Split(exposition(t, st), []byte("\n")) {
		if bytes.HasPrefix(line, []byte("hccl_fault_events_total{code=\"EI0013\"")) || bytes.HasPrefix(line, []byte("hccl_fault_events_total{code=\"EI0002\"")) {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	golden(t, "repeats.prom", b.Bytes())
}

// TestEI0007Wordings: EI0007's screen report in both wordings (HCOMM
// error_code.cc before and since f52cf295b0, 2026-03-03) counts with its
// resource label, so HCCLQPResourceExhausted (resource="qp") fires on new
// builds too.
func TestEI0007Wordings(t *testing.T) {
	var got []string
	o := testOptions(&fakeClock{t: time.Date(2026, 8, 15, 12, 0, 0, 0, time.UTC)})
	o.OnFault = func(e FaultEvent) {
		if e.Code == "EI0007" {
			got = append(got, e.Resource)
		}
	}
	st := NewState(o)
	src := &Source{Path: "train.log", Kind: SourceScreen}
	for _, l := range []string{
		"RuntimeError: EI0007: [PID: 2322] 2025-09-04-09:44:05.909.517 Failed to allocate resource[qp] with info [aicpu rank:7,localUserrank:7,localIpAddr: 100.97.0.8,deviceLogicId:3,send_cq_depth:32768]. Reason: Memory resources are exhausted.",
		"RuntimeError: EI0007: [PID: 7301] 2026-08-15-10:00:00.000.000 Failed to allocate resource qp with info CreateOneQp. Reason: Resources are exhausted.",
		"[PID: 7302] 2026-08-15-10:00:01.000.000 Resource_Error(EI0007): Failed to allocate resource DeviceMemory with info Malloc, size:2147483648 bytes. Reason: Resources are exhausted.",
		// hrtRaTypicalQpModify (adapter_hccp.cc:224-227): a failed QP state change.
		"[PID: 7303] 2026-08-15-10:00:02.000.000 Resource_Error(EI0007): Failed to allocate resource qp with info ModifyQp. Reason: Resources are exhausted.",
	} {
		st.Ingest(src, []byte(l))
	}
	if want := []string{ResourceQP, ResourceQP, ResourceDeviceMemory, ResourceQPState}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("EI0007 resources %q, want %q", got, want)
	}
}
