package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// fakeNPU serves a parsed capture as both the scrape's run and the latest one.
type fakeNPU struct {
	snap *npusmi.Snapshot
	err  error
}

func (f *fakeNPU) Snapshot(context.Context) (*npusmi.Snapshot, error) { return f.snap, f.err }
func (f *fakeNPU) Latest() (*npusmi.Snapshot, time.Time, bool) {
	return f.snap, time.Time{}, f.snap != nil && f.err == nil
}

func capture(t testing.TB, name string) *fakeNPU {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := npusmi.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeNPU{snap: snap}
}

// logState returns a CANN log state in which each process writes its
// settings to its own log directory.
func logState(t testing.TB, procs ...logProc) *logstate.State {
	t.Helper()
	st := logstate.NewState(logstate.Options{Location: time.UTC})
	for _, p := range procs {
		src := &logstate.Source{Kind: logstate.SourcePlog, Dir: p.dir,
			Path: fmt.Sprintf("%s/run/plog/plog-%d_20260107100000000.log", p.dir, p.pid)}
		line := func(f string, a ...any) {
			st.Ingest(src, fmt.Appendf(nil, "[INFO] HCCL(%d,python3):2026-01-07-10:00:00.000.000 [x.cc:1] [%d]"+f, append([]any{p.pid, p.pid}, a...)...))
		}
		line("[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", p.qps)
		line("[HCCL_ENV] HCCL_BUFFSIZE set by environment to [%d]M", p.buffMiB)
		for i := 0; i < p.comms; i++ {
			line("[Communicator Key Info]identifier[c%d] rankSize[16] serverNum[2] moduleNum[2] superPodNum[0]", i)
		}
	}
	return st
}

type logProc struct {
	dir          string
	pid          int
	qps, buffMiB int
	comms        int
}

