package logstate

import (
	"fmt"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
)

func TestWorkloadOfPod(t *testing.T) {
	for _, tc := range []struct{ ns, pod, want string }{
		{"serve", "vllm-ds-7d9f8b6c5-x2k4q", "k8s/serve/vllm-ds"}, // Deployment: template hash + random suffix
		{"serve", "vllm-ds-x2k4q", "k8s/serve/vllm-ds"},           // Job, DaemonSet
		{"train", "llama-worker-3", "k8s/train/llama"},            // PyTorchJob worker
		{"train", "llama-master-0", "k8s/train/llama"},            // its master
		{"train", "web-0", "k8s/train/web"},                       // StatefulSet ordinal
		{"train", "bare", "k8s/train/bare"},                       // a bare pod
		{"train", "abcde", "k8s/train/abcde"},                     // vowels: not generated
		{"train", "x2k4q", "k8s/train/x2k4q"},                     // nothing before the suffix
		{"train", "", ""},
	} {
		if got := WorkloadOfPod(tc.ns, tc.pod); got != tc.want {
			t.Errorf("WorkloadOfPod(%q, %q) = %q, want %q", tc.ns, tc.pod, got, tc.want)
		}
	}
	if got := WorkloadOfShape("a1b2", comm.Communicator{RankSize: 128, ServerNum: 16}); got != "host/a1b2/128x16" {
		t.Errorf("WorkloadOfShape = %q", got)
	}
	if got := WorkloadOfShape("", comm.Communicator{RankSize: 128, ServerNum: 16}); got != "" {
		t.Errorf("WorkloadOfShape without settings = %q, want none", got)
	}
	if got := WorkloadOfShape("a1b2", comm.Communicator{RankSize: 8, ServerNum: -1}); got != "host/a1b2/8x?" {
		t.Errorf("WorkloadOfShape of an era without serverNum = %q", got)
	}
}

// wlNode writes a vLLM-style process's plog lines into a state.
type wlNode struct {
	t     *testing.T
	st    *State
	clock *fakeClock
	qpn   int
}

func (n *wlNode) line(pid int, level, msg string) {
	ts := n.clock.Now().Format("2006-01-02-15:04:05") + ".000.000"
	n.st.Ingest(&Source{Path: fmt.Sprintf("/log/plog/plog-%d_1.log", pid), Kind: SourcePlog, Dir: "/log"},
		[]byte(fmt.Sprintf("[%s] HCCL(%d,python3):%s [x.cc:1] [%d]%s", level, pid, ts, pid, msg)))
}

func (n *wlNode) start(pid int) {
	n.line(pid, "INFO", "[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [1]")
	n.line(pid, "INFO", "[Communicator Key Info]identifier[ep"+fmt.Sprint(pid)+"] rankSize[128] serverNum[16] moduleNum[16] superPodNum[0]")
}

func (n *wlNode) links(pid int, tag string, peers int) {
	for r := range peers {
		n.qpn++
		n.line(pid, "INFO", fmt.Sprintf("create hccl transport:communicator[%s], local rank[0], ip[192.168.10.10], remote rank[%d], ip[192.168.11.10], transporttype[ROCE], rdma qpn[%d], rdma qp sport[2], rdma TC[132], rdma SL[4]",
			tag, 8+r, n.qpn))
	}
}

