package logstate

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestLogDir(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/root/ascend/log/run/plog/plog-156_20260107100000000.log", "/root/ascend/log"},
		{"/root/ascend/log/debug/plog/plog-156_20260107100000000.log", "/root/ascend/log"},
		{"/root/ascend/log/debug/device-0/device-156_20260107100000000.log", "/root/ascend/log"},
		{"/var/log/npu/pod-a/security/plog/plog-1_20260107100000000.log", "/var/log/npu/pod-a"},
		// The sort directory nearest to the file wins: a root may itself sit
		// below a directory called run.
		{"/run/ascend/pod-b/run/plog/plog-1_20260107100000000.log", "/run/ascend/pod-b"},
		// Outside CANN's layout: the file's own directory.
		{"/bundle/plog-156_20260107100000000.log", "/bundle"},
		{"plog-156_20260107100000000.log", "."},
	} {
		if got := LogDir(tc.path); got != tc.want {
			t.Errorf("LogDir(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestEqualPIDsInTwoDirectoriesDoNotMerge: two pods both run pid 156 in
// their own pid namespaces and write to their own log directories. Each
// keeps its own settings and communicators; the first keeps the plain pid
// label, the second is qualified by its directory.
func TestEqualPIDsInTwoDirectoriesDoNotMerge(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	a := &Source{Path: "/logs/pod-a/run/plog/plog-156_20260107100000000.log", Kind: SourcePlog, Dir: "/logs/pod-a"}
	b := &Source{Path: "/logs/pod-b/run/plog/plog-156_20260107100000000.log", Kind: SourcePlog, Dir: "/logs/pod-b"}
	st.Ingest(a, []byte(envLine(156, "2026-01-07-10:00:00.000.000", "HCCL_BUFFSIZE set by environment to [200]M")))
	st.Ingest(a, []byte(envLine(156, "2026-01-07-10:00:00.000.001", "environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [16]")))
	st.Ingest(b, []byte(envLine(156, "2026-01-07-10:00:01.000.000", "HCCL_BUFFSIZE set by environment to [100]M")))
	st.Ingest(b, []byte(envLine(156, "2026-01-07-10:00:01.000.001", "environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [1]")))
	st.Ingest(b, []byte("[INFO] HCCL(156,python3):2026-01-07-10:00:02.000.000 [x.cc:1] [156][Communicator Key Info]identifier[b%eth_60000_0_1] rankSize[16] serverNum[2] moduleNum[2] superPodNum[0]"))

	keys := st.Keys(156)
	if len(keys) != 2 || keys[0].Dir != "/logs/pod-a" || keys[1].Dir != "/logs/pod-b" {
		t.Fatalf("Keys(156) = %v, want one per directory", keys)
	}
	pa, _ := st.Process(keys[0])
	pb, _ := st.Process(keys[1])
	if pa.Env["HCCL_RDMA_QPS_PER_CONNECTION"].Number != 16 || pb.Env["HCCL_RDMA_QPS_PER_CONNECTION"].Number != 1 {
		t.Errorf("QPS a=%v b=%v, want 16 and 1", pa.Env["HCCL_RDMA_QPS_PER_CONNECTION"], pb.Env["HCCL_RDMA_QPS_PER_CONNECTION"])
	}
	if len(pa.Communicators) != 0 || len(pb.Communicators) != 1 {
		t.Errorf("communicators a=%d b=%d, want 0 and 1", len(pa.Communicators), len(pb.Communicators))
	}
	if pa.Label != "156" || pb.Label != "156@/logs/pod-b" {
		t.Errorf("labels %q %q", pa.Label, pb.Label)
	}

	want := `
# HELP hccl_env_buffsize_bytes Effective HCCL_BUFFSIZE of a settings set in bytes (each communicator allocates 2 x this).
# TYPE hccl_env_buffsize_bytes gauge
hccl_env_buffsize_bytes{settings="2-a66913a7"} 2.097152e+08
hccl_env_buffsize_bytes{settings="2-53cc5c46"} 1.048576e+08
# HELP hccl_env_rdma_qps_per_connection Effective HCCL_RDMA_QPS_PER_CONNECTION of a settings set: RoCE queue pairs per rank pair.
# TYPE hccl_env_rdma_qps_per_connection gauge
hccl_env_rdma_qps_per_connection{settings="2-a66913a7"} 16
hccl_env_rdma_qps_per_connection{settings="2-53cc5c46"} 1
# HELP hccl_communicator_info 1 for each communicator of the node's processes and each settings set its members on the node run: more than one settings per communicator, on any nodes, is a misconfigured job.
# TYPE hccl_communicator_info gauge
hccl_communicator_info{communicator="b%eth_60000_0_1",settings="2-53cc5c46"} 1
`
	// The settings ids: "2-" and sha256 of the (variable, value) pairs
	// that differ from HCCL's defaults, e.g. "HCCL_BUFFSIZE\x00104857600\x00"
	// (HCCL_RDMA_QPS_PER_CONNECTION=1 is the default), first 4 bytes.
	if pa.Settings != "2-a66913a7" || pb.Settings != "2-53cc5c46" {
		t.Errorf("settings a=%q b=%q", pa.Settings, pb.Settings)
	}
	if err := testutil.CollectAndCompare(st, strings.NewReader(want),
		"hccl_env_buffsize_bytes", "hccl_env_rdma_qps_per_connection", "hccl_communicator_info"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}

	// The labels survive a restart, so series keep their identity.
	blob, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := NewState(testOptions(clock))
	if err := restored.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	if got, want := exposition(t, restored), exposition(t, st); string(got) != string(want) {
		t.Errorf("restored state differs:\n%s\nwant\n%s", got, want)
	}

	// Once pod A's process expires, pod B's keeps its qualified label.
	clock.Advance(2 * time.Hour)
	st.Ingest(b, []byte(envLine(156, "2026-01-07-12:05:00.000.000", "HCCL_BUFFSIZE set by environment to [100]M")))
	if n := st.Expire(LivenessFunc(func(int) bool { return false })); n != 1 {
		t.Fatalf("expired %d, want pod A's process only", n)
	}
	if ps := st.Processes(); len(ps) != 1 || ps[0].Label != "156@/logs/pod-b" {
		t.Fatalf("after expiry: %+v", ps)
	}
}

// TestStateFileWithoutDirectoriesIsAdopted: a state file written before
// processes were keyed by directory restores processes without one; the
// first line of such a process from its directory adopts the entry instead
// of creating a twin.
func TestStateFileWithoutDirectoriesIsAdopted(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)}
	old := `{"version":1,"processes":[{"pid":156,"name":"python3","last_write":"2026-01-07T10:00:00Z",` +
		`"env":{"HCCL_BUFFSIZE":{"Value":"200","SetBy":"environment","Number":209715200,"HasNumber":true}}}]}`
	st := NewState(testOptions(clock))
	if err := st.UnmarshalBinary([]byte(old)); err != nil {
		t.Fatal(err)
	}
	src := &Source{Path: "/logs/pod-a/run/plog/plog-156_20260107100000000.log", Kind: SourcePlog, Dir: "/logs/pod-a"}
	st.Ingest(src, []byte(envLine(156, "2026-01-07-10:01:00.000.000", "environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [4]")))
	ps := st.Processes()
	if len(ps) != 1 {
		t.Fatalf("processes = %+v, want the restored one adopted", ps)
	}
	p := ps[0]
	if p.Dir != "/logs/pod-a" || p.Label != "156" || p.Env["HCCL_BUFFSIZE"].Number != 200<<20 || p.Env["HCCL_RDMA_QPS_PER_CONNECTION"].Number != 4 {
		t.Errorf("adopted process = %+v", p)
	}
}

// TestDevicePhyIDOfAProcess: the NPU a process drives comes from its
// communicator lines of every era, survives the destruction of its
// communicators and a restart.
func TestDevicePhyIDOfAProcess(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name  string
		lines []string
		want  int
	}{
		{"2026 LocalRank Key Info", []string{
			"[INFO] HCCL(156,python3):2026-01-07-10:00:00.000.000 [hccl_communicator_attrs.cc:327] [156][Communicator Key Info]identifier[w] rankSize[16] serverNum[2] moduleNum[2] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]",
			"[INFO] HCCL(156,python3):2026-01-07-10:00:00.000.001 [hccl_communicator_attrs.cc:330] [156][LocalRank Key Info]userRank[6] hostIp[10.0.0.1] devicePhyId[6] server[10.0.0.1] deviceIp[0.0.0.0] superPodId[0] useSuperPodMode[0] isStandardCard[0]",
			"[INFO] HCCL(156,python3):2026-01-07-10:00:01.000.000 [op_base.cc:1] [156]Entry-HcclCommDestroy: identifier[w] begin",
		}, 6},
		{"2025 SetupAgent", []string{
			"[INFO] HCCL(156,python):2025-01-24-11:10:27.614.147 [topoinfo_detect.cc:221][3475][HCCL_TRACE]SetupAgent rankNum[3], rank[0], rootInfo identifier[hccl_world_group], server[10.20.8.250%bond1], logicDevId[0], phydevId[3], deviceIp[124.0.0.21]",
		}, 3},
		{"NIC listener (2025)", []string{
			envLine(156, "2025-06-19-09:27:24.674.788", "HCCL_BUFFSIZE set by environment to [200]M"),
			"[INFO] HCCL(156,python3):2025-06-19-09:27:26.512.004 [network_manager.cc:561] [156][Start][Vnic]Listen on ip[192.168.2.192], port[16666] sucess, devPhyId[7], devLogicId[7], isAutoPort[0]",
		}, 7},
		{"no device printed", []string{envLine(156, "2026-01-07-10:00:00.000.000", "HCCL_BUFFSIZE set by environment to [200]M")}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState(testOptions(clock))
			src := &Source{Path: "/l/run/plog/plog-156_20260107100000000.log", Kind: SourcePlog, Dir: "/l"}
			for _, l := range tc.lines {
				st.Ingest(src, []byte(l))
			}
			devs := st.Devices()
			if len(devs) != 1 || devs[0].DevicePhyID != tc.want || devs[0].Key != (ProcessKey{"/l", 156}) || devs[0].Label != "156" {
				t.Fatalf("Devices() = %+v, want phy %d", devs, tc.want)
			}
			blob, err := st.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			restored := NewState(testOptions(clock))
			if err := restored.UnmarshalBinary(blob); err != nil {
				t.Fatal(err)
			}
			if p, _ := restored.Process(ProcessKey{"/l", 156}); p.DevicePhyID != tc.want {
				t.Errorf("restored phy %d, want %d", p.DevicePhyID, tc.want)
			}
		})
	}
}

