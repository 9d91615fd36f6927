package headroom

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

func TestLinkPeers(t *testing.T) {
	tests := []struct {
		name               string
		c                  comm.Communicator
		intraRoCE, hccsOff bool
		low, high          float64
	}{
		{"single rank", newComm(1, 1), false, false, 0, 0},
		{"no ranks", newComm(0, 0), false, false, 0, 0},
		// All 8 ranks on one server talk over HCCS: serverNum 1 means no RoCE initialisation.
		{"one server", newComm(8, 1), false, false, 0, 0},
		// HCCL_INTRA_ROCE_ENABLE=1 on an HCCS-connected server adds nothing.
		{"one server intra RoCE on HCCS", newComm(8, 1), true, false, 0, 0},
		// On a PCIe card (isStandardCard 1): 7 peers in a mesh, a ring of 8 has 2 neighbours.
		{"one server intra RoCE on a PCIe card", card(newComm(8, 1)), true, false, 2, 7},
		// A 910B server whose 16 ranks span two HCCS modules (moduleNum 2 > serverNum 1):
		// the modules are linked over RoCE with the variable (IsSupportEnableRoce), 15 peers.
		{"one server, two modules, intra RoCE", func() comm.Communicator { c := newComm(16, 1); c.ModuleNum = 2; return c }(), true, false, 2, 15},
		{"one server, two modules, no intra RoCE", func() comm.Communicator { c := newComm(16, 1); c.ModuleNum = 2; return c }(), false, false, 0, 0},
		// 64/8 = 8 per server; high 64−8 = 56; low min(8−1, 2) = 2.
		{"64 ranks 8 servers", newComm(64, 8), false, false, 2, 56},
		// 16/2 = 8 per server; high 8; a ring of two servers has 1 neighbour.
		{"two servers", newComm(16, 2), false, false, 1, 8},
		// 10/4 = 2 (floor: the smallest server's share); high 10−2 = 8; low 2.
		{"uneven spread", newComm(10, 4), false, false, 2, 8},
		{"one rank per server", newComm(64, 64), false, false, 2, 63},
		// serverNum not printed (older eras): every other rank, low 0.
		{"servers unknown", newComm(16, -1), false, false, 0, 15},
		// ... minus the ranks already linked over HCCS (they share the server).
		{"servers unknown, 3 HCCS peers seen", comm.Communicator{RankSize: 16, ServerNum: -1, SuperPodNum: -1, DeviceType: -1, SuperPodMode: -1, StandardCard: -1, OtherPeers: 3}, false, false, 0, 12},
		{"more servers than ranks", newComm(2, 5), false, false, 1, 1},
		// A3 superpod: servers of one superpod use HCCS, so one superpod needs no RoCE.
		{"A3 one superpod", superpod(newComm(64, 8), 1), false, false, 0, 0},
		// Two superpods of 32 ranks: RoCE to the 32 ranks of the other one, a ring of 2 has 1.
		{"A3 two superpods", superpod(newComm(64, 8), 2), false, false, 1, 32},
		// HCCL_INTER_HCCS_DISABLE=TRUE: RoCE between the servers again.
		{"A3 superpod, inter HCCS disabled", superpod(newComm(64, 8), 1), false, true, 2, 56},
		// deviceType 910_93 with superPodNum printed counts as a superpod too.
		{"910_93 with superPodNum", comm.Communicator{RankSize: 64, ServerNum: 8, SuperPodNum: 1, DeviceType: 4, SuperPodMode: -1, StandardCard: -1}, false, false, 0, 0},
		// The [Communicator Key Info] RoCE switches (IsSupportEnableRoce): on 910B
		// multiModuleDiffDeviceNumMode links same-server ranks over RoCE without the variable.
		{"910B multiModuleDiffDeviceNumMode", func() comm.Communicator {
			c := newComm(24, 2)
			c.DeviceType, c.MultiModuleDiffDeviceNum = 2, 1
			return c
		}(), false, false, 2, 23},
		// On 910_93 multiSuperPodDiffServerNumMode does, even inside one superpod.
		{"910_93 multiSuperPodDiffServerNumMode", func() comm.Communicator { c := superpod(newComm(48, 6), 1); c.MultiSuperPodDiffServerNum = 1; return c }(), false, false, 2, 47},
		// multiModuleDiffDeviceNumMode on 910_93 only across superpods.
		{"910_93 multiModule, one superpod", func() comm.Communicator { c := superpod(newComm(48, 6), 1); c.MultiModuleDiffDeviceNum = 1; return c }(), false, false, 0, 0},
		{"910_93 multiModule, two superpods", func() comm.Communicator { c := superpod(newComm(48, 6), 2); c.MultiModuleDiffDeviceNum = 1; return c }(), false, false, 2, 47},
		// HCCL_INTRA_ROCE_ENABLE does not count on 910_93, even on a card.
		{"910_93 card intra RoCE", func() comm.Communicator { c := card(newComm(8, 1)); c.DeviceType = 4; return c }(), true, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			low, exp, high, _ := linkPeers(tt.c, tt.intraRoCE, tt.hccsOff)
			if exp < low || exp > high {
				t.Errorf("expected %v outside [%v, %v]", exp, low, high)
			}
			if low != tt.low || high != tt.high {
				t.Errorf("linkPeers(%+v, %v, %v) = (%v, %v), want (%v, %v)", tt.c, tt.intraRoCE, tt.hccsOff, low, high, tt.low, tt.high)
			}
		})
	}
}

