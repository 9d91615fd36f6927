package npusmi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// AcceptRuns is how many runs in a row must show the same smaller table
// before it is taken as the node as it now is (a chip really gone) rather
// than a cut output: a cut falls at a different place each time.
const AcceptRuns = 3

// expectation is what complete runs showed of the node. A table is
// complete by its structure: Parse refuses one cut inside a row, after a
// row, or inside the process table (every NPU of the device table must be
// accounted for there). What structure cannot show is a cut on a separator
// before the process table; so
//   - once a run printed a process table, a table without one is cut;
//   - a table listing fewer chips than complete runs did is the node only
//     when it proves itself whole (it has its process table) and AcceptRuns
//     such tables in a row agree on it (a chip really gone). An HBM table
//     (910, 910B, A3, 950: npu-smi always prints their process table)
//     without a process table never proves itself; a non-HBM one (310,
//     310P boards that print none) is taken after AcceptRuns identical
//     runs, since a cut falls at a different place each time.
//
// A smaller table that fails is an error, instead of passing as a smaller
// node whose missing chips' series (and their headroom and health alerts)
// silently vanish.
type expectation struct {
	chips     map[ascend.ChipID]bool
	procTable bool // a complete run printed a process table

	shrunk     string // the smaller table seen in the last runs
	shrunkRuns int
}

// check compares a parsed run with the expectation and learns from it.
// accepted is true when a smaller table was taken as the new normal.
func (e *expectation) check(s *Snapshot) (accepted bool, err error) {
	have := make(map[ascend.ChipID]bool, len(s.Chips))
	for _, c := range s.Chips {
		have[c.ChipID] = true
	}
	hasProcs := s.ProcessNPUs != nil
	if e.procTable && !hasProcs {
		e.shrunk, e.shrunkRuns = "", 0
		return false, fmt.Errorf("%w: the output stops before the process table (earlier runs printed one)", ErrTruncated)
	}
	var missing []ascend.ChipID
	for k := range e.chips {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		if e.chips == nil {
			e.chips = map[ascend.ChipID]bool{}
		}
		for k := range have {
			e.chips[k] = true
		}
		e.procTable = e.procTable || hasProcs
		e.shrunk, e.shrunkRuns = "", 0
		return false, nil
	}
	slices.SortFunc(missing, func(a, b ascend.ChipID) int { return strings.Compare(a.NPU+"/"+a.Chip, b.NPU+"/"+b.Chip) })
	fail := fmt.Errorf("%w: %d chips listed, %d of those earlier complete runs listed are missing (first: NPU %s chip %s)",
		ErrTruncated, len(s.Chips), len(missing), missing[0].NPU, missing[0].Chip)
	if s.hbm && !hasProcs {
		// Cannot prove itself whole: never the node.
		e.shrunk, e.shrunkRuns = "", 0
		return false, fail
	}
	keys := make([]string, 0, len(have))
	for k := range have {
		keys = append(keys, k.NPU+"/"+k.Chip)
	}
	slices.Sort(keys)
	sig := fmt.Sprintf("%s|%v", strings.Join(keys, ","), hasProcs)
	if sig == e.shrunk {
		e.shrunkRuns++
	} else {
		e.shrunk, e.shrunkRuns = sig, 1
	}
	if e.shrunkRuns >= AcceptRuns {
		e.chips, e.procTable = have, hasProcs
		e.shrunk, e.shrunkRuns = "", 0
		return true, nil
	}
	return false, fail
}
