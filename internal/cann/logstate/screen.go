package logstate

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Screen logs: fault codes in training stdout/stderr captures, plain or
// wrapped by Kubernetes CRI or Docker json-file, whose long lines arrive in
// partial entries that are joined here before a code is looked for.

// codeResource is the code whose reports name the resource that ran out
// (`Failed to allocate resource[%s] with info [%s]`).
const codeResource = "EI0007"

type partialKey struct {
	path   string
	stream uint8
}

var (
	dockerStreamStdout = "stdout"
	dockerStreamStderr = "stderr"
)

func (s *State) ingestScreen(src *Source, line []byte) {
	msg := line
	var fallback []byte // RFC 3339 time of the CRI or Docker entry
	var cri parse.CRILine
	switch {
	case parse.IsDocker(line):
		complete := parse.DockerComplete(line)
		if complete && !s.hasPartial(src.Path) && s.pending[src.Path] == nil && !parse.ContainsFaultCodeShape(line) {
			return
		}
		d, err := parse.ParseDocker(line)
		if err != nil {
			s.unparsable[formatDocker]++
			return
		}
		key := partialKey{path: src.Path, stream: streamID(d.Stream)}
		text := []byte(d.Log)
		if len(text) == 0 || text[len(text)-1] != '\n' {
			s.appendPartial(key, text)
			return
		}
		if buf, ok := s.partial[key]; ok {
			text = append(buf, text...)
			delete(s.partial, key)
		}
		msg = bytes.TrimRight(text, "\r\n")
		fallback = []byte(d.Time)
	case parse.ParseCRI(line, &cri):
		key := partialKey{path: src.Path, stream: streamID(string(cri.Stream))}
		if cri.Partial {
			s.appendPartial(key, cri.Msg)
			return
		}
		msg = cri.Msg
		if buf, ok := s.partial[key]; ok {
			msg = append(buf, cri.Msg...)
			delete(s.partial, key)
		}
		fallback = cri.Time
	default:
		if len(line) > 0 && (line[0] >= '0' && line[0] <= '9') && bytes.Contains(line[:min(len(line), 40)], []byte(" stdout ")) {
			// Looks like CRI but did not parse.
			s.unparsable[formatCRI]++
		}
	}
	code, _ := parse.FindFaultCode(msg)
	if code == nil {
		if pr := s.pending[src.Path]; pr != nil {
			pr.see(msg)
			pr.lines++
			switch {
			case pr.header && pr.lines >= headerLines:
				// No detail line came: the header is the report.
				s.releaseHeader(src.Path, pr, pr.lines)
			case !pr.header && pr.lines >= pendingLines:
				s.flushPending(src.Path)
			}
		}
		return
	}
	raw := parse.FindPlogTime(msg)
	pid := parse.ScreenPID(msg)
	if pr := s.pending[src.Path]; pr != nil && pr.header && pr.code == string(code) && (raw != nil || pid > 0) {
		// The detail line of a held header (`EZ9999: Inner Error!`, then
		// `EZ9999: [PID: n] <time> …` or `EZ9999[PID: n] <time> (EZ9999):`):
		// one report, with the detail's pid and time.
		delete(s.pending, src.Path)
		defer func(h *pendingReport) {
			if cur := s.pending[src.Path]; cur != nil {
				cur.hccl, cur.comm = cur.hccl || h.hccl, cur.comm || h.comm
			}
		}(pr)
	}
	if pr := s.pending[src.Path]; pr != nil && pr.header {
		// Another code: the header was a report of its own, read lines ago.
		s.releaseHeader(src.Path, pr, pr.lines+1)
	}
	s.flushPending(src.Path)
	var ts time.Time
	ok := false
	loc := s.cur
	zoned := false
	if raw != nil && fallback != nil && s.opts.ScreenZoneFromRuntime {
		if rt, rok := parse.ParseRFC3339(fallback); rok {
			if z, zok := zoneFromPair(raw, rt); zok {
				loc, zoned = z, true
			}
		}
	}
	var owner *process
	why := ""
	if pid > 0 {
		owner, why = s.screenProcess(src, pid)
	}
	if !zoned && owner != nil && owner.loc != nil {
		// A plain screen log carries no zone: its printed time is the
		// process's own, read in the zone its plogs are read in.
		loc = owner.loc
	}
	if raw != nil {
		ts, ok = parse.ParsePlogTime(raw, loc)
	}
	if !ok && fallback != nil {
		ts, ok = parse.ParseRFC3339(fallback)
	}
	// A time printed ahead of now counts as now (notAfter).
	if !ok {
		ts = s.opts.Now()
	}
	ts = notAfter(ts, s.opts.Now())
	if raw != nil {
		// The error manager's report is often repeated by the framework's
		// exception text (RuntimeError: …, libstdc++'s what():): the same
		// code, pid and printed time count once.
		key := string(code) + "|" + string(raw) + "|" + strconv.Itoa(pid) + "|" + src.Path
		for _, k := range s.recent {
			if k == key {
				return
			}
		}
		s.recent[s.recentNext] = key
		s.recentNext = (s.recentNext + 1) % dedupWindow
	}
	if why != "" {
		s.untied[why]++ // the report is the screen log's own
	}
	resource := ""
	if string(code) == codeResource {
		resource = parse.ScreenResource(msg)
	}
	pr := &pendingReport{code: string(code), resource: resource, src: *src, pid: pid, ts: ts}
	pr.see(msg)
	if raw == nil && pid == 0 {
		// A header without pid or time: held for the detail line CANN
		// prints next, so that the two count once.
		pr.header = true
		s.pending[src.Path] = pr
		return
	}
	s.screenReport(pr, 0)
}

