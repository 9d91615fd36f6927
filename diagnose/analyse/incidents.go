package analyse

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// An incident is one failure and what followed from it. Events are taken in
// order of their time on a common clock (see clock.go). An event is a
// consequence of an incident's root when its role allows it (roles.go), it
// comes no earlier than the root (within the clocks' tolerance) and no
// later than the timer that produces it, run on the waiting process's own
// setting. A rank's own failure within concurrentWindow of the root is
// concurrent: it failed for itself, at the same time (several ranks run out
// of memory at the same link setup). Anything else starts a new incident; an
// incident started by a waiting code has no root in the bundle.

// concurrentWindow is how soon after a root another rank's own failure is
// taken as part of the same incident.
const concurrentWindow = 30.0 // seconds

// maxIncidentEvents caps the events an incident lists (its groups count
// them all).
const maxIncidentEvents = 4096

// ev is an event being analysed.
type ev struct {
	model.Event
	at    time.Time // aligned
	node  *nodeData
	proc  *procData
	role  codeRole
	timer float64
	basis string
}

// analyse builds the incidents of the bundle.
func analyse(r *model.Report, nodes []*nodeData, cm *clockModel, opts Options) {
	evs := timedEvents(r, nodes, cm, opts)
	incs := groupIncidents(evs, cm)
	ix := newRankIndex(nodes)
	r.Incidents = []model.Incident{}
	for i, in := range incs {
		r.Incidents = append(r.Incidents, buildIncident(r, ix, nodes, i+1, in.first, in.rooted, in.evs, cm, opts))
	}
	for i, in := range incs {
		if in.rooted {
			continue
		}
		for j := i + 1; j < len(incs); j++ {
			if incs[j].rooted {
				suspectUncomparedClock(&r.Incidents[i], &r.Incidents[j], in.first, incs[j].first, cm)
			}
		}
	}
}

// incidentEvents are the events of one incident being built.
type incidentEvents struct {
	first  *ev // root, or the first waiting event when rootless
	rooted bool
	evs    []*ev
}

// timedEvents reads every node's fault events into one list in aligned
// time order (the clocks corrected by cm), counting those without a time,
// and sets the report's link failures, which building the incidents reads.
func timedEvents(r *model.Report, nodes []*nodeData, cm *clockModel, opts Options) []*ev {
	var evs []*ev
	untimed := 0
	common := commonSettings(nodes)
	for _, n := range nodes {
		r.DroppedEvents += n.dropped
		r.HeartbeatEvents += n.heartbeats
		for _, re := range n.events {
			if re.t.IsZero() {
				untimed++
				continue
			}
			e := &ev{node: n, proc: n.procs[re.pid], role: roleOf(re.code)}
			stage, _, _, _ := logstate.CodeInfo(re.code)
			if re.code == model.CodeHeartbeat {
				stage = "execution"
			}
			e.Event = model.Event{Node: n.name, PID: re.pid, Rank: -1, Device: -1, Code: re.code, Stage: stage, Role: e.role.Role,
				Source: re.source, File: re.file, Line: re.line, Text: re.text, Peers: peersOf(re.text)}
			for _, p := range re.peers {
				if !slices.Contains(e.Peers, p) {
					e.Peers = append(e.Peers, p)
				}
			}
			e.Time = model.Timestamp{Time: re.t}
			e.TimeFromLine, e.TimeFromFile = re.timeLine, re.fileTime
			e.at = cm.align(n.name, re.t)
			e.Aligned = model.Timestamp{Time: e.at.In(opts.Location)}
			if ri, ok := identity(n.ranks[re.pid]); ok {
				e.Rank, e.RankSize, e.Device, e.DevicePhysical = ri.rank, ri.size, ri.device, ri.physical
			}
			if e.Rank < 0 && re.rank >= 0 {
				e.Rank = re.rank
			}
			e.timer, e.basis = timerFor(e.role.Timer, e.proc, common)
			if e.role.Role != model.RoleLocal {
				e.TimerSeconds, e.TimerBasis = e.timer, e.basis
			}
			evs = append(evs, e)
		}
	}
	r.UntimedEvents = untimed
	r.LinkFailures = alignLinks(nodes, cm, opts.Location)
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].at.Equal(evs[j].at) {
			return evs[i].at.Before(evs[j].at)
		}
		return cmp.Or(cmp.Compare(evs[i].Node, evs[j].Node), cmp.Compare(evs[i].File, evs[j].File), cmp.Compare(evs[i].Line, evs[j].Line)) < 0
	})
	return evs
}

