package headroom

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
)

// fuzzNow is the model's clock in the fuzz test.
var fuzzNow = time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)

// FuzzModel feeds Model arbitrary chips, processes, settings and configs and
// checks its invariants: no panic, every number finite, high ≥ expected ≥ low
// ≥ 0 for QPs, QP memory ≥ 0 with high ≥ low, buffers ≥ 0, headroom = free −
// expected QP memory − pending buffer, slots = 8192 − live − pending, and
// process counts matching the distinct pids per chip.
func FuzzModel(f *testing.F) {
	// Seeds: the chip (63900/65536 MiB, QPS 16, 64 ranks, 8 servers),
	// single server with intra RoCE, unknown servers, and hostile values.
	f.Add(int64(64), int64(8), 16.0, true, 200.0*mib, true, false, 63900.0*mib, 65536.0*mib, 256.0*kib, 3.0*mib, uint8(1), []byte{0, 0})
	f.Add(int64(8), int64(1), 1.0, true, 200.0*mib, true, true, 1.0, 2.0, 256.0*kib, 3.0*mib, uint8(3), []byte{0, 1, 1, 1})
	f.Add(int64(4), int64(0), 0.0, false, 0.0, false, false, 0.0, 0.0, 0.0, 0.0, uint8(0), []byte{})
	f.Add(int64(math.MaxInt64), int64(-1), math.Inf(1), true, math.NaN(), true, true, math.Inf(-1), math.MaxFloat64,
		math.MaxFloat64, math.SmallestNonzeroFloat64, uint8(255), []byte{255, 0, 255, 1, 2, 3, 4, 5})
	f.Add(int64(2), int64(5), 32.0, true, 1e300, true, false, -5.0, 1e18, 3.0*mib, 256.0*kib, uint8(7), []byte{9, 9, 9})

	f.Fuzz(func(t *testing.T, rankSize, serverNum int64, qps float64, qpsKnown bool, buff float64, buffKnown, intraRoCE bool,
		used, total, qpLow, qpHigh float64, nComms uint8, layout []byte) {
		cfg := Config{QPBytesLow: qpLow, QPBytesHigh: qpHigh, DefaultQPsPerConnection: qps, DefaultBuffSizeBytes: buff}
		comms := make([]comm.Communicator, int(nComms)%16)
		for i := range comms {
			// Vary each communicator a little from the fuzzed base.
			b := func(j int) int {
				if len(layout) == 0 {
					return 0
				}
				return int(layout[(i+j)%len(layout)])
			}
			comms[i] = comm.Communicator{RankSize: int(rankSize) - i, ServerNum: int(serverNum) + i, SuperPodNum: b(0)%4 - 1,
				DeviceType: b(1)%6 - 1, SuperPodMode: b(2)%3 - 1, StandardCard: b(3)%3 - 1, RoCEPeers: b(4) - 8, OtherPeers: b(5),
				EstablishedQPs: toU64(float64(b(6)) * qps), CCLBufferBytes: toU64(float64(b(7)%2) * buff), BufferSizeBytes: toU64(float64(b(0)) * used),
				MultiModuleDiffDeviceNum: b(8)%3 - 1, MultiSuperPodDiffServerNum: b(9)%3 - 1, BufferName: []string{"", "a", "b"}[b(10)%3],
				AllRanksOps: b(11)%2 == 1, OpBaseTags: b(12)%2 == 1, GraphTags: b(13)%3 == 1, Captures: b(14) % 3,
				LastCaptureQPs: toU64(float64(b(15)) * qps), LastCaptureAt: fuzzNow.Add(-time.Duration(b(16)) * time.Minute),
				MC2: b(17)%4 == 1, ExpansionMode: []string{"", "HOST", "AI_CPU", "AIV", "AIV_ONLY"}[b(18)%5]}
			// Link sets of every kind and level-1 algorithm.
			for j := 0; j < b(19)%4; j++ {
				comms[i].LinkSets = append(comms[i].LinkSets, comm.LinkSet{
					Kind: []comm.LinkSetKind{comm.LinkSetOpBase, comm.LinkSetGraph, comm.LinkSetCapture, comm.LinkSetMC2}[b(20+j)%4],
					Op:   []string{"allreduce", "allgather", "reducescatter", "alltoall", "mc2", ""}[b(21+j)%6],
					Algo: []string{"", "ring", "hd", "nhr", "pipeline", "nb", "x"}[b(22+j)%7], RoCEPeers: b(23+j) - 4, QPs: toU64(float64(b(24 + j)))})
			}
		}
		settings := ProcessSettings{QPsPerConnection: qps, QPsKnown: qpsKnown, BuffSizeBytes: buff, BuffSizeKnown: buffKnown,
			IntraRoCE: intraRoCE, InterHCCSDisabled: !intraRoCE, Communicators: comms, UnattributedBufferBytes: total, UnattributedQPs: qpLow,
			GraphMode: len(layout) > 0 && layout[0]%2 == 1, SingleQP: len(layout) > 1 && layout[1]%2 == 1}
		if len(layout) > 2 {
			settings.ExpansionMode = []string{"", "AIV", "HOST", "AI_CPU"}[layout[2]%4]
		}
		cfg.Now, cfg.CaptureWindow = fuzzNow, time.Duration(nComms)*time.Minute
		var liveQPNs []uint32
		for i, c := range layout {
			if i%2 == 0 {
				settings.QPNs = append(settings.QPNs, uint32(c))
			} else {
				liveQPNs = append(liveQPNs, uint32(c))
			}
		}
		cfg.QPBytesSetByUser = buffKnown

		// layout: pairs of bytes place processes (chip index, pid) over 4 chips;
		// odd pids are unknown to the settings source.
		chips := []ChipMemory{
			{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: used, OK: true}, HBMTotalBytes: ascend.Value{V: total, OK: true}, LiveQPs: ascend.Value{V: qpHigh, OK: qpsKnown},
				LiveQPNs: liveQPNs, LiveQPNsKnown: intraRoCE},
			{ChipID: ascend.ChipID{NPU: "0", Chip: "1"}, HBMUsedBytes: ascend.Value{V: total, OK: true}, HBMTotalBytes: ascend.Value{V: used, OK: true}, Name: "910B3"},
			{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1, OK: true}, HBMTotalBytes: ascend.Value{V: 1, OK: true}}, // duplicate chip row
		}
		var procs []ChipProcess
		for i := 0; i+1 < len(layout) && i < 64; i += 2 {
			chip := []string{"0", "1", "2", "3"}[layout[i]%4]
			procs = append(procs, ChipProcess{ChipID: ascend.ChipID{NPU: "0", Chip: chip}, PID: int(layout[i+1])})
		}
		lookup := func(p ChipProcess) (ProcessSettings, bool) {
			pid := p.PID
			if pid%2 == 1 {
				return ProcessSettings{}, false
			}
			s := settings
			s.PID = pid
			return s, true
		}

		got := Model(cfg, chips, procs, lookup)

		distinct := map[[2]string]map[int]bool{}
		for _, p := range procs {
			k := [2]string{p.NPU, p.Chip}
			if distinct[k] == nil {
				distinct[k] = map[int]bool{}
			}
			distinct[k][p.PID] = true
		}
		seen := map[[2]string]bool{}
		for _, h := range got {
			k := [2]string{h.NPU, h.Chip}
			if seen[k] {
				t.Fatalf("chip %v reported twice", k)
			}
			seen[k] = true
			for name, v := range map[string]float64{
				"QPsLow": h.QPsLow, "QPsHigh": h.QPsHigh, "QPMemoryLowBytes": h.QPMemoryLowBytes,
				"QPMemoryHighBytes": h.QPMemoryHighBytes, "CCLBufferBytes": h.CCLBufferBytes,
				"CCLBufferPendingBytes": h.CCLBufferPendingBytes, "EstablishedQPs": h.EstablishedQPs,
				"FreeHBMBytes": h.FreeHBMBytes, "HeadroomBytes": h.HeadroomBytes, "ForeignQPs": h.ForeignQPs,
				"QPsExpected": h.QPsExpected, "QPMemoryExpectedBytes": h.QPMemoryExpectedBytes, "SlotsFreeHigh": h.SlotsFreeHigh,
				"SlotsFreeExpected": h.SlotsFreeExpected, "UnknownModeQPs": h.UnknownModeQPs, "CaptureQPs": h.CaptureQPs,
				"VarLinks": h.VarLinks, "VarQPBytesSingle": h.VarQPBytesSingle, "VarQPBytesMulti": h.VarQPBytesMulti,
				"VarBufferComms": h.VarBufferComms, "FixedPendingBytes": h.FixedPendingBytes,
			} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("chip %v: %s = %v", k, name, v)
				}
			}
			if h.QPsLow < 0 || h.QPsExpected < h.QPsLow || h.QPsHigh < h.QPsExpected {
				t.Fatalf("chip %v: QPs low %v expected %v high %v", k, h.QPsLow, h.QPsExpected, h.QPsHigh)
			}
			if h.QPMemoryExpectedBytes < 0 || h.UnknownModeQPs < 0 || h.UnknownModeQPs > h.QPsExpected || h.CaptureQPs < 0 {
				t.Fatalf("chip %v: expected memory %v, unknown-mode QPs %v of %v, capture QPs %v", k, h.QPMemoryExpectedBytes,
					h.UnknownModeQPs, h.QPsExpected, h.CaptureQPs)
			}
			if h.SlotsFreeHigh > h.SlotsFreeExpected || h.SlotsFreeExpected > HCCPMaxQPsPerDevice {
				t.Fatalf("chip %v: slots free expected %v high %v", k, h.SlotsFreeExpected, h.SlotsFreeHigh)
			}
			if h.QPMemoryLowBytes < 0 || h.QPMemoryHighBytes < h.QPMemoryLowBytes {
				t.Fatalf("chip %v: QP memory low %v high %v", k, h.QPMemoryLowBytes, h.QPMemoryHighBytes)
			}
			if h.ForeignQPs < 0 || (!h.ForeignQPsKnown && h.ForeignQPs != 0) {
				t.Fatalf("chip %v: foreign QPs %v known %v", k, h.ForeignQPs, h.ForeignQPsKnown)
			}
			if h.CCLBufferBytes < 0 || h.CCLBufferPendingBytes < 0 || h.EstablishedQPs < 0 {
				t.Fatalf("chip %v: buffer %v pending %v established %v", k, h.CCLBufferBytes, h.CCLBufferPendingBytes, h.EstablishedQPs)
			}
			if h.HBMKnown && h.HeadroomBytes != h.FreeHBMBytes-h.QPMemoryExpectedBytes-h.CCLBufferPendingBytes {
				t.Fatalf("chip %v: headroom %v != free %v − expected %v − pending buffer %v", k, h.HeadroomBytes, h.FreeHBMBytes, h.QPMemoryExpectedBytes, h.CCLBufferPendingBytes)
			}
			if !h.HBMKnown && (h.HeadroomBytes != 0 || h.FreeHBMBytes != 0) {
				t.Fatalf("chip %v: HBM unknown but headroom %v free %v", k, h.HeadroomBytes, h.FreeHBMBytes)
			}
			if n := h.ProcessesKnown + h.ProcessesDefaulted + h.ProcessesUnknown; n != len(distinct[k]) {
				t.Fatalf("chip %v: %d processes counted, %d distinct pids", k, n, len(distinct[k]))
			}
		}
		if len(got) < 2 {
			t.Fatalf("got %d chips, want at least the 2 distinct memory rows", len(got))
		}
	})
}