// newComm is a communicator with nothing set up yet and every optional field unknown.
func newComm(ranks, servers int) comm.Communicator {
	return comm.Communicator{Name: "c", RankSize: ranks, ServerNum: servers, SuperPodNum: -1, ModuleNum: -1, DeviceType: -1, SuperPodMode: -1, StandardCard: -1,
		MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1}
}

func card(c comm.Communicator) comm.Communicator { c.StandardCard = 1; return c }

func superpod(c comm.Communicator, pods int) comm.Communicator {
	c.SuperPodNum, c.SuperPodMode, c.DeviceType = pods, 1, 4
	return c
}

// linked marks c as fully set up: every high-bound peer linked with qpl QPs, buffer allocated.
func linked(c comm.Communicator, peers int, qpl float64, buf float64) comm.Communicator {
	c.RoCEPeers, c.EstablishedQPs, c.CCLBufferBytes = peers, uint64(float64(peers)*qpl), uint64(buf)
	return c
}

// settingsMap turns a map into the lookup Model takes.
func settingsMap(m map[int]ProcessSettings) func(ChipProcess) (ProcessSettings, bool) {
	return func(p ChipProcess) (ProcessSettings, bool) {
		pid := p.PID
		s, ok := m[pid]
		return s, ok
	}
}

func known(qps float64, buffMiB float64, comms ...comm.Communicator) ProcessSettings {
	return ProcessSettings{
		QPsPerConnection: qps, QPsKnown: true,
		BuffSizeBytes: buffMiB * mib, BuffSizeKnown: true,
		Communicators: comms,
	}
}

var world64 = comm.Communicator{Name: "world", RankSize: 64, ServerNum: 8, SuperPodNum: 0, DeviceType: -1, SuperPodMode: -1, StandardCard: -1}

// cclBuf is one communicator's cclBuffer at HCCL_BUFFSIZE 200 MB: 2 × 200 MiB + 1 MiB.
const cclBuf = 401 * mib

