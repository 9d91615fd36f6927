package hccn

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// ChipSource lists the node's NPU chips (npu-smi's view). main wires it to
// the npusmi collector; nil means "npu-smi not available".
type ChipSource interface {
	Chips(ctx context.Context) ([]ascend.Chip, error)
}

// Device is one RoCE NIC: the physical id hccn_tool's -i takes and the
// npu/chip labels every per-chip series of the exporter carries.
type Device struct {
	PhyID int
	ascend.ChipID
}

// maxPhyID: hccn_tool accepts a physical id of one or two digits.
const maxPhyID = 99

// MapDevices maps the chips npu-smi lists to hccn_tool's physical ids by
// ascend.PhysicalIDs' rules (docs/hccn.md, "Which chip is which"), the ids
// ascend_npu_info's phy_id shows: npu-smi's Phy-ID (A3, 950), else the NPU
// ID of a one-chip NPU (MindCluster's npu-exporter passes the same number
// to -i); a chip of a multi-chip NPU without a Phy-ID (300I Duo) has no
// RoCE NIC hccn_tool could address by a known id: skipped with a warning.
//
// Without npu-smi's view (chips empty), every /dev/davinciN node is a device
// with physical id N, labelled npu="N", chip="0": right for the one-die cards,
// and the only guess possible without npu-smi.
func MapDevices(chips []ascend.Chip, devNodes []int) (devs []Device, warnings []string) {
	seen := map[int]bool{}
	add := func(d Device) {
		if seen[d.PhyID] {
			warnings = append(warnings, fmt.Sprintf("physical id %d claimed twice (npu %s chip %s); kept the first", d.PhyID, d.NPU, d.Chip))
			return
		}
		seen[d.PhyID] = true
		devs = append(devs, d)
	}
	if len(chips) == 0 {
		for _, n := range devNodes {
			if n >= 0 && n <= maxPhyID {
				add(Device{PhyID: n, ChipID: ascend.ChipID{NPU: strconv.Itoa(n), Chip: "0"}})
			}
		}
		return devs, warnings
	}
	phy := ascend.PhysicalIDs(chips)
	for _, c := range chips {
		p, known := phy[c.ChipID]
		if !known {
			warnings = append(warnings, fmt.Sprintf("npu %s chip %s: no physical id known (npu-smi prints no Phy-ID for it); not read", c.NPU, c.Chip))
			continue
		}
		id, err := strconv.Atoi(p)
		if err != nil || id < 0 || id > maxPhyID {
			if c.PhyID != "" {
				warnings = append(warnings, fmt.Sprintf("npu %s chip %s: Phy-ID %q is not an id hccn_tool accepts", c.NPU, c.Chip, c.PhyID))
			} else {
				warnings = append(warnings, fmt.Sprintf("npu %s chip %s: no physical id known (npu-smi prints no Phy-ID for it); not read", c.NPU, c.Chip))
			}
			continue
		}
		add(Device{PhyID: id, ChipID: c.ChipID})
	}
	return devs, warnings
}

var davinciNode = regexp.MustCompile(`^davinci([0-9]{1,2})$`)

// davinciNodes lists N of every /dev/davinciN under dir, sorted.
func davinciNodes(dir string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if m := davinciNode.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}
