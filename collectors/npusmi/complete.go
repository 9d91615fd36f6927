package npusmi

import (
	"fmt"
	"slices"
	"strings"
)

// acceptRuns is how many runs in a row must show the same smaller table
// before it is taken as the node as it now is (a chip really gone) rather
// than a cut output: a cut falls at a different place each time.
const acceptRuns = 3

// expectation is what complete runs showed of the node. A table that
// parses but lists fewer chips, or whose process table stops accounting
// for every NPU, is a cut output that happened to end at a row boundary:
// it fails, instead of passing as a smaller node whose missing chips'
// series (and their headroom and health alerts) silently vanish.
type expectation struct {
	chips         map[chipKey]bool
	procsCoverAll bool // a complete run's process table accounted for every NPU

	shrunk     string // the smaller table seen in the last runs
	shrunkRuns int
}

// check compares a parsed run with the expectation and learns from it.
// accepted is true when a smaller table was taken as the new normal.
func (e *expectation) check(s *Snapshot) (accepted bool, err error) {
	have := make(map[chipKey]bool, len(s.Chips))
	npus := map[string]bool{}
	for _, c := range s.Chips {
		have[chipKey{c.NPU, c.Chip}] = true
		npus[c.NPU] = true
	}
	var missing []chipKey
	for k := range e.chips {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	coverAll := s.ProcessNPUs != nil
	var uncovered []string
	for npu := range npus {
		if !slices.Contains(s.ProcessNPUs, npu) {
			coverAll = false
			uncovered = append(uncovered, npu)
		}
	}
	procsCut := e.procsCoverAll && !coverAll
	if len(missing) == 0 && !procsCut {
		if e.chips == nil {
			e.chips = map[chipKey]bool{}
		}
		for k := range have {
			e.chips[k] = true
		}
		e.procsCoverAll = e.procsCoverAll || coverAll
		e.shrunk, e.shrunkRuns = "", 0
		return false, nil
	}

	keys := make([]string, 0, len(have))
	for k := range have {
		keys = append(keys, k.npu+"/"+k.chip)
	}
	slices.Sort(keys)
	sig := fmt.Sprintf("%s|%v", strings.Join(keys, ","), coverAll)
	if sig == e.shrunk {
		e.shrunkRuns++
	} else {
		e.shrunk, e.shrunkRuns = sig, 1
	}
	if e.shrunkRuns >= acceptRuns {
		e.chips, e.procsCoverAll = have, coverAll
		e.shrunk, e.shrunkRuns = "", 0
		return true, nil
	}
	if len(missing) > 0 {
		slices.SortFunc(missing, func(a, b chipKey) int { return strings.Compare(a.npu+"/"+a.chip, b.npu+"/"+b.chip) })
		return false, fmt.Errorf("%w: %d chips listed, %d of those earlier complete runs listed are missing (first: NPU %s chip %s)",
			ErrTruncated, len(s.Chips), len(missing), missing[0].npu, missing[0].chip)
	}
	slices.Sort(uncovered)
	return false, fmt.Errorf("%w: the process table stops before NPU %s (earlier complete runs accounted for every NPU)",
		ErrTruncated, uncovered[0])
}
