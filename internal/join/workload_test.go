package join

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// TestWorkloadJoin: a process on a chip the kubelet assigns to a
// Deployment's pod is bound to the Deployment; without the kubelet, to its
// settings and communicator shape; without either, to nothing. What its
// workload ran comes back with its settings.
func TestWorkloadJoin(t *testing.T) {
	npu := capture(t, "info-a3-container-pid.txt")
	phy := -1
	for p, c := range PhyIDs(Chips(npu.snap)) {
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
			c := NewHeadroom(npu, HeadroomDeps{Logs: st, Workloads: st, PodOfDevice: tc.pods})
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

// countingStore counts the binds of the workload memory it wraps.
type countingStore struct {
	WorkloadStore
	binds int
}

func (c *countingStore) BindWorkload(key logstate.ProcessKey, id string) (logstate.WorkloadView, bool) {
	c.binds++
	return c.WorkloadStore.BindWorkload(key, id)
}

// countingLearner counts the samples the estimator is given.
type countingLearner struct{ observed int }

func (c *countingLearner) Learned(string) *headroom.LearnedSizes { return nil }
func (c *countingLearner) Observe(headroom.ChipSample) (bool, string) {
	c.observed++
	return false, ""
}

// TestHeadroomWritesOncePerRun: a scrape only reads. Binding processes to
// their workloads and feeding the QP-size estimator run once per npu-smi
// run, however many scrapes read that run (before, every scrape bound and
// observed again); a new run binds and observes once more, and the pod of
// a chip follows the run's own physical ids.
func TestHeadroomWritesOncePerRun(t *testing.T) {
	first := capture(t, "info-a3-container-pid.txt")
	st := logState(t, logProc{dir: "/h", pid: 2871543, qps: 1, buffMiB: 200, comms: 1})
	store := &countingStore{WorkloadStore: st}
	learner := &countingLearner{}
	var podPhy []int
	pods := func(p int) (string, string, string, bool) {
		podPhy = append(podPhy, p)
		return "serve", "vllm-ep-7d9f8b6c5-x2k4q", "main", true
	}
	npu := &fakeNPU{snap: first.snap}
	h := NewHeadroom(npu, HeadroomDeps{Logs: st, Workloads: store, Estimator: learner, PodOfDevice: pods})
	for range 3 {
		_, procs, err := h.Chips(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			h.Settings(p)
		}
	}
	if store.binds != 1 || learner.observed != len(first.snap.Chips) {
		t.Fatalf("three scrapes of one run: %d binds, %d samples; want 1 bind and one sample per chip (%d)", store.binds, learner.observed, len(first.snap.Chips))
	}
	// The next run prints other phy ids for the same chips.
	second := *first.snap
	second.Chips = slices.Clone(first.snap.Chips)
	for i := range second.Chips {
		second.Chips[i].PhyID = strconv.Itoa(100 + i)
	}
	npu.snap = &second
	podPhy = nil
	if _, _, err := h.Chips(context.Background()); err != nil {
		t.Fatal(err)
	}
	if store.binds != 2 || learner.observed != 2*len(first.snap.Chips) {
		t.Errorf("a new run: %d binds, %d samples; want 2 and %d", store.binds, learner.observed, 2*len(first.snap.Chips))
	}
	if len(podPhy) != 1 || podPhy[0] < 100 {
		t.Errorf("the pod was asked for phy ids %v, want the new run's (100 and up)", podPhy)
	}
}
