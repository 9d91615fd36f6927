package ascend

import (
	"maps"
	"testing"
)

// TestPhysicalIDs: npu-smi's Phy-ID where it prints one (A3), the NPU ID
// of a one-chip NPU (A2: /dev/davinciN is NPU N), none for a chip of a
// multi-chip NPU without a Phy-ID (300I Duo).
func TestPhysicalIDs(t *testing.T) {
	chip := func(npu, c, phy string) Chip { return Chip{ChipID: ChipID{npu, c}, PhyID: phy} }
	for _, tc := range []struct {
		name  string
		chips []Chip
		want  map[ChipID]string
	}{
		{"A2, one chip per NPU", []Chip{chip("0", "0", ""), chip("7", "0", "")},
			map[ChipID]string{{"0", "0"}: "0", {"7", "0"}: "7"}},
		{"A3, two dies with Phy-ID", []Chip{chip("0", "0", "0"), chip("0", "1", "1"), chip("1", "0", "2"), chip("1", "1", "3")},
			map[ChipID]string{{"0", "0"}: "0", {"0", "1"}: "1", {"1", "0"}: "2", {"1", "1"}: "3"}},
		{"300I Duo, two chips without Phy-ID", []Chip{chip("3", "0", ""), chip("3", "1", "")},
			map[ChipID]string{}},
	} {
		if got := PhysicalIDs(tc.chips); !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