// TestWorkloadMemory: a process bound to a workload runs an AlltoAll, a
// capture that fails half-way with EI0011; the workload remembers the
// AlltoAll, the capture with the whole link set it re-creates, and the
// failure; a restart of the exporter keeps all of it; the next process of
// the workload sees it from its start.
func TestWorkloadMemory(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	n := &wlNode{t: t, st: NewState(testOptions(clock)), clock: clock}
	n.start(1005)
	const id = "k8s/serve/vllm"
	if v, ok := n.st.BindWorkload(ProcessKey{"/log", 1005}, id); !ok || len(v.Links) != 0 || len(v.Failures) != 0 {
		t.Fatalf("a new workload: %+v, %v", v, ok)
	}
	n.links(1005, "ALLTOALL_ep1005RunAlltoAllVFullMeshBCopy_host", 120) // the profile run
	clock.Advance(2 * time.Minute)
	n.links(1005, "ALLTOALL_ep1005RunAlltoAllVFullMeshBCopy_host_Capture", 100) // the capture: 100 of 120, then out of memory
	n.line(1005, "ERROR", "[Create][RaQp]errNo[0x000000000500000b] ra qp create fail, reason: out of memory")
	failedAt := clock.Now()

	v, ok := n.st.Workload(id)
	if !ok {
		t.Fatal("workload forgotten")
	}
	want := RememberedLinks{RankSize: 128, ServerNum: 16, AllRanks: true, Capture: true, CaptureQPs: 120}
	if len(v.Links) != 1 || v.Links[0] != want {
		t.Errorf("links %+v, want %+v (the capture re-creates the AlltoAll's 120 QPs)", v.Links, want)
	}
	if len(v.Failures) != 1 || v.Failures[0].Code != "EI0011" || !v.Failures[0].At.Equal(failedAt) || v.Failures[0].Stage == "" {
		t.Errorf("failures %+v, want EI0011 at %v with its stage", v.Failures, failedAt)
	}

	// The exporter restarts.
	blob, err := n.st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	st2 := NewState(testOptions(clock))
	if err := st2.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	n.st = st2
	clock.Advance(time.Minute)
	n.start(2005) // the workload's next process: nothing linked yet
	v2, ok := n.st.BindWorkload(ProcessKey{"/log", 2005}, id)
	if !ok || len(v2.Links) != 1 || v2.Links[0] != want || len(v2.Failures) != 1 || !v2.Failures[0].At.Equal(failedAt) {
		t.Errorf("after the restart the next process sees %+v, want %+v and the failure", v2, want)
	}
	// A dense job on the node: its own workload, nothing remembered.
	n.line(3005, "INFO", "[Communicator Key Info]identifier[w] rankSize[64] serverNum[8] moduleNum[8] superPodNum[0]")
	n.links(3005, "AllReduce_ep3005NHRAllReduceMeshExecutor_host", 7)
	if v3, ok := n.st.BindWorkload(ProcessKey{"/log", 3005}, "host/x/64x8"); !ok || len(v3.Links) != 0 || len(v3.Failures) != 0 {
		t.Errorf("an AllReduce-only job remembers %+v", v3)
	}
	// A screen report of the same failure is tied to the process by pid.
	clock.Advance(time.Minute)
	n.st.Ingest(&Source{Path: "/screen/job.log", Kind: SourceScreen}, []byte("[PID: 2005] "+clock.Now().Format("2006-01-02-15:04:05")+
		".000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory."))
	if v, _ := n.st.Workload(id); len(v.Failures) != 1 || !v.Failures[0].At.Equal(clock.Now()) {
		t.Errorf("the screen report of pid 2005: failures %+v, want the EI0011 at %v", v.Failures, clock.Now())
	}
}

