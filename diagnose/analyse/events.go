package analyse

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Root-cause analysis needs every fault event with its process, time and
// line, where the collector's state keeps only counters; and it needs each
// process's rank and device, which HCCL prints in a different wording in
// every CANN era. Both are gathered here while the bundle is read: events
// through the state's OnFault hook (so they are exactly the events counted
// in the fault table), ranks and the moments every rank of a communicator
// shares (for clock comparison) from the communicator lines.

// rawEvent is one fault event as read, before nodes and zones are known.
type rawEvent struct {
	code, source string
	pid          int
	t            time.Time // in Options.Location; zero when the line printed none
	file         string
	line         int64
	text         string
	rank         int // from the screen line itself ([rank3]:, RankID:3), else -1
	// peers are named by a line that follows (peersKnown); the event's own
	// line is read for them later.
	peers      []string
	peersKnown bool
	// timeLine is the line of the same file whose time t is, where the
	// event's own line printed none (0: its own); fileTime: t is the
	// file's modification time (no line of it printed a date), an instant
	// that no node zone moves.
	timeLine int64
	fileTime bool
}

// rankInfo is one communicator membership of a process: which rank it is,
// of how many, on which device.
type rankInfo struct {
	comm     string // identifier (or commId / group), "" when not printed
	rank     int
	size     int // 0 when not printed
	device   int // -1 when not printed
	physical bool
	// server is the host address the rank printed (hostIp[…] or
	// server[…], without a %interface suffix), "" when not printed: the
	// link-failure detector names ranks by server and device only.
	server string
}

// eventWatch follows the lines of one group for fault-event context and
// communicator lines.
type eventWatch struct {
	file    string
	lineNo  int64
	cur     []byte
	events  []rawEvent
	dropped int
	ranks   map[int][]rankInfo
	// sync holds, per communicator identifier, the earliest time this
	// group printed that the communicator's initialisation completed:
	// every rank prints it at about the same moment, so comparing it
	// between nodes measures their clocks' offset.
	sync map[string]time.Time
	loc  *time.Location
	// beats holds the heartbeat reports already kept.
	beats map[heartbeatKey]bool
	// heartbeats counts the heartbeat events kept (they are not in the
	// fault table).
	heartbeats int
	// follow counts the lines after the last fault line (eventLine) still
	// to read for the peer it names.
	follow    int
	eventLine int64
	// links are the failing links HCCL named (linkfail.go), linkIndex
	// their index by process and pair.
	links     []model.LinkFailure
	linkIndex map[linkKey]int
	// dated is the current file's latest line that printed a date and
	// time, undated the current file's events waiting for the next one
	// (observeDate).
	dated   datedLine
	undated []int
	// fileTime is the current file's modification time, zero unknown.
	fileTime time.Time
	// reports are the latest lines with a code's shape (keepReport).
	reports [recentReports]struct {
		line int64
		text []byte
	}
	reportNext int
}

func newEventWatch(loc *time.Location) *eventWatch {
	return &eventWatch{ranks: map[int][]rankInfo{}, sync: map[string]time.Time{}, loc: loc, beats: map[heartbeatKey]bool{}}
}

// onFault is the state's OnFault hook: it runs inside Ingest of the line in
// cur.
func (w *eventWatch) onFault(ev logstate.FaultEvent) {
	if len(w.events) >= model.MaxEventsPerGroup {
		w.dropped++
		return
	}
	line, text := w.lineNo, w.cur
	if ev.Lag > 0 {
		// A report header held for the line that may follow it: its own
		// line, kept when it was read.
		line -= int64(ev.Lag)
		text = w.reportText(line)
	}
	w.events = append(w.events, rawEvent{code: ev.Code, source: ev.Source, pid: ev.PID, t: ev.Time,
		file: w.file, line: line, text: excerpt(text), rank: screenRank(text)})
	if ev.Time.IsZero() {
		w.undated = append(w.undated, len(w.events)-1)
	}
	w.follow, w.eventLine = followLines, w.lineNo
}

// recentReports is how many report lines eventWatch keeps for events
// reported after their own line (logstate's held report headers, at most
// a few lines late).
const recentReports = 4

// keepReport keeps a copy of a line that may be a report (it has a code's
// shape), for an event the state reports lines later.
func (w *eventWatch) keepReport(line []byte) {
	if !parse.ContainsFaultCodeShape(line) {
		return
	}
	r := &w.reports[w.reportNext%recentReports]
	r.line, r.text = w.lineNo, append(r.text[:0], line...)
	w.reportNext++
}

