package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// CRILine is one entry of a Kubernetes CRI container log:
// `<RFC3339Nano> <stdout|stderr> <P|F> <message>`.
type CRILine struct {
	Time    []byte // as printed
	Stream  []byte // stdout or stderr
	Partial bool   // P: the message continues in the next entry
	Msg     []byte
}

// ParseCRI parses a CRI log entry without allocating. It reports false for a
// line in another format.
func ParseCRI(line []byte, out *CRILine) bool {
	*out = CRILine{}
	sp := bytes.IndexByte(line, ' ')
	if sp < len("2006-01-02T15:04:05Z") || sp > 40 || !looksRFC3339(line[:sp]) {
		return false
	}
	out.Time = line[:sp]
	rest := line[sp+1:]
	switch {
	case bytes.HasPrefix(rest, []byte("stdout ")), bytes.HasPrefix(rest, []byte("stderr ")):
		out.Stream = rest[:6]
		rest = rest[7:]
	default:
		return false
	}
	if len(rest) == 0 || (rest[0] != 'P' && rest[0] != 'F') || (len(rest) > 1 && rest[1] != ' ') {
		return false
	}
	out.Partial = rest[0] == 'P'
	if len(rest) > 2 {
		out.Msg = rest[2:]
	}
	return true
}

func looksRFC3339(b []byte) bool {
	return len(b) >= 20 && isDigit(b[0]) && isDigit(b[3]) && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':'
}

// ParseRFC3339 parses the CRI or Docker time stamp.
func ParseRFC3339(b []byte) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t, err == nil
}

// DockerLine is one entry of the Docker json-file log driver.
type DockerLine struct {
	Log    string `json:"log"`
	Stream string `json:"stream"`
	Time   string `json:"time"`
}

var dockerPrefix = []byte(`{"log":`)

// IsDocker reports whether a line looks like a Docker json-file entry.
func IsDocker(line []byte) bool { return bytes.HasPrefix(line, dockerPrefix) }

// DockerComplete reports, without decoding, whether the entry ends its line:
// the driver splits lines longer than 16 KiB into entries whose log does not
// end in "\n".
func DockerComplete(line []byte) bool {
	return bytes.Contains(line, []byte(`\n","stream":`)) || bytes.Contains(line, []byte(`\r\n","stream":`))
}

// ParseDocker decodes a Docker json-file entry.
func ParseDocker(line []byte) (DockerLine, error) {
	var d DockerLine
	if err := json.Unmarshal(line, &d); err != nil {
		return DockerLine{}, fmt.Errorf("decode docker json-file entry: %w", err)
	}
	return d, nil
}