// BenchmarkIngestDirKeyRatio measures what keying processes by log
// directory costs on the hot path: it alternates blocks of INFO lines of a
// process without a directory (as before) and of one with a pod's
// directory, so both see the same machine load, and reports the ratio of
// the median block times (dir/none; 1.00 = no cost).
func BenchmarkIngestDirKeyRatio(b *testing.B) {
	const block = 2000
	mk := func(dir string) (*State, *Source) {
		st := NewState(DefaultOptions())
		src := &Source{Path: "p", Kind: SourcePlog, Dir: dir}
		st.Ingest(src, []byte(envLine(3015875, "2025-03-07-11:43:32.305.623", "HCCL_BUFFSIZE set by default to [200]M")))
		return st, src
	}
	none, noneSrc := mk("")
	pod, podSrc := mk("/var/log/ascend/training-job-7f9c-worker-3")
	var tNone, tPod []time.Duration
	run := func(st *State, src *Source) time.Duration {
		start := time.Now()
		for range block {
			st.Ingest(src, benchInfo)
		}
		return time.Since(start)
	}
	for b.Loop() {
		tNone = append(tNone, run(none, noneSrc))
		tPod = append(tPod, run(pod, podSrc))
	}
	median := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2])
	}
	b.ReportMetric(median(tNone)/block, "ns/line-none")
	b.ReportMetric(median(tPod)/block, "ns/line-dir")
	b.ReportMetric(median(tPod)/median(tNone), "dir/none")
}

