package logstate

import (
	"sort"
	"time"
)

// Faults: the counted fault events by code, source and pod, and the
// per-code summaries the offline report reads.

// FaultEvent is one counted fault event, as handed to Options.OnFault.
type FaultEvent struct {
	Code string
	// Resource is what an EI0007 failed to allocate (Resources), empty for
	// other codes and where the line does not say.
	Resource string
	Source   string // FaultSourceScreen or FaultSourcePlog
	PID      int    // 0 when the line printed none
	// Time is the time printed in the line (in Options.Location), or
	// Options.Now() when it printed none.
	Time time.Time
}

// FaultSummary is what the logs say about one fault code, for reports.
type FaultSummary struct {
	Code     string
	Stage    string
	Title    string // empty for codes outside the catalog
	Remedy   string
	Count    uint64
	BySource map[string]uint64 // "screen", "plog"
	First    time.Time
	Last     time.Time
	PIDs     []int // up to maxSummaryPIDs, sorted
}

type faultKey struct {
	code, resource, source, namespace, pod, container string
}

type faultCount struct {
	count uint64
	last  time.Time
}

type podKey struct{ namespace, pod, container string }

type plogErrKey struct{ stage, reason string }

func (s *State) recordFault(code, resource, source string, src *Source, pid int, ts time.Time) {
	if _, known := s.cat.codes[code]; !known {
		if _, seen := s.extraCodes[code]; !seen {
			if len(s.extraCodes) >= s.opts.MaxCodes {
				s.dropped[labelCode]++
				return
			}
			s.extraCodes[code] = struct{}{}
		}
	}
	ns, pod, ctr := labelValue(src.Namespace, maxValueLen), labelValue(src.Pod, maxValueLen), labelValue(src.Container, maxValueLen)
	if ns != "" || pod != "" || ctr != "" {
		pk := podKey{ns, pod, ctr}
		if _, seen := s.pods[pk]; !seen {
			if len(s.pods) >= s.opts.MaxPods {
				// Keep the event, lose its pod labels.
				s.dropped[labelPod]++
				ns, pod, ctr = "", "", ""
			} else {
				s.pods[pk] = struct{}{}
			}
		}
	}
	k := faultKey{code: code, resource: resource, source: source, namespace: ns, pod: pod, container: ctr}
	fc := s.faults[k]
	if fc == nil {
		fc = &faultCount{}
		s.faults[k] = fc
	}
	fc.count++
	if ts.After(fc.last) {
		fc.last = ts
	}
	sm := s.summaries[code]
	if sm == nil {
		stage, title, remedy, _ := CodeInfo(code)
		sm = &FaultSummary{Code: code, Stage: stage, Title: title, Remedy: remedy, BySource: map[string]uint64{}, First: ts, Last: ts}
		s.summaries[code] = sm
	}
	sm.Count++
	sm.BySource[source]++
	if ts.Before(sm.First) {
		sm.First = ts
	}
	if ts.After(sm.Last) {
		sm.Last = ts
	}
	if s.opts.OnFault != nil {
		s.opts.OnFault(FaultEvent{Code: code, Resource: resource, Source: source, PID: pid, Time: ts})
	}
	if pid > 0 && len(sm.PIDs) < maxSummaryPIDs {
		i := sort.SearchInts(sm.PIDs, pid)
		if i == len(sm.PIDs) || sm.PIDs[i] != pid {
			sm.PIDs = append(sm.PIDs, 0)
			copy(sm.PIDs[i+1:], sm.PIDs[i:])
			sm.PIDs[i] = pid
		}
	}
}

// Faults returns a copy of the per-code summaries, sorted by code.
func (s *State) Faults() []FaultSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FaultSummary, 0, len(s.summaries))
	for _, sm := range s.summaries {
		c := *sm
		c.BySource = make(map[string]uint64, len(sm.BySource))
		for k, v := range sm.BySource {
			c.BySource[k] = v
		}
		c.PIDs = append([]int(nil), sm.PIDs...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// incidentKey is one process's open incident of a kind (Fault.Incident).
type incidentKey struct {
	dir      string
	pid      int
	incident string
}

type openIncident struct {
	n    int       // cause lines not yet closed by a summary line
	last time.Time // time of the latest cause line
}

// incidentWindow is how long after its cause line a summary line belongs
// to the same failure: HCCL prints both within the same call.
const incidentWindow = 10 * time.Second

// maxOpenIncidents bounds the open-incident table; builds whose cause
// lines have no summary line (A5) would otherwise grow it.
const maxOpenIncidents = 4096

// countsAsNew reports whether a plog line of fingerprint fp starts a new
// fault event, and records cause lines so that their summary line does
// not count again.
func (s *State) countsAsNew(fp *fingerprint, dir string, pid int, ts time.Time) bool {
	if fp.incident == "" {
		return true
	}
	k := incidentKey{dir, pid, fp.incident}
	oi := s.incidents[k]
	if fp.summary {
		if oi.n > 0 && ts.Sub(oi.last) <= incidentWindow && oi.last.Sub(ts) <= incidentWindow {
			if oi.n--; oi.n == 0 {
				delete(s.incidents, k)
			} else {
				s.incidents[k] = oi
			}
			return false
		}
		return true
	}
	if oi.n == 0 && len(s.incidents) >= maxOpenIncidents {
		clear(s.incidents)
	}
	if oi.n > 0 && ts.Sub(oi.last) > incidentWindow {
		oi.n = 0 // an earlier cause that never got its summary line
	}
	oi.n++
	oi.last = ts
	s.incidents[k] = oi
	return true
}
