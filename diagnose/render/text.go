package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// textProcessesMax bounds the processes the text report details per node:
// a node runs at most one training process per NPU chip (32 on an A3), and
// a bundle with thousands of finished processes would otherwise print
// thousands of lines.
const textProcessesMax = 32

// textWidth is where the text report wraps a line, at a space, with the
// continuation indented under the line's text. Quoted log lines ("line:
// <file>:<n>: …") are kept whole, so that they can be searched for.
const textWidth = 160

func writeWrapped(w *bufio.Writer, line string) {
	if len(line) <= textWidth || strings.HasPrefix(strings.TrimLeft(line, " "), "line: ") {
		w.WriteString(line)
		w.WriteByte('\n')
		return
	}
	body := strings.TrimLeft(line, " ")
	hang := len(line) - len(body) + 2
	if strings.HasPrefix(body, "- ") {
		hang = len(line) - len(body) + 2
	} else if i := strings.Index(body, ". "); i > 0 && i <= 3 && strings.Trim(body[:i], "0123456789") == "" {
		hang = len(line) - len(body) + i + 2
	}
	pad := strings.Repeat(" ", hang)
	width := textWidth
	for len(line) > width {
		cut := strings.LastIndexByte(line[:width+1], ' ')
		if cut <= hang || strings.TrimSpace(line[:cut]) == "" {
			break // one word longer than the width: keep it whole
		}
		w.WriteString(line[:cut])
		w.WriteByte('\n')
		line = pad + strings.TrimLeft(line[cut+1:], " ")
	}
	w.WriteString(line)
	w.WriteByte('\n')
}

// TextOptions select what the text report details.
type TextOptions struct {
	// Detail lists every process (up to textProcessesMax per node) and
	// its communicators, instead of one line per settings set and
	// communicators.
	Detail bool
}

// WriteText writes the report for a person, processes summarised by
// settings set and communicators.
func WriteText(w io.Writer, r *model.Report) error { return WriteTextWith(w, r, TextOptions{}) }

// WriteTextWith writes the report for a person.
func WriteTextWith(w io.Writer, r *model.Report, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	t := textReport{r: r, detail: opts.Detail, p: func(format string, a ...any) { writeWrapped(bw, fmt.Sprintf(format, a...)) }}
	for _, section := range []func(){
		t.header, t.incidents, t.clocks, t.inputs, t.nodes, t.faults, t.disagreeing, t.effective, t.processes, t.ei0011, t.bufferOOM, t.errors,
	} {
		section()
	}
	return bw.Flush()
}

// textReport writes the sections of the text report, one method each, in
// the order WriteTextWith lists them; p writes one wrapped line.
type textReport struct {
	r      *model.Report
	detail bool
	p      func(format string, a ...any)
}

// values prints a variable's values one a line, as both the disagreeing
// and the effective settings list them.
func (t textReport) values(groups []model.SettingGroup) {
	for _, g := range groups {
		t.p("      %s (%s): %s", quoteEmpty(g.Value), strings.Join(g.SetBy, ", "), model.Where(g.Nodes))
	}
}

// header is the summary line and the zone the times are in.
func (t textReport) header() {
	var files int
	var bytes, lines int64
	for _, n := range t.r.Nodes {
		files += n.Files.Plog + n.Files.Device + n.Files.Screen
		bytes += n.Bytes
		lines += n.Lines
	}
	t.p("hccl_exporter diagnose: %d node(s), %d file(s), %s, %d lines; status %s (exit %d)",
		len(t.r.Nodes), files, model.FmtBytes(float64(bytes)), lines, t.r.Status, t.r.ExitCode)
	switch zone := zoneName(t.r.TimeZone); {
	case t.r.TimeZone == "Local" && !zonesDiffer(t.r):
		t.p("Times are read in %s: the logs print none and none could be inferred; "+
			"pass --timezone if the nodes printed theirs in another.", zone)
	case zonesDiffer(t.r):
		t.p("Times are in %s; nodes that printed theirs in another zone are converted to it (see CLOCKS).", zone)
	default:
		t.p("Times are in %s, as printed in the logs.", zone)
	}
}

