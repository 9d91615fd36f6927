package headroom

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
)

// TestAlgoPeers: the peers one rank links per level-1 algorithm (HCOMM
// calc_*_transport_req.cc) and the algorithm HCCL picks by default.
func TestAlgoPeers(t *testing.T) {
	for _, tt := range []struct {
		algo string
		n    int
		want float64
	}{
		{algoRing, 2, 1}, {algoRing, 8, 2}, {algoPipeline, 16, 2},
		{algoHD, 2, 1}, {algoHD, 8, 3}, {algoHD, 16, 4}, {algoHD, 12, 4}, // 12: RHD, 3 + 1
		{algoNHR, 2, 1}, {algoNHR, 4, 3}, {algoNHR, 8, 5}, {algoNHR, 16, 7}, {algoNHR, 64, 11}, {algoNHR, 6, 4},
		{"nb", 8, 5}, {"ahc", 8, 7}, {algoNHR, 1, 0},
	} {
		if got := algoPeers(tt.algo, tt.n); got != tt.want {
			t.Errorf("algoPeers(%s, %d) = %v, want %v", tt.algo, tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n, dev int
		level  planeLevel
		want   string
	}{
		{2, 2, planeServers, algoHD}, {3, 2, planeServers, algoRing}, {6, 2, planeServers, algoRing},
		{8, 2, planeServers, algoHD}, {12, 2, planeServers, algoHD}, {8, 4, planeServers, algoNHR},
		{3, 4, planeServers, algoRing}, {4, 4, planeSuperPods, algoNHR},
	} {
		if got := defaultLevel1Algo(tt.n, tt.dev, tt.level); got != tt.want {
			t.Errorf("defaultLevel1Algo(%d, %d, %d) = %s, want %s", tt.n, tt.dev, tt.level, got, tt.want)
		}
	}
	for n, want := range map[int]string{2: algoRing, 3: algoRing, 4: algoNHR, 8: algoNHR, 64: algoNHR} {
		if got := autoSelectedAlgo(n); got != want {
			t.Errorf("autoSelectedAlgo(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestLinkSetRules: expected per link-set rule, on one 910B rank of 64
// over 8 servers, QPS 1.
func TestLinkSetRules(t *testing.T) {
	base := comm.Communicator{Name: "w", RankSize: 64, ServerNum: 8, SuperPodNum: 0, ModuleNum: 8, DeviceType: 2, UserRank: 0,
		DevicePhyID: 0, SuperPodMode: 0, StandardCard: 0, MultiModuleDiffDeviceNum: 0, MultiSuperPodDiffServerNum: 0,
		CCLBufferBytes: cclBuf}
	// set is a link set as the log state reads it from a real tag (parse.ParseTag).
	set := func(tag string, kind comm.LinkSetKind, op, algo string, peers int) comm.LinkSet {
		l := comm.LinkSet{Tag: tag, Kind: kind, Op: op, Algo: algo, RoCEPeers: peers, QPs: uint64(peers)}
		switch {
		case strings.Contains(tag, "Pipeline"):
			l.Executor = strings.TrimSuffix(tag[strings.Index(tag, "pipeline")+len("pipeline"):], "_host")
		case strings.Contains(tag, "MeshExecutor"):
			l.Executor = strings.TrimSuffix(tag[strings.Index(tag, "NHR")+len("NHR"):], "_host")
		}
		return l
	}
	for _, tt := range []struct {
		name string
		c    func(c comm.Communicator) comm.Communicator
		s    func(s ProcessSettings) ProcessSettings
		want float64
	}{
		{"graph mode, nothing linked: V1's H-D, 3 peers", func(c comm.Communicator) comm.Communicator { c.GraphTags = true; return c }, nil, 3},
		{"op-base, nothing linked: auto-selection's NHR, 5", func(c comm.Communicator) comm.Communicator { c.OpBaseTags = true; return c }, nil, 5},
		{"A3 (910_93), nothing linked: NHR, 5", func(c comm.Communicator) comm.Communicator { c.DeviceType = 4; c.SuperPodMode = 0; return c }, nil, 5},
		{"NHR half linked: the rest", func(c comm.Communicator) comm.Communicator {
			c.OpBaseTags, c.RoCEPeers = true, 3
			c.LinkSets = []comm.LinkSet{set("AllReduce_wNHRAllReduceMeshExecutor_host", comm.LinkSetOpBase, "allreduce", "nhr", 3)}
			return c
		}, nil, 2 + 3}, // 2 NHR peers left + the small-count set (H-D over 8 servers: 3)
		{"NHR and pipeline linked: the small-count set, H-D's 3", func(c comm.Communicator) comm.Communicator {
			c.OpBaseTags, c.RoCEPeers = true, 5
			c.LinkSets = []comm.LinkSet{set("AllReduce_wNHRAllReduceMeshExecutor_host", comm.LinkSetOpBase, "allreduce", "nhr", 5),
				set("AllReduce_wpipelineAllReduceMeshOpbasePipelineExecutor_host", comm.LinkSetOpBase, "allreduce", "pipeline", 2)}
			return c
		}, nil, 3},
		{"AllGather too: its pipeline set is high only", func(c comm.Communicator) comm.Communicator {
			c.OpBaseTags, c.RoCEPeers = true, 5
			c.LinkSets = []comm.LinkSet{set("AllReduce_wNHRAllReduceMeshExecutor_host", comm.LinkSetOpBase, "allreduce", "nhr", 5),
				set("AllReduce_wpipelineAllReduceMeshOpbasePipelineExecutor_host", comm.LinkSetOpBase, "allreduce", "pipeline", 2),
				set("AllGather_wNHRAllGatherMeshExecutor_host", comm.LinkSetOpBase, "allgather", "nhr", 5)}
			return c
		}, nil, 3},
		{"a tag without algorithm (graph): V1's H-D", func(c comm.Communicator) comm.Communicator {
			c.GraphTags, c.RoCEPeers = true, 3
			c.LinkSets = []comm.LinkSet{set("HcomAllReduce_6629421139219749105_0", comm.LinkSetGraph, "allreduce", "", 3)}
			return c
		}, nil, 0},
		{"MC2: every remote rank", func(c comm.Communicator) comm.Communicator {
			c.OpBaseTags, c.RoCEPeers, c.MC2, c.AllRanksOps = true, 1, true, true
			c.LinkSets = []comm.LinkSet{set("w8_mc2", comm.LinkSetMC2, "mc2", "", 1)}
			return c
		}, nil, 56 - 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c(base)
			s := known(1, 200, c)
			if tt.s != nil {
				s = tt.s(s)
			}
			h := Model(DefaultConfig(), []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1 << 36, OK: true}}},
				[]ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}}, func(ChipProcess) (ProcessSettings, bool) { return s, true })[0]
			if h.QPsExpected != tt.want {
				t.Errorf("expected %v QPs, want %v (%+v)", h.QPsExpected, tt.want, h)
			}
			if !(h.QPsLow <= h.QPsExpected && h.QPsExpected <= h.QPsHigh) {
				t.Errorf("bounds out of order: %v %v %v", h.QPsLow, h.QPsExpected, h.QPsHigh)
			}
		})
	}
}