func TestModel(t *testing.T) {
	cfg := DefaultConfig()
	chip0 := ChipMemory{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 63900 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}
	one := []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}}
	tests := []struct {
		name     string
		cfg      Config
		chips    []ChipMemory
		procs    []ChipProcess
		settings map[int]ProcessSettings
		want     []ChipHeadroom
	}{
		{
			// Right after communicator creation: nothing set up. Free 65536−63900 = 1636 MiB.
			// QPS 16 → 17 QPs per connection. high 56 peers × 17 = 952 QPs, mode unknown: multi-QP
			// QPs of 1.5 MiB (no mode has 17 QPs of 3 MiB) = 1428 MiB;
			// low 2 × 17 = 34 QPs × 256 KiB = 8.5 MiB; cclBuffer pending 401 MiB.
			// Headroom 1636 − 1428 − 401 = −193 MiB.
			name:  "QPS 16, 64 ranks over 8 servers, links ahead: negative",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(16, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 34, QPsHigh: 952,
				QPMemoryLowBytes: 8.5 * mib, QPMemoryHighBytes: 1428 * mib,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: -193 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// The same job long after: 56 peers × 17 QPs set up and the buffer allocated. Their
			// memory is in the 63900 MiB used; nothing is ahead. Headroom = free = 1636 MiB.
			name:  "QPS 16, all links set up: nothing ahead, no alert",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(16, 200, linked(world64, 56, 17, cclBuf))},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				EstablishedQPs: 952, CCLBufferBytes: cclBuf,
				HBMKnown: true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1636 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// The first collective (a ring) linked 2 peers: 54 peers × 17 = 918 QPs may still come
			// (1377 MiB at 1.5 MiB); the ring's low bound is met. Headroom 1636 − 1377 = 259 MiB.
			name:  "QPS 16, a ring set up, a full mesh may follow",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(16, 200, linked(world64, 2, 17, cclBuf))},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsHigh: 918, QPMemoryHighBytes: 1377 * mib,
				EstablishedQPs: 34, CCLBufferBytes: cclBuf,
				HBMKnown: true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 259 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// QPS 1: 56 QPs × 3 MiB = 168 MiB; low 2 × 256 KiB; buffer 401 MiB. 1636−168−401 = 1067 MiB.
			name:  "QPS 1 stays positive",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1067 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// QPS 4 → 5 per connection. world64: 56×5 = 280 high, 2×5 = 10 low; "tp" (16 ranks on 2
			// servers, its own buffer size 50 MiB from [Load] comm config): 8×5 = 40 high, 1×5 = 5 low.
			// 320 multi-QP QPs × 1.5 MiB = 480 MiB; 15 × 256 KiB = 3.75 MiB. Buffers 2×100+1 + 2×50+1 = 302 MiB.
			// Headroom 1636 − 480 − 302 = 854 MiB.
			name:  "two communicators, one with its own buffer size",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(4, 100, world64,
				func() comm.Communicator { c := newComm(16, 2); c.BufferSizeBytes = 50 * mib; return c }())},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 15, QPsHigh: 320,
				QPMemoryLowBytes: 3.75 * mib, QPMemoryHighBytes: 480 * mib,
				CCLBufferPendingBytes: 302 * mib,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 854 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// An A3 superpod job (one superpod): inter-server links are HCCS, no RoCE demand;
			// only the buffer is ahead. 1636 − 401 = 1235 MiB.
			name:  "A3 superpod: no RoCE demand",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(16, 200, superpod(newComm(64, 8), 1))},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1235 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// deviceType 910 (not 910B/910_93): multi-QP does not apply, 1 QP per connection.
			// 56 × 3 MiB = 168 MiB; headroom 1636 − 168 − 401 = 1067 MiB.
			name:  "QPS ignored on a device without multi-QP",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: known(16, 200, func() comm.Communicator { c := world64; c.DeviceType = 0; return c }())},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1067 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// The logs show nothing set up, but hccn_tool counts 85 live QPs on the chip: 5 whole
			// links of 17 QPs (N + 1 for QPS 16) of the process's communicator, its whole first
			// link set (NHR over 8 servers: 5 peers). They come off every bound: expected 85 − 85,
			// low 34 − 34, high 952 − 85 (the table checks the headroom against high).
			name:     "measured live QPs beyond the logs: whole links of the communicator",
			chips:    []ChipMemory{func() ChipMemory { c := chip0; c.LiveQPs = ascend.Value{V: 85, OK: true}; return c }()},
			procs:    one,
			settings: map[int]ProcessSettings{100: known(16, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsHigh: 867, QPMemoryHighBytes: 867 * 1.5 * mib,
				EstablishedQPs:        85,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1636*mib - 867*1.5*mib - cclBuf,
				ProcessesKnown: 1,
			}},
		},
		{
			// 1000 live QPs are no whole number of 17-QP links: no communicator on the chip
			// explains them (other RDMA users, stale QPs), so nothing ahead is taken off; the
			// QP table still counts them. Expected 5 × 17 at 1.5 MiB (mode unknown, multi-QP).
			name:     "measured live QPs no communicator explains",
			chips:    []ChipMemory{func() ChipMemory { c := chip0; c.LiveQPs = ascend.Value{V: 1000, OK: true}; return c }()},
			procs:    one,
			settings: map[int]ProcessSettings{100: known(16, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 34, QPsHigh: 952,
				QPMemoryLowBytes: 34 * 256 * kib, QPMemoryHighBytes: 952 * 1.5 * mib,
				EstablishedQPs:        1000,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1636*mib - 952*1.5*mib - cclBuf,
				ProcessesKnown: 1,
			}},
		},
		{
			// The measurement below what the logs show changes nothing.
			name:     "measured live QPs below the logs",
			chips:    []ChipMemory{func() ChipMemory { c := chip0; c.LiveQPs = ascend.Value{V: 10, OK: true}; return c }()},
			procs:    one,
			settings: map[int]ProcessSettings{100: known(16, 200, linked(world64, 56, 17, cclBuf))},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				EstablishedQPs: 952, CCLBufferBytes: cclBuf,
				HBMKnown: true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1636 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// cclBuffer allocated but no link set logged yet to claim it: it is not ahead any more.
			// 56 × 3 MiB = 168 MiB ahead; 1636 − 168 = 1468 MiB.
			name:  "unattributed buffer covers the pending one",
			chips: []ChipMemory{chip0}, procs: one,
			settings: map[int]ProcessSettings{100: func() ProcessSettings {
				s := known(1, 200, world64)
				s.UnattributedBufferBytes = cclBuf
				return s
			}()},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferBytes: cclBuf,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1468 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// pid 200 is in no CANN log: unknown, no communicators known, so it adds nothing.
			name:     "pid absent from the logs is unknown and visible",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}, {ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 200}},
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1067 * mib,
				ProcessesKnown: 1, ProcessesUnknown: 1,
			}},
		},
		{
			// QPS not known (not printed, or refused by HCCL: cannlog drops such numbers) and QPS 64
			// outside [1,32]: HCCL's default 1 instead, counted as defaulted.
			name:  "missing or out-of-range values use HCCL defaults",
			chips: []ChipMemory{chip0},
			procs: []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}, {ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 101}},
			settings: map[int]ProcessSettings{
				100: {QPsPerConnection: 16, Communicators: []comm.Communicator{world64}},
				101: known(64, 200, world64),
			},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 4, QPsHigh: 112,
				QPMemoryLowBytes: 1 * mib, QPMemoryHighBytes: 336 * mib,
				CCLBufferPendingBytes: 2 * cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: (1636 - 336 - 802) * mib,
				ProcessesDefaulted: 2,
			}},
		},
		{
			// pid 100 listed twice by npu-smi counts once.
			name:     "duplicate rows count once",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}, {ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}},
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1067 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// Chip 1 has no processes: headroom is its free HBM, 65536−2000 = 63536 MiB.
			// A process on chip 2, which npu-smi's memory table lacks: HBM unknown.
			// Chip 3 reports total 0 (a placeholder): HBM unknown.
			name: "idle chip, chip missing from memory table, placeholder total",
			chips: []ChipMemory{
				{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 2000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}},
				{ChipID: ascend.ChipID{NPU: "3", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 0, OK: true}, HBMTotalBytes: ascend.Value{V: 0, OK: true}},
			},
			procs:    []ChipProcess{{ChipID: ascend.ChipID{NPU: "2", Chip: "0"}, PID: 100}},
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{
				{NPU: "1", Chip: "0", HBMKnown: true, FreeHBMBytes: 63536 * mib, HeadroomBytes: 63536 * mib},
				{NPU: "3", Chip: "0"},
				{
					NPU: "2", Chip: "0",
					QPsLow: 2, QPsHigh: 56,
					QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
					CCLBufferPendingBytes: cclBuf, ProcessesKnown: 1,
				},
			},
		},
		{
			// Custom bounds 1 MiB..2 MiB with QPS 16: multi-QP QPs are half the high end,
			// 952 × 1 MiB = 952 MiB, 34 × 1 MiB = 34 MiB. Headroom 1636 − 952 − 401 = 283 MiB.
			name:     "flags change the bytes per QP",
			cfg:      Config{QPBytesLow: 1 * mib, QPBytesHigh: 2 * mib, DefaultQPsPerConnection: 1, DefaultBuffSizeBytes: 200 * mib},
			chips:    []ChipMemory{chip0},
			procs:    one,
			settings: map[int]ProcessSettings{100: known(16, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 34, QPsHigh: 952,
				QPMemoryLowBytes: 34 * mib, QPMemoryHighBytes: 952 * mib,
				CCLBufferPendingBytes: cclBuf,
				HBMKnown:              true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 283 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// Used above total (npu-smi glitch): free is −100 MiB, exported as is.
			name:  "used above total",
			chips: []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1100 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 1000 * mib, OK: true}}},
			want:  []ChipHeadroom{{NPU: "0", Chip: "0", HBMKnown: true, FreeHBMBytes: -100 * mib, HeadroomBytes: -100 * mib}},
		},
		{
			name: "nothing",
			want: []ChipHeadroom{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			if c == (Config{}) {
				c = cfg
			}
			got := worstCase(Model(c, tt.chips, tt.procs, settingsMap(tt.settings)))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Model() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// worstCase reduces results to what TestModel's table checks: the low and
// high bounds, with the headroom against the high bound (free − high QP
// memory − pending buffers). The expected bound, the slots and the modes
// have their own tests (TestExpectedDemand).
func worstCase(hs []ChipHeadroom) []ChipHeadroom {
	for i := range hs {
		h := &hs[i]
		if h.HBMKnown {
			h.HeadroomBytes = h.FreeHBMBytes - h.QPMemoryHighBytes - h.CCLBufferPendingBytes
		}
		h.QPsExpected, h.QPMemoryExpectedBytes, h.UnknownModeQPs, h.CaptureQPs = 0, 0, 0, 0
		h.SlotsFreeExpected, h.SlotsFreeHigh, h.AIVBufferPendingBytes = 0, 0, 0
		// The capacity inputs have their own test (TestCapacityInputs).
		h.VarLinks, h.VarQPBytesSingle, h.VarQPBytesMulti, h.VarBufferComms, h.FixedPendingBytes = 0, 0, 0, 0, 0
	}
	return hs
}

func TestModelNilSettings(t *testing.T) {
	got := Model(DefaultConfig(),
		[]ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 10, OK: true}, HBMTotalBytes: ascend.Value{V: 100, OK: true}}},
		[]ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}}, nil)
	want := []ChipHeadroom{{NPU: "0", Chip: "0", HBMKnown: true, FreeHBMBytes: 90, HeadroomBytes: 90, ProcessesUnknown: 1,
		SlotsFreeExpected: HCCPMaxQPsPerDevice, SlotsFreeHigh: HCCPMaxQPsPerDevice}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Model(nil settings) = %+v, want %+v", got, want)
	}
}