func TestChipsJoinsOnHostThenContainerPID(t *testing.T) {
	npu := capture(t, "info-a3-container-pid.txt")
	tests := []struct {
		name string
		logs []logProc
		want map[string]headroom.ChipProcess // by chip
	}{
		{"no cannlog", nil, map[string]headroom.ChipProcess{
			"0": {ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: 2871543}, "1": {ChipID: ascend.ChipID{NPU: "4", Chip: "1"}, PID: 2871544}}},
		{"logs know host pids", []logProc{{dir: "/h", pid: 2871543}, {dir: "/h", pid: 2871544}}, map[string]headroom.ChipProcess{
			"0": {ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: 2871543, LogDir: "/h"}, "1": {ChipID: ascend.ChipID{NPU: "4", Chip: "1"}, PID: 2871544, LogDir: "/h"}}},
		{"logs know the container pid", []logProc{{dir: "/pod", pid: 213}}, map[string]headroom.ChipProcess{
			"0": {ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: 2871543}, "1": {ChipID: ascend.ChipID{NPU: "4", Chip: "1"}, PID: 213, LogDir: "/pod"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var deps HeadroomDeps
			if tc.logs != nil {
				deps.Logs = logState(t, tc.logs...)
			}
			c := NewHeadroom(npu, deps)
			mem, procs, err := c.Chips(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(mem) != 2 || mem[0].HBMUsedBytes.V != 52358<<20 || mem[1].HBMTotalBytes.V != 65536<<20 {
				t.Fatalf("chips = %+v", mem)
			}
			if len(procs) != len(tc.want) {
				t.Fatalf("processes = %+v", procs)
			}
			for _, p := range procs {
				if p != tc.want[p.Chip] {
					t.Errorf("chip %s: %+v, want %+v", p.Chip, p, tc.want[p.Chip])
				}
			}
		})
	}
}

func TestChipsSettingsReadsTheJoinedProcess(t *testing.T) {
	npu := capture(t, "info-a3-container-pid.txt")
	c := NewHeadroom(npu, HeadroomDeps{Logs: logState(t, logProc{dir: "/pod", pid: 213, qps: 4, buffMiB: 100, comms: 2})})
	_, procs, err := c.Chips(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := c.Settings(procs[1])
	if !ok || s.QPsPerConnection != 4 || !s.QPsKnown || s.BuffSizeBytes != 100<<20 || len(s.Communicators) != 2 {
		t.Errorf("settings of chip 1 = %+v %v", s, ok)
	}
	if _, ok := c.Settings(procs[0]); ok {
		t.Error("chip 0's process is unknown to the logs but has settings")
	}
	if _, ok := (NewHeadroom(npu, HeadroomDeps{})).Settings(procs[1]); ok {
		t.Error("settings without logs")
	}
}

func TestChipsFailsWithNPUSMI(t *testing.T) {
	want := errors.New("npu-smi timed out")
	_, _, err := NewHeadroom(&fakeNPU{err: want}, HeadroomDeps{}).Chips(context.Background())
	if !errors.Is(err, want) || errors.Is(err, collector.ErrDependency) {
		t.Fatalf("err = %v", err)
	}
	_, _, err = NewHeadroom(&fakeNPU{err: want}, HeadroomDeps{Reported: true}).Chips(context.Background())
	if !errors.Is(err, want) || !errors.Is(err, collector.ErrDependency) {
		t.Fatalf("err with npusmi reporting = %v", err)
	}
}

func TestHCCNChipsA3(t *testing.T) {
	chips, err := HCCNChips{NPU: capture(t, "info-a3-container-pid.txt")}.Chips(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	devs, warnings := hccn.MapDevices(chips, nil)
	want := []hccn.Device{{PhyID: 8, ChipID: ascend.ChipID{NPU: "4", Chip: "0"}}, {PhyID: 9, ChipID: ascend.ChipID{NPU: "4", Chip: "1"}}}
	if len(warnings) != 0 || len(devs) != 2 || devs[0] != want[0] || devs[1] != want[1] {
		t.Errorf("devices %v (warnings %q), want %v", devs, warnings, want)
	}
	failing := errors.New("npu-smi hung")
	if _, err := (HCCNChips{NPU: &fakeNPU{err: failing}}).Chips(context.Background()); !errors.Is(err, failing) {
		t.Errorf("without any npu-smi run: %v, want the run's error", err)
	}
}

func TestPhyIDs(t *testing.T) {
	for _, tc := range []struct {
		capture string
		want    map[int]ascend.ChipID
	}{
		// A3 prints the phy id of each die.
		{"info-a3-container-pid.txt", map[int]ascend.ChipID{8: {NPU: "4", Chip: "0"}, 9: {NPU: "4", Chip: "1"}}},
		// A2 prints none: one chip per NPU, the NPU id is the phy id.
		{"info-a2-910b4.txt", map[int]ascend.ChipID{0: {NPU: "0", Chip: "0"}, 1: {NPU: "1", Chip: "0"}, 2: {NPU: "2", Chip: "0"},
			3: {NPU: "3", Chip: "0"}, 4: {NPU: "4", Chip: "0"}, 5: {NPU: "5", Chip: "0"}, 6: {NPU: "6", Chip: "0"}, 7: {NPU: "7", Chip: "0"}}},
	} {
		got := PhyIDs(Chips(capture(t, tc.capture).snap))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.capture, got, tc.want)
		}
	}
	// Two chips on an NPU without phy ids (310P Duo): not guessed.
	snap := &npusmi.Snapshot{Chips: []npusmi.Chip{{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}}, {ChipID: ascend.ChipID{NPU: "1", Chip: "1"}}}}
	if got := PhyIDs(Chips(snap)); len(got) != 0 {
		t.Errorf("310P Duo without phy ids mapped: %v", got)
	}
	m, err := (Pods{NPU: capture(t, "info-a3-container-pid.txt")}).ChipsByPhyID(context.Background())
	if err != nil || m[9] != (ascend.ChipID{NPU: "4", Chip: "1"}) {
		t.Errorf("ChipsByPhyID = %v %v", m, err)
	}
}

// twoPods: two pods whose first training process is pid 156 in its own pid
// namespace, each writing to its own log directory, plus a process on the
// host that prints no device.
func twoPods(phyA, phyB int) []logstate.ProcessDevice {
	t0 := time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)
	return []logstate.ProcessDevice{
		{Key: logstate.ProcessKey{Dir: "/logs/pod-a", PID: 156}, Label: "156", DevicePhyID: phyA, LastWrite: t0},
		{Key: logstate.ProcessKey{Dir: "/logs/pod-b", PID: 156}, Label: "156@/logs/pod-b", DevicePhyID: phyB, LastWrite: t0},
		{Key: logstate.ProcessKey{Dir: "/root/ascend/log", PID: 582939}, Label: "582939", DevicePhyID: -1, LastWrite: t0},
	}
}

