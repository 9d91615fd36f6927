package logstate

import (
	"bytes"
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
			if pr.lines++; pr.lines >= pendingLines {
				s.flushPending(src.Path)
			}
		}
		return
	}
	s.flushPending(src.Path)
	raw := parse.FindPlogTime(msg)
	var ts time.Time
	ok := false
	loc := s.cur
	if raw != nil && fallback != nil && s.opts.ScreenZoneFromRuntime {
		if rt, rok := parse.ParseRFC3339(fallback); rok {
			if z, zok := zoneFromPair(raw, rt); zok {
				loc = z
			}
		}
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
	pid := parse.ScreenPID(msg)
	if raw != nil {
		// The error manager's report is often repeated by the framework's
		// exception text (RuntimeError: …): the same code, pid and printed
		// time count once.
		key := string(code) + "|" + string(raw) + "|" + strconv.Itoa(pid) + "|" + src.Path
		for _, k := range s.recent {
			if k == key {
				return
			}
		}
		s.recent[s.recentNext] = key
		s.recentNext = (s.recentNext + 1) % dedupWindow
	}
	resource := ""
	if string(code) == codeResource {
		resource = parse.ScreenResource(msg)
	}
	if parse.IsHCCLCode(code) || string(code) == codeRuntimeOOM && parse.MentionsHCCLAllocation(msg) {
		s.recordFault(string(code), resource, FaultSourceScreen, src, pid, ts)
		return
	}
	// Another component's code: reported now, counted once its traceback
	// has been read.
	if !s.reportCANN(string(code), FaultSourceScreen, pid, ts) {
		return
	}
	pr := &pendingReport{code: string(code), src: *src, pid: pid, ts: ts}
	pr.see(msg)
	s.pending[src.Path] = pr
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
	code  string
	src   Source
	pid   int
	ts    time.Time
	lines int
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

// flushAllPending counts every held report (before a scrape or a
// checkpoint: a report whose traceback has not arrived by then is counted
// without it). The caller holds the lock.
func (s *State) flushAllPending() {
	for path := range s.pending {
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