// groupIncidents assigns each event, in time order, to the incident that
// explains it (as its root repeated, a concurrent failure, a consequence
// within its timer, or a waiting event of a missing root), or starts a new
// incident with it; it sets each event's Part.
func groupIncidents(evs []*ev, cm *clockModel) []*incidentEvents {
	// No event is explained by an incident that began more than the
	// longest window before it; incidents are in order of their first
	// event, so the search stops there.
	longest := concurrentWindow
	for _, e := range evs {
		longest = max(longest, windowFor(e.timer, 0))
	}
	var incs []*incidentEvents
	for _, e := range evs {
		var home *incidentEvents
		part := ""
		for i := len(incs) - 1; i >= 0 && home == nil; i-- {
			in := incs[i]
			f := in.first
			d := e.at.Sub(f.at).Seconds()
			if d > longest {
				break
			}
			tol := cm.tolerance(e.Node, f.Node)
			if d < -tol {
				continue
			}
			switch {
			case e.role.Role == model.RoleLocal && in.rooted:
				if d <= concurrentWindow {
					home, part = in, model.PartConcurrent
					if e.Node == f.Node && e.PID == f.PID && e.Code == f.Code {
						// The same failure printed again (screen
						// report and plog line of one process).
						part = model.PartRoot
					}
				}
			case e.role.Role == model.RoleLocal:
				// A rank's own failure after waiting events began:
				// they cannot be its consequences.
			case !in.rooted:
				// Waiting events whose root is missing: they belong
				// together while within the first one's timer.
				if d <= windowFor(f.timer, e.timer) {
					home, part = in, model.PartWaiting
				}
			default:
				if d <= windowFor(e.timer, 0) {
					home, part = in, model.PartConsequence
				}
			}
		}
		if home == nil {
			home = &incidentEvents{first: e, rooted: e.role.Role != model.RoleWaiting}
			part = model.PartRoot
			if !home.rooted {
				part = model.PartWaiting
			}
			incs = append(incs, home)
		}
		e.Part = part
		home.evs = append(home.evs, e)
	}
	return incs
}

// suspectUncomparedClock handles waiting events (incident a) followed,
// within their timer, by a rank's own failure (incident b) on a node whose
// clock could not be compared with theirs: if that node's clock runs ahead,
// b is a's root. Without a measurement this is not decided; both incidents
// say so.
func suspectUncomparedClock(a, b *model.Incident, first, root *ev, cm *clockModel) {
	d := root.at.Sub(first.at).Seconds()
	if d <= 0 || d > windowFor(first.timer, 0) {
		return
	}
	_, okRoot := cm.offset[root.Node]
	if cm.measured && okRoot {
		compared := true
		for _, n := range a.Nodes {
			if _, ok := cm.offset[n]; !ok {
				compared = false
			}
		}
		if compared {
			return
		}
	}
	a.Reasons = append(a.Reasons, fmt.Sprintf("Incident #%d's %s on %s was printed %s after these waiting events began, and %s's "+
		"clock could not be compared with theirs: if it runs more than %s ahead, that failure is their root.",
		b.ID, root.Code, model.Who(root.Event), model.FmtSeconds(d), root.Node, model.FmtSeconds(d)))
	a.Summary += fmt.Sprintf(" Possibly caused by incident #%d (%s on %s; clocks not compared).", b.ID, root.Code, root.Node)
	b.Reasons = append(b.Reasons, fmt.Sprintf("Incident #%d's waiting events (%s) began %s before this failure on nodes whose "+
		"clocks could not be compared with %s's: if %s's clock runs more than %s ahead, this failure is their root.",
		a.ID, first.Code, model.FmtSeconds(d), root.Node, root.Node, model.FmtSeconds(d)))
	if b.Confidence == model.ConfidenceHigh {
		b.Confidence = model.ConfidenceMedium
	}
}

