package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// incidents lists the incidents, the report's verdict and the first thing
// a person reads: which rank failed first, and what followed from it. An
// index comes first when there are several, then each incident in full.
func (t textReport) incidents() {
	t.p("")
	switch len(t.r.Incidents) {
	case 0:
		t.p("INCIDENTS: none (no fault event with a time)")
	default:
		t.p("INCIDENTS (%d): the first failure of each, and what followed from it", len(t.r.Incidents))
	}
	if len(t.r.Incidents) > 1 {
		for _, in := range t.r.Incidents {
			t.p("  #%-3d %s  %s (confidence %s)", in.ID, textStamp(in.Start), incidentHead(in), in.Confidence)
		}
	}
	for _, in := range t.r.Incidents {
		t.incident(in)
	}
}

// incident writes one incident, part by part.
func (t textReport) incident(in model.Incident) {
	for _, part := range []func(model.Incident){
		t.incidentRoot, t.incidentWhy, t.incidentOtherEvents, t.incidentPeers, t.incidentLinks, t.incidentRemedy,
	} {
		part(in)
	}
}

// incidentRoot is the incident's head line, its failing pair, summary and
// the root's log line.
func (t textReport) incidentRoot(in model.Incident) {
	t.p("")
	t.p("  #%d  %s to %s  %s; confidence %s", in.ID, textStamp(in.Start), textStamp(in.End), incidentHead(in), in.Confidence)
	if in.FailingPair != nil {
		t.p("      failing pair: %s", in.FailingPair)
	}
	t.p("      %s", in.Summary)
	if in.Root != nil {
		t.p("      line: %s:%d: %s", in.Root.File, in.Root.Line, in.Root.Text)
		switch {
		case in.Root.TimeFromLine > 0:
			t.p("      time: the line printed none; taken from line %d of the same file", in.Root.TimeFromLine)
		case in.Root.TimeFromFile:
			t.p("      time: the line printed none, nor did any line of its file; the file's modification time")
		}
	}
}

// incidentWhy lists the reasons for the root and its confidence.
func (t textReport) incidentWhy(in model.Incident) {
	t.p("      why:")
	for _, s := range in.Reasons {
		t.p("        - %s", s)
	}
}

// incidentOtherEvents counts the other events by part and code.
func (t textReport) incidentOtherEvents(in model.Incident) {
	if len(in.Groups) > 0 {
		t.p("      other events:")
	}
	for _, g := range in.Groups {
		timer := ""
		if g.Timer != "" {
			timer = fmt.Sprintf("; %s timer up to %s", g.Timer, model.FmtSeconds(g.TimerSeconds))
		}
		t.p("        %-11s %s (%s): %d event(s) from %d process(es) on %s, %s to %s after the first%s",
			g.Part, g.Code, g.Stage, g.Events, g.Processes, fewNodes(g.Nodes), model.FmtSeconds(max(g.FirstAfterSeconds, 0)), model.FmtSeconds(max(g.LastAfterSeconds, 0)), timer)
	}
}

// incidentPeers names the peers the waiting events and failing links name.
func (t textReport) incidentPeers(in model.Incident) {
	if len(in.SuspectedPeers) == 0 {
		return
	}
	var ps []string
	for i, sp := range in.SuspectedPeers {
		if i == model.MaxListed {
			ps = append(ps, fmt.Sprintf("… %d more", len(in.SuspectedPeers)-model.MaxListed))
			break
		}
		s := fmt.Sprintf("%s ×%d", sp.Peer, sp.Events)
		if sp.Links > 0 {
			s = fmt.Sprintf("%s (%s)", sp.Peer, model.PeerNamedBy(sp))
		}
		if !sp.InBundle {
			s += " (not in the bundle)"
		}
		ps = append(ps, s)
	}
	t.p("      peers named: %s", strings.Join(ps, ", "))
}

// incidentLinks lists the failing links HCCL named during the incident.
func (t textReport) incidentLinks(in model.Incident) {
	for i, l := range in.LinkFailures {
		if i == linksListed && !t.detail {
			t.p("      … %d more failing link(s) (--detail, or all in --format=json)", len(in.LinkFailures)-linksListed)
			break
		}
		t.p("      failing link (%s, %s pid %d, ×%d): %s  [%s:%d]", l.Source, l.Node, l.PID, l.Count, l.Pair(), l.File, l.Line)
	}
}

// incidentRemedy is the remedy, starting from the root cause.
func (t textReport) incidentRemedy(in model.Incident) {
	t.p("      remedy, from the root cause:")
	for i, rem := range in.Remedy {
		t.p("        %d. %s", i+1, rem.Title)
		for _, f := range rem.Findings {
			t.p("           - %s", f)
		}
	}
}

