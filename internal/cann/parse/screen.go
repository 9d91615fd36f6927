package parse

import "bytes"

// FindFaultCode returns the CANN error code of a screen-log line that is an
// error report, and its offset, or nil. A code is `E`, a component letter
// or digit, and four digits (`EI0011`, `EL0004`, `EZ9999`); only E (error)
// codes are returned: W and I codes are warnings and notices. The code is
// the key, never the title, since titles change between CANN versions.
//
// A code counts only in the shapes CANN's error manager prints a report in
// (docs/cannlog.md, "Screen logs"), at the start of the message:
//
//	EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket …   (before Dec 2025)
//	EI0005: 2024-04-24-06:32:27.781.599 The arguments …                   (older, no pid)
//	EZ9999: Inner Error!
//	[PID: 2103452] 2025-11-03-20:18:46.447.213 Title(EI0011): Failed …    (Dec 2025 on)
//	EH9999[PID: 366] 2025-12-29-13:22:34.092.455 (EH9999):  [Query]…     (an untitled report, Dec 2025 on)
//	Title(EI0011): Failed …
//
// after what launchers and frameworks put before a message: blanks,
// `[rank1]:`-style rank tags, vLLM's `(Worker_TP0 pid=42)` process tag and
// its `ERROR 04-30 03:58:27 [file.py:949]` logger prefix, an exception
// name (`RuntimeError: `), torch_npu's glog prefix and the watchdog's
// `[Rank 1] HCCL watchdog thread terminated with exception: ` (the only
// report of an EI0013 that stops a job), libstdc++'s `what():  ` repeat of
// it, and `[ERROR] RecentErrMsg: ` (aclGetRecentErrMsg() printed by a
// tool). A code anywhere else in a line — a CI job that echoes "EI0011:",
// a log message quoting one, torch_npu's own `ERR01100` codes, a
// `detail:EZ9999:` repeat — is not a report. It does not allocate.
func FindFaultCode(b []byte) (code []byte, at int) {
	p := skipReportPrefixes(b)
	rest := b[p:]
	// `CODE:` at the start of the message.
	if isFaultCode(rest) && len(rest) > 6 && rest[6] == ':' {
		return rest[:6], p
	}
	// `CODE[PID: n] <time> (CODE):`, the untitled report since Dec 2025
	// (vllm-ascend #5493): the same code twice.
	if isFaultCode(rest) && bytes.HasPrefix(rest[6:], markPIDOpen) {
		n := skipPIDTime(rest[6:])
		r := rest[6+n:]
		if n > 0 && len(r) > 8 && r[0] == '(' && bytes.Equal(r[1:7], rest[:6]) && r[7] == ')' && r[8] == ':' {
			return rest[:6], p
		}
		return nil, -1
	}
	// `[PID: n] <time> ` before the title.
	if bytes.HasPrefix(rest, markPIDOpen) {
		n := skipPIDTime(rest)
		if n == 0 {
			return nil, -1
		}
		p += n
		rest = rest[n:]
	}
	// `Title(CODE):` — a title of letters, digits, '_' and blanks.
	if len(rest) == 0 || !isLetter(rest[0]) {
		return nil, -1
	}
	for i := 1; i < len(rest) && i <= maxTitleLen; i++ {
		c := rest[i]
		if c == '(' {
			r := rest[i+1:]
			if isFaultCode(r) && len(r) > 7 && r[6] == ')' && r[7] == ':' {
				return r[:6], p + i + 1
			}
			return nil, -1
		}
		if !isAlnum(c) && c != '_' && c != ' ' {
			return nil, -1
		}
	}
	return nil, -1
}

// skipPIDTime returns the length of `[PID: n] <time> ` at the start of b
// (the error manager's pid and its printed time, blanks after), or 0.
func skipPIDTime(b []byte) int {
	if !bytes.HasPrefix(b, markPIDOpen) {
		return 0
	}
	i := len(markPIDOpen)
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && isDigit(b[j]) {
		j++
	}
	if j == i || j >= len(b) || b[j] != ']' {
		return 0
	}
	j++
	for j < len(b) && b[j] == ' ' {
		j++
	}
	// The time: a run of digits, '-', ':' and '.'.
	k := j
	for k < len(b) && (isDigit(b[k]) || b[k] == '-' || b[k] == ':' || b[k] == '.') {
		k++
	}
	if k == j {
		return 0
	}
	for k < len(b) && b[k] == ' ' {
		k++
	}
	return k
}

// maxTitleLen bounds the errTitle before `(CODE):`; the longest in HCOMM's
// catalogue is under 50 characters.
const maxTitleLen = 80

// isFaultCode reports whether b starts with an E code.
func isFaultCode(b []byte) bool {
	return len(b) >= 6 && b[0] == 'E' && (isUpper(b[1]) || isDigit(b[1])) &&
		isDigit(b[2]) && isDigit(b[3]) && isDigit(b[4]) && isDigit(b[5])
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

var (
	markPIDOpen = []byte("[PID:")
	markPidTag  = []byte(" pid=")
)

// skipReportPrefixes returns the offset of the message after the prefixes
// launchers and frameworks print before CANN's report.
func skipReportPrefixes(b []byte) int {
	p := 0
	for range 8 {
		for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
			p++
		}
		n := prefixLen(b[p:])
		if n == 0 {
			return p
		}
		p += n
	}
	return p
}