// windowFor is how long after a root a waiting event can still be its
// consequence: the timer plus 5% and 10 s (the timer starts when the
// waiting rank begins to wait, which may be a little after the root
// failed).
func windowFor(timer, other float64) float64 {
	t := max(timer, other)
	return t*1.05 + 10
}

// identity picks a process's rank: its membership of the largest
// communicator (the world group), the device wherever printed.
func identity(rs []rankInfo) (rankInfo, bool) {
	best, ok := rankInfo{rank: -1, device: -1}, false
	for _, r := range rs {
		if r.rank < 0 {
			continue
		}
		if !ok || r.size > best.size {
			dev, phys := best.device, best.physical
			best, ok = r, true
			if best.device < 0 {
				best.device, best.physical = dev, phys
			}
		}
	}
	for _, r := range rs {
		if r.device >= 0 && (best.device < 0 || (r.physical && !best.physical)) {
			best.device, best.physical = r.device, r.physical
		}
		if best.server == "" {
			best.server = r.server
		}
	}
	return best, ok
}

// commonSettings is, per timer variable, the value most processes of the
// bundle print: the fallback for a process whose own logs do not say.
func commonSettings(nodes []*nodeData) map[string]float64 {
	counts := map[string]map[float64]int{}
	for _, n := range nodes {
		for _, p := range n.procs {
			for _, v := range []string{varConnectTimeout, varExecTimeout} {
				if e, ok := p.env[v]; ok && e.HasNumber && e.Number > 0 {
					if counts[v] == nil {
						counts[v] = map[float64]int{}
					}
					counts[v][e.Number]++
				}
			}
		}
	}
	out := map[string]float64{}
	for v, c := range counts {
		best, bestN := 0.0, 0
		for val, n := range c {
			if n > bestN || (n == bestN && val > best) {
				best, bestN = val, n
			}
		}
		out[v] = best
	}
	return out
}

// timerFor is the timer of a code for one process: its own setting, else
// the bundle's most common value, else HCCL's default.
func timerFor(t timer, p *procData, common map[string]float64) (float64, string) {
	if t.Setting == "" {
		return t.Default, "fixed"
	}
	plus := ""
	if t.Plus > 0 {
		plus = fmt.Sprintf(" + %s", model.FmtSeconds(t.Plus))
	}
	if p != nil {
		if e, ok := p.env[t.Setting]; ok && e.HasNumber && e.Number > 0 {
			return e.Number + t.Plus, fmt.Sprintf("%s %s%s (the process's own setting)", t.Setting, model.FmtSeconds(e.Number), plus)
		}
	}
	if v, ok := common[t.Setting]; ok {
		return v + t.Plus, fmt.Sprintf("%s %s%s (the bundle's value; the process did not print its own)", t.Setting, model.FmtSeconds(v), plus)
	}
	return t.Default + t.Plus, fmt.Sprintf("%s %s%s (HCCL's default; no process's logs gave it)", t.Setting, model.FmtSeconds(t.Default), plus)
}