// TestBoundsOrdered: low ≤ expected ≤ high for random communicators,
// link sets and settings.
func TestBoundsOrdered(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 36))
	algos := []string{"", algoRing, algoHD, algoNHR, algoPipeline}
	kinds := []comm.LinkSetKind{comm.LinkSetOpBase, comm.LinkSetGraph, comm.LinkSetCapture, comm.LinkSetMC2}
	ops := []string{"allreduce", "allgather", "broadcast", "alltoall", "mc2"}
	for i := 0; i < 20000; i++ {
		ranks := 1 + r.IntN(256)
		c := comm.Communicator{Name: "c", RankSize: ranks, ServerNum: r.IntN(ranks+2) - 1, SuperPodNum: r.IntN(4) - 1, ModuleNum: r.IntN(10) - 1,
			DeviceType: r.IntN(6) - 1, SuperPodMode: r.IntN(3) - 1, StandardCard: r.IntN(3) - 1, MultiModuleDiffDeviceNum: r.IntN(3) - 1,
			MultiSuperPodDiffServerNum: r.IntN(3) - 1, RoCEPeers: r.IntN(ranks), OtherPeers: r.IntN(8), AllRanksOps: r.IntN(4) == 0,
			OpBaseTags: r.IntN(2) == 0, GraphTags: r.IntN(3) == 0}
		for j := r.IntN(4); j > 0; j-- {
			c.LinkSets = append(c.LinkSets, comm.LinkSet{Kind: kinds[r.IntN(len(kinds))], Op: ops[r.IntN(len(ops))],
				Algo: algos[r.IntN(len(algos))], RoCEPeers: r.IntN(ranks)})
		}
		s := known(float64(1+r.IntN(32)), 200, c)
		s.IntraRoCE, s.InterHCCSDisabled, s.GraphMode, s.SingleQP = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(4) == 0, r.IntN(4) == 0
		chip := ChipMemory{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1 << 36, OK: true}}
		if r.IntN(2) == 0 {
			chip.LiveQPs = ascend.Value{V: float64(r.IntN(2000)), OK: true}
		}
		h := Model(DefaultConfig(), []ChipMemory{chip}, []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}},
			func(ChipProcess) (ProcessSettings, bool) { return s, true })[0]
		// The capacity inputs give back the headroom at the process's own settings.
		if got := capacityAt(h, s.QPsPerConnection, s.BuffSizeBytes); math.Abs(got-h.HeadroomBytes) > 1e-6*math.Max(1, math.Abs(h.HeadroomBytes)) {
			t.Fatalf("capacity at the current settings %v ≠ headroom %v for %+v (QPS %v): %+v", got, h.HeadroomBytes, c, s.QPsPerConnection, h)
		}
		if !(h.QPsLow <= h.QPsExpected && h.QPsExpected <= h.QPsHigh) ||
			!(h.QPMemoryLowBytes <= h.QPMemoryExpectedBytes+1e-6 && h.QPMemoryExpectedBytes <= h.QPMemoryHighBytes+1e-6) {
			t.Fatalf("bounds out of order for %+v (QPS %v): QPs %v ≤ %v ≤ %v, bytes %v ≤ %v ≤ %v", c, s.QPsPerConnection,
				h.QPsLow, h.QPsExpected, h.QPsHigh, h.QPMemoryLowBytes, h.QPMemoryExpectedBytes, h.QPMemoryHighBytes)
		}
	}
}