// prefixLen is the length of one prefix at the start of b, or 0.
func prefixLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch {
	case bytes.HasPrefix(b, markRecentErrMsg):
		return len(markRecentErrMsg)
	case bytes.HasPrefix(b, markWhat):
		return len(markWhat)
	case bytes.HasPrefix(b, markRankOpen):
		// torch_npu's `[Rank 1] HCCL watchdog thread terminated with
		// exception: ` (ProcessGroupHCCL::hcclCommWatchdog).
		i := len(markRankOpen)
		for i < len(b) && i < len(markRankOpen)+10 && isDigit(b[i]) {
			i++
		}
		if i > len(markRankOpen) && bytes.HasPrefix(b[i:], markWatchdog) {
			return i + len(markWatchdog)
		}
		return 0
	case b[0] == '[' && len(b) > 2 && (b[1] == 'E' || b[1] == 'W' || b[1] == 'I' || b[1] == 'F') && isDigit(b[2]):
		// torch_npu's glog prefix, `[E313 06:55:06.502248200 compiler_depend.ts:1693]`:
		// severity, month and day, a blank, the time, the source.
		i := 2
		for i < len(b) && i < 6 && isDigit(b[i]) {
			i++
		}
		if i < 4 || i+9 > len(b) || b[i] != ' ' || !isDigit(b[i+1]) || b[i+3] != ':' || b[i+6] != ':' {
			return 0
		}
		if end := bytes.IndexByte(b[i:min(len(b), i+96)], ']'); end > 0 {
			return i + end + 1
		}
		return 0
	case b[0] == '[' && !bytes.HasPrefix(b, markPIDOpen):
		// `[rank1]:`, `[default0]:`
		for i := 1; i < len(b) && i <= 32; i++ {
			c := b[i]
			if c == ']' {
				if i > 1 && i+1 < len(b) && b[i+1] == ':' {
					return i + 2
				}
				return 0
			}
			if !isAlnum(c) && c != '_' && c != '-' {
				return 0
			}
		}
		return 0
	case b[0] == '(':
		// vLLM's `(EngineCore_DP0 pid=96)`
		end := bytes.IndexByte(b[:min(len(b), 64)], ')')
		if end < 0 || !bytes.Contains(b[:end], markPidTag) {
			return 0
		}
		return end + 1
	}
	// vLLM's logger: `ERROR 04-30 03:58:27 [multiproc_executor.py:949]`.
	for _, lvl := range loggerLevels {
		if bytes.HasPrefix(b, lvl) && len(b) > len(lvl) && b[len(lvl)] == ' ' {
			rest := b[len(lvl)+1:]
			// MM-DD HH:MM:SS [file:line], or file:line] before vLLM 0.8
			// (vllm-ascend #516).
			if len(rest) > 16 && isDigit(rest[0]) && rest[2] == '-' && rest[5] == ' ' && rest[8] == ':' && rest[14] == ' ' && rest[15] != ' ' {
				if end := bytes.IndexByte(rest[15:min(len(rest), 15+96)], ']'); end > 0 {
					return len(lvl) + 1 + 15 + end + 1
				}
			}
			return 0
		}
	}
	// An exception name: `RuntimeError: `, `torch.distributed.DistBackendError: `.
	i := 0
	for i < len(b) && i <= 96 && (isAlnum(b[i]) || b[i] == '_' || b[i] == '.') {
		i++
	}
	if i > 0 && i+1 < len(b) && b[i] == ':' && b[i+1] == ' ' &&
		(bytes.HasSuffix(b[:i], suffixError) || bytes.HasSuffix(b[:i], suffixException)) {
		return i + 2
	}
	return 0
}

var (
	markRecentErrMsg = []byte("[ERROR] RecentErrMsg: ")
	markWhat         = []byte("what():")
	markRankOpen     = []byte("[Rank ")
	markWatchdog     = []byte("] HCCL watchdog thread terminated with exception: ")
)

var (
	loggerLevels    = [][]byte{[]byte("ERROR"), []byte("WARNING"), []byte("INFO"), []byte("CRITICAL")}
	suffixError     = []byte("Error")
	suffixException = []byte("Exception")
)

// ContainsFaultCodeShape is a cheap pre-check for wrapped lines (Docker
// json-file) before they are decoded: whether b holds an E code followed
// by ':' or ')' anywhere. FindFaultCode decides on the decoded message.
func ContainsFaultCodeShape(b []byte) bool {
	for i := 6; i < len(b); i++ {
		if (b[i] == ':' || b[i] == ')') && isFaultCode(b[i-6:]) {
			return true
		}
	}
	return false
}

// IsHCCLCode reports whether a code is HCCL's (EI) or HCCP's (EJ), the
// codes whose reports are HCCL faults by themselves; every other
// component's code (EL driver/runtime memory, EZ operators, EE runtime,
// EH ACL, E1…E9 GE and operators) is not.
func IsHCCLCode(code []byte) bool {
	return len(code) == 6 && code[0] == 'E' && (code[1] == 'I' || code[1] == 'J')
}