// TestModelRandomized runs the fuzz invariants over pseudo-random inputs in
// plain `go test`, more of them without -short.
func TestModelRandomized(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 1000
	}
	var seed uint64 = 0x9e3779b97f4a7c15
	next := func() uint64 { // splitmix64: deterministic, no global state
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for range n {
		layout := make([]byte, 8)
		binary.LittleEndian.PutUint64(layout, next())
		ranks, servers := int(next()%200)-2, int(next()%20)-1
		qps := float64(next()%40) - 2
		used, total := float64(next()%(96<<30)), float64(next()%(96<<30))
		cfg := DefaultConfig()
		got := Model(cfg,
			[]ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: used, OK: true}, HBMTotalBytes: ascend.Value{V: total, OK: true}}},
			[]ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: int(layout[0])}, {ChipID: ascend.ChipID{NPU: "0", Chip: "1"}, PID: int(layout[1])}},
			func(ChipProcess) (ProcessSettings, bool) {
				return ProcessSettings{QPsPerConnection: qps, QPsKnown: true, BuffSizeBytes: 100 * mib, BuffSizeKnown: true,
					IntraRoCE: layout[2]%2 == 0, Communicators: []comm.Communicator{{RankSize: ranks, ServerNum: servers, SuperPodNum: int(layout[3]%3) - 1,
						DeviceType: int(layout[4]%6) - 1, SuperPodMode: int(layout[5]%3) - 1, StandardCard: int(layout[6]%3) - 1}}}, true
			})
		for _, h := range got {
			if h.QPsLow < 0 || h.QPsExpected < h.QPsLow || h.QPsHigh < h.QPsExpected || h.QPMemoryHighBytes < h.QPMemoryLowBytes || h.QPMemoryLowBytes < 0 {
				t.Fatalf("ranks %d servers %d qps %v: %+v", ranks, servers, qps, h)
			}
			// At most a full mesh per executor set AllReduce's selector
			// can pick (mesh, pipeline, small count: opExecutors).
			if h.QPsHigh > 0 && ranks > 1 && h.QPsHigh > 3*float64(ranks-1)*(HCCLMaxQPsPerConnection+1) {
				t.Fatalf("more QPs than a full mesh allows: ranks %d servers %d qps %v: %+v", ranks, servers, qps, h)
			}
		}
	}
}

// toU64 converts a fuzzed amount to the log state's unsigned counts: what
// the logs cannot print (negative, NaN, beyond 2^63) becomes 0 or the top.
func toU64(x float64) uint64 {
	switch {
	case !(x > 0):
		return 0
	case x >= 1<<63:
		return 1 << 63
	}
	return uint64(x)
}