// inputs lists what was read: each path, its nodes and skipped files.
func (t textReport) inputs() {
	t.p("")
	t.p("INPUTS")
	for _, in := range t.r.Inputs {
		nodes := "no node"
		if len(in.Nodes) > 0 {
			nodes = "node(s) " + model.FewOf(in.Nodes)
		}
		t.p("  %s (%s): %s; %d file(s) skipped", in.Path, in.Type, nodes, in.SkippedFiles)
		writeInputFiles(t.p, in, t.detail)
	}
}

// nodes lists each node's files, or a summary past textNodesMax without --detail.
func (t textReport) nodes() {
	t.p("")
	t.p("NODES")
	if !t.detail && len(t.r.Nodes) > textNodesMax {
		var tot model.FileCounts
		procs := 0
		var none []string
		for _, n := range t.r.Nodes {
			tot.Plog, tot.Device, tot.Screen = tot.Plog+n.Files.Plog, tot.Device+n.Files.Device, tot.Screen+n.Files.Screen
			procs += len(n.Processes)
			if len(n.Processes) == 0 {
				none = append(none, n.Name)
			}
		}
		t.p("  %d nodes: %d plog, %d device, %d screen file(s), %d HCCL process(es) (--detail lists each node)", len(t.r.Nodes), tot.Plog, tot.Device, tot.Screen, procs)
		if len(none) > 0 {
			t.p("  without an HCCL process: %s", model.FewOf(none))
		}
	} else {
		for _, n := range t.r.Nodes {
			t.p("  %s: %d plog, %d device, %d screen file(s), %s, %d lines, %d HCCL process(es)",
				n.Name, n.Files.Plog, n.Files.Device, n.Files.Screen, model.FmtBytes(float64(n.Bytes)), n.Lines, len(n.Processes))
		}
	}
}

// faults lists the fault codes with their nodes and remedies.
func (t textReport) faults() {
	t.p("")
	if len(t.r.Faults) == 0 {
		t.p("FAULT CODES: none")
	} else {
		t.p("FAULT CODES (%d)", len(t.r.Faults))
	}
	for _, f := range t.r.Faults {
		title := f.Title
		if title == "" {
			title = "(not in the catalog)"
		}
		t.p("  %s  %s  %s", f.Code, f.Stage, title)
		t.p("      %d event(s) (screen %d, plog %d), first %s, last %s",
			f.Count, f.BySource.Screen, f.BySource.Plog, textStamp(f.First), textStamp(f.Last))
		for i, n := range f.Nodes {
			if !t.detail && i == model.WhereNodesMax && len(f.Nodes) > model.WhereNodesMax+1 {
				t.p("      … %d more node(s) (--detail, or all in --format=json)", len(f.Nodes)-model.WhereNodesMax)
				break
			}
			t.p("      %s: %d (screen %d, plog %d), %s to %s, %s",
				n.Node, n.Count, n.BySource.Screen, n.BySource.Plog, textStamp(n.First), textStamp(n.Last), model.PIDList(n.PIDs))
		}
		if f.Remedy != "" {
			t.p("      remedy: %s", f.Remedy)
		}
	}
}

// disagreeing lists the HCCL variables whose values differ where they must agree.
func (t textReport) disagreeing() {
	t.p("")
	if len(t.r.InconsistentVariables) == 0 {
		t.p("SETTINGS THAT DISAGREE: none (HCCL variables must agree on every node)")
	} else {
		t.p("SETTINGS THAT DISAGREE (HCCL variables must agree on every node)")
	}
	for _, name := range t.r.InconsistentVariables {
		s := t.r.Setting(name)
		scope := "between processes of a node"
		if s.AcrossNodes {
			scope = "between nodes"
		}
		t.p("  %s, %s:", s.Variable, scope)
		t.values(s.Values)
	}
}

// effective lists every HCCL setting with its values and where each holds.
func (t textReport) effective() {
	t.p("")
	nprocs := processCount(t.r)
	t.p("EFFECTIVE HCCL SETTINGS (%d process(es) printed [HCCL_ENV] or communicator lines)", nprocs)
	for _, s := range t.r.Settings {
		if len(s.Values) == 1 {
			g := s.Values[0]
			t.p("  %s = %s (%s): %s", s.Variable, quoteEmpty(g.Value), strings.Join(g.SetBy, ", "), model.Where(g.Nodes))
			continue
		}
		note := ""
		if s.PerNode {
			note = " (differs per node by design)"
		}
		t.p("  %s%s:", s.Variable, note)
		t.values(s.Values)
	}
}

