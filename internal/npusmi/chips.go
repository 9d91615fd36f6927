package npusmi

import "github.com/hccl-exporter/hccl_exporter/internal/ascend"

// PhyChips lists the run's chips with the Phy-ID npu-smi prints (A3, 950;
// "" elsewhere), as ascend.PhysicalIDs and the joins take them.
func (s *Snapshot) PhyChips() []ascend.Chip {
	out := make([]ascend.Chip, len(s.Chips))
	for i, c := range s.Chips {
		out[i] = ascend.Chip{ChipID: c.ChipID, PhyID: c.PhyID}
	}
	return out
}