// TestLiveQPsStayInTheirProcess: live QPs the logs do not show come off
// the communicator whose whole links they are, not another process's.
func TestLiveQPsStayInTheirProcess(t *testing.T) {
	w := comm.Communicator{Name: "w", RankSize: 64, ServerNum: 8, SuperPodNum: 0, ModuleNum: 8, DeviceType: 2, SuperPodMode: 0,
		StandardCard: 0, MultiModuleDiffDeviceNum: 0, MultiSuperPodDiffServerNum: 0, OpBaseTags: true, CCLBufferBytes: cclBuf}
	settings := map[int]ProcessSettings{1: known(16, 200, w), 2: known(1, 200, w)}
	chip := ChipMemory{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1 << 36, OK: true}, LiveQPs: ascend.Value{V: 5, OK: true}}
	h := Model(DefaultConfig(), []ChipMemory{chip}, []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}, {ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 2}},
		func(p ChipProcess) (ProcessSettings, bool) { s, ok := settings[p.PID]; return s, ok })[0]
	// 5 live QPs: no whole 17-QP link of pid 1; 5 links of pid 2 (QPS 1), its whole NHR set.
	if h.QPsExpected != 85 {
		t.Errorf("expected %v QPs, want pid 1's 85 untouched and pid 2's 5 set up", h.QPsExpected)
	}
}