// clocks says how the nodes' clocks and zones compare, and what was not
// placed in an incident; it is left out for one node read in the --timezone
// zone with every event timed and kept.
func (t textReport) clocks() {
	r := t.r
	zoneNotes := false
	for _, nc := range r.Clock.Nodes {
		zoneNotes = zoneNotes || nc.ZoneBasis != model.ZoneBasisFlag
	}
	if len(r.Nodes) <= 1 && r.UntimedEvents == 0 && r.DroppedEvents == 0 && !zoneNotes {
		return
	}
	t.p("")
	t.p("CLOCKS")
	for _, n := range r.Clock.Notes {
		t.p("  %s", n)
	}
	// At scale, the nodes whose clock or zone is as the reference's
	// are counted, not listed.
	plain := 0
	for _, nc := range r.Clock.Nodes {
		if !t.detail && len(r.Clock.Nodes) > textNodesMax && plainClock(nc, r) {
			plain++
			continue
		}
		t.p("  %s: zone %s (%s), %s", nc.Node, nc.Zone, nc.ZoneBasis, clockOffset(nc, r))
	}
	if plain > 0 {
		t.p("  %d other node(s): zone %s, clock measured against %s, not corrected (--detail lists them)", plain, r.TimeZone, r.Clock.Reference)
	}
	if r.UntimedEvents > 0 {
		t.p("  %d fault event(s) printed no time: they are counted in the fault codes, not placed in an incident.", r.UntimedEvents)
	}
	if r.DroppedEvents > 0 {
		t.p("  %d fault event(s) beyond %d per file were counted but not kept for the incidents.", r.DroppedEvents, model.MaxEventsPerGroup)
	}
}

// clockOffset says how a node's clock compares with the reference's.
func clockOffset(nc model.NodeClock, r *model.Report) string {
	off := "not compared"
	if len(r.Clock.Nodes) == 1 {
		off = "the only node"
	}
	if nc.OffsetSeconds != nil {
		off = fmt.Sprintf("%+.3f s ±%s against %s over %d communicator(s)", *nc.OffsetSeconds, model.FmtSeconds(nc.UncertaintySeconds), r.Clock.Reference, nc.Communicators)
		if nc.Node == r.Clock.Reference {
			off = "reference"
		}
	}
	return off
}

// incidentHead names an incident's root in one phrase.
func incidentHead(in model.Incident) string {
	if in.Root == nil && len(in.SilentRanks) > 0 {
		s := in.SilentRanks[0]
		return fmt.Sprintf("LIKELY ROOT CAUSE rank %d on %s pid %d: silent, suspended or exited early", s.Rank, s.Node, s.PID)
	}
	if in.Root == nil {
		return "FIRST FAILING RANK NOT IN THE BUNDLE"
	}
	return fmt.Sprintf("ROOT CAUSE %s (%s) on %s", in.Root.Code, in.Root.Stage, model.Who(*in.Root))
}

// zonesDiffer reports whether a node's times were read in another zone than
// the report's.
func zonesDiffer(r *model.Report) bool {
	for _, nc := range r.Clock.Nodes {
		if nc.Zone != r.TimeZone {
			return true
		}
	}
	return false
}

// textNodesMax is how many nodes the text report lists one a line before
// it counts the unremarkable ones (--detail lists all).
const textNodesMax = 16

// plainClock is a node whose clock needs no line of its own: read in the
// report's zone, measured, and not corrected.
func plainClock(nc model.NodeClock, r *model.Report) bool {
	return nc.Zone == r.TimeZone && nc.OffsetSeconds != nil && !nc.Corrected && nc.Node != r.Clock.Reference
}

// linksListed is how many failing links an incident lists in the text
// report (--detail lists all).
const linksListed = 3

// fewNodes names a few nodes and counts the rest: "127 nodes: node-1,
// node-10, node-100, node-101 and 123 more".
func fewNodes(nodes []string) string {
	if len(nodes) <= model.WhereNodesMax+1 {
		return model.JoinAnd(nodes)
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b string) int {
		if model.NaturalLess(a, b) {
			return -1
		}
		if model.NaturalLess(b, a) {
			return 1
		}
		return 0
	})
	return fmt.Sprintf("%d nodes: %s and %d more", len(nodes), strings.Join(sorted[:model.WhereNodesMax], ", "), len(nodes)-model.WhereNodesMax)
}

// remedyIncident returns the first incident rooted in an EI0011 whose
// remedy carries the remedy id, or 0: the HTML report's EI0011 section
// then folds the bundle-wide findings of that remedy and points there,
// instead of printing the same remedy twice in full.
func remedyIncident(r *model.Report, id string) int {
	for _, in := range r.Incidents {
		if in.Root == nil || in.Root.Code != model.CodeEI0011 {
			continue
		}
		for _, rem := range in.Remedy {
			if rem.ID == id {
				return in.ID
			}
		}
	}
	return 0
}
