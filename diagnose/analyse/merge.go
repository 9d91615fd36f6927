package analyse

import (
	"sort"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// nodeData is everything read for one node: the groups of every input
// that mapped to it, merged.
type nodeData struct {
	name   string
	groups []*bundle.Group // in input order, then key order
	files  struct{ plog, device, screen int }
	bytes  int64
	lines  int64
	procs  map[int]*procData
	faults map[string]*logstate.FaultSummary
	oom    []model.OOMEvidence
	// events, ranks (by pid) and sync (communicator → earliest end of
	// its initialisation) are the root-cause inputs of eventWatch.
	events     []rawEvent
	dropped    int
	heartbeats int
	ranks      map[int][]rankInfo
	sync       map[string]time.Time
	links      []model.LinkFailure
}

type procData struct {
	pid       int
	name      string
	lastWrite time.Time
	env       map[string]logstate.EnvSetting
	comms     []comm.Communicator
}

// merge combines the views of the node's group states. A pid's settings are
// the union over its groups; where two groups print a variable, the later
// group (key order: run/ after debug/, later rotation after earlier) wins.
func (n *nodeData) merge() {
	n.procs = map[int]*procData{}
	n.faults = map[string]*logstate.FaultSummary{}
	n.ranks = map[int][]rankInfo{}
	n.sync = map[string]time.Time{}
	for _, g := range n.groups {
		gr := reader(g)
		if w := gr.watch; w != nil {
			n.events = append(n.events, w.events...)
			n.dropped += w.dropped
			n.heartbeats += w.heartbeats
			n.links = append(n.links, w.links...)
			for pid, rs := range w.ranks {
				n.ranks[pid] = append(n.ranks[pid], rs...)
			}
			for id, t := range w.sync {
				if cur, ok := n.sync[id]; !ok || t.Before(cur) {
					n.sync[id] = t
				}
			}
		}
		switch g.Kind {
		case bundle.KindPlog:
			n.files.plog += len(g.Files)
		case bundle.KindDevicePlog:
			n.files.device += len(g.Files)
		default:
			n.files.screen += len(g.Files)
		}
		n.bytes += g.Bytes
		n.lines += g.Lines
		for _, ev := range gr.oom {
			ev.Node = n.name
			n.oom = append(n.oom, ev)
		}
		for _, pv := range gr.state.Processes() {
			p := n.procs[pv.PID]
			if p == nil {
				p = &procData{pid: pv.PID, env: map[string]logstate.EnvSetting{}}
				n.procs[pv.PID] = p
			}
			if pv.Name != "" {
				p.name = pv.Name
			}
			if pv.LastWrite.After(p.lastWrite) {
				p.lastWrite = pv.LastWrite
			}
			for k, v := range pv.Env {
				p.env[k] = v
			}
		comms:
			for _, c := range pv.Communicators {
				for i := range p.comms {
					if p.comms[i].Name == c.Name {
						p.comms[i] = c
						continue comms
					}
				}
				p.comms = append(p.comms, c)
			}
		}
		for _, fs := range gr.state.Faults() {
			mergeFault(n.faults, fs)
		}
	}
}

// mergeFault adds one summary to a per-code map. An event whose line printed
// no time has a zero time; it does not move First or Last.
func mergeFault(m map[string]*logstate.FaultSummary, fs logstate.FaultSummary) {
	cur := m[fs.Code]
	if cur == nil {
		c := fs
		c.BySource = map[string]uint64{}
		for k, v := range fs.BySource {
			c.BySource[k] = v
		}
		c.PIDs = append([]int(nil), fs.PIDs...)
		m[fs.Code] = &c
		return
	}
	cur.Count += fs.Count
	for k, v := range fs.BySource {
		cur.BySource[k] += v
	}
	if !fs.First.IsZero() && (cur.First.IsZero() || fs.First.Before(cur.First)) {
		cur.First = fs.First
	}
	if fs.Last.After(cur.Last) {
		cur.Last = fs.Last
	}
	cur.PIDs = unionInts(cur.PIDs, fs.PIDs)
}

func unionInts(a, b []int) []int {
	seen := make(map[int]bool, len(a)+len(b))
	out := make([]int, 0, len(a)+len(b))
	for _, s := range [][]int{a, b} {
		for _, v := range s {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	sort.Ints(out)
	return out
}

// rezone reads the node's printed times in loc instead of from: the wall
// clock stays, the instant moves.
func (n *nodeData) rezone(from, loc *time.Location) {
	re := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		w := t.In(from)
		return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	}
	for i := range n.events {
		if !n.events[i].fileTime {
			n.events[i].t = re(n.events[i].t)
		}
	}
	for id, t := range n.sync {
		n.sync[id] = re(t)
	}
	for _, f := range n.faults {
		f.First, f.Last = re(f.First), re(f.Last)
	}
	for _, p := range n.procs {
		p.lastWrite = re(p.lastWrite)
	}
	// Link failures were read in the same zone as the events: left
	// behind, they fall outside their incident by the zone's offset.
	for i := range n.links {
		n.links[i].Time = model.Timestamp{Time: re(n.links[i].Time.Time)}
	}
}