// processes lists the processes and their links: by group, or each one with --detail.
func (t textReport) processes() {
	t.p("")
	if t.detail {
		t.processEach()
		return
	}
	t.processGroups()
}

// processGroups is one entry per settings set and communicators.
func (t textReport) processGroups() {
	groups := ProcessGroups(t.r)
	t.p("PROCESSES AND LINKS (%d process(es) in %d group(s) by settings set and communicators; QP model: %s to %s per QP; --detail lists each process)",
		processCount(t.r), len(groups), model.FmtBytes(t.r.QPModel.QPBytesLow), model.FmtBytes(t.r.QPModel.QPBytesHigh))
	for i, g := range groups {
		if i == model.MaxListed {
			t.p("  … %d more group(s) (--detail, or all in --format=json)", len(groups)-model.MaxListed)
			break
		}
		t.p("  settings set %s: %d process(es) on %s, %s, last write %s to %s", quoteEmpty(g.SettingsSet), g.Processes, g.NodesText(), g.RankRange(),
			textStamp(g.FirstLastWrite), textStamp(g.LastLastWrite))
		t.p("      QPs per connection %s, HCCL_BUFFSIZE %s; per process: %s QPs, QP memory %s, cclBuffer %s",
			g.QPsPerConnection, g.BuffSize, g.QPs(), g.QPMemory(), g.CCLBuffer())
		for j, c := range g.Comms {
			if j == model.MaxListed {
				t.p("      … %d more communicator(s)", len(g.Comms)-model.MaxListed)
				break
			}
			t.p("      communicator %s", c)
		}
	}
}

// processEach details every process (up to textProcessesMax per node) and
// its communicators (--detail).
func (t textReport) processEach() {
	t.p("PROCESSES AND LINKS (QP model: %s to %s per QP)", model.FmtBytes(t.r.QPModel.QPBytesLow), model.FmtBytes(t.r.QPModel.QPBytesHigh))
	for _, n := range t.r.Nodes {
		for i, pr := range n.Processes {
			if i == textProcessesMax {
				t.p("  %s: %d more process(es) (all in --format=json)", n.Name, len(n.Processes)-textProcessesMax)
				break
			}
			q := pr.QPs
			t.p("  %s pid %d %s, settings set %s, last write %s", n.Name, pr.PID, pr.Name, quoteEmpty(pr.SettingsSet), textStamp(pr.LastWrite))
			t.p("      QPs per connection %s (%s), HCCL_BUFFSIZE %s (%s), %d communicator(s): %s to %s QPs, QP memory %s to %s, cclBuffer %s",
				model.FmtNum(q.QPsPerConnection), q.QPsPerConnectionSetBy, model.FmtBytes(q.BuffSizeBytes), q.BuffSizeSetBy, q.Communicators,
				model.FmtNum(q.QPsLow), model.FmtNum(q.QPsHigh), model.FmtBytes(q.QPMemoryLowBytes), model.FmtBytes(q.QPMemoryHighBytes), model.FmtBytes(q.CCLBufferBytes))
			for _, c := range pr.Communicators {
				l := c.Links
				t.p("      communicator %s: rankSize %d, %s, userRank %d: %s to %s RoCE peers, %s to %s QPs, %s to %s",
					c.Name, c.RankSize, model.ServerNumText(c.ServerNum), c.UserRank, model.FmtNum(l.PeersLow), model.FmtNum(l.PeersHigh),
					model.FmtNum(l.QPsLow), model.FmtNum(l.QPsHigh), model.FmtBytes(l.QPMemoryLowBytes), model.FmtBytes(l.QPMemoryHighBytes))
			}
		}
	}
}

