package headroom

import (
	"math"
	"reflect"
	"testing"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

func TestLinkPeers(t *testing.T) {
	tests := []struct {
		name                string
		rankSize, serverNum int
		intraRoCE           bool
		low, high           float64
	}{
		{"single rank", 1, 1, false, 0, 0},
		{"no ranks", 0, 0, false, 0, 0},
		{"negative ranks", -3, 2, false, 0, 0},
		// All 8 ranks on one server talk over HCCS/PCIe, not RoCE.
		{"one server", 8, 1, false, 0, 0},
		// Intra-server RoCE: 7 peers in a mesh, a ring of 8 has 2 neighbours.
		{"one server intra RoCE", 8, 1, true, 2, 7},
		{"two ranks intra RoCE", 2, 1, true, 1, 1},
		// 64/8 = 8 per server; high 64−8 = 56; low min(8−1, 2) = 2.
		{"64 ranks 8 servers", 64, 8, false, 2, 56},
		// With intra RoCE: 56 + (8−1) = 63 = 64−1; ring over 64 ranks = 2.
		{"64 ranks 8 servers intra RoCE", 64, 8, true, 2, 63},
		// 16/2 = 8 per server; high 8; a ring of two servers has 1 neighbour.
		{"two servers", 16, 2, false, 1, 8},
		// 10/4 = 2 (floor: the smallest server's share); high 10−2 = 8; low 2.
		{"uneven spread", 10, 4, false, 2, 8},
		// One rank per server: high 63, low 2.
		{"one rank per server", 64, 64, false, 2, 63},
		// serverNum unknown: high assumes one rank per server (3), low one server (0).
		{"servers unknown", 4, 0, false, 0, 3},
		{"servers negative", 4, -1, false, 0, 3},
		{"servers unknown intra RoCE", 4, 0, true, 2, 3},
		// serverNum > rankSize is capped: 2 servers of 1 rank; high 1, low 1.
		{"more servers than ranks", 2, 5, false, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			low, high := linkPeers(tt.rankSize, tt.serverNum, tt.intraRoCE)
			if low != tt.low || high != tt.high {
				t.Errorf("linkPeers(%d, %d, %v) = (%v, %v), want (%v, %v)",
					tt.rankSize, tt.serverNum, tt.intraRoCE, low, high, tt.low, tt.high)
			}
		})
	}
}

// settingsMap turns a map into the lookup Model takes.
func settingsMap(m map[int]ProcessSettings) func(ChipProcess) (ProcessSettings, bool) {
	return func(p ChipProcess) (ProcessSettings, bool) {
		pid := p.PID
		s, ok := m[pid]
		return s, ok
	}
}

func known(qps float64, buffMiB float64, comms ...Communicator) ProcessSettings {
	return ProcessSettings{
		QPsPerConnection: qps, QPsKnown: true,
		BuffSizeBytes: buffMiB * mib, BuffSizeKnown: true,
		Communicators: comms,
	}
}

var world64 = Communicator{Name: "world", RankSize: 64, ServerNum: 8}

