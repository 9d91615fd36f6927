package model

// How the report spells its quantities, for analysis (the sentences of
// summaries, reasons and remedies) and rendering alike, and the bounds on
// how many items a sentence names.

import (
	"fmt"
	"math"
	"strings"
)

// TextListMax bounds the items a sentence of the text report (and the
// findings of the remedies) names: a bundle of 10,000 plogs made pid lists
// of megabytes. The count is always given; the JSON report keeps every
// item (Faults[].Nodes[].PIDs, Settings[].Values[].Nodes).
const TextListMax = 8

// FewOf joins the first TextListMax items and says how many more there are.
func FewOf(items []string) string {
	if len(items) <= TextListMax {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more (all in --format=json)", strings.Join(items[:TextListMax], ", "), len(items)-TextListMax)
}

// WhereNodesMax bounds the nodes one "where" names, and PIDListMax the pids
// one list names: a job's 64 processes on 8 nodes made lines of 900
// characters. Counts are always given; the JSON report has every pid.
const (
	WhereNodesMax = 4
	PIDListMax    = 4
)

// Where renders who runs a setting value: "node-a (pids 1, 2), node-b (pid 3)".
func Where(nodes []NodePIDs) string {
	if len(nodes) == 1 {
		return nodes[0].Node + " (" + PIDList(nodes[0].PIDs) + ")"
	}
	n := min(len(nodes), WhereNodesMax)
	parts := make([]string, 0, n)
	for _, nd := range nodes[:n] {
		parts = append(parts, nd.Node+" ("+pidCount(nd.PIDs)+")")
	}
	if len(nodes) > WhereNodesMax {
		total := 0
		for _, nd := range nodes {
			total += len(nd.PIDs)
		}
		return fmt.Sprintf("%d nodes, %d pids: %s and %d more node(s) (all in --format=json)",
			len(nodes), total, strings.Join(parts, ", "), len(nodes)-WhereNodesMax)
	}
	return strings.Join(parts, ", ")
}

// pidCount names up to two pids, and counts more.
func pidCount(pids []int) string {
	if len(pids) <= 2 {
		return PIDList(pids)
	}
	return fmt.Sprintf("%d pids", len(pids))
}

// PIDList names up to PIDListMax pids, and counts more.
func PIDList(pids []int) string {
	if len(pids) == 0 {
		return "no pid"
	}
	n := min(len(pids), PIDListMax+1)
	s := make([]string, 0, n)
	for _, p := range pids[:n] {
		s = append(s, fmt.Sprint(p))
	}
	switch {
	case len(pids) == 1:
		return "pid " + s[0]
	case len(pids) > PIDListMax:
		return fmt.Sprintf("%d pids: %s and %d more", len(pids), strings.Join(s[:PIDListMax], ", "), len(pids)-PIDListMax)
	}
	return "pids " + strings.Join(s, ", ")
}

// FmtBytes renders a byte count in binary units, as HCCL and npu-smi mean
// MB: 3145728 → "3 MiB".
func FmtBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for math.Abs(b) >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b == math.Trunc(b) {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.2f %s", b, units[i])
}

// FmtNum renders a count without a needless fraction.
func FmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%g", f)
}

// FmtSeconds renders a duration in seconds for a person: "95 s", "1.5 s",
// "2 h 0 m".
func FmtSeconds(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%d h %d m", int(s)/3600, (int(s)%3600)/60)
	case s >= 10 || s == math.Trunc(s):
		return fmt.Sprintf("%.0f s", s)
	default:
		return fmt.Sprintf("%.1f s", s)
	}
}

// JoinAnd joins names as a sentence does: "a, b and c".
func JoinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := ""
	for i, v := range s {
		switch {
		case i == 0:
			out = v
		case i == len(s)-1:
			out += " and " + v
		default:
			out += ", " + v
		}
	}
	return out
}

// NaturalLess orders names with numbers as a person counts: node-2 before
// node-10.
func NaturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitsPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Who names a process: "node-3 pid 2103452 (rank 12, device 4)".
func Who(e Event) string {
	s := e.Node
	if e.PID > 0 {
		s += fmt.Sprintf(" pid %d", e.PID)
	}
	var ids []string
	if e.Rank >= 0 {
		r := fmt.Sprintf("rank %d", e.Rank)
		if e.RankSize > 0 {
			r += fmt.Sprintf(" of %d", e.RankSize)
		}
		ids = append(ids, r)
	}
	if e.Device >= 0 {
		d := fmt.Sprintf("device %d", e.Device)
		if !e.DevicePhysical {
			d = fmt.Sprintf("logical device %d", e.Device)
		}
		ids = append(ids, d)
	}
	if len(ids) > 0 {
		s += " (" + strings.Join(ids, ", ") + ")"
	}
	return s
}

// PeerNamedBy says what named a peer: "3 waiting event(s), 1 failing link".
func PeerNamedBy(p PeerCount) string {
	var parts []string
	if p.Events > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting event(s)", p.Events))
	}
	if p.Links > 0 {
		parts = append(parts, fmt.Sprintf("%d failing link(s)", p.Links))
	}
	return strings.Join(parts, ", ")
}

// MaxListed caps the communicators and processes named in a finding; the
// JSON nodes list has them all.
const MaxListed = 8

// ServerNumText says a communicator's server count, which only
// `[Communicator Key Info]` (CANN from Dec 2025) prints.
func ServerNumText(n int) string {
	if n < 0 {
		return "serverNum not printed (CANN before Dec 2025: every other rank is counted as a possible RoCE peer)"
	}
	return fmt.Sprintf("serverNum %d", n)
}

// TextTime is how the text report prints times: as CANN prints them, to the
// microsecond, in the report's zone (stated in its header).
const TextTime = "2006-01-02 15:04:05.000000"

// MaxEventsPerGroup caps the fault events kept per rotation group; a runaway
// log (a retry loop printing the same error) is counted, not kept.
const MaxEventsPerGroup = 1 << 14