// headerLines is how many lines after a report header (`EZ9999: Inner
// Error!`) its detail line may come: CANN prints one indented line between
// them at most (vllm-ascend #5493, #516).
const headerLines = 3

// screenReport counts a screen report read lag lines ago (0: the line just
// read), or holds another component's report for its traceback.
func (s *State) screenReport(pr *pendingReport, lag int) {
	if parse.IsHCCLCode([]byte(pr.code)) || pr.code == codeRuntimeOOM && pr.hccl {
		s.recordFault(pr.code, pr.resource, FaultSourceScreen, &pr.src, pr.pid, pr.ts, lag)
		return
	}
	// Another component's code: reported now, counted once its traceback
	// has been read.
	if !s.reportCANN(pr.code, FaultSourceScreen, pr.pid, pr.ts, lag) {
		return
	}
	pr.header = false
	s.pending[pr.src.Path] = pr
}

// releaseHeader reports a held header as a report of its own, read lag
// lines ago.
func (s *State) releaseHeader(path string, pr *pendingReport, lag int) {
	delete(s.pending, path)
	s.screenReport(pr, lag)
}

// codeRuntimeOOM is the runtime's out-of-memory report, HCCL's fault only
// where HCCL requested the memory.
const codeRuntimeOOM = "EL0004"

// pendingLines is how many lines after another component's report are
// read as its Possible Cause / Solution / TraceBack before it is counted.
const pendingLines = 32

// pendingReport is another component's screen report waiting for the
// lines that follow it.
type pendingReport struct {
	code     string
	resource string
	src      Source
	pid      int
	ts       time.Time
	lines    int
	// header: a report that printed neither pid nor time, not reported
	// yet, waiting headerLines lines for its detail line.
	header bool
	// hccl: the report or its traceback says HCCL requested the memory
	// (EL0004 "requested by HCCL module", HcclAllocComResourceByTiling).
	hccl bool
	// comm: a communication kernel timed out (MC2 507014/507034, vector
	// core timeout).
	comm bool
}

func (p *pendingReport) see(msg []byte) {
	p.hccl = p.hccl || parse.MentionsHCCLAllocation(msg)
	p.comm = p.comm || parse.MentionsCommKernelTimeout(msg)
}

// flushPending counts the held report of a screen log, if any: an EL0004
// whose traceback names HCCL as HCCL's fault, anything else as another
// component's code.
func (s *State) flushPending(path string) {
	p := s.pending[path]
	if p == nil {
		return
	}
	delete(s.pending, path)
	if p.header {
		// Not reported yet: reported (and counted or held) now.
		s.screenReport(p, p.lines)
		if p = s.pending[path]; p == nil {
			return
		}
		delete(s.pending, path)
	}
	if p.code == codeRuntimeOOM && p.hccl {
		s.count(faultKey{code: p.code, source: FaultSourceScreen}, &p.src, p.pid, p.ts)
		return
	}
	reason := ""
	if p.comm {
		reason = ReasonCommKernelTimeout
	}
	s.countCANN(p.code, reason, FaultSourceScreen, &p.src, p.pid, p.ts)
}

// FlushFile counts the held report of the screen log at path, if any, as
// if the file ended: a reader that reads files one by one (diagnose) calls
// it at each file's end, so that a header on a file's last lines is
// reported with that file.
func (s *State) FlushFile(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushPending(path)
}

// flushAllPending counts every held report (before a scrape or a
// checkpoint: a report whose traceback has not arrived by then is counted
// without it), in the order of their paths: under a label cap the same
// reports keep their labels at every run. The caller holds the lock.
func (s *State) flushAllPending() {
	for _, path := range slices.Sorted(maps.Keys(s.pending)) {
		s.flushPending(path)
	}
}

func streamID(stream string) uint8 {
	switch stream {
	case dockerStreamStdout:
		return 1
	case dockerStreamStderr:
		return 2
	}
	return 0
}

func (s *State) hasPartial(path string) bool {
	for stream := uint8(0); stream <= 2; stream++ {
		if _, ok := s.partial[partialKey{path, stream}]; ok {
			return true
		}
	}
	return false
}

func (s *State) appendPartial(key partialKey, b []byte) {
	buf := s.partial[key]
	if room := s.opts.MaxPartialBytes - len(buf); room < len(b) {
		if room < 0 {
			room = 0
		}
		b = b[:room] // the start of a line carries the code; drop the excess
	}
	s.partial[key] = append(buf, b...)
}