func TestModel(t *testing.T) {
	cfg := DefaultConfig()
	chip0 := ChipMemory{NPU: "0", Chip: "0", HBMUsedBytes: 63900 * mib, HBMTotalBytes: 65536 * mib}
	tests := []struct {
		name     string
		cfg      Config
		chips    []ChipMemory
		procs    []ChipProcess
		settings map[int]ProcessSettings
		want     []ChipHeadroom
	}{
		{
			// The failing case. Free 65536−63900 = 1636 MiB.
			// high: 56 peers × 16 = 896 QPs × 3 MiB = 2688 MiB; headroom 1636−2688 = −1052 MiB.
			// low: 2 peers × 16 = 32 QPs × 256 KiB = 8 MiB. Buffer 2 × 200 MiB × 1 = 400 MiB.
			name:     "QPS 16 in 64 ranks over 8 servers goes negative",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(16, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 32, QPsHigh: 896,
				QPMemoryLowBytes: 8 * mib, QPMemoryHighBytes: 2688 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: -1052 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// Same chip with QPS 1: high 56 QPs × 3 MiB = 168 MiB; headroom 1636−168 = 1468 MiB.
			// low: 2 QPs × 256 KiB = 512 KiB.
			name:     "QPS 1 in 64 ranks over 8 servers stays positive",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1468 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// A second communicator (16 ranks, 2 servers: high 8, low 1 peers) × QPS 4
			// adds 32 high and 4 low QPs: high (56+8)×4 = 256 QPs × 3 MiB = 768 MiB,
			// low (2+1)×4 = 12 QPs × 256 KiB = 3 MiB. Buffers 2 × 100 MiB × 2 = 400 MiB.
			// Headroom 1636−768 = 868 MiB.
			name:  "two communicators sum",
			chips: []ChipMemory{chip0},
			procs: []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(4, 100, world64,
				Communicator{Name: "tp", RankSize: 16, ServerNum: 2})},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 12, QPsHigh: 256,
				QPMemoryLowBytes: 3 * mib, QPMemoryHighBytes: 768 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 868 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// The "tp" communicator was destroyed: only world64 × QPS 4 is left:
			// high 224 QPs × 3 MiB = 672 MiB, low 8 QPs × 256 KiB = 2 MiB, buffer 200 MiB.
			// Headroom 1636−672 = 964 MiB.
			name:     "destroyed communicator leaves the sum",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(4, 100, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 8, QPsHigh: 224,
				QPMemoryLowBytes: 2 * mib, QPMemoryHighBytes: 672 * mib,
				CCLBufferBytes: 200 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 964 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// pid 200 is in no CANN log: defaulted, no communicators known, so it adds nothing.
			// pid 100 as in the QPS 1 case.
			name:     "unknown pid is defaulted and visible",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{NPU: "0", Chip: "0", PID: 100}, {NPU: "0", Chip: "0", PID: 200}},
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1468 * mib,
				ProcessesKnown: 1, ProcessesDefaulted: 1,
			}},
		},
		{
			// Communicators known, QPS and BUFFSIZE not printed: HCCL defaults 1 and 200 MiB.
			// As the QPS 1 case, but counted as defaulted.
			name:  "known pid with missing values uses HCCL defaults",
			chips: []ChipMemory{chip0},
			procs: []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: {
				QPsPerConnection: 16, // not Known: ignored
				Communicators:    []Communicator{world64},
			}},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1468 * mib,
				ProcessesDefaulted: 1,
			}},
		},
		{
			// QPS 64 is outside HCCL's [1,32] (HCCL would have refused it): default 1 instead.
			name:     "out-of-range QPS falls back to the default",
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(64, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 2, QPsHigh: 56,
				QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1468 * mib,
				ProcessesDefaulted: 1,
			}},
		},
		{
			// Two processes of the same job share the chip (pid 100 listed twice by npu-smi,
			// counted once). pid 100: 56 high, 2 low QPs; pid 101 (8 ranks on one server,
			// intra RoCE, QPS 2): high 7×2 = 14, low 2×2 = 4. Total high 70 QPs × 3 MiB = 210 MiB,
			// low 6 × 256 KiB = 1.5 MiB. Buffers 400 + 2×50 = 500 MiB. Headroom 1636−210 = 1426 MiB.
			name:  "processes on one chip sum, duplicate rows count once",
			chips: []ChipMemory{chip0},
			procs: []ChipProcess{{NPU: "0", Chip: "0", PID: 100}, {NPU: "0", Chip: "0", PID: 100}, {NPU: "0", Chip: "0", PID: 101}},
			settings: map[int]ProcessSettings{
				100: known(1, 200, world64),
				101: func() ProcessSettings {
					s := known(2, 50, Communicator{Name: "local", RankSize: 8, ServerNum: 1})
					s.IntraRoCE = true
					return s
				}(),
			},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 6, QPsHigh: 70,
				QPMemoryLowBytes: 1.5 * mib, QPMemoryHighBytes: 210 * mib,
				CCLBufferBytes: 500 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: 1426 * mib,
				ProcessesKnown: 2,
			}},
		},
		{
			// Chip 1 has no processes: headroom is its free HBM, 65536−2000 = 63536 MiB.
			// A process on chip 2, which npu-smi's memory table lacks: HBM unknown.
			// Chip 3 reports total 0 (a placeholder): HBM unknown.
			name: "idle chip, chip missing from memory table, placeholder total",
			chips: []ChipMemory{
				{NPU: "1", Chip: "0", HBMUsedBytes: 2000 * mib, HBMTotalBytes: 65536 * mib},
				{NPU: "3", Chip: "0", HBMUsedBytes: 0, HBMTotalBytes: 0},
			},
			procs:    []ChipProcess{{NPU: "2", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(1, 200, world64)},
			want: []ChipHeadroom{
				{NPU: "1", Chip: "0", HBMKnown: true, FreeHBMBytes: 63536 * mib, HeadroomBytes: 63536 * mib},
				{NPU: "3", Chip: "0"},
				{
					NPU: "2", Chip: "0",
					QPsLow: 2, QPsHigh: 56,
					QPMemoryLowBytes: 512 * kib, QPMemoryHighBytes: 168 * mib,
					CCLBufferBytes: 400 * mib, ProcessesKnown: 1,
				},
			},
		},
		{
			// Custom bounds 1 MiB..2 MiB with QPS 16: 896 × 2 MiB = 1792 MiB, 32 × 1 MiB = 32 MiB.
			// Headroom 1636−1792 = −156 MiB.
			name:     "flags change the bytes per QP",
			cfg:      Config{QPBytesLow: 1 * mib, QPBytesHigh: 2 * mib, DefaultQPsPerConnection: 1, DefaultBuffSizeBytes: 200 * mib},
			chips:    []ChipMemory{chip0},
			procs:    []ChipProcess{{NPU: "0", Chip: "0", PID: 100}},
			settings: map[int]ProcessSettings{100: known(16, 200, world64)},
			want: []ChipHeadroom{{
				NPU: "0", Chip: "0",
				QPsLow: 32, QPsHigh: 896,
				QPMemoryLowBytes: 32 * mib, QPMemoryHighBytes: 1792 * mib,
				CCLBufferBytes: 400 * mib,
				HBMKnown:       true, FreeHBMBytes: 1636 * mib, HeadroomBytes: -156 * mib,
				ProcessesKnown: 1,
			}},
		},
		{
			// Used above total (npu-smi glitch): free is −100 MiB, exported as is.
			name:  "used above total",
			chips: []ChipMemory{{NPU: "0", Chip: "0", HBMUsedBytes: 1100 * mib, HBMTotalBytes: 1000 * mib}},
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
			got := Model(c, tt.chips, tt.procs, settingsMap(tt.settings))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Model() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestModelNilSettings(t *testing.T) {
	got := Model(DefaultConfig(),
		[]ChipMemory{{NPU: "0", Chip: "0", HBMUsedBytes: 10, HBMTotalBytes: 100}},
		[]ChipProcess{{NPU: "0", Chip: "0", PID: 1}}, nil)
	want := []ChipHeadroom{{NPU: "0", Chip: "0", HBMKnown: true, FreeHBMBytes: 90, HeadroomBytes: 90, ProcessesDefaulted: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Model(nil settings) = %+v, want %+v", got, want)
	}
}

func TestModelInvalidConfigIsSanitized(t *testing.T) {
	// low > high and a NaN default: the model uses high = low and HCCL's default QPS.
	cfg := Config{QPBytesLow: 4 * mib, QPBytesHigh: 1 * mib, DefaultQPsPerConnection: math.NaN(), DefaultBuffSizeBytes: -1}
	got := Model(cfg, nil, []ChipProcess{{NPU: "0", Chip: "0", PID: 1}},
		settingsMap(map[int]ProcessSettings{1: {Communicators: []Communicator{world64}}}))
	// 56 high QPs × 4 MiB = 224 MiB; 2 low × 4 MiB = 8 MiB; buffer 2 × 200 MiB.
	if len(got) != 1 || got[0].QPMemoryHighBytes != 224*mib || got[0].QPMemoryLowBytes != 8*mib || got[0].CCLBufferBytes != 400*mib {
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
