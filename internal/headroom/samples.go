package headroom

import "github.com/hccl-exporter/hccl_exporter/internal/ascend"

// Samples are the QP-size estimator's samples of one npu-smi run: per chip
// with a known HBM total, its HBM used and the QPs its processes' logs show
// set up, under cfg, each process's settings from settings (false: its logs
// are not read, and the chip's bursts are then not one known owner's).
func Samples(cfg Config, chips []ChipMemory, procs []ChipProcess, settings func(ChipProcess) (ProcessSettings, bool)) []ChipSample {
	byChip := map[ascend.ChipID][]ChipProcess{}
	for _, p := range procs {
		k := p.ChipID
		byChip[k] = append(byChip[k], p)
	}
	var out []ChipSample
	for _, chip := range chips {
		if !chip.HBMTotalBytes.OK || chip.HBMTotalBytes.V <= 0 {
			continue
		}
		ps := byChip[chip.ChipID]
		sample := ChipSample{ChipID: chip.ChipID, Product: chip.Name, Driver: chip.Driver, At: cfg.Now,
			HBMUsedBytes: chip.HBMUsedBytes, QPsByMode: map[string]float64{}, Processes: ProcessSetID(ps), LiveQPs: chip.LiveQPs}
		for _, p := range ps {
			s, ok := settings(p)
			if !ok {
				sample.AddOwner("", false)
				continue
			}
			AddSample(&sample, cfg, s, DeviceTypeOfChip(chip.Name))
		}
		out = append(out, sample)
	}
	return out
}
