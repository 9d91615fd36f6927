package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/join"
)

// TestWorkloadJoin: a process on a chip the kubelet assigns to a
// Deployment's pod is bound to the Deployment; without the kubelet, to its
// settings and communicator shape; without either, to nothing. What its
// workload ran comes back with its settings.
func TestWorkloadJoin(t *testing.T) {
	npu := capture(t, "info-a3-container-pid.txt")
	phy := -1
	for p, c := range join.PhyIDs(joinChips(npu.snap)) {
		if c == (ascend.ChipID{NPU: "4", Chip: "0"}) {
			phy = p
		}
	}
	if phy < 0 {
		t.Fatal("chip 4/0 has no phy id in the capture")
	}
	pods := func(p int) (string, string, string, bool) {
		if p == phy {
			return "serve", "vllm-ep-7d9f8b6c5-x2k4q", "main", true
		}
		return "", "", "", false
	}
	for _, tc := range []struct {
		name  string
		pods  func(int) (string, string, string, bool)
		comms int
		want  string // prefix
	}{
		{"pod of the chip", pods, 1, "k8s/serve/vllm-ep"},
		{"bare metal", nil, 1, "host/"},
		{"bare metal, no communicator yet", nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := logState(t, logProc{dir: "/h", pid: 2871543, qps: 1, buffMiB: 200, comms: tc.comms})
			c := Chips{NPU: npu, Logs: st, PodOfDevice: tc.pods}
			_, procs, err := c.Chips(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			s, ok := c.Settings(procs[0])
			if !ok {
				t.Fatal("settings not found")
			}
			if !strings.HasPrefix(s.Workload, tc.want) || (tc.want == "") != (s.Workload == "") {
				t.Errorf("workload %q, want %q…", s.Workload, tc.want)
			}
			if tc.want == "host/" && !strings.HasSuffix(s.Workload, "/16x2") {
				t.Errorf("bare-metal workload %q lacks the shape 16x2", s.Workload)
			}
			if tc.comms == 0 {
				return
			}
			// The process runs an AlltoAll: its workload remembers it.
			st.Ingest(&logstate.Source{Kind: logstate.SourcePlog, Dir: "/h", Path: "/h/run/plog/plog-2871543_20260107100000000.log"},
				[]byte("[INFO] HCCL(2871543,python3):2026-01-07-10:00:01.000.000 [x.cc:1] [2871543]create hccl transport:communicator[ALLTOALL_c0RunAlltoAllVStagedBCopy_host], "+
					"local rank[0], ip[192.168.1.10], remote rank[9], ip[192.168.2.10], transporttype[ROCE], rdma qpn[77], rdma qp sport[49152], rdma TC[132], rdma SL[4]"))
			s, _ = c.Settings(procs[0])
			if len(s.Remembered) != 1 || !s.Remembered[0].AllRanks || s.Remembered[0].RankSize != 16 {
				t.Errorf("remembered %+v, want the AlltoAll on the 16-rank communicator", s.Remembered)
			}
		})
	}
}

// TestPhyOfChipFollowsTheRun: the kept chip → physical id mapping answers
// as join.PhyIDs does for the run it was made from, and is made anew when
// a new npu-smi run (another snapshot) comes.
func TestPhyOfChipFollowsTheRun(t *testing.T) {
	first := capture(t, "info-a3-container-pid.txt").snap
	byPhy := join.PhyIDs(joinChips(first))
	if len(byPhy) == 0 {
		t.Fatal("the capture has no phy ids")
	}
	memo := &phyOfChip{}
	for _, p := range []*phyOfChip{nil, memo} {
		for phy, chip := range byPhy {
			if got, ok := p.of(first, chip); !ok || got != phy {
				t.Errorf("chip %v: phy %d (%v), want %d", chip, got, ok, phy)
			}
		}
		if _, ok := p.of(first, ascend.ChipID{NPU: "99", Chip: "0"}); ok {
			t.Error("a chip npu-smi does not list has a phy id")
		}
	}
	// The next run prints other phy ids for the same chips.
	second := *first
	second.Chips = slices.Clone(first.Chips)
	for i := range second.Chips {
		second.Chips[i].PhyID = strconv.Itoa(100 + i)
	}
	for i, c := range second.Chips {
		chip := ascend.ChipID{NPU: c.NPU, Chip: c.Chip}
		if got, ok := memo.of(&second, chip); !ok || got != 100+i {
			t.Errorf("after a new run, chip %v: phy %d (%v), want %d", chip, got, ok, 100+i)
		}
	}
}
