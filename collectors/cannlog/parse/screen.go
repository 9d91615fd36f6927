package parse

import "bytes"

// FindFaultCode returns the first CANN error code in a screen-log line and
// its offset, or nil. A code is `E`, a component letter or digit, and four
// digits (`EI0011`, `EL0004`, `EZ9999`), printed as `Title(EI0011):` or
// `EI0011:`; the code is the key, never the title, since titles change
// between CANN versions. Only E (error) codes are returned: W and I codes are
// warnings and notices. It does not allocate.
func FindFaultCode(b []byte) (code []byte, at int) {
	for i := 6; i < len(b); i++ {
		c := b[i]
		if c != ':' && c != ')' {
			continue
		}
		s := i - 6
		if b[s] != 'E' || !(isUpper(b[s+1]) || isDigit(b[s+1])) ||
			!isDigit(b[s+2]) || !isDigit(b[s+3]) || !isDigit(b[s+4]) || !isDigit(b[s+5]) {
			continue
		}
		if c == ')' {
			if s == 0 || b[s-1] != '(' {
				continue
			}
		} else if s > 0 && (isAlnum(b[s-1]) || b[s-1] == '_') {
			continue
		}
		return b[s:i], s
	}
	return nil, -1
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

var markResource = []byte("resource[")

// The values ScreenResource returns.
const (
	ResourceQP           = "qp"
	ResourceDeviceMemory = "device_memory"
	ResourceHostMemory   = "host_memory"
	ResourceOther        = "other"
)

// ScreenResource returns what an EI0007 report says it failed to allocate,
// `Failed to allocate resource[%s] with info [%s]` (HCOMM error_code.cc),
// folded into a fixed set so that it can be a label: "qp", "device_memory"
// (DeviceMemory), "host_memory" (HostMemory), "other" for any other
// resource_type (event, stream, Notify, …), "" when msg prints none.
func ScreenResource(msg []byte) string {
	i := bytes.Index(msg, markResource)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(markResource):]
	j := bytes.IndexByte(rest, ']')
	if j < 0 {
		return ""
	}
	switch v := rest[:j]; {
	case bytes.EqualFold(v, []byte("qp")):
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