var (
	markHCCLModule  = []byte("HCCL module")
	markHCCLTiling  = []byte("HcclAllocComResourceByTiling")
	markMoe         = []byte("MoeDistribute")
	markAICoreTO    = []byte("507014")
	markVectorTO    = []byte("507034")
	markVectorCore  = []byte("vector core timeout")
	markVectorCore2 = []byte("vector core execution timeout")
)

// MentionsHCCLAllocation reports whether a memory report or a line of its
// traceback says HCCL requested the memory: "requested by HCCL module" (the
// EL0004 text from 2026), or HcclAllocComResourceByTiling, through which
// MC2 operators allocate HCCL's resources (vllm-ascend #3141).
func MentionsHCCLAllocation(b []byte) bool {
	return bytes.Contains(b, markHCCLModule) || bytes.Contains(b, markHCCLTiling)
}

// MentionsCommKernelTimeout reports whether a report or a line of its
// traceback is a communication kernel that timed out waiting for its
// peers: an MC2 operator (MoeDistribute*) failing with the runtime's
// AI Core or vector core timeout (507014, 507034), or a vector core
// timeout (AIV-mode collectives). A consequence of a peer that failed or
// stalled, not a root cause.
func MentionsCommKernelTimeout(b []byte) bool {
	if bytes.Contains(b, markVectorCore) || bytes.Contains(b, markVectorCore2) {
		return true
	}
	return bytes.Contains(b, markMoe) && (bytes.Contains(b, markAICoreTO) || bytes.Contains(b, markVectorTO))
}

var markPID = []byte("PID:")

// ScreenPID returns the pid printed as `[PID: 2103452]` (error manager) or
// `(PID:1292363, …)` (torch_npu), or 0.
func ScreenPID(b []byte) int {
	i := bytes.Index(b, markPID)
	if i < 0 {
		return 0
	}
	rest := trimSpaces(b[i+len(markPID):])
	n, pid := 0, 0
	for n < len(rest) && n < 10 && isDigit(rest[n]) {
		pid = pid*10 + int(rest[n]-'0')
		n++
	}
	if n == 0 || (n < len(rest) && isDigit(rest[n])) {
		return 0
	}
	return pid
}

var (
	markResource = []byte("resource[")
	// markResourceBare is EI0007's wording since HCOMM f52cf295b0
	// (2026-03-03, error_code.cc): `Failed to allocate resource %s with
	// info %s. Reason: Resources are exhausted.`, no brackets.
	markResourceBare = []byte("allocate resource ")
	markWithInfo     = []byte(" with info")
	markModifyQp     = []byte("ModifyQp")
)

// The values ScreenResource returns.
const (
	ResourceQP = "qp"
	// ResourceQPState is EI0007 `resource[qp] with info [ModifyQp]`: a QP
	// state change that failed (hrtRaTypicalQpModify, HCOMM
	// adapter_hccp.cc:224-227), not a QP that could not be allocated.
	ResourceQPState      = "qp_state"
	ResourceDeviceMemory = "device_memory"
	ResourceHostMemory   = "host_memory"
	ResourceOther        = "other"
)

// ScreenResource returns what an EI0007 report says it failed to allocate,
// `Failed to allocate resource[%s] with info [%s]` (HCOMM error_code.cc
// until 2026-03) or `Failed to allocate resource %s with info %s` (since
// HCOMM f52cf295b0), folded into a fixed set so that it can be a label:
// "qp", "device_memory" (DeviceMemory), "host_memory" (HostMemory), "other"
// for any other resource_type (event, stream, Notify, …), "" when msg
// prints none.
func ScreenResource(msg []byte) string {
	var v []byte
	if i := bytes.Index(msg, markResource); i >= 0 {
		rest := msg[i+len(markResource):]
		j := bytes.IndexByte(rest, ']')
		if j < 0 {
			return ""
		}
		v = rest[:j]
	} else if i := bytes.Index(msg, markResourceBare); i >= 0 {
		// The type is one word (HCCL passes "qp", "DeviceMemory", …)
		// followed by " with info".
		rest := msg[i+len(markResourceBare):]
		j := bytes.Index(rest, markWithInfo)
		if j < 0 || bytes.ContainsAny(rest[:j], " \t[]") {
			return ""
		}
		v = rest[:j]
	} else {
		return ""
	}
	switch {
	case bytes.EqualFold(v, []byte("qp")):
		if i := bytes.Index(msg, markWithInfo); i >= 0 &&
			bytes.HasPrefix(bytes.TrimLeft(msg[i+len(markWithInfo):], " ["), markModifyQp) {
			return ResourceQPState
		}
		return ResourceQP
	case bytes.EqualFold(v, []byte("DeviceMemory")):
		return ResourceDeviceMemory
	case bytes.EqualFold(v, []byte("HostMemory")):
		return ResourceHostMemory
	case len(v) == 0:
		return ""
	}
	return ResourceOther
}