// TestWorkloadMemoryBounds: a workload not seen for the TTL is forgotten,
// past the cap the one seen longest ago; both are counted, and a state
// file read under a smaller cap keeps the most recent.
func TestWorkloadMemoryBounds(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	opts := testOptions(clock)
	opts.WorkloadTTL, opts.MaxWorkloads = time.Hour, 2
	n := &wlNode{t: t, st: NewState(opts), clock: clock}
	for i, pid := range []int{1, 2, 3} {
		n.start(pid)
		if _, ok := n.st.BindWorkload(ProcessKey{"/log", pid}, fmt.Sprint("w", i)); !ok {
			t.Fatal("not bound")
		}
		clock.Advance(time.Minute)
	}
	st := n.st.WorkloadStats()
	if st.Workloads != 2 || st.Dropped[WorkloadDroppedCapacity] != 1 {
		t.Errorf("stats %+v, want 2 kept, 1 dropped for capacity", st)
	}
	if _, ok := n.st.Workload("w0"); ok {
		t.Error("the workload seen longest ago was kept")
	}
	clock.Advance(59 * time.Minute) // w1 last seen 61 min ago, w2 60 min ago
	st = n.st.WorkloadStats()
	if st.Workloads != 1 || st.Dropped[WorkloadDroppedExpired] != 1 {
		t.Errorf("stats %+v, want 1 kept, 1 expired", st)
	}
	blob, err := n.st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	st2 := NewState(opts)
	if err := st2.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	if s := st2.WorkloadStats(); s.Workloads != 1 || s.Dropped[WorkloadDroppedExpired] != 1 || s.Dropped[WorkloadDroppedCapacity] != 1 {
		t.Errorf("after reading the state file: %+v", s)
	}
	if _, ok := n.st.BindWorkload(ProcessKey{"/log", 99}, "w9"); ok {
		t.Error("a process the logs do not know was bound")
	}
	if _, ok := n.st.BindWorkload(ProcessKey{"/log", 1}, ""); ok {
		t.Error("an empty identity was bound")
	}
}

type fakeExt struct {
	blob []byte
	gen  uint64
}

func (f *fakeExt) MarshalJSON() ([]byte, error) { return f.blob, nil }
func (f *fakeExt) UnmarshalJSON(b []byte) error { f.blob = append([]byte(nil), b...); return nil }
func (f *fakeExt) Generation() uint64           { return f.gen }
func (f *fakeExt) String() string               { return string(f.blob) }

// TestStateExtensions: another package's blob goes into the state file and
// comes back whether its owner attaches before or after the file is read;
// a blob nobody attached is kept for the next run.
func TestStateExtensions(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	ext := &fakeExt{blob: []byte(`{"learned":1}`)}
	if err := st.AttachExtension("headroom", ext); err != nil {
		t.Fatal(err)
	}
	g := st.Generation()
	ext.gen++
	if st.Generation() == g {
		t.Error("an extension's change does not change the state's generation")
	}
	blob, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Read first, attached later (the collector reads the file at start).
	st2 := NewState(testOptions(clock))
	if err := st2.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	blob2, err := st2.MarshalBinary() // nobody attached: kept as read
	if err != nil {
		t.Fatal(err)
	}
	late := &fakeExt{}
	if err := st2.AttachExtension("headroom", late); err != nil {
		t.Fatal(err)
	}
	if late.String() != `{"learned":1}` {
		t.Errorf("attached after reading: %q", late)
	}
	// Attached first, read later.
	st3 := NewState(testOptions(clock))
	early := &fakeExt{}
	if err := st3.AttachExtension("headroom", early); err != nil {
		t.Fatal(err)
	}
	if err := st3.UnmarshalBinary(blob2); err != nil {
		t.Fatal(err)
	}
	if early.String() != `{"learned":1}` {
		t.Errorf("attached before reading: %q", early)
	}
}

// TestWorkloadMemoryCaptureIsOneQPPerLink: a capture re-creates its
// operator's links with one offload QP each, whatever the QPs per link of
// the first link set (multi-QP: N + 1).
func TestWorkloadMemoryCaptureIsOneQPPerLink(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	n := &wlNode{t: t, st: NewState(testOptions(clock)), clock: clock}
	n.start(7)
	if _, ok := n.st.BindWorkload(ProcessKey{"/log", 7}, "w"); !ok {
		t.Fatal("not bound")
	}
	for range 3 { // QPS 2: 3 QPs to each of 8 peers
		n.links(7, "AllReduce_ep7NHRAllReduceMeshExecutor_host", 8)
	}
	n.links(7, "AllReduce_ep7NHRAllReduceMeshExecutor_host_Capture", 2) // the capture, 2 links in
	v, _ := n.st.Workload("w")
	if len(v.Links) != 1 || !v.Links[0].Capture || v.Links[0].CaptureQPs != 8 || v.Links[0].AllRanks {
		t.Errorf("links %+v, want a capture of 8 QPs (one per link), no all-ranks operator", v.Links)
	}
}
