package hccn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The parsers below are pure: bytes of one hccn_tool call's stdout in, a
// value or an error out. Each accepts only what the tool prints on success
// (the caller has already checked the exit status, because some failures are
// printed on stdout too); an output that is cut short is an error, never a
// smaller reading.

// ErrEmpty is returned for an output with no line the parser looks for.
var ErrEmpty = errors.New("no recognised line in hccn_tool output")

// maxLineLen bounds one line; hccn_tool's longest line (a -qp_info row) is
// about 130 bytes.
const maxLineLen = 4096

// lines calls fn with every line of b, trailing "\r" and spaces removed.
func lines(b []byte, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 256), maxLineLen)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, strings.TrimRight(sc.Text(), " \t\r")); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}

// splitKV splits "key : value" on the first colon and trims both sides.
func splitKV(line string) (key, value string, ok bool) {
	k, v, ok := strings.Cut(line, ":")
	return strings.TrimSpace(k), strings.TrimSpace(v), ok
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 120
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}

// ParseLink reads `-link -g`: one line `link status: UP|DOWN`.
func ParseLink(b []byte) (up bool, err error) {
	found := false
	err = lines(b, func(n int, line string) error {
		k, v, ok := splitKV(line)
		if !ok || !strings.EqualFold(k, "link status") {
			if strings.TrimSpace(line) == "" {
				return nil
			}
			return fmt.Errorf("line %d: unexpected %s", n, clip(line))
		}
		var this bool
		switch strings.ToUpper(v) {
		case "UP":
			this = true
		case "DOWN":
		default:
			return fmt.Errorf("line %d: link status %s is neither UP nor DOWN", n, clip(v))
		}
		if found && this != up {
			return fmt.Errorf("line %d: a second, different link status", n)
		}
		found, up = true, this
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("-link: %w", err)
	}
	if !found {
		return false, fmt.Errorf("-link: %w", ErrEmpty)
	}
	return up, nil
}

// LinkStat is what `-link_stat -g` prints about one port.
type LinkStat struct {
	UpCount   uint64
	DownCount uint64
	// HasDownCount is false on drivers that print only `link up count`
	// (before about 2025); DownRecords then stands in for DownCount.
	HasDownCount bool
	// Records are the link change records, newest first, at most 10 (the
	// driver keeps no more). Times are host local time.
	Records []LinkRecord
}

// DownRecords counts the LINK DOWN records.
func (s LinkStat) DownRecords() int {
	n := 0
	for _, r := range s.Records {
		if !r.Up {
			n++
		}
	}
	return n
}

// LinkRecord is one `LINK UP` / `LINK DOWN` line of -link_stat.
type LinkRecord struct {
	At time.Time
	Up bool
}

// linkStatPrefix is the device prefix of every -link_stat line; one
// MindCluster document shows `[device N]`, the tool `[devid N]`.
var linkStatPrefix = regexp.MustCompile(`^\[dev(?:id|ice) (\d{1,4})\]`)

// asctimeLayout is the C asctime form the driver prints, day padded with a
// space; strings.Fields has removed the padding.
const asctimeLayout = "Mon Jan 2 15:04:05 2006"

// ParseLinkStat reads `-link_stat -g`. loc is the zone the host's clock runs
// in (the records carry none).
func ParseLinkStat(b []byte, loc *time.Location) (LinkStat, error) {
	var s LinkStat
	hasUp := false
	err := lines(b, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		m := linkStatPrefix.FindStringSubmatchIndex(line)
		if m == nil {
			return fmt.Errorf("line %d: no [devid N] prefix: %s", n, clip(line))
		}
		rest := line[m[1]:]
		f := strings.Fields(rest)
		if len(f) >= 2 && f[len(f)-2] == "LINK" {
			// A change record: asctime date, then LINK UP or LINK DOWN.
			if len(f) != 7 || (f[6] != "UP" && f[6] != "DOWN") {
				return fmt.Errorf("line %d: unexpected record %s", n, clip(line))
			}
			at, err := time.ParseInLocation(asctimeLayout, strings.Join(f[:5], " "), loc)
			if err != nil {
				return fmt.Errorf("line %d: record time: %w", n, err)
			}
			s.Records = append(s.Records, LinkRecord{At: at, Up: f[6] == "UP"})
			return nil
		}
		k, v, ok := splitKV(rest)
		if !ok {
			return fmt.Errorf("line %d: unexpected %s", n, clip(line))
		}
		var dst *uint64
		switch strings.ToLower(k) {
		case "link up count":
			dst, hasUp = &s.UpCount, true
		case "link down count":
			dst, s.HasDownCount = &s.DownCount, true
		default: // current time, link change records, keys of other builds
			return nil
		}
		u, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: %s is not a count: %w", n, k, err)
		}
		*dst = u
		return nil
	})
	if err != nil {
		return LinkStat{}, fmt.Errorf("-link_stat: %w", err)
	}
	if !hasUp {
		return LinkStat{}, fmt.Errorf("-link_stat: no `link up count` line: %w", ErrEmpty)
	}
	return s, nil
}

// NetHealthStates are the values `-net_health -g` prints, in the order of
// the tool's table and of DCMI's dcmi_rdfx_detect_result (0 Success … 9
// Unknown). ascend_roce_network_health is a state set over them.
var NetHealthStates = []string{
	"Success", "Socket fail", "Receive timeout", "Unreachable", "Time exceeded",
	"Fault", "Init", "Thread error", "Detect ip set", "Unknown",
}