// TestPIDLabelsStayUnique: directories that only differ beyond the longest
// label value still give their processes distinct pid labels, so no two
// processes' series collide and the scrape never fails on duplicates.
func TestPIDLabelsStayUnique(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)}))
	long := "/" + strings.Repeat("x", 300)
	for _, dir := range []string{"/a", long + "/pod-1", long + "/pod-2"} {
		src := &Source{Path: dir + "/run/plog/plog-156_20260107100000000.log", Kind: SourcePlog, Dir: dir}
		st.Ingest(src, []byte(envLine(156, "2026-01-07-10:00:00.000.000", "HCCL_BUFFSIZE set by environment to [200]M")))
	}
	seen := map[string]bool{}
	for _, p := range st.Processes() {
		if seen[p.Label] {
			t.Fatalf("label %q used twice", p.Label)
		}
		seen[p.Label] = true
	}
	if len(seen) != 3 {
		t.Fatalf("labels %v, want 3", seen)
	}
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	// The three run one settings set: one series, not one per process.
	if n := testutil.CollectAndCount(st, "hccl_env_buffsize_bytes"); n != 1 {
		t.Errorf("%d buffsize series, want 1", n)
	}
}

// TestPlogFaultsNamedByTheirDevicesPod: an EI0011 a plog reports is
// labelled with the pod the kubelet assigned the process's device to; a
// process whose device no single pod holds keeps empty pod labels.
func TestPlogFaultsNamedByTheirDevicesPod(t *testing.T) {
	opts := testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)})
	opts.PodOfDevice = func(phy int) (string, string, string, bool) {
		if phy == 6 {
			return "train", "job-a-0", "pytorch", true
		}
		return "", "", "", false
	}
	st := NewState(opts)
	for _, tc := range []struct {
		dir string
		phy int
	}{{"/logs/pod-a", 6}, {"/logs/pod-b", 7}} {
		src := &Source{Path: tc.dir + "/run/plog/plog-156_20260107100000000.log", Kind: SourcePlog, Dir: tc.dir}
		for _, l := range []string{
			envLine(156, "2026-01-07-10:00:00.000.000", "HCCL_BUFFSIZE set by environment to [200]M"),
			fmt.Sprintf("[INFO] HCCL(156,python3):2026-01-07-10:00:00.100.000 [network_manager.cc:561] [156][Start][Vnic]Listen on ip[192.168.2.19], port[16666] sucess, devPhyId[%d], devLogicId[0], isAutoPort[0]", tc.phy),
			"[ERROR] HCCP(156,python3):2026-01-07-10:00:01.000.000 [ra_hdc.c:1] [156]ra qp create fail, out of memory",
		} {
			st.Ingest(src, []byte(l))
		}
	}
	want := `
# HELP hccl_fault_last_event_timestamp_seconds Time printed in the log line of the latest fault event, in seconds since the epoch.
# TYPE hccl_fault_last_event_timestamp_seconds gauge
hccl_fault_last_event_timestamp_seconds{code="EI0011",container="",hccl_job="",namespace="",pod="",resource="",source="plog"} 1.767780001e+09
hccl_fault_last_event_timestamp_seconds{code="EI0011",container="pytorch",hccl_job="train/job-a-0",namespace="train",pod="job-a-0",resource="",source="plog"} 1.767780001e+09
`
	if err := testutil.CollectAndCompare(st, strings.NewReader(want), "hccl_fault_last_event_timestamp_seconds"); err != nil {
		t.Error(err)
	}
}
