package analyse

import (
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// groupReader is the sink of one rotation group: every line goes through
// the collector's state (one logstate.State per group) and the watchers
// that keep what the state does not: the fault events with their lines,
// ranks, communicator sync points and failing links (eventWatch), and in
// screen logs the out-of-memory reports (oomWatch).
type groupReader struct {
	kind  logstate.SourceKind
	state *logstate.State
	watch *eventWatch
	src   *logstate.Source
	// oomw follows the current screen log; oom collects what it found.
	oomw oomWatch
	oom  []model.OOMEvidence
}

// sourceKinds are the state's names for the bundle's kinds of file.
var sourceKinds = map[bundle.Kind]logstate.SourceKind{
	bundle.KindPlog:       logstate.SourcePlog,
	bundle.KindDevicePlog: logstate.SourceDevicePlog,
	bundle.KindScreen:     logstate.SourceScreen,
}

// newGroupReader is bundle.Options.NewSink.
func newGroupReader(opts *Options, kind bundle.Kind) *groupReader {
	w := newEventWatch(opts.Location)
	so := opts.stateOptions()
	so.OnFault = w.onFault
	so.OnHCCLLine = w.onHCCLLine
	return &groupReader{kind: sourceKinds[kind], state: logstate.NewState(so), watch: w}
}

func (g *groupReader) screen() bool { return g.kind == logstate.SourceScreen }

// StartFile implements bundle.Sink.
func (g *groupReader) StartFile(rel string) {
	g.src = &logstate.Source{Path: rel, Kind: g.kind}
	ew := g.watch
	ew.file, ew.lineNo, ew.follow = rel, 0, 0
	ew.dated, ew.undated, ew.fileTime = datedLine{}, ew.undated[:0], time.Time{}
	if g.screen() {
		g.oomw = oomWatch{file: rel}
	}
}

// Line implements bundle.Sink.
func (g *groupReader) Line(line []byte) {
	ew := g.watch
	ew.lineNo++
	ew.cur = line
	ew.keepReport(line)
	g.state.Ingest(g.src, line)
	ew.observeDate(line)
	if g.screen() {
		g.oomw.observe(line)
		ew.observeLink(line, true)
		return
	}
	ew.followUp(line)
	ew.observeLink(line, false)
}

// FileModTime implements bundle.FileTimeSink.
func (g *groupReader) FileModTime(t time.Time) { g.watch.fileTime = t }

// EndFile implements bundle.Sink.
func (g *groupReader) EndFile() {
	// A report held for the line that may follow it is reported now.
	g.state.FlushFile(g.src.Path)
	g.watch.endFile()
	if g.screen() {
		g.oomw.flush()
		g.oom = append(g.oom, g.oomw.found...)
	}
	g.watch.cur = nil
}

// reader returns the groupReader of a group read by Run.
func reader(g *bundle.Group) *groupReader { return g.Sink.(*groupReader) }