func TestMatch(t *testing.T) {
	type want struct {
		dir string
		pid int
		by  string
	}
	t0 := time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		capture string
		devs    []logstate.ProcessDevice
		want    map[string]want // by npu/chip
	}{
		{"A2: host pids in npu-smi, container pids in the logs: joined by device", "info-a2-910b4.txt", twoPods(6, 7), map[string]want{
			"0/0": {"/root/ascend/log", 582939, ByPID},
			"1/0": {"", 695171, ""},
			"6/0": {"/logs/pod-a", 156, ByDevice},
			"7/0": {"/logs/pod-b", 156, ByDevice},
		}},
		{"A3: both pods' container pid is 156: the device picks the directory", "info-a3-two-pods.txt", twoPods(9, 8), map[string]want{
			"4/0": {"/logs/pod-b", 156, ByContainerPID},
			"4/1": {"/logs/pod-a", 156, ByContainerPID},
		}},
		{"A3: devices unknown: two rows take two different processes", "info-a3-two-pods.txt", twoPods(-1, -1), map[string]want{
			"4/0": {"/logs/pod-a", 156, ByContainerPID},
			"4/1": {"/logs/pod-b", 156, ByContainerPID},
		}},
		{"a host pid equal to another pod's device process: the device decides", "info-a2-910b4.txt", []logstate.ProcessDevice{
			// A pod's pid 99910 drives phy 7; npu-smi's host pid 99910 runs on NPU 6.
			{Key: logstate.ProcessKey{Dir: "/logs/pod-b", PID: 99910}, Label: "99910", DevicePhyID: 7, LastWrite: t0},
		}, map[string]want{
			"6/0": {"", 99910, ""},
			"7/0": {"/logs/pod-b", 99910, ByDevice},
		}},
		{"a finished job and its successor claim one chip: the latest written wins", "info-a2-910b4.txt", []logstate.ProcessDevice{
			{Key: logstate.ProcessKey{Dir: "/logs/old", PID: 156}, Label: "156", DevicePhyID: 6, LastWrite: t0},
			{Key: logstate.ProcessKey{Dir: "/logs/new", PID: 156}, Label: "156@/logs/new", DevicePhyID: 6, LastWrite: t0.Add(time.Hour)},
		}, map[string]want{
			"6/0": {"/logs/new", 156, ByDevice},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]want{}
			for _, m := range MatchRun(capture(t, tc.capture).snap, tc.devs) {
				got[m.Row.NPU+"/"+m.Row.Chip] = want{m.Log.Key.Dir, m.Log.Key.PID, m.By}
			}
			for chip, w := range tc.want {
				if got[chip] != w {
					t.Errorf("chip %s: %+v, want %+v", chip, got[chip], w)
				}
			}
		})
	}
}

