package diagnose

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/logstate"
)

// ParseNodeZones reads NODE=ZONE pairs (--node-timezone).
func ParseNodeZones(pairs []string) (map[string]*time.Location, error) {
	out := map[string]*time.Location{}
	for _, p := range pairs {
		node, zone, ok := strings.Cut(p, "=")
		if !ok || node == "" {
			return nil, fmt.Errorf("%q: want NODE=ZONE, e.g. node-3=Asia/Shanghai or node-3=+08:00", p)
		}
		loc, err := logstate.ParseZone(zone)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", node, err)
		}
		out[node] = loc
	}
	return out, nil
}

// A root-info communicator's identifier ends with the time the root rank
// created it, in microseconds since the Unix epoch
// (`10.0.0.1%enp_60000_0_1765367607599032`, HCCL's GetRootInfo), a true
// instant whatever the zone. Every rank prints the end of that
// communicator's initialisation moments later in its own wall-clock time, so
// the difference is the node's UTC offset in whole quarter-hours (plus the
// seconds initialisation took; logstate.InferOffset allows five minutes).

// identifierTime reads the creation time from a communicator identifier.
func identifierTime(id string) (time.Time, bool) {
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

// inferNodeZone returns the zone a node printed its times in, from its
// communicators' identifiers (times read in from), the most common offset
// among them, and how many identifiers agreed.
func inferNodeZone(sync map[string]time.Time, from *time.Location) (*time.Location, int, bool) {
	votes := map[time.Duration]int{}
	for id, t := range sync {
		created, ok := identifierTime(id)
		if !ok {
			continue
		}
		w := t.In(from)
		asUTC := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
		if asUTC.Before(created.Add(-time.Minute)) {
			continue // printed before the communicator existed: not this zone
		}
		if off, ok := logstate.InferOffset(asUTC, created); ok {
			votes[off]++
		}
	}
	best, n := time.Duration(0), 0
	for off, c := range votes {
		if c > n || (c == n && off < best) {
			best, n = off, c
		}
	}
	if n == 0 {
		return nil, 0, false
	}
	return logstate.ZoneForOffset(best), n, true
}