func buildIncident(r *model.Report, ix *rankIndex, nodesData []*nodeData, id int, first *ev, rooted bool, evs []*ev, cm *clockModel, opts Options) model.Incident {
	in := model.Incident{ID: id, RootInBundle: rooted, Alternatives: []model.Event{}, Groups: []model.EventGroup{},
		SuspectedPeers: []model.PeerCount{}, Nodes: []string{}, Remedy: []model.Remedy{}, Events: []model.Event{}, LinkFailures: []model.LinkFailure{}, SilentRanks: []model.SilentRank{}}
	root := chooseRoot(first, rooted, evs, cm)
	start := evs[0].at
	end := evs[len(evs)-1].at
	in.Start, in.End = model.Timestamp{Time: start.In(opts.Location)}, model.Timestamp{Time: end.In(opts.Location)}
	if ls := linksDuring(r.LinkFailures, start, end); len(ls) > 0 {
		in.LinkFailures = ls
	}
	nodes := map[string]bool{}
	for _, e := range evs {
		nodes[e.Node] = true
		e.AfterSeconds = round3(e.at.Sub(root.at).Seconds())
	}
	in.Nodes = sortedKeys(nodes)

	in.Groups = eventGroups(evs)

	// The failing link's dstRank is a peer too, named by HCCL itself.
	in.FailingPair = failingPair(in.LinkFailures, ix)
	in.SuspectedPeers = suspectedPeers(nodesData, evs, in.LinkFailures, in.FailingPair)
	if !rooted || root.role.Role != model.RoleLocal {
		in.SilentRanks = silentRanks(&in, ix, cm, start, opts)
	}

	if rooted {
		re := root.Event
		in.Root = &re
		for _, e := range evs {
			if e == root || e.role.Role == model.RoleWaiting {
				continue
			}
			if e.PID == root.PID && e.Node == root.Node {
				continue
			}
			if d := math.Abs(e.at.Sub(root.at).Seconds()); d <= cm.tolerance(e.Node, root.Node) && (e.role.Role == model.RoleLocal || root.role.Role != model.RoleLocal) {
				in.Alternatives = append(in.Alternatives, e.Event)
			}
		}
	}
	in.Summary, in.Confidence, in.Reasons = explain(r, &in, root, evs, cm)
	for i, e := range evs {
		if i == maxIncidentEvents {
			break
		}
		in.Events = append(in.Events, e.Event)
	}
	return in
}

// chooseRoot marks the incident's events: only the first of the root's own
// lines is the root (the others are the same failure printed again), and
// within the clocks' tolerance a rank's own failure is preferred to a code
// that peers also report. It returns the root.
func chooseRoot(first *ev, rooted bool, evs []*ev, cm *clockModel) *ev {
	root := first
	if rooted {
		// Only the first of the root's own lines is the root; the others
		// are the same failure printed again.
		for _, e := range evs {
			if e != first && e.Part == model.PartRoot {
				e.Part = model.PartSame
			}
		}
		// Within the clocks' tolerance, prefer a rank's own failure to a
		// code that peers also report.
		for _, e := range evs {
			if e == root || e.Part != model.PartConcurrent {
				continue
			}
			if e.at.Sub(first.at).Seconds() <= cm.tolerance(e.Node, first.Node) && root.role.Role == model.RoleEither && e.role.Role == model.RoleLocal {
				root = e
			}
		}
		if root != first {
			first.Part, root.Part = model.PartConcurrent, model.PartRoot
		}
	}
	return root
}

// eventGroups groups the incident's events other than the root by part and
// code, in order of first appearance.
func eventGroups(evs []*ev) []model.EventGroup {
	out := []model.EventGroup{}
	type gkey struct{ part, code string }
	groups := map[gkey]*model.EventGroup{}
	procs := map[gkey]map[string]bool{}
	gnodes := map[gkey]map[string]bool{}
	var order []gkey
	for _, e := range evs {
		if e.Part == model.PartRoot || e.Part == model.PartSame {
			continue
		}
		k := gkey{e.Part, e.Code}
		g := groups[k]
		if g == nil {
			g = &model.EventGroup{Part: e.Part, Code: e.Code, Stage: e.Stage, Timer: e.role.Timer.Setting,
				FirstAfterSeconds: e.AfterSeconds}
			groups[k] = g
			procs[k], gnodes[k] = map[string]bool{}, map[string]bool{}
			order = append(order, k)
		}
		g.Events++
		procs[k][fmt.Sprintf("%s/%d", e.Node, e.PID)] = true
		gnodes[k][e.Node] = true
		g.LastAfterSeconds = e.AfterSeconds
		if e.role.Role != model.RoleLocal {
			g.TimerSeconds = max(g.TimerSeconds, e.timer)
		}
	}
	for _, k := range order {
		g := groups[k]
		g.Processes = len(procs[k])
		g.Nodes = sortedKeys(gnodes[k])
		out = append(out, *g)
	}
	return out
}