// reportText is the kept line number n, or the current line.
func (w *eventWatch) reportText(n int64) []byte {
	for i := range w.reports {
		if w.reports[i].line == n && w.reports[i].text != nil {
			return w.reports[i].text
		}
	}
	return w.cur
}

// datedLine is a line of the current file that printed a date and time.
type datedLine struct {
	line int64
	t    time.Time
}

// observeDate notes a line that prints a date and time: a fault event
// whose own line printed none (a screen report like `EZ9999: Inner
// Error!`, `Title(EI0011): …`) takes the time of the nearest such line of
// its file, and says so (Event.TimeBasis), rather than being left out of
// the incidents.
func (w *eventWatch) observeDate(line []byte) {
	t, ok := lineDate(line, w.loc)
	if !ok {
		return
	}
	cur := datedLine{w.lineNo, t}
	keep := w.undated[:0]
	for _, i := range w.undated {
		e := &w.events[i]
		if e.line > cur.line {
			keep = append(keep, i)
			continue
		}
		near := cur
		if w.dated.line > 0 && e.line-w.dated.line <= cur.line-e.line {
			near = w.dated
		}
		e.t, e.timeLine = near.t, near.line
	}
	w.undated = keep
	w.dated = cur
}

// endFile gives the file's remaining undated events the time of its last
// dated line, if it had one, else the file's modification time, if known.
func (w *eventWatch) endFile() {
	for _, i := range w.undated {
		e := &w.events[i]
		switch {
		case w.dated.line > 0:
			e.t, e.timeLine = w.dated.t, w.dated.line
		case !w.fileTime.IsZero():
			// A true instant, not a printed wall clock: no zone applies.
			e.t, e.fileTime = w.fileTime.In(w.loc), true
		}
	}
	w.undated = w.undated[:0]
}

