package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// A job's ranks run the same settings in the same communicators: at 1,000
// ranks the per-process detail is a thousand near-identical rows. The text
// and HTML reports show one row per settings set and communicators instead
// (the per-process detail behind --detail in text, folded in HTML; the JSON
// report has every process).

// ProcGroup is the processes of one settings set in the same communicators.
type ProcGroup struct {
	SettingsSet string
	// Comms names the communicators: "name (rankSize N, M servers)".
	Comms     []string
	Processes int
	Nodes     []string
	// RankLow and RankHigh bound the ranks in the largest communicator
	// (-1 when none printed one).
	RankLow, RankHigh int
	// The settings (the same in a settings set) and the ranges over the
	// group's processes.
	QPsPerConnection         string
	BuffSize                 string
	QPsLow, QPsHigh          float64
	QPMemLow, QPMemHigh      float64
	CCLBufferLow, CCLBufHigh float64
	FirstLastWrite           model.Timestamp
	LastLastWrite            model.Timestamp
}

// RankRange renders the ranks: "ranks 0-63", "rank 5" or "".
func (g ProcGroup) RankRange() string {
	switch {
	case g.RankLow < 0:
		return "ranks not printed"
	case g.RankLow == g.RankHigh:
		return fmt.Sprintf("rank %d", g.RankLow)
	}
	return fmt.Sprintf("ranks %d-%d", g.RankLow, g.RankHigh)
}

// Range renders low to high once when they are equal.
func rangeOf(low, high float64, f func(float64) string) string {
	if low == high {
		return f(low)
	}
	return f(low) + " to " + f(high)
}

// QPs, QPMemory and CCLBuffer render the group's ranges.
func (g ProcGroup) QPs() string { return rangeOf(g.QPsLow, g.QPsHigh, model.FmtNum) }

// QPMemory renders the range of QP memory.
func (g ProcGroup) QPMemory() string { return rangeOf(g.QPMemLow, g.QPMemHigh, model.FmtBytes) }

// CCLBuffer renders the range of cclBuffer memory.
func (g ProcGroup) CCLBuffer() string { return rangeOf(g.CCLBufferLow, g.CCLBufHigh, model.FmtBytes) }

// NodesText names the group's nodes, a few of them.
func (g ProcGroup) NodesText() string {
	if len(g.Nodes) <= model.WhereNodesMax {
		return strings.Join(g.Nodes, ", ")
	}
	return fmt.Sprintf("%d nodes: %s and %d more", len(g.Nodes), strings.Join(g.Nodes[:model.WhereNodesMax], ", "), len(g.Nodes)-model.WhereNodesMax)
}

// ProcessGroups groups the report's processes by settings set and
// communicators, largest group first.
func ProcessGroups(r *model.Report) []ProcGroup {
	type agg struct {
		g     ProcGroup
		nodes map[string]bool
		first time.Time
		last  time.Time
	}
	groups := map[string]*agg{}
	var order []string
	for _, n := range r.Nodes {
		for _, p := range n.Processes {
			comms := make([]string, 0, len(p.Communicators))
			rank, size := -1, 0
			for _, c := range p.Communicators {
				comms = append(comms, fmt.Sprintf("%s (rankSize %d, %s)", c.Name, c.RankSize, model.ServerNumText(c.ServerNum)))
				if c.RankSize > size {
					rank, size = c.UserRank, c.RankSize
				}
			}
			slices.Sort(comms)
			key := p.SettingsSet + "\x00" + strings.Join(comms, "\x00")
			a := groups[key]
			q := p.QPs
			if a == nil {
				a = &agg{nodes: map[string]bool{}, g: ProcGroup{SettingsSet: p.SettingsSet, Comms: comms, RankLow: -1, RankHigh: -1,
					QPsPerConnection: fmt.Sprintf("%s (%s)", model.FmtNum(q.QPsPerConnection), q.QPsPerConnectionSetBy),
					BuffSize:         fmt.Sprintf("%s (%s)", model.FmtBytes(q.BuffSizeBytes), q.BuffSizeSetBy),
					QPsLow:           q.QPsLow, QPsHigh: q.QPsHigh, QPMemLow: q.QPMemoryLowBytes, QPMemHigh: q.QPMemoryHighBytes,
					CCLBufferLow: q.CCLBufferBytes, CCLBufHigh: q.CCLBufferBytes}}
				groups[key] = a
				order = append(order, key)
			}
			g := &a.g
			g.Processes++
			a.nodes[n.Name] = true
			g.QPsLow, g.QPsHigh = min(g.QPsLow, q.QPsLow), max(g.QPsHigh, q.QPsHigh)
			g.QPMemLow, g.QPMemHigh = min(g.QPMemLow, q.QPMemoryLowBytes), max(g.QPMemHigh, q.QPMemoryHighBytes)
			g.CCLBufferLow, g.CCLBufHigh = min(g.CCLBufferLow, q.CCLBufferBytes), max(g.CCLBufHigh, q.CCLBufferBytes)
			if rank >= 0 {
				if g.RankLow < 0 || rank < g.RankLow {
					g.RankLow = rank
				}
				g.RankHigh = max(g.RankHigh, rank)
			}
			if t := p.LastWrite.Time; !t.IsZero() {
				if a.first.IsZero() || t.Before(a.first) {
					a.first, g.FirstLastWrite = t, p.LastWrite
				}
				if t.After(a.last) {
					a.last, g.LastLastWrite = t, p.LastWrite
				}
			}
		}
	}
	out := make([]ProcGroup, 0, len(order))
	for _, k := range order {
		a := groups[k]
		a.g.Nodes = sortedKeys(a.nodes)
		out = append(out, a.g)
	}
	slices.SortStableFunc(out, func(a, b ProcGroup) int { return b.Processes - a.Processes })
	return out
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