func TestModelInvalidConfigIsSanitized(t *testing.T) {
	// low > high and a NaN default: the model uses high = low and HCCL's default QPS.
	cfg := Config{QPBytesLow: 4 * mib, QPBytesHigh: 1 * mib, DefaultQPsPerConnection: math.NaN(), DefaultBuffSizeBytes: -1}
	got := Model(cfg, nil, []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 1}},
		settingsMap(map[int]ProcessSettings{1: {Communicators: []comm.Communicator{world64}}}))
	// 56 high QPs × 4 MiB = 224 MiB; 2 low × 4 MiB = 8 MiB; buffer 2 × 200 MiB + 1 MiB pending.
	if len(got) != 1 || got[0].QPMemoryHighBytes != 224*mib || got[0].QPMemoryLowBytes != 8*mib || got[0].CCLBufferPendingBytes != cclBuf {
		t.Errorf("Model(invalid config) = %+v", got)
	}
	if err := cfg.Validate(); err == nil {
		t.Error("Validate() accepted qp-bytes-low > qp-bytes-high")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	for _, bad := range []Config{
		{QPBytesLow: 0, QPBytesHigh: 1, DefaultQPsPerConnection: 1, DefaultBuffSizeBytes: 1},
		{QPBytesLow: 1, QPBytesHigh: math.Inf(1), DefaultQPsPerConnection: 1, DefaultBuffSizeBytes: 1},
		{QPBytesLow: 1, QPBytesHigh: 1, DefaultQPsPerConnection: 33, DefaultBuffSizeBytes: 1},
		{QPBytesLow: 1, QPBytesHigh: 1, DefaultQPsPerConnection: 1, DefaultBuffSizeBytes: math.NaN()},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
}

// TestModelModesAndSharing covers the rules HCCL prints or configures:
// the QP mode lines, graph-mode ring sockets and QP size, shared
// cclBuffers (bufferName) and the split of live QPs into HCCL's own and
// foreign ones.
func TestModelModesAndSharing(t *testing.T) {
	chip := ChipMemory{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 60000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}
	one := []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}}
	run := func(cfg Config, c ChipMemory, s ProcessSettings) ChipHeadroom {
		t.Helper()
		out := Model(cfg, []ChipMemory{c}, one, func(ChipProcess) (ProcessSettings, bool) { return s, true })
		if len(out) != 1 {
			t.Fatalf("%d chips", len(out))
		}
		return out[0]
	}
	w := world64
	w.DeviceType = 2

	// QPS 16 on 910B: 17 QPs per link; the `does not support multi-QP` or
	// `not effective in offline mode` line makes it 1.
	s := known(16, 200, w)
	if h := run(DefaultConfig(), chip, s); h.QPsHigh != 56*17 {
		t.Errorf("multi-QP: high %v, want %v", h.QPsHigh, 56*17)
	}
	s.SingleQP = true
	if h := run(DefaultConfig(), chip, s); h.QPsHigh != 56 || h.QPsLow != 2 || h.QPMemoryHighBytes != 56*3*mib {
		t.Errorf("single QP: %+v", h)
	}

	// Graph mode: ring links of a ring of 8 servers have ⌈4·8/12⌉ = 3
	// sockets, one QP each: low 2 peers × 3 = 6; high the mesh, 56 × 1. QPs
	// are 264 KiB (send depth 128 × 64 B + CQ depth 8192 × 32 B) for every bound.
	s.GraphMode = true
	h := run(DefaultConfig(), chip, s)
	if h.QPsLow != 6 || h.QPsHigh != 56 || h.QPMemoryLowBytes != 6*264*1024 || h.QPMemoryHighBytes != 56*264*1024 || h.UnknownModeQPs != 0 {
		t.Errorf("graph mode: %+v", h)
	}
	// ... unless the user set the QP size flags.
	cfg := DefaultConfig()
	cfg.QPBytesSetByUser = true
	if h := run(cfg, chip, s); h.QPMemoryHighBytes != 56*3*mib {
		t.Errorf("graph mode with flags: high memory %v", h.QPMemoryHighBytes)
	}
	// A ring of 2 servers: ⌈8/12⌉ = 1 socket; high never below low.
	two := newComm(16, 2)
	if h := run(DefaultConfig(), chip, ProcessSettings{GraphMode: true, SingleQP: true, Communicators: []comm.Communicator{two}}); h.QPsLow != 1 || h.QPsHigh != 8 {
		t.Errorf("graph ring of 2: %+v", h)
	}
	if got := graphRingSockets(64); got != 22 {
		t.Errorf("graphRingSockets(64) = %v, want 22", got)
	}

	// Three communicators, two sharing bufferName "moe": two buffers
	// pending, not three; once one of the pair allocated, one.
	a, b, c := w, w, w
	a.Name, b.Name, c.Name = "a", "b", "c"
	a.BufferName, b.BufferName = "moe", "moe"
	if h := run(DefaultConfig(), chip, known(1, 200, a, b, c)); h.CCLBufferPendingBytes != 2*cclBuf {
		t.Errorf("shared buffer pending %v MiB, want %v", h.CCLBufferPendingBytes/mib, 2*cclBuf/mib)
	}
	b.CCLBufferBytes = cclBuf
	if h := run(DefaultConfig(), chip, known(1, 200, a, b, c)); h.CCLBufferPendingBytes != cclBuf {
		t.Errorf("shared buffer allocated: pending %v MiB, want %v", h.CCLBufferPendingBytes/mib, cclBuf/mib)
	}

	// Live QPs: 10 HCCL logged (qpn 100–109) of which 8 are live, plus 30 a
	// KV-transfer engine holds. Foreign 30, reported; nothing subtracted.
	set := linked(w, 4, 1, cclBuf)
	set.EstablishedQPs = 10
	ps := known(1, 200, set)
	for q := uint32(100); q < 110; q++ {
		ps.QPNs = append(ps.QPNs, q)
	}
	live := chip
	live.LiveQPNsKnown = true
	for q := uint32(100); q < 108; q++ {
		live.LiveQPNs = append(live.LiveQPNs, q)
	}
	for q := uint32(5000); q < 5030; q++ {
		live.LiveQPNs = append(live.LiveQPNs, q)
	}
	live.LiveQPs = ascend.Value{V: float64(len(live.LiveQPNs)), OK: true}
	h = run(DefaultConfig(), live, ps)
	if !h.ForeignQPsKnown || h.ForeignQPs != 30 || h.QPsHigh != 52 || h.EstablishedQPs != 10 {
		t.Errorf("foreign QPs: %+v", h)
	}
	// Without qpns in the logs the old rule applies: the 38 live QPs
	// beyond the 10 logged are taken as set up, and the QP memory shrinks
	// in proportion.
	ps.QPNs = nil
	h = run(DefaultConfig(), live, ps)
	if h.ForeignQPsKnown || h.EstablishedQPs != 38 || h.QPsHigh != 52-28 || h.QPMemoryHighBytes != 24*3*mib {
		t.Errorf("no qpns: %+v", h)
	}
}