// suspectedPeers counts the peers the waiting events name, and the ranks
// HCCL's failing links (and the failing pair) name, most named first.
func suspectedPeers(nodes []*nodeData, evs []*ev, links []model.LinkFailure, pair *model.FailingPair) []model.PeerCount {
	out := []model.PeerCount{}
	peerCount := map[string]int{}
	for _, e := range evs {
		if e.Part == model.PartRoot || e.role.Role == model.RoleLocal {
			continue
		}
		for _, p := range e.Peers {
			peerCount[p]++
		}
	}
	bundleRanks := map[string]bool{}
	for _, n := range nodes {
		for _, rs := range n.ranks {
			for _, ri := range rs {
				if ri.rank >= 0 {
					bundleRanks[fmt.Sprintf("rank %d", ri.rank)] = true
				}
			}
		}
	}
	// The failing link's dstRank is a peer too, named by HCCL itself.
	linkPeers := map[string]int{}
	for _, l := range links {
		if l.DstRank >= 0 {
			linkPeers[fmt.Sprintf("rank %d", l.DstRank)]++
		}
	}
	if p := pair; p != nil && p.Dst.Rank >= 0 {
		if k := fmt.Sprintf("rank %d", p.Dst.Rank); linkPeers[k] == 0 {
			linkPeers[k] = 1
		}
	}
	for p := range linkPeers {
		if _, ok := peerCount[p]; !ok {
			peerCount[p] = 0
		}
	}
	for p, c := range peerCount {
		out = append(out, model.PeerCount{Peer: p, Events: c, InBundle: bundleRanks[p], Links: linkPeers[p]})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Events+a.Links != b.Events+b.Links {
			return a.Events+a.Links > b.Events+b.Links
		}
		return a.Peer < b.Peer
	})
	return out
}

// explain writes the incident's summary, confidence and reasons.
func explain(r *model.Report, in *model.Incident, root *ev, evs []*ev, cm *clockModel) (string, string, []string) {
	var reasons []string
	conf := model.ConfidenceHigh
	lower := func(to string) {
		if to == model.ConfidenceLow || (to == model.ConfidenceMedium && conf == model.ConfidenceHigh) {
			conf = to
		}
	}
	cons := consequences(in)
	at := root.Aligned.Format(model.TextTime)
	if !in.RootInBundle {
		return explainMissingRoot(in, root, at)
	}

	summary := fmt.Sprintf("%s on %s at %s", root.Code, model.Who(root.Event), at)
	if d := root.at.Sub(root.Time.Time); d > time.Millisecond || d < -time.Millisecond {
		summary += fmt.Sprintf(" (printed %s by %s's clock)", root.Time.Format(model.TextTime), root.Node)
	}
	if len(cons) > 0 {
		summary += "; " + strings.Join(cons, "; ")
	}
	summary += "."
	switch root.role.Role {
	case model.RoleLocal:
		reasons = append(reasons, fmt.Sprintf("%s is a failure a rank reports about itself (%s), and it is the earliest such event of the incident.", root.Code, stageWords(root.Stage)))
	default:
		lower(model.ConfidenceMedium)
		reasons = append(reasons, fmt.Sprintf("%s is the earliest event, but peers of a failed rank report it too: it may itself be a consequence of a failure outside the bundle.", root.Code))
	}
	if root.Rank < 0 {
		reasons = append(reasons, fmt.Sprintf("The rank of %s pid %d is unknown: none of its logs in the bundle print a communicator line.", root.Node, root.PID))
	}
	if len(cons) > 0 {
		reasons = append(reasons, "Consequences: "+strings.Join(cons, "; ")+".")
	}
	pointed := 0
	waiting := 0
	rankName := fmt.Sprintf("rank %d", root.Rank)
	for _, e := range evs {
		if e.Part != model.PartConsequence {
			continue
		}
		waiting++
		if root.Rank >= 0 && slices.Contains(e.Peers, rankName) {
			pointed++
		}
	}
	if pointed > 0 {
		reasons = append(reasons, fmt.Sprintf("%d of the %d consequence(s) name %s, the root's rank, as the peer they waited for.", pointed, waiting, rankName))
	}
	if len(in.LinkFailures) > 0 {
		if root.role.Role == model.RoleLocal {
			reasons = append(reasons, linksToRoot(in.LinkFailures, root.Rank))
		} else {
			reasons = append(reasons, linkReason(in.LinkFailures))
		}
	}
	for _, sr := range in.SilentRanks {
		reasons = append(reasons, sr.Reason+" Named by "+sr.NamedBy+". Collect next: "+strings.Join(sr.Collect, "; ")+".")
	}
	if len(in.Alternatives) > 0 {
		lower(model.ConfidenceMedium)
		var alts []string
		for _, a := range in.Alternatives {
			alts = append(alts, fmt.Sprintf("%s on %s at %s", a.Code, model.Who(a), a.Aligned.Format(model.TextTime)))
		}
		reasons = append(reasons, fmt.Sprintf("Ambiguous: %s came within the clocks' tolerance of the root; either may have failed first.", model.FewOf(alts)))
	}
	clock, uncertain := clockReasons(r, evs)
	reasons = append(reasons, clock...)
	if uncertain {
		lower(model.ConfidenceMedium)
	}
	return summary, conf, reasons
}