// capacityAt is the mixin's capacity rule (mixin/rules/capacity.libsonnet)
// over a chip's capacity inputs: the headroom were the chip's processes to
// run with HCCL_RDMA_QPS_PER_CONNECTION=q and HCCL_BUFFSIZE=buff bytes.
func capacityAt(h ChipHeadroom, q, buff float64) float64 {
	perLink, perQP := 1.0, h.VarQPBytesSingle
	if q > 1 {
		perLink, perQP = q+1, h.VarQPBytesMulti
	}
	return h.FreeHBMBytes - h.FixedPendingBytes - h.VarLinks*perLink*perQP - h.VarBufferComms*(2*buff+(1<<20))
}

// TestCapacityInputs: the demo's chip 0 (QPS 16, 36 MiB free, the first
// NHR link set of 5 links ahead, mode unknown: 3 MiB per QP with one QP
// per link, 1.5 MiB with multi-QP (no mode has N + 1 QPs of 3 MiB), 200 MiB of
// its cclBuffer allocated and not yet claimed) under the settings users
// try first.
func TestCapacityInputs(t *testing.T) {
	w := comm.Communicator{Name: "w", RankSize: 64, ServerNum: 8, SuperPodNum: 0, ModuleNum: 8, DeviceType: 2, SuperPodMode: 0,
		StandardCard: 0, MultiModuleDiffDeviceNum: 0, MultiSuperPodDiffServerNum: 0}
	s := known(16, 200, w)
	s.UnattributedBufferBytes = 200 * mib
	chip := ChipMemory{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 65500 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}
	h := Model(DefaultConfig(), []ChipMemory{chip}, []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}},
		func(ChipProcess) (ProcessSettings, bool) { return s, true })[0]
	if h.VarLinks != 5 || h.VarQPBytesSingle != 3*mib || h.VarQPBytesMulti != 1.5*mib || h.VarBufferComms != 1 || h.FixedPendingBytes != -200*mib {
		t.Fatalf("capacity inputs %+v", h)
	}
	for _, tt := range []struct {
		q, buffMB float64
		wantMiB   float64
	}{
		{16, 200, 36 - 85*1.5 - 201}, // the headroom itself: −292.5
		{1, 200, 36 - 5*3 - 201},     // −180
		{8, 200, 36 - 45*1.5 - 201},  // −232.5
		{8, 400, 36 - 45*1.5 - 601},  // −632.5
		{1, 400, 36 - 5*3 - 601},     // −580
	} {
		if got := capacityAt(h, tt.q, tt.buffMB*mib) / mib; got != tt.wantMiB {
			t.Errorf("QPS %v, HCCL_BUFFSIZE %v: %v MiB, want %v", tt.q, tt.buffMB, got, tt.wantMiB)
		}
	}
}

// TestModuleNumPlane: the level-1 plane is moduleNum where printed (two
// HCCS modules per A+X server), not serverNum: 32 ranks on 2 servers of 2
// modules make a 4-member plane, where auto-selection picks NHR (3 peers),
// not a 2-member one (ring, 1 peer).
func TestModuleNumPlane(t *testing.T) {
	c := comm.Communicator{Name: "w", RankSize: 32, ServerNum: 2, SuperPodNum: 0, ModuleNum: 4, DeviceType: 2, SuperPodMode: 0,
		StandardCard: 0, MultiModuleDiffDeviceNum: 0, MultiSuperPodDiffServerNum: 0, OpBaseTags: true, CCLBufferBytes: cclBuf}
	run := func(c comm.Communicator) float64 {
		return Model(DefaultConfig(), []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1 << 36, OK: true}}},
			[]ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}}, func(ChipProcess) (ProcessSettings, bool) { return known(1, 200, c), true })[0].QPsExpected
	}
	if got := run(c); got != 3 {
		t.Errorf("moduleNum 4: expected %v QPs, want NHR's 3", got)
	}
	c.ModuleNum = 2
	if got := run(c); got != 1 {
		t.Errorf("moduleNum 2: expected %v QPs, want ring's 1", got)
	}
}