// ParseNetHealth reads `-net_health -g`: `net health status: <value>`. The
// value is matched case-insensitively by prefix, so older wordings such as
// `Socket failed` map to `Socket fail`; a value outside the table is
// `Unknown`, and raw says what was printed.
func ParseNetHealth(b []byte) (status, raw string, err error) {
	found := false
	err = lines(b, func(n int, line string) error {
		k, v, ok := splitKV(line)
		if !ok || !strings.EqualFold(k, "net health status") {
			if strings.TrimSpace(line) == "" {
				return nil
			}
			return fmt.Errorf("line %d: unexpected %s", n, clip(line))
		}
		if found {
			return fmt.Errorf("line %d: a second net health status", n)
		}
		found, raw = true, v
		return nil
	})
	if err != nil {
		return "", "", fmt.Errorf("-net_health: %w", err)
	}
	if !found || raw == "" {
		return "", "", fmt.Errorf("-net_health: %w", ErrEmpty)
	}
	return NormalizeNetHealth(raw), raw, nil
}

// NormalizeNetHealth maps a printed -net_health value onto NetHealthStates.
func NormalizeNetHealth(v string) string {
	lv := strings.ToLower(strings.TrimSpace(v))
	for _, s := range NetHealthStates {
		if strings.HasPrefix(lv, strings.ToLower(s)) {
			return s
		}
	}
	return "Unknown"
}

// QP is one row of `-qp_info -g`. Status and Type are undocumented codes
// kept as printed.
type QP struct {
	QPN, Status, Type, DstQPN uint32
	IP                        string
	SrcPort                   uint32
	SendPSN, RecvPSN          uint32
}

// qpHeader is the first field of the -qp_info header line.
const qpHeader = "qpn"

// ParseQPInfo reads `-qp_info -g`: a header, one whitespace-separated row of
// 8 fields per active QP, and `total_qp_count: N`. The rows are the data and
// the total is their check: an output without the total line (the tool stops
// early when one QP cannot be read) or with a total that differs from the
// rows is an error.
func ParseQPInfo(b []byte) ([]QP, error) {
	var qps []QP
	total := -1
	header := false
	err := lines(b, func(n int, line string) error {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			return nil
		case total >= 0:
			return fmt.Errorf("line %d: text after the total line: %s", n, clip(line))
		case f[0] == qpHeader:
			if header || len(qps) > 0 {
				return fmt.Errorf("line %d: a second header", n)
			}
			header = true
			return nil
		case strings.HasPrefix(f[0], "total_qp_count"):
			k, v, _ := splitKV(line)
			if k != "total_qp_count" {
				return fmt.Errorf("line %d: unexpected %s", n, clip(line))
			}
			t, err := strconv.Atoi(v)
			if err != nil || t < 0 {
				return fmt.Errorf("line %d: total_qp_count %s is not a count", n, clip(v))
			}
			total = t
			return nil
		}
		if !header {
			return fmt.Errorf("line %d: row before the header: %s", n, clip(line))
		}
		if len(f) != 8 {
			return fmt.Errorf("line %d: %d fields, want 8 (qpn status type dst_qpn ip src_port send_psn recv_psn)", n, len(f))
		}
		var nums [7]uint32
		for i, idx := range []int{0, 1, 2, 3, 5, 6, 7} {
			u, err := strconv.ParseUint(f[idx], 10, 32)
			if err != nil {
				return fmt.Errorf("line %d: field %d %s is not a number", n, idx+1, clip(f[idx]))
			}
			nums[i] = uint32(u)
		}
		qps = append(qps, QP{QPN: nums[0], Status: nums[1], Type: nums[2], DstQPN: nums[3], IP: f[4],
			SrcPort: nums[4], SendPSN: nums[5], RecvPSN: nums[6]})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("-qp_info: %w", err)
	}
	if total < 0 {
		return nil, fmt.Errorf("-qp_info: no total_qp_count line (the tool stops early when a QP cannot be read)")
	}
	if total != len(qps) {
		return nil, fmt.Errorf("-qp_info: total_qp_count %d but %d rows", total, len(qps))
	}
	return qps, nil
}

// statKey is the form of a -stat counter name.
var statKey = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ParseStat reads `-stat -g`: `packet statistics:` and one `name:value`
// line per counter (no space after the colon). Every counter is returned,
// also the ones this exporter does not export, since builds differ. A line
// that is not `name:number` is an error; so is an output without counters.
func ParseStat(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	err := lines(b, func(n int, line string) error {
		t := strings.TrimSpace(line)
		if t == "" || strings.EqualFold(t, "packet statistics:") {
			return nil
		}
		k, v, ok := splitKV(t)
		if !ok || !statKey.MatchString(k) {
			return fmt.Errorf("line %d: unexpected %s", n, clip(line))
		}
		u, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: %s=%s is not a counter", n, k, clip(v))
		}
		if _, dup := out[k]; dup {
			return fmt.Errorf("line %d: %s printed twice", n, k)
		}
		out[k] = u
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("-stat: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-stat: %w", ErrEmpty)
	}
	return out, nil
}