// explainMissingRoot explains an incident whose first failing rank is not
// in the bundle: only consequences were found, and the waiting ranks (or
// HCCL's failing links) may name the peer to collect next.
func explainMissingRoot(in *model.Incident, root *ev, at string) (string, string, []string) {
	var reasons []string
	var codes []string
	for _, g := range in.Groups {
		codes = append(codes, fmt.Sprintf("%s from %d process(es) on %d node(s)", g.Code, g.Processes, len(g.Nodes)))
	}
	lead := "The first failing rank is not in the bundle: only consequences were found"
	if len(in.SilentRanks) > 0 {
		lead = "No rank reported a failure of its own: only consequences were found"
	}
	summary := fmt.Sprintf("%s (%s), the first %s on %s at %s.",
		lead, strings.Join(codes, "; "), root.Code, model.Who(root.Event), at)
	reasons = append(reasons, fmt.Sprintf("%s is reported by a rank about its peers (%s), not about itself: it is a consequence, and no failure of a rank itself precedes it within its timer (%s).",
		root.Code, root.role.Why, root.basis))
	conf := model.ConfidenceLow
	if len(in.SilentRanks) > 0 {
		s := in.SilentRanks[0]
		summary = silentHead(s) + " " + summary
		conf = s.Confidence
		reasons = append(reasons, s.Reason+" Named by "+s.NamedBy+".")
		reasons = append(reasons, "Collect next: "+strings.Join(s.Collect, "; ")+".")
	}
	if p := in.FailingPair; p != nil {
		reasons = append(reasons, linkReason(in.LinkFailures))
		summary += " HCCL names the failing link: " + p.String() + "."
	}
	if len(in.SuspectedPeers) > 0 {
		var named []string
		for i, p := range in.SuspectedPeers {
			if i == 3 {
				break
			}
			s := fmt.Sprintf("%s (%s)", p.Peer, model.PeerNamedBy(p))
			if !p.InBundle {
				s += ", not in the bundle"
			}
			named = append(named, s)
		}
		first := in.SuspectedPeers[0]
		then := " Collect that rank's logs."
		if first.InBundle {
			then = ""
		}
		by := "The waiting ranks name the peer they waited for: "
		if first.Links > 0 {
			by = "The waiting ranks and HCCL's failing links name the peer: "
		}
		reasons = append(reasons, by+strings.Join(named, "; ")+"."+then)
		if len(in.SilentRanks) == 0 {
			summary += " The waiting ranks point at " + pointedAt(in.SuspectedPeers) + "."
		}
	} else {
		reasons = append(reasons, "Collect the CANN logs and screen logs of every node of the job: the rank that failed first is on a node (or in a process) missing here.")
	}
	return summary, conf, reasons
}

