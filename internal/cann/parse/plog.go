package parse

import "bytes"

// Level is the severity printed in brackets at the start of a plog line.
type Level uint8

// Levels printed by the CANN log writer (runtime log_level.h). LevelOther
// covers the numeric form `[%d]` the writer falls back to for an unknown level.
const (
	LevelOther Level = iota
	LevelDebug
	LevelInfo
	LevelWarning
	LevelError
	LevelEvent
	LevelNull
	LevelTrace
	NumLevels
)

var levelNames = [NumLevels]string{"OTHER", "DEBUG", "INFO", "WARNING", "ERROR", "EVENT", "NULL", "TRACE"}

// String returns the level as printed, or "OTHER".
func (l Level) String() string {
	if l < NumLevels {
		return levelNames[l]
	}
	return "OTHER"
}

func levelOf(b []byte) Level {
	// A switch on string(b) compiles to comparisons without allocating.
	switch string(b) {
	case "INFO":
		return LevelInfo
	case "ERROR":
		return LevelError
	case "WARNING", "WARN":
		return LevelWarning
	case "DEBUG":
		return LevelDebug
	case "EVENT":
		return LevelEvent
	case "NULL":
		return LevelNull
	case "TRACE":
		return LevelTrace
	}
	return LevelOther
}

// PlogLine is one parsed plog line. Every byte slice points into the line
// given to ParsePlog and is valid only as long as that buffer is.
type PlogLine struct {
	Level  Level
	Module []byte // HCCL, HCCP, ROCE, RUNTIME, or a numeric module id
	PID    int
	PName  []byte // may be empty: `HCCL(106335,)`
	Time   []byte // `2025-11-03-20:18:46.447.213` as printed
	// StdTime reports that Time has the fixed 26-byte layout, so that two
	// times compare as byte strings.
	StdTime bool
	Source  []byte // `file.cc:123`, empty when the line has none
	TID     []byte // from `[tid]` (HCCL) or `tid:N,` (HCCP, ROCE); may be empty
	// ErrToWarn reports an ERROR that HCCL downgraded to a warning while it
	// retries (`[tid]ErrToWarn: …`); the prefix is stripped from Msg.
	ErrToWarn bool
	Msg       []byte // the message after the header, file and tid
}

const (
	maxModuleLen = 32
	maxPNameLen  = 256
	plogTimeLen  = len("2025-11-03-20:18:46.447.213")
)

// ParsePlog parses the plog grammar (runtime dlog_message.c):
//
//	[LEVEL] MODULE(PID,PNAME):TIME [file:line] [tid]message
//
// with the variants seen in real logs: no space after `]` or before `[file`,
// an empty PNAME, a space instead of `-` between date and time, `tid:N,`
// instead of `[tid]` (HCCP/ROCE), and an `ErrToWarn: ` prefix. It reports
// false when the line does not follow the grammar. It never allocates.
func ParsePlog(line []byte, p *PlogLine) bool {
	*p = PlogLine{}
	if len(line) < 8 || line[0] != '[' {
		return false
	}
	head := line[1:]
	if len(head) > 12 {
		head = head[:12]
	}
	end := bytes.IndexByte(head, ']')
	if end <= 0 {
		return false
	}
	p.Level = levelOf(line[1 : 1+end])
	if p.Level == LevelOther && !allDigits(line[1:1+end]) {
		return false
	}
	rest := trimSpaces(line[end+2:])

	// MODULE(
	open := -1
	for i := 0; i < len(rest) && i <= maxModuleLen; i++ {
		c := rest[i]
		if c == '(' {
			open = i
			break
		}
		if !isModuleChar(c) {
			return false
		}
	}
	if open <= 0 {
		return false
	}
	p.Module = rest[:open]
	rest = rest[open+1:]

	// PID,
	pid, n := 0, 0
	for n < len(rest) && n < 11 && isDigit(rest[n]) {
		pid = pid*10 + int(rest[n]-'0')
		n++
	}
	if n == 0 || n > 10 || n >= len(rest) || rest[n] != ',' {
		return false
	}
	p.PID = pid
	rest = rest[n+1:]

	// PNAME):
	lim := rest
	if len(lim) > maxPNameLen+2 {
		lim = lim[:maxPNameLen+2]
	}
	closing := bytes.Index(lim, []byte("):"))
	if closing < 0 {
		return false
	}
	p.PName = rest[:closing]
	rest = rest[closing+2:]

	// TIME
	if len(rest) >= plogTimeLen && looksPlogTime(rest[:plogTimeLen]) {
		p.Time = rest[:plogTimeLen]
		p.StdTime = true
		rest = rest[plogTimeLen:]
	} else {
		i := 0
		for i < len(rest) && rest[i] != ' ' && rest[i] != '[' {
			i++
		}
		if i == 0 {
			return false
		}
		p.Time = rest[:i]
		rest = rest[i:]
	}
	rest = trimSpaces(rest)

	// [file:line]
	if len(rest) > 0 && rest[0] == '[' {
		if c := bytes.IndexByte(rest, ']'); c > 1 && isSourceRef(rest[1:c]) {
			p.Source = rest[1:c]
			rest = trimSpaces(rest[c+1:])
		}
	}

	// [tid] or tid:N,
	switch {
	case len(rest) > 2 && rest[0] == '[':
		i := 1
		for i < len(rest) && i < 12 && isDigit(rest[i]) {
			i++
		}
		if i > 1 && i < len(rest) && rest[i] == ']' {
			p.TID = rest[1:i]
			rest = rest[i+1:]
			// 2023 builds print the tid twice: `[6615][6615]message`.
			if n := len(p.TID) + 2; len(rest) > n && rest[0] == '[' && rest[n-1] == ']' && bytes.Equal(rest[1:n-1], p.TID) {
				rest = rest[n:]
			}
		}
	case bytes.HasPrefix(rest, []byte("tid:")):
		i := 4
		for i < len(rest) && i < 16 && isDigit(rest[i]) {
			i++
		}
		if i > 4 && i < len(rest) && rest[i] == ',' {
			p.TID = rest[4:i]
			rest = rest[i+1:]
		}
	}
	if bytes.HasPrefix(rest, []byte("ErrToWarn:")) {
		p.ErrToWarn = true
		rest = trimSpaces(rest[len("ErrToWarn:"):])
	}
	p.Msg = rest
	return true
}

// isSourceRef reports whether b looks like `file.cc:123`.
func isSourceRef(b []byte) bool {
	colon := bytes.LastIndexByte(b, ':')
	if colon <= 0 || colon == len(b)-1 {
		return false
	}
	if !allDigits(b[colon+1:]) {
		return false
	}
	return bytes.IndexByte(b[:colon], ' ') < 0
}

func isModuleChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

func isAlnum(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func trimSpaces(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