// ei0011 is the EI0011 section: the remedies of not enough NPU memory for link setup.
func (t textReport) ei0011() {
	if t.r.EI0011 != nil {
		t.p("")
		t.p("EI0011: NOT ENOUGH NPU MEMORY FOR THE QPs OF LINK SETUP (%d event(s) on %s)", t.r.EI0011.Events, model.FewOf(t.r.EI0011.Nodes))
		for i, rem := range t.r.EI0011.Remedies {
			t.p("  %d. %s", i+1, rem.Title)
			for _, f := range rem.Findings {
				t.p("     - %s", f)
			}
		}
	}
}

// bufferOOM is the EL0004 section: a driver out-of-memory and its evidence.
func (t textReport) bufferOOM() {
	if t.r.BufferOOM != nil {
		t.p("")
		kind := "not attributed to HCCL"
		if t.r.BufferOOM.HCCL {
			kind = "while HCCL allocated its buffer"
		}
		t.p("EL0004: DRIVER OUT-OF-MEMORY, %s (%d event(s), %d from HCCL's plog)", kind, t.r.BufferOOM.Events, t.r.BufferOOM.PlogEvents)
		for _, f := range t.r.BufferOOM.Findings {
			t.p("     - %s", f)
		}
		for _, ev := range t.r.BufferOOM.Evidence {
			t.p("     %s %s:%d: %s", ev.Node, ev.File, ev.Line, ev.Text)
			if ev.HCCL {
				t.p("         HCCL frame: %s", ev.HCCLFrame)
			}
		}
	}
}

// errors lists what could not be read: the report is incomplete.
func (t textReport) errors() {
	if len(t.r.Errors) > 0 {
		t.p("")
		t.p("ERRORS (the report is incomplete)")
		for _, e := range t.r.Errors {
			t.p("  %s", e)
		}
	}
}

// processCount is how many processes the report's nodes hold.
func processCount(r *model.Report) int {
	n := 0
	for _, node := range r.Nodes {
		n += len(node.Processes)
	}
	return n
}

func textStamp(t model.Timestamp) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.Format(model.TextTime)
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// zoneName is the report's zone for a reader: "Local" says nothing to
// someone reading a report made on another machine, so it becomes this
// machine's zone with its offset.
func zoneName(z string) string {
	if z != "Local" {
		return z
	}
	_, off := time.Now().Zone()
	return "this machine's local zone (" + offsetName(off) + ")"
}

// offsetName renders a UTC offset in seconds as "UTC+08:00".
func offsetName(off int) string {
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("UTC%c%02d:%02d", sign, off/3600, off%3600/60)
}

// inputDirsListed is how many read directories and skip reasons the text
// report names per input (--detail: all the JSON holds).
const inputDirsListed = 6

// writeInputFiles says which layout an input showed, which files were read
// and which skipped: always when files were skipped or a collection tool
// recognised, so that a bundle in an unknown layout shows what diagnose
// made of it.
func writeInputFiles(p func(string, ...any), in model.Input, detail bool) {
	if in.SkippedFiles == 0 && len(in.Layouts) == 0 && !detail {
		return
	}
	if len(in.Layouts) > 0 {
		p("      layout: %s", strings.Join(in.Layouts, ", "))
	} else {
		p("      layout: no collection tool recognised (CANN log roots and screen logs anywhere in the tree are read)")
	}
	for i, d := range in.Read {
		if i == inputDirsListed && !detail {
			p("      read: … %d more director(ies) (--detail, or all in --format=json)", len(in.Read)-inputDirsListed+in.ReadDirsMore)
			break
		}
		p("      read: %d %s file(s) in %s", d.Files, d.Kind, d.Dir)
	}
	if len(in.Read) == 0 {
		p("      read: nothing")
	}
	for i, g := range in.Skipped {
		if i == inputDirsListed && !detail {
			p("      skipped: … %d more reason(s) (--detail, or all in --format=json)", len(in.Skipped)-inputDirsListed)
			break
		}
		who := ""
		if g.Tool != "" {
			who = g.Tool + ": "
		}
		p("      skipped: %d file(s), %s%s, e.g. %s", g.Files, who, g.Reason, strings.Join(g.Examples, ", "))
	}
	for _, a := range in.Advice {
		p("      advice: %s", a)
	}
}