// consequences describes the incident's consequence and concurrent
// groups, one phrase each.
func consequences(in *model.Incident) []string {
	var cons []string
	for _, g := range in.Groups {
		switch g.Part {
		case model.PartConsequence:
			s := fmt.Sprintf("%d process(es) on %d node(s) reported %s within %s after it", g.Processes, len(g.Nodes), g.Code, model.FmtSeconds(math.Max(g.LastAfterSeconds, 0)))
			if g.Timer != "" {
				s += fmt.Sprintf(" (their %s timer: up to %s)", g.Timer, model.FmtSeconds(g.TimerSeconds))
			}
			cons = append(cons, s)
		case model.PartConcurrent:
			cons = append(cons, fmt.Sprintf("%d process(es) on %d node(s) also reported %s themselves within %s", g.Processes, len(g.Nodes), g.Code, model.FmtSeconds(math.Max(g.LastAfterSeconds, 0))))
		}
	}
	return cons
}

// clockReasons says how the clocks of the incident's nodes were corrected,
// and which could not be compared while others disagree (uncertain: the
// order against other nodes is then not known).
func clockReasons(r *model.Report, evs []*ev) (out []string, uncertain bool) {
	nodesSeen := map[string]bool{}
	for _, e := range evs {
		nodesSeen[e.Node] = true
	}
	for _, nc := range r.Clock.Nodes {
		if !nodesSeen[nc.Node] {
			continue
		}
		if nc.Corrected {
			out = append(out, fmt.Sprintf("%s's clock was %s %s the reference's; its times were corrected (±%s).",
				nc.Node, model.FmtSeconds(math.Abs(*nc.OffsetSeconds)), map[bool]string{true: "ahead of", false: "behind"}[*nc.OffsetSeconds > 0], model.FmtSeconds(nc.UncertaintySeconds)))
		}
	}
	if r.Clock.SkewDetected {
		for _, nc := range r.Clock.Nodes {
			if nodesSeen[nc.Node] && nc.OffsetSeconds == nil {
				uncertain = true
				out = append(out, fmt.Sprintf("%s's clock could not be compared with the others while other clocks disagree: its order against other nodes is uncertain.", nc.Node))
			}
		}
	}
	return out, uncertain
}

// pointedAt names the peers the waiting ranks point at most: the first, or
// every peer tied with it ("8 ranks equally: rank 24, rank 25, …"), so that
// a headline never picks one of several equal suspects by their order.
func pointedAt(ps []model.PeerCount) string {
	if len(ps) == 0 {
		return ""
	}
	top := ps[0].Events + ps[0].Links
	var tied []string
	for _, p := range ps {
		if p.Events+p.Links == top {
			tied = append(tied, p.Peer)
		}
	}
	if len(tied) == 1 {
		return tied[0]
	}
	sort.Slice(tied, func(i, j int) bool { return model.NaturalLess(tied[i], tied[j]) })
	const listed = 8
	names := tied
	more := ""
	if len(names) > listed {
		more = fmt.Sprintf(" and %d more", len(names)-listed)
		names = names[:listed]
	}
	return fmt.Sprintf("%d peers equally (%s each): %s%s", len(tied), model.PeerNamedBy(ps[0]), strings.Join(names, ", "), more)
}

func stageWords(stage string) string {
	switch stage {
	case "link_setup":
		return "at link setup"
	case "init":
		return "at communicator initialisation"
	case "execution":
		return "while executing a collective"
	}
	return "stage unknown"
}