// Fresh hccn_tool QP counts reach the model per chip; stale ones do not.
func TestChipsLiveQPs(t *testing.T) {
	npu := capture(t, "info-a3-container-pid.txt")
	qps := []ascend.QPReading{
		{ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, ActiveQPs: 112, QPNs: make([]uint32, 112), Fresh: true},
		{ChipID: ascend.ChipID{NPU: "4", Chip: "1"}, ActiveQPs: 7, Fresh: false},
	}
	c := NewHeadroom(npu, HeadroomDeps{QPs: func() []ascend.QPReading { return qps }})
	mem, _, err := c.Chips(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(mem) != 2 || !mem[0].LiveQPs.OK || mem[0].LiveQPs.V != 112 || mem[1].LiveQPs.OK {
		t.Errorf("chips = %+v: want 112 live QPs on 4/0 and none known on 4/1 (stale)", mem)
	}
	if !mem[0].LiveQPNsKnown || len(mem[0].LiveQPNs) != 112 || mem[1].LiveQPNsKnown {
		t.Errorf("chips = %+v: want the qpn list of 4/0 only", mem)
	}
}

// The headroom model's input carries what the logs show set up: buffers,
// QPs and peers per communicator, and the settings HCCL_INTER_HCCS_DISABLE.
func TestSettingsCarryLinksAndBuffers(t *testing.T) {
	st := logstate.NewState(logstate.Options{Location: time.UTC})
	src := &logstate.Source{Kind: logstate.SourcePlog, Dir: "/h", Path: "/h/run/plog/plog-7_20260107100000000.log"}
	for _, m := range []string{
		"[HCCL_ENV] environmental variable HCCL_INTER_HCCS_DISABLE is set to [TRUE], interHccsDisable[1]",
		"[Communicator Key Info]identifier[w] rankSize[16] serverNum[2] moduleNum[2] superPodNum[1]",
		"[LocalRank Key Info]userRank[0] hostIp[h] devicePhyId[0] server[h] deviceIp[d] superPodId[0] useSuperPodMode[1] isStandardCard[0]",
		"[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x1], size[420478976]",
		"create hccl transport:communicator[AllReduce_wNHRAllReduceMeshExecutor_host], local rank[0], ip[192.168.1.10], remote rank[8], ip[192.168.2.10], transporttype[ROCE], rdma qpn[1], rdma qp sport[49152], rdma TC[132], rdma SL[4]",
		"HCCL_RDMA_QPS_PER_CONNECTION is set to [4] but it is not effective in offline mode.",
		// The AI CPU form (transport_device_ibverbs.cc; built from the format string): a RoCE link without qpn.
		"create hccl transport:communicator[AllReduce_wNHRAllReduceMeshExecutor_device], local rank[0], remote rank[9],transporttype[ROCE], atomicWrite[1]",
		"[Load] comm config of [w]: bufferSize[104857600], deterministic[0], trafficClass[132], serviceLevel[4], execTimeOut[1836]s, bufferName[shared], hcclQos[0], symmetricMemoryStride[0], aclGraphZeroCopyEnable[0]",
	} {
		st.Ingest(src, []byte("[INFO] HCCL(7,python3):2026-01-07-10:00:00.000.000 [x.cc:1] [7]"+m))
	}
	s, ok := NewHeadroom(nil, HeadroomDeps{Logs: st}).Settings(headroom.ChipProcess{PID: 7, LogDir: "/h"})
	if !ok || !s.InterHCCSDisabled || len(s.Communicators) != 1 {
		t.Fatalf("settings %+v %v", s, ok)
	}
	if !s.GraphMode || !s.SingleQP || len(s.QPNs) != 1 || s.QPNs[0] != 1 || s.Communicators[0].BufferName != "shared" {
		t.Errorf("mode, qpns, bufferName: %+v", s)
	}
	c := s.Communicators[0]
	if c.SuperPodNum != 1 || c.SuperPodMode != 1 || c.StandardCard != 0 || c.CCLBufferBytes != 420478976 || c.EstablishedQPs != 1 || c.RoCEPeers != 2 {
		t.Errorf("communicator %+v", c)
	}
}

func TestMatchByProcfsFirst(t *testing.T) {
	snap := &npusmi.Snapshot{
		Chips: []npusmi.Chip{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}}, {ChipID: ascend.ChipID{NPU: "1", Chip: "0"}}},
		Processes: []ascend.Process{
			{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242}, // a container process, nspid 7
			{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 7},    // a host process whose pid is 7
		},
	}
	devs := []logstate.ProcessDevice{
		{Key: logstate.ProcessKey{Dir: "/proc/4242/root/logs", PID: 7}, Label: "7", DevicePhyID: 1, HostPID: 4242},
		{Key: logstate.ProcessKey{Dir: "/root/ascend/log", PID: 7}, Label: "7@/root/ascend/log", DevicePhyID: -1},
	}
	got := MatchRun(snap, devs)
	if got[0].By != ByProcfs || got[0].Log.Key != devs[0].Key {
		t.Errorf("row 0: %+v, want the /proc process", got[0])
	}
	if got[1].By != ByPID || got[1].Log.Key != devs[1].Key {
		t.Errorf("row 1: %+v, want the host-path process by pid", got[1])
	}
	// Without the host process, row 1 (pid 7, on the chip the /proc
	// process prints) must not take the /proc process by pid or device.
	got = MatchRun(snap, devs[:1])
	if got[1].By != "" {
		t.Errorf("row 1 guessed onto the /proc process: %+v", got[1])
	}
}

// ProcessTable hands the cannlog collector the last successful npu-smi
// run's rows and Match's verdict for each, in row order; nothing before
// npu-smi first answered.
func TestProcessTableMatch(t *testing.T) {
	npu := capture(t, "info-a3-container-pid.txt")
	devs := []logstate.ProcessDevice{{Key: logstate.ProcessKey{Dir: "/h", PID: 2871543}, Label: "2871543", DevicePhyID: -1}}
	rows, ok := ProcessTable{NPU: npu}.Match(devs)
	if !ok || len(rows) != len(npu.snap.Processes) {
		t.Fatalf("rows %+v ok %v", rows, ok)
	}
	for i, r := range rows {
		p := npu.snap.Processes[i]
		if r.Row != p {
			t.Errorf("row %d = %+v, want npu-smi's %+v", i, r, p)
		}
		want := ""
		if p.PID == 2871543 {
			want = ByPID
		}
		if r.By != want || (want != "" && r.Log.Key != devs[0].Key) || (want == "" && r.Log.Key.Dir != "") {
			t.Errorf("row %d matched %q to %+v, want %q", i, r.By, r.Log.Key, want)
		}
	}
	if _, ok := (ProcessTable{NPU: &fakeNPU{err: errors.New("down")}}).Match(devs); ok {
		t.Error("Match ok before npu-smi answered")
	}
	if _, _, ok := (ProcessTable{NPU: &fakeNPU{err: errors.New("down")}}).NPUProcesses(); ok {
		t.Error("NPUProcesses ok before npu-smi answered")
	}
}
