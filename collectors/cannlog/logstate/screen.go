package logstate

import (
	"bytes"
	"strconv"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/parse"
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
		if complete && !s.hasPartial(src.Path) {
			if code, _ := parse.FindFaultCode(line); code == nil {
				return
			}
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
		return
	}
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
	if !ok {
		ts = s.opts.Now()
	}
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
	s.recordFault(string(code), resource, FaultSourceScreen, src, pid, ts)
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