// lineDate reads the date and time a line prints: CANN's
// (2025-11-03-20:18:46.447.213, or torch_npu's 2025-12-29-13:22:34), else
// the `2026-01-06 15:40:13` of Python's logging and most launchers; never a
// time without its date (vLLM's `04-30 03:58:27`, glog's `[E1229 13:22:34`).
func lineDate(line []byte, loc *time.Location) (time.Time, bool) {
	if raw := parse.FindPlogTime(line); raw != nil {
		return parse.ParsePlogTime(raw, loc)
	}
	const n = len("2006-01-02 15:04:05")
	for i := 0; i+n <= len(line) && i < 256; i++ {
		b := line[i : i+n]
		if !isDigitByte(b[0]) || b[4] != '-' || b[7] != '-' || (b[10] != ' ' && b[10] != 'T') || b[13] != ':' || b[16] != ':' {
			continue
		}
		if t, err := time.ParseInLocation("2006-01-02 15:04:05", string(b[:10])+" "+string(b[11:]), loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// followLines is how many lines after a fault line may name the peer it
// waited for: HCCL prints the link's details (`Transport init error! …
// remoteUserrank[0] …`) right after the timeout line.
const followLines = 3

// followUp reads the lines that follow a fault line of the same file for
// the peer it names; it costs nothing on the other lines.
func (w *eventWatch) followUp(line []byte) {
	if w.follow == 0 || w.lineNo == w.eventLine {
		return
	}
	w.follow--
	ev := &w.events[len(w.events)-1]
	if ev.peersKnown {
		return
	}
	if ps := peersOf(string(line)); len(ps) > 0 {
		ev.peers, ev.peersKnown = ps, true
	}
}

// heartbeatKey is one reporter's report of one crimer in one status: HCCL
// repeats it while the state lasts; the first is kept.
type heartbeatKey struct {
	pid            int
	crimer, status string
}

var (
	markHeartbeat   = []byte("[HeartbeatAbnormal]")
	markInitSuccess = []byte("[HCCL_TRACE]HcclCommInit")
	markSuccess     = []byte("success")
	markInitInfo    = []byte("hcclCommInitInfo")
)

// onHCCLLine is the state's OnHCCLLine hook: it reads the communicator
// lines of every era (classified by the state's parser) and the 2024
// `[HCCL_TRACE]HcclCommInitRootInfo success` line, which ends a
// communicator's initialisation on every rank at the same moment.
func (w *eventWatch) onHCCLLine(kind parse.LineKind, p parse.PlogLine) {
	switch kind {
	case parse.KindCommunicator, parse.KindLocalRank:
	case parse.KindNone:
		if bytes.Contains(p.Msg, markHeartbeat) {
			w.heartbeat(p)
			return
		}
		if !bytes.HasPrefix(p.Msg, markInitSuccess) {
			return
		}
	default:
		return
	}
	t, _ := parse.ParsePlogTime(p.Time, w.loc)
	if kind == parse.KindLocalRank {
		if lr, ok := parse.ParseLocalRankKeyInfo(p.Msg); ok {
			// HCCL prints it right after its communicator's line.
			rs := w.ranks[p.PID]
			if len(rs) > 0 && rs[len(rs)-1].rank < 0 {
				rs[len(rs)-1].rank, rs[len(rs)-1].device, rs[len(rs)-1].physical = lr.UserRank, lr.DevicePhyID, true
				rs[len(rs)-1].server = serverOf(p.Msg)
			} else {
				w.addRank(p.PID, rankInfo{rank: lr.UserRank, device: lr.DevicePhyID, physical: true, server: serverOf(p.Msg)})
			}
		}
		return
	}
	if ci, ok := parse.ParseCommunicatorKeyInfo(p.Msg); ok {
		if len(w.ranks[p.PID]) < maxRanksPerPID {
			w.ranks[p.PID] = append(w.ranks[p.PID], rankInfo{comm: ci.Identifier, rank: -1, size: ci.RankSize, device: -1})
		}
		w.syncPoint(ci.Identifier, t)
		return
	}
	ri, ok := parseRankLine(p.Msg)
	if !ok {
		return
	}
	w.addRank(p.PID, ri)
	if ri.comm != "" && (bytes.Contains(p.Msg, markSuccess) || bytes.Contains(p.Msg, markInitInfo)) {
		w.syncPoint(ri.comm, t)
	}
}

// heartbeat keeps the first report of each lost, stuck or erroring peer.
func (w *eventWatch) heartbeat(p parse.PlogLine) {
	status, _ := parse.BracketField(p.Msg, "status")
	peers := peersOf(string(p.Msg))
	crimer := ""
	if len(peers) > 0 {
		crimer = peers[0]
	}
	k := heartbeatKey{p.PID, crimer, string(status)}
	if w.beats[k] || len(w.events) >= model.MaxEventsPerGroup {
		return
	}
	w.beats[k] = true
	t, _ := parse.ParsePlogTime(p.Time, w.loc)
	w.heartbeats++
	w.events = append(w.events, rawEvent{code: model.CodeHeartbeat, source: logstate.FaultSourcePlog, pid: p.PID, t: t,
		file: w.file, line: w.lineNo, text: excerpt(w.cur), rank: -1})
}

// maxRanksPerPID caps the distinct memberships kept per process (link
// lines repeat a rank once per QP; they are deduplicated).
const maxRanksPerPID = 256

func (w *eventWatch) addRank(pid int, ri rankInfo) {
	rs := w.ranks[pid]
	for _, r := range rs {
		if r == ri {
			return
		}
	}
	if len(rs) < maxRanksPerPID {
		w.ranks[pid] = append(rs, ri)
	}
}

func (w *eventWatch) syncPoint(id string, t time.Time) {
	if id == "" || t.IsZero() {
		return
	}
	if cur, ok := w.sync[id]; !ok || t.Before(cur) {
		w.sync[id] = t
	}
}

// rankFields are the names each era gives a rank's fields, in order of
// preference (cann-log-eras.md §4): communicator init entry lines
// (`Entry-HcclCommInit…:ranks[N], rank[R], … deviceLogicId[D]`),
// SetupAgent (`rankNum[N], rank[R], … logicDevId[L], phydevId[P]`),
// hcclCommInitInfo (`rank[R], totalRanks[N], … logicDevId[L],
// identifier[X]`), the 2023 ranktable init (`hcom init by file success, …
// rankNum[N], rank[R],server[…], device[D]`) and sub-communicators.
var (
	sizeFields     = []string{"ranks", "rankNum", "totalRanks", "rankSize"}
	physDevFields  = []string{"phydevId", "devicePhyId", "devPhyId"}
	logicDevFields = []string{"deviceLogicId", "logicDevId", "device"}
	commFields     = []string{"identifier", "commId", "group"}
)

// parseRankLine reads a rank from an HCCL message of any era.
func parseRankLine(msg []byte) (rankInfo, bool) {
	r, ok := parse.BracketInt(msg, "rank")
	if !ok {
		return rankInfo{}, false
	}
	ri := rankInfo{rank: r, device: -1}
	for _, f := range sizeFields {
		if n, ok := parse.BracketInt(msg, f); ok {
			ri.size = n
			break
		}
	}
	for _, f := range physDevFields {
		if n, ok := parse.BracketInt(msg, f); ok {
			ri.device, ri.physical = n, true
			break
		}
	}
	if ri.device < 0 {
		for _, f := range logicDevFields {
			if n, ok := parse.BracketInt(msg, f); ok {
				ri.device = n
				break
			}
		}
	}
	for _, f := range commFields {
		if v, ok := parse.BracketField(msg, f); ok && len(v) > 0 {
			ri.comm = excerpt(v)
			break
		}
	}
	ri.server = serverOf(msg)
	return ri, true
}

// serverFields name a rank's host address in each era: `[LocalRank Key
// Info]… hostIp[A] … server[A]`, SetupAgent and hcclCommInitInfo
// `server[A%ifname]`/`serverId[A%ifname]`, 2023 `server[A]`.
var serverFields = []string{"hostIp", "server", "serverId"}

// serverOf reads the host address a rank line prints, without its
// interface suffix; "" when it prints none that could be an address.
func serverOf(msg []byte) string {
	for _, f := range serverFields {
		v, ok := parse.BracketField(msg, f)
		if !ok || len(v) == 0 {
			continue
		}
		if i := bytes.IndexByte(v, '%'); i >= 0 {
			v = v[:i]
		}
		if s := string(v); plausibleServer(s) {
			return s
		}
	}
	return ""
}

var (
	markRankPrefix = []byte("[rank")
	markRankID     = []byte("RankID:")
)

// screenRank reads the rank a screen line names itself: torchrun and vLLM
// prefix each line with `[rank3]:`, torch_npu prints `(PID:…, Device:1,
// RankID:3)`. -1 when it names none.
func screenRank(line []byte) int {
	if i := bytes.Index(line, markRankPrefix); i >= 0 {
		rest := line[i+len(markRankPrefix):]
		if n, l := leadingInt(rest); l > 0 && l < len(rest) && rest[l] == ']' {
			return n
		}
	}
	if i := bytes.Index(line, markRankID); i >= 0 {
		if n, l := leadingInt(bytes.TrimLeft(line[i+len(markRankID):], " ")); l > 0 {
			return n
		}
	}
	return -1
}

func leadingInt(b []byte) (n, l int) {
	for l < len(b) && l < 9 && b[l] >= '0' && b[l] <= '9' {
		n = n*10 + int(b[l]-'0')
		l++
	}
	return n, l
}

// peerMark is a place where a waiting line names the peer it waited for.
type peerMark struct {
	mark string
	kind int // peerRank: one rank number; peerRanks: a list "[1,3,]"; peerAddr: an address up to ']'
}

const (
	peerRank = iota
	peerRanks
	peerAddr
)

// peerMarks are the wordings of the waiting lines of every era: the EI0002
// report (`Waiting peer rank: 4`), transport errors (`remoteUserrank[0]`,
// `dst_rank[0]`), heartbeat reports (`crimer rank [10.0.0.2/2]`, `Cluster
// Exception Location[IP/ID]:[10.0.0.2/2]`) and root-info negotiation
// (`List of unconnected ranks: "[1,]"`, `Failed to connect agent[1,3,]`).
var peerMarks = []peerMark{
	{"Waiting peer rank: ", peerRank},
	{"from remote rank: [", peerRank},
	{"remoteUserrank[", peerRank},
	{"remoteRank[", peerRank},
	{"dst_rank[", peerRank},
	{"remote rank[", peerRank},
	{"crimer rank [", peerAddr},
	{"Cluster Exception Location[IP/ID]:[", peerAddr},
	{"List of unconnected ranks: \"[", peerRanks},
	{"Failed to connect agent[", peerRanks},
}

// maxPeersPerLine caps the peers read from one line.
const maxPeersPerLine = 16

// peersOf returns the peers a line names: "rank 4" or an address as printed.
func peersOf(text string) []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) && len(out) < maxPeersPerLine {
			out = append(out, p)
		}
	}
	for _, m := range peerMarks {
		i := strings.Index(text, m.mark)
		if i < 0 {
			continue
		}
		rest := text[i+len(m.mark):]
		switch m.kind {
		case peerRank:
			if n, l := leadingInt([]byte(rest)); l > 0 {
				add("rank " + strconv.Itoa(n))
			}
		case peerRanks:
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				continue
			}
			for _, f := range strings.Split(rest[:end], ",") {
				if n, l := leadingInt([]byte(strings.TrimSpace(f))); l > 0 && l == len(strings.TrimSpace(f)) {
					add("rank " + strconv.Itoa(n))
				}
			}
		case peerAddr:
			if end := strings.IndexByte(rest, ']'); end > 0 && end < 64 {
				add(rest[:end])
			}
		}
	}
	return out
}