// TestAIVBuffersPerMode: AIV buffers are per communicator and mode
// (ccl_buffer_manager.cc:130-152): the op-base pair until its OpbaseMode
// line, the offload pair where a capture or graph mode is ahead until its
// OffloadMode line.
func TestAIVBuffersPerMode(t *testing.T) {
	now := time.Date(2026, 8, 15, 10, 0, 0, 0, time.UTC)
	base := newComm(16, 1)
	base.DeviceType, base.OpBaseTags = 2, true
	for _, tt := range []struct {
		name string
		c    func(c comm.Communicator) comm.Communicator
		mode string
		want float64
	}{
		{"AIV mode, before the first collective: the op-base pair", func(c comm.Communicator) comm.Communicator { return c }, "AIV", aivBufferBytes},
		{"AIV mode, cclBuffer allocated, no AIV line printed: taken as allocated with it", func(c comm.Communicator) comm.Communicator {
			c.CCLBufferBytes = cclBuf
			return c
		}, "AIV", 0},
		{"OpbaseMode printed, not capturing: nothing", func(c comm.Communicator) comm.Communicator {
			c.CCLBufferBytes, c.AIVOpBase = cclBuf, true
			return c
		}, "", 0},
		{"OpbaseMode printed, capturing: the offload pair", func(c comm.Communicator) comm.Communicator {
			c.CCLBufferBytes, c.AIVOpBase = cclBuf, true
			c.Captures, c.LastCaptureQPs, c.LastCaptureAt = 1, 1, now.Add(-time.Minute)
			return c
		}, "", aivBufferBytes},
		{"both modes printed: nothing", func(c comm.Communicator) comm.Communicator {
			c.CCLBufferBytes, c.AIVOpBase, c.AIVOffload = cclBuf, true, true
			c.Captures, c.LastCaptureQPs, c.LastCaptureAt = 1, 1, now.Add(-time.Minute)
			return c
		}, "", 0},
		{"HOST mode, no AIV line: nothing", func(c comm.Communicator) comm.Communicator { return c }, "HOST", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := known(1, 200, tt.c(base))
			s.ExpansionMode = tt.mode
			cfg := DefaultConfig()
			cfg.Now = now
			h := Model(cfg, []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1 << 36, OK: true}}},
				[]ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}}, func(ChipProcess) (ProcessSettings, bool) { return s, true })[0]
			if h.AIVBufferPendingBytes != tt.want {
				t.Errorf("AIV pending %v, want %v", h.AIVBufferPendingBytes, tt.want)
			}
		})
	}
}

// TestPrintedQPSizeOverrides: `[ConstructQpAttrs]` depths printed for a
// communicator's QPs size its QPs ahead instead of the mode's.
func TestPrintedQPSizeOverrides(t *testing.T) {
	c := comm.Communicator{Name: "w", RankSize: 64, ServerNum: 8, SuperPodNum: 0, ModuleNum: 8, DeviceType: 2, SuperPodMode: 0,
		StandardCard: 0, MultiModuleDiffDeviceNum: 0, MultiSuperPodDiffServerNum: 0, OpBaseTags: true, CCLBufferBytes: cclBuf,
		ObservedQPBytes: 8192*64 + 8192*32}
	h := Model(DefaultConfig(), []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1 << 36, OK: true}}},
		[]ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}}, func(ChipProcess) (ProcessSettings, bool) { return known(1, 200, c), true })[0]
	// NHR's first set over 8 servers: 5 QPs at the printed 768 KiB, not 910B op-base's 3 MiB.
	if h.QPsExpected != 5 || h.QPMemoryExpectedBytes != 5*768*kib || h.UnknownModeQPs != 0 {
		t.Errorf("%+v", h)
	}
	if got := capacityAt(h, 1, 200*mib); got != h.HeadroomBytes {
		t.Errorf("capacity at the current settings %v ≠ headroom %v", got, h.HeadroomBytes)
	}
}