// TestQPModeBytes: the per-mode sizes docs/headroom.md tabulates, from
// HCCL's depths × HCCP's 64 B per send WQE and 32 B per CQE.
func TestQPModeBytes(t *testing.T) {
	for _, tt := range []struct {
		m    QPMode
		want float64
	}{
		{QPMode910BOpBase, 3 * mib},          // 32768 × 64 + 32768 × 32: EI0011's "3MB"
		{QPMode910BOpBaseMultiQP, 1.5 * mib}, // depths halved
		{QPModeGraph, 264 * kib},             // 128 × 64 + 8192 × 32
		{QPModeA3Host, 768 * kib},            // 8192 / 8192
		{QPModeA3AICPU, 192 * kib},           // 2048 / 2048
		{QPModeA3AICPUMultiQP, 96 * kib},     // halved
		{QPModeA3HostMultiQP, 384 * kib},     // halved
		{QPModeDeviceDirect, 48 * kib},       // 512 / 512 (SEND_QP_DEPTH_FOR_BSR)
	} {
		if got := tt.m.Bytes(); got != tt.want {
			t.Errorf("%s: %v bytes, want %v", tt.m.Name, got, tt.want)
		}
		// HCCL's CheckQpDepth: powers of two in [QP_DEPTH_MIN, QP_DEPTH_MAX].
		for _, d := range []float64{tt.m.SQDepth, tt.m.CQDepth} {
			if n := int(d); d < QPDepthMin || d > QPDepthMax || n&(n-1) != 0 {
				t.Errorf("%s: depth %v is one HCCL refuses (CheckQpDepth)", tt.m.Name, d)
			}
		}
	}
}

