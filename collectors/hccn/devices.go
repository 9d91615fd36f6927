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
	PhyID     int
	NPU, Chip string
}

// maxPhyID: hccn_tool accepts a physical id of one or two digits.
const maxPhyID = 99

// MapDevices maps the chips npu-smi lists to hccn_tool's physical ids, by
// these rules, first match wins (docs/hccn.md, "Which chip is which"):
//
//  1. npu-smi prints the chip's Phy-ID (Atlas A3 / 910_93, Ascend 950): use it.
//  2. An NPU with a single chip (910, 910A, 910B: one die per card): the
//     physical id is the NPU ID npu-smi prints, which is the card's physical
//     device id (MindCluster's npu-exporter passes the same number to -i).
//  3. A chip of a multi-chip NPU without a Phy-ID (300I Duo): no RoCE NIC
//     hccn_tool could address by a known id; skipped with a warning.
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
				add(Device{PhyID: n, NPU: strconv.Itoa(n), Chip: "0"})
			}
		}
		return devs, warnings
	}
	perNPU := map[string]int{}
	for _, c := range chips {
		perNPU[c.NPU]++
	}
	for _, c := range chips {
		if c.PhyID != "" {
			id, err := strconv.Atoi(c.PhyID)
			if err != nil || id < 0 || id > maxPhyID {
				warnings = append(warnings, fmt.Sprintf("npu %s chip %s: Phy-ID %q is not an id hccn_tool accepts", c.NPU, c.Chip, c.PhyID))
				continue
			}
			add(Device{PhyID: id, NPU: c.NPU, Chip: c.Chip})
			continue
		}
		if perNPU[c.NPU] == 1 {
			if id, err := strconv.Atoi(c.NPU); err == nil && id >= 0 && id <= maxPhyID {
				add(Device{PhyID: id, NPU: c.NPU, Chip: c.Chip})
				continue
			}
		}
		warnings = append(warnings, fmt.Sprintf("npu %s chip %s: no physical id known (npu-smi prints no Phy-ID for it); not read", c.NPU, c.Chip))
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
