package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/collectors/hccn"
	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/podresources"
	"github.com/hccl-exporter/hccl_exporter/exporter"
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
func logState(t testing.TB, procs ...logProc) *cannlog.State {
	t.Helper()
	st := cannlog.NewState(cannlog.Options{Location: time.UTC})
	for _, p := range procs {
		src := &cannlog.Source{Kind: cannlog.SourcePlog, Dir: p.dir,
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
			"0": {NPU: "4", Chip: "0", PID: 2871543}, "1": {NPU: "4", Chip: "1", PID: 2871544}}},
		{"logs know host pids", []logProc{{dir: "/h", pid: 2871543}, {dir: "/h", pid: 2871544}}, map[string]headroom.ChipProcess{
			"0": {NPU: "4", Chip: "0", PID: 2871543, LogDir: "/h"}, "1": {NPU: "4", Chip: "1", PID: 2871544, LogDir: "/h"}}},
		{"logs know the container pid", []logProc{{dir: "/pod", pid: 213}}, map[string]headroom.ChipProcess{
			"0": {NPU: "4", Chip: "0", PID: 2871543}, "1": {NPU: "4", Chip: "1", PID: 213, LogDir: "/pod"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Chips{NPU: npu}
			if tc.logs != nil {
				c.Logs = logState(t, tc.logs...)
			}
			mem, procs, err := c.Chips(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(mem) != 2 || mem[0].HBMUsedBytes != 52358<<20 || mem[1].HBMTotalBytes != 65536<<20 {
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
	c := Chips{NPU: npu, Logs: logState(t, logProc{dir: "/pod", pid: 213, qps: 4, buffMiB: 100, comms: 2})}
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
	if _, ok := (Chips{NPU: npu}).Settings(procs[1]); ok {
		t.Error("settings without logs")
	}
}

func TestChipsFailsWithNPUSMI(t *testing.T) {
	want := errors.New("npu-smi timed out")
	_, _, err := (Chips{NPU: &fakeNPU{err: want}}).Chips(context.Background())
	if !errors.Is(err, want) || errors.Is(err, exporter.ErrDependency) {
		t.Fatalf("err = %v", err)
	}
	_, _, err = (Chips{NPU: &fakeNPU{err: want}, Reported: true}).Chips(context.Background())
	if !errors.Is(err, want) || !errors.Is(err, exporter.ErrDependency) {
		t.Fatalf("err with npusmi reporting = %v", err)
	}
}

func TestLivenessUsesLastSnapshotOnly(t *testing.T) {
	npu := &fakeNPU{}
	live := Liveness{NPU: npu}
	if live.Alive(2871543) || live.Ready() {
		t.Fatal("alive or ready before any npu-smi run")
	}
	npu.snap = capture(t, "info-a3-container-pid.txt").snap
	if !live.Ready() {
		t.Fatal("not ready after a successful npu-smi run")
	}
	for pid, want := range map[int]bool{2871543: true, 2871544: true, 213: true, 1: false} {
		if got := live.Alive(pid); got != want {
			t.Errorf("Alive(%d) = %v, want %v", pid, got, want)
		}
	}
}

func TestLivenessWithoutNPUSMIIsReadyAtOnce(t *testing.T) {
	live := Liveness{}
	if !live.Ready() {
		t.Fatal("liveness without npu-smi waits for a run that never comes")
	}
	if live.Alive(1) {
		t.Fatal("liveness without npu-smi reports a pid alive")
	}
}

// TestHCCNChipsA3: on an A3 node npu-smi's Phy-ID column gives hccn_tool's
// physical ids: NPU 4's dies are physical ids 8 and 9.
func TestHCCNChipsA3(t *testing.T) {
	chips, err := HCCNChips{NPU: capture(t, "info-a3-container-pid.txt")}.Chips(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	devs, warnings := hccn.MapDevices(chips, nil)
	want := []hccn.Device{{PhyID: 8, NPU: "4", Chip: "0"}, {PhyID: 9, NPU: "4", Chip: "1"}}
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
		want    map[int]podresources.Chip
	}{
		// A3 prints the phy id of each die.
		{"info-a3-container-pid.txt", map[int]podresources.Chip{8: {NPU: "4", Chip: "0"}, 9: {NPU: "4", Chip: "1"}}},
		// A2 prints none: one chip per NPU, the NPU id is the phy id.
		{"info-a2-910b4.txt", map[int]podresources.Chip{0: {NPU: "0", Chip: "0"}, 1: {NPU: "1", Chip: "0"}, 2: {NPU: "2", Chip: "0"},
			3: {NPU: "3", Chip: "0"}, 4: {NPU: "4", Chip: "0"}, 5: {NPU: "5", Chip: "0"}, 6: {NPU: "6", Chip: "0"}, 7: {NPU: "7", Chip: "0"}}},
	} {
		got := PhyIDs(capture(t, tc.capture).snap)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.capture, got, tc.want)
		}
	}
	// Two chips on an NPU without phy ids (310P Duo): not guessed.
	snap := &npusmi.Snapshot{Chips: []npusmi.Chip{{NPU: "1", Chip: "0"}, {NPU: "1", Chip: "1"}}}
	if got := PhyIDs(snap); len(got) != 0 {
		t.Errorf("310P Duo without phy ids mapped: %v", got)
	}
	m, err := (PhyChips{NPU: capture(t, "info-a3-container-pid.txt")}).ChipsByPhyID(context.Background())
	if err != nil || m[9] != (podresources.Chip{NPU: "4", Chip: "1"}) {
		t.Errorf("ChipsByPhyID = %v %v", m, err)
	}
}