// TestExpectedDemand: the bound the alert uses — what HCCL's algorithms
// will link, at the size of the process's QP mode, plus the next capture
// of a capturing process, the AIV buffers and the QP slots.
func TestExpectedDemand(t *testing.T) {
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	cfg.Now = now
	free := ChipMemory{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 63900 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}} // 1636 MiB free
	// 128 ranks on 16 servers of 8, 910B, op-base, an AllReduce ring linked 2 peers.
	// Its first AllReduce's link set, auto-selected NHR, linked all 7 NHR peers of 16 servers.
	allReduce := comm.Communicator{Name: "w", RankSize: 128, ServerNum: 16, SuperPodNum: 0, DeviceType: 2, SuperPodMode: -1,
		StandardCard: -1, RoCEPeers: 7, OtherPeers: 7, EstablishedQPs: 7, CCLBufferBytes: cclBuf, OpBaseTags: true,
		LinkSets: []comm.LinkSet{{Tag: "AllReduce_wNHRAllReduceMeshExecutor_host", Kind: comm.LinkSetOpBase, Op: "allreduce", Level1: "NHR", Algo: "nhr",
			Executor: "AllReduceMeshExecutor", RoCEPeers: 7, QPs: 7}}}
	// world64 on 910B, op-base.
	opBase910B := world64
	opBase910B.DeviceType, opBase910B.OpBaseTags = 2, true
	// allReduce whose last graph capture, at at, linked 15 QPs.
	capturedAt := func(at time.Time) comm.Communicator {
		c := allReduce
		c.RoCEPeers, c.Captures, c.LastCaptureQPs, c.LastCaptureAt = 15, 3, 15, at
		return c
	}
	// free with 8100 live QPs on the port (hccn_tool -qp_info).
	live8100 := free
	live8100.LiveQPs = ascend.Value{V: 8100, OK: true}
	tests := []struct {
		name  string
		s     ProcessSettings
		chip  ChipMemory
		check func(t *testing.T, h ChipHeadroom)
	}{
		{"AllReduce only: its small-count set is still ahead", known(1, 200, allReduce), free, func(t *testing.T, h ChipHeadroom) {
			// The mesh executor's NHR set is linked; the small-count executor (under 512 KB)
			// is a new tag with new QPs, H-D over 16 servers (a power of two): 4 peers,
			// 4 QPs × 3 MiB = 12 MiB. The pipeline executor's ring (2) is high only:
			// high max(120 − 7, 4 + 2) = 113.
			if h.QPsExpected != 4 || h.QPMemoryExpectedBytes != 12*mib || h.QPsHigh != 113 || h.UnknownModeQPs != 0 {
				t.Errorf("%+v", h)
			}
			if h.HeadroomBytes != (1636-12)*mib {
				t.Errorf("headroom %v MiB, want 1624", h.HeadroomBytes/mib)
			}
		}},
		{"an AlltoAll ran: every remote rank", known(1, 200, func() comm.Communicator { c := allReduce; c.AllRanksOps = true; return c }()), free,
			func(t *testing.T, h ChipHeadroom) {
				if h.QPsExpected != 113 || h.QPMemoryExpectedBytes != 113*3*mib {
					t.Errorf("%+v", h)
				}
			}},
		{"QPS 16 on 910B op-base: the first link set, NHR's 5 peers × 17 QPs of 1.5 MiB", known(16, 200, opBase910B), free, func(t *testing.T, h ChipHeadroom) {
			// 8 servers: auto-selection picks NHR (±1, ±2, 4: 5 peers); 5 × 17 = 85 QPs × 1.5 MiB.
			if h.QPsExpected != 85 || h.QPMemoryExpectedBytes != 85*1.5*mib || h.QPMemoryHighBytes != 952*1.5*mib {
				t.Errorf("%+v", h)
			}
		}},
		{"mode unknown: the band's high end, said so", known(1, 200, world64), free, func(t *testing.T, h ChipHeadroom) {
			// op-base NHR (5) or graph H-D (3): the larger.
			if h.QPsExpected != 5 || h.UnknownModeQPs != 5 || h.QPMemoryExpectedBytes != 5*3*mib || h.QPMemoryLowBytes != 2*256*kib {
				t.Errorf("%+v", h)
			}
		}},
		{"A3 op-base, AI CPU by default", known(1, 200, func() comm.Communicator {
			c := newComm(16, 2)
			c.DeviceType, c.OpBaseTags = 4, true
			return c
		}()), free, func(t *testing.T, h ChipHeadroom) {
			if h.QPsExpected != 1 || h.QPMemoryExpectedBytes != 192*kib {
				t.Errorf("%+v", h)
			}
		}},
		{"A3 op-base, host expansion", func() ProcessSettings {
			c := newComm(16, 2)
			c.DeviceType, c.OpBaseTags = 4, true
			s := known(1, 200, c)
			s.ExpansionMode = "HOST"
			return s
		}(), free, func(t *testing.T, h ChipHeadroom) {
			if h.QPMemoryExpectedBytes != 768*kib {
				t.Errorf("%+v", h)
			}
		}},
		{"capturing: the next capture's offload QPs are ahead", known(1, 200, capturedAt(now.Add(-time.Minute))), free, func(t *testing.T, h ChipHeadroom) {
			// 15 capture QPs at the offload size (128 / 8192: 264 KiB) + the small-count set's 4 at 3 MiB.
			if h.CaptureQPs != 15 || h.QPsExpected != 19 || h.QPMemoryExpectedBytes != 15*264*kib+4*3*mib || h.QPsHigh != 105+15 {
				t.Errorf("%+v", h)
			}
		}},
		{"captured long ago: nothing projected", known(1, 200, capturedAt(now.Add(-time.Hour))), free, func(t *testing.T, h ChipHeadroom) {
			if h.CaptureQPs != 0 || h.QPsExpected != 4 {
				t.Errorf("%+v", h)
			}
		}},
		{"AIV mode: 40 MiB + 32 KiB per communicator before its first collective", func() ProcessSettings {
			s := known(1, 200, newComm(16, 1))
			s.ExpansionMode = "AIV"
			return s
		}(), free, func(t *testing.T, h ChipHeadroom) {
			if h.AIVBufferPendingBytes != 40*mib+32*kib || h.CCLBufferPendingBytes != cclBuf+40*mib+32*kib {
				t.Errorf("%+v", h)
			}
		}},
		{"deviceType not printed: the chip's name says 910B", known(16, 200, func() comm.Communicator {
			c := world64
			c.OpBaseTags = true
			return c
		}()), func() ChipMemory { c := free; c.Name = "910B3"; return c }(), func(t *testing.T, h ChipHeadroom) {
			if h.UnknownModeQPs != 0 || h.QPMemoryExpectedBytes != 85*1.5*mib {
				t.Errorf("%+v", h)
			}
		}},
		{"QP slots: live QPs near HCCP's 8192", known(16, 200, opBase910B), live8100, func(t *testing.T, h ChipHeadroom) {
			// 8100 live QPs beyond the logs are no whole number of 17-QP links of the
			// communicator: nothing comes off what is ahead; slots 8192 − 8100 − 85.
			if h.SlotsFreeExpected != 7 || h.SlotsFreeHigh != 8192-8100-952 {
				t.Errorf("%+v", h)
			}
		}},
		{"QP slots: HCCL's own QPs logged, demand beyond the limit", known(16, 200, func() comm.Communicator { c := opBase910B; c.EstablishedQPs = 8100; return c }()), live8100, func(t *testing.T, h ChipHeadroom) {
			if h.SlotsFreeExpected != 8192-8100-85 || h.SlotsFreeHigh != 8192-8100-952 {
				t.Errorf("%+v", h)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Model(cfg, []ChipMemory{tt.chip}, []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}}, func(ChipProcess) (ProcessSettings, bool) { return tt.s, true })
			if len(out) != 1 {
				t.Fatalf("%d chips", len(out))
			}
			h := out[0]
			if !(h.QPsLow <= h.QPsExpected && h.QPsExpected <= h.QPsHigh) {
				t.Errorf("bounds out of order: low %v expected %v high %v", h.QPsLow, h.QPsExpected, h.QPsHigh)
			}
			tt.check(t, h)
		})
	}
}

func TestDeviceTypeOfChip(t *testing.T) {
	for name, want := range map[string]int{"910B3": 2, "910B": 2, "Ascend910B4": 2, "910_9392": 4, "Ascend910_9382": 4, "910A": -1, "310P3": -1, "": -1} {
		if got := DeviceTypeOfChip(name); got != want {
			t.Errorf("DeviceTypeOfChip(%q) = %d, want %d", name, got, want)
		}
	}
}
