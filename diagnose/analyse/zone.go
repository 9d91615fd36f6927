package analyse

import (
	"fmt"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
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

// inferNodeZone returns the zone a node printed its times in, from its
// communicators' identifiers (times read in from), by the rule the
// exporter applies to each log root (logstate.InferZone), and how many
// identifiers agreed. A bundle's files carry no trustworthy modification
// time (archives, copies), so the identifiers are the only evidence here.
func inferNodeZone(sync map[string]time.Time, from *time.Location) (*time.Location, int, bool) {
	var ev logstate.ZoneEvidence
	for id, t := range sync {
		w := t.In(from)
		ev.AddIdentifier(id, time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC))
	}
	off, n, _, ok := logstate.InferZone(ev)
	if !ok {
		return nil, 0, false
	}
	return logstate.ZoneForOffset(off), n, true
}
