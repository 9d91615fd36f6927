package logstate

import (
	"strconv"
	"strings"
	"time"
)

// The one rule by which the exporter (--cannlog.timezone=auto, per log
// root) and diagnose (--timezone auto, per node) infer the zone CANN
// printed its times in. Both read the same evidence the same way, so that
// the same files are read in the same zone by both (issue 40: the demo was
// UTC+00:00 to the exporter and UTC+08:00 to diagnose).
//
//  1. Communicator identifiers first. A root-info communicator's identifier
//     ends with the time the root rank created it, in microseconds since
//     the Unix epoch (`10.0.0.1%enp_60000_0_1765367607599032`, HCCL's
//     GetRootInfo): a true instant whatever the zone. A line naming it is
//     printed moments later in the writer's wall-clock time, so the
//     difference is the writer's offset (InferOffset). Each identifier
//     votes; the most common offset wins (ties: the smaller offset).
//  2. Else the file's modification time against the time printed in its
//     last line. A file copied without its modification time (a bundle, a
//     git checkout, the demo) gives no answer here rather than a wrong one:
//     InferOffset refuses a difference that is not a zone's.

// ZoneEvidence is what a set of CANN log lines says of their writer's zone.
type ZoneEvidence struct {
	// Identifiers maps a communicator identifier to the earliest time a
	// line naming it was printed, read as if in UTC.
	Identifiers map[string]time.Time
	// LastPrinted is the time printed in the file's last complete line,
	// read as if in UTC, and ModTime the file's modification time; either
	// zero when unknown.
	LastPrinted, ModTime time.Time
}

// Zone bases InferZone reports.
const (
	ZoneBasisIdentifiers = "communicator identifiers"
	ZoneBasisModTime     = "file modification time"
)

// AddIdentifier records a line naming communicator id printed at
// printedAsUTC, keeping the earliest.
func (e *ZoneEvidence) AddIdentifier(id string, printedAsUTC time.Time) {
	if id == "" || printedAsUTC.IsZero() {
		return
	}
	if e.Identifiers == nil {
		e.Identifiers = map[string]time.Time{}
	}
	if cur, ok := e.Identifiers[id]; !ok || printedAsUTC.Before(cur) {
		e.Identifiers[id] = printedAsUTC
	}
}

// InferZone applies the rule: the offset, how many pieces of evidence
// agreed on it, and which basis gave it; ok is false when nothing does.
func InferZone(e ZoneEvidence) (offset time.Duration, votes int, basis string, ok bool) {
	tally := map[time.Duration]int{}
	for id, printed := range e.Identifiers {
		created, ok := IdentifierTime(id)
		if !ok {
			continue
		}
		if printed.Before(created.Add(-time.Minute)) {
			continue // printed before the communicator existed: not this zone
		}
		if off, ok := InferOffset(printed, created); ok {
			tally[off]++
		}
	}
	best, n := time.Duration(0), 0
	for off, c := range tally {
		if c > n || (c == n && off < best) {
			best, n = off, c
		}
	}
	if n > 0 {
		return best, n, ZoneBasisIdentifiers, true
	}
	if !e.LastPrinted.IsZero() && !e.ModTime.IsZero() {
		if off, ok := InferOffset(e.LastPrinted, e.ModTime); ok {
			return off, 1, ZoneBasisModTime, true
		}
	}
	return 0, 0, "", false
}

// IdentifierTime reads the creation time from a root-info communicator
// identifier (its last field: 16 digits of microseconds since the epoch).
func IdentifierTime(id string) (time.Time, bool) {
	i := strings.LastIndexByte(id, '_')
	if i < 0 || len(id)-i-1 != 16 {
		return time.Time{}, false
	}
	us, err := strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	t := time.UnixMicro(us).UTC()
	if t.Year() < 2015 || t.Year() > 2045 {
		return time.Time{}, false
	}
	return t, true
}
