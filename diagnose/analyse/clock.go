package analyse

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// Nodes print local wall-clock time without a zone, and their clocks need
// not agree. Every rank of a communicator prints the end of the
// communicator's initialisation (`[Communicator Key Info]`,
// `HcclCommInitRootInfo success`, `hcclCommInitInfo`) at about the same
// moment, since initialisation ends with an exchange among all ranks; the
// difference between two nodes' times for the same communicator is their
// clocks' offset. Offsets are measured against one reference node, applied
// where they exceed the jitter of that moment, and reported; a node that
// shares no communicator with the others is said to be unmeasured.

// syncJitter is how far apart the ranks of one communicator print the end
// of its initialisation on agreeing clocks (they leave the final exchange
// together; printing takes milliseconds). Offsets within it are not
// corrected.
const syncJitter = 1.0 // seconds

// zoneStep is the granularity of UTC offsets: an offset close to a multiple
// of it is more likely a zone than a drifting clock.
const zoneStep = 15 * 60

// clockModel is the offsets used to align event times.
type clockModel struct {
	offset   map[string]float64 // seconds ahead of the reference; absent: unmeasured
	unc      map[string]float64
	measured bool // at least two nodes were compared
}

// align maps a node's printed time to the reference's clock.
func (c *clockModel) align(node string, t time.Time) time.Time {
	if off, ok := c.offset[node]; ok && math.Abs(off) > syncJitter {
		return t.Add(-time.Duration(off * float64(time.Second)))
	}
	return t
}

// tolerance is how far apart two events on these nodes may be and still be
// in either order.
func (c *clockModel) tolerance(a, b string) float64 {
	if a == b {
		return 0.001
	}
	ua, oka := c.unc[a]
	ub, okb := c.unc[b]
	if !oka {
		ua = syncJitter
	}
	if !okb {
		ub = syncJitter
	}
	return ua + ub
}

// measureClocks compares the nodes' clocks over their shared communicators
// and reports how they compare.
func measureClocks(nodes []*nodeData, zones, basis map[string]string) (*clockModel, model.ClockReport) {
	cm, ref, counts := measureOffsets(nodes)
	rep := model.ClockReport{Nodes: []model.NodeClock{}, Notes: []string{}}
	if cm.measured {
		rep.Reference = ref
	}
	for _, n := range nodes {
		nc := model.NodeClock{Node: n.name, Zone: zones[n.name], ZoneBasis: basis[n.name], Communicators: counts[n.name]}
		if off, ok := cm.offset[n.name]; ok && cm.measured {
			o := round3(off)
			nc.OffsetSeconds = &o
			nc.UncertaintySeconds = round3(cm.unc[n.name])
			if math.Abs(off) > syncJitter {
				nc.Corrected = true
				rep.SkewDetected = true
				rep.Notes = append(rep.Notes, skewNote(n.name, rep.Reference, off, counts[n.name]))
			}
		}
		rep.Nodes = append(rep.Nodes, nc)
	}
	if note := clockNote(nodes, cm, rep.SkewDetected); note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	return cm, rep
}

// measureOffsets measures every node's clock against the reference (the
// node with the most communicators), through any node already measured,
// and returns the offsets, the reference and over how many communicators
// each node was measured.
func measureOffsets(nodes []*nodeData) (cm *clockModel, ref string, counts map[string]int) {
	cm = &clockModel{offset: map[string]float64{}, unc: map[string]float64{}}
	counts = map[string]int{}
	// The reference: the node with the most communicators (name breaks
	// ties: nodes are sorted).
	refi := -1
	for i, n := range nodes {
		if len(n.sync) > 0 && (refi < 0 || len(n.sync) > len(nodes[refi].sync)) {
			refi = i
		}
	}
	if refi < 0 {
		return cm, "", counts
	}
	ref = nodes[refi].name
	cm.offset[ref], cm.unc[ref] = 0, 0
	// Measure every node against any already measured node, nearest
	// to the reference first, until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, n := range nodes {
			if _, ok := cm.offset[n.name]; ok {
				continue
			}
			for _, m := range nodes {
				base, ok := cm.offset[m.name]
				if !ok {
					continue
				}
				med, spread, k := syncOffset(n, m)
				if k == 0 {
					continue
				}
				cm.offset[n.name] = base + med
				cm.unc[n.name] = cm.unc[m.name] + syncJitter + spread
				counts[n.name] = k
				changed = true
				break
			}
		}
	}
	cm.measured = len(cm.offset) > 1
	return cm, ref, counts
}

// syncOffset is how far n's clock is ahead of m's: the median difference
// of the times both printed for the end of the same communicators'
// initialisation, half the spread of those differences, and how many
// communicators they share (0: not comparable).
func syncOffset(n, m *nodeData) (med, spread float64, k int) {
	var diffs []float64
	for id, t := range n.sync {
		if u, ok := m.sync[id]; ok {
			diffs = append(diffs, t.Sub(u).Seconds())
		}
	}
	if len(diffs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(diffs)
	med = diffs[len(diffs)/2]
	if len(diffs)%2 == 0 {
		med = (diffs[len(diffs)/2-1] + diffs[len(diffs)/2]) / 2
	}
	spread = (diffs[len(diffs)-1] - diffs[0]) / 2
	return med, spread, len(diffs)
}

// clockNote says, for a bundle of several nodes, whether their clocks
// could be compared and agree ("" when a skew note says it all).
func clockNote(nodes []*nodeData, cm *clockModel, skew bool) string {
	var unmeasured []string
	for _, n := range nodes {
		if _, ok := cm.offset[n.name]; !ok || !cm.measured {
			unmeasured = append(unmeasured, n.name)
		}
	}
	sort.Strings(unmeasured)
	switch {
	case len(nodes) < 2:
	case !cm.measured:
		return "The nodes' clocks could not be compared (no communicator initialisation line is shared " +
			"between nodes): times are used as printed, and events on different nodes less than 2 s apart are taken as " +
			"simultaneous."
	case len(unmeasured) > 0:
		return fmt.Sprintf("The clocks of %s could not be compared with the others (no communicator in common): their times are used as printed.", model.JoinAnd(unmeasured))
	case !skew:
		return fmt.Sprintf("The nodes' clocks agree within %.0f s (measured over the communicators' initialisation, which all ranks print together).", syncJitter)
	}
	return ""
}

func skewNote(node, ref string, off float64, n int) string {
	dir := "ahead of"
	if off < 0 {
		dir = "behind"
	}
	s := fmt.Sprintf("%s's clock is %s %s %s's (measured over %d communicator(s) whose initialisation all ranks print together); its times are corrected by that much in the incidents.",
		node, model.FmtSeconds(math.Abs(off)), dir, ref, n)
	if a := math.Abs(off); a >= zoneStep-60 && math.Mod(a+60, zoneStep) < 120 {
		s += fmt.Sprintf(" A multiple of 15 minutes: %s probably printed its logs in another time zone; pass --node-timezone %s=<zone> to read them in it.", node, node)
	}
	return s
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
