package logstate

import (
	"bytes"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// Plog ingest: one CANN plog line → the counters, settings, communicators,
// links and faults it carries. The hot path (every line) parses the header
// without allocating and dispatches HCCL INFO lines on parse.Classify.

var (
	moduleHCCL = []byte("HCCL")
	moduleHCCP = []byte("HCCP")
)

func (s *State) ingestPlog(src *Source, line []byte) {
	var p parse.PlogLine
	if !parse.ParsePlog(line, &p) {
		s.unparsable[formatPlog]++
		return
	}
	if src.PID > 0 && p.PID != src.PID {
		if src.Kind != SourceDevicePlog {
			// CANN names a plog after the one process that writes it: a
			// line with another pid was made up (or written by a forked
			// child through its parent's descriptor); it speaks for no
			// process.
			s.refused[refusedForeignPID]++
			return
		}
		// A device log's lines print the device-side process; the file
		// speaks for the host process of its name.
		p.PID = src.PID
	}
	s.countLine(p.Module, p.Level)
	if pr := s.procs[ProcessKey{src.Dir, p.PID}]; pr != nil {
		if pr.loc != s.cur {
			// Its root's zone was inferred anew: read its last time again.
			pr.loc = s.cur
			if t, ok := parse.ParsePlogTime(pr.lastRaw, s.cur); ok {
				pr.lastWrite, pr.rawDirty = notAfter(t, s.opts.Now()), false
			}
		}
		if p.StdTime {
			pr.touchRaw(p.Time)
		} else if t, ok := parse.ParsePlogTime(p.Time, s.cur); ok {
			t = notAfter(t, s.opts.Now()) // a time printed ahead does not extend its life
			if t.After(pr.lastWrite) {
				pr.lastWrite = t
			}
		}
	}
	if p.ErrToWarn {
		// HCCL demotes an error to a warning while it retries; the line is
		// counted above but is neither a fault nor a setting.
		return
	}
	isHCCL := bytes.Equal(p.Module, moduleHCCL)
	isHCCP := bytes.Equal(p.Module, moduleHCCP)
	switch p.Level {
	case parse.LevelInfo, parse.LevelWarning, parse.LevelEvent, parse.LevelTrace:
		// 2023 builds print settings as EVENT and graph-mode communicator
		// creation as TRACE.
		if !isHCCL {
			return
		}
		kind := parse.Classify(p.Msg)
		if s.opts.OnHCCLLine != nil {
			s.opts.OnHCCLLine(kind, p)
		}
		s.applyHCCL(src.Dir, &p, kind)
	case parse.LevelError:
		if !isHCCL && !isHCCP {
			// Fingerprints are HCCL/HCCP messages; other modules' errors
			// are only counted in hccl_exporter_log_lines_total.
			return
		}
		stage, reason := parse.StageKeywords(p.Msg)
		s.plogErrors[plogErrKey{stage, reason}]++
		if fp := s.cat.matchRow(p.Msg); fp != nil {
			// A fault dated ahead of now counts as now: a writer's clock
			// (or a tenant) cannot keep a job's failure recent for years.
			ts := notAfter(s.lineTime(p.Time), s.opts.Now())
			if s.countsAsNew(fp, src.Dir, p.PID, ts) && s.notARepeat(fp, src.Dir, p.PID, p.Msg, ts) {
				s.recordFault(fp.code, fp.resource, FaultSourcePlog, s.podSource(src, p.PID), p.PID, ts, 0)
			}
		}
	}
}

func (s *State) countLine(module []byte, level parse.Level) {
	if c := s.lines[string(module)]; c != nil {
		c[level]++
		return
	}
	if len(s.lines) >= s.opts.MaxModules {
		s.dropped[labelModule]++
		return
	}
	c := new([parse.NumLevels]uint64)
	c[level]++
	s.lines[string(module)] = c
}

func (s *State) lineTime(raw []byte) time.Time {
	if t, ok := parse.ParsePlogTime(raw, s.cur); ok {
		return t
	}
	return s.opts.Now()
}

// notAfter is t, or now where t is later. A zero now is no clock (the
// offline diagnose reads a bundle's times as they are).
func notAfter(t, now time.Time) time.Time {
	if !now.IsZero() && t.After(now) {
		return now
	}
	return t
}

// Reasons of hccl_exporter_log_lines_refused_total.
const refusedForeignPID = "foreign_pid"

var refusedReasons = []string{refusedForeignPID}

func (s *State) applyEnv(dir string, p *parse.PlogLine) {
	settings := parse.ParseHCCLEnv(p.Msg)
	if len(settings) == 0 {
		return
	}
	pr := s.process(ProcessKey{dir, p.PID}, p.PName, s.lineTime(p.Time))
	if pr == nil {
		return
	}
	for _, st := range settings {
		if _, ok := pr.env[st.Name]; !ok && len(pr.env) >= s.opts.MaxEnvPerPID {
			s.dropped[labelVariable]++
			continue
		}
		v, rejected := toEnvSetting(st)
		if rejected {
			s.countRejected(st.Name)
		}
		pr.env[st.Name] = v
		pr.settingsOK = false
	}
}

// toEnvSetting converts a parsed setting with the one definition of HCCL's
// settings (internal/hcclenv): base units, and no number for a value HCCL
// would refuse (outside its range, NaN, infinite). rejected reports such a
// value.
func toEnvSetting(st parse.EnvSetting) (out EnvSetting, rejected bool) {
	out = EnvSetting{Value: labelValue(st.Value, maxValueLen), SetBy: st.SetBy}
	v, ok, err := hcclenv.Value(st.Name, st.Value, st.Unit)
	if err != nil {
		return out, true
	}
	out.Number, out.HasNumber = v, ok
	return out, false
}

// countRejected counts a refused value; variables HCCL does not define
// here share one label value, so the label stays bounded.
func (s *State) countRejected(name string) {
	if _, ok := hcclenv.Lookup(name); !ok {
		name = rejectedOther
	}
	s.rejected[name]++
}

const rejectedOther = "other"

// podSource returns src labelled with the pod of the process that printed
// a fault line: the pod its cgroup names where the kernel does
// (Source.OwnerPod), else the pod that holds the device its lines name,
// where Options.PodOfDevice knows it; otherwise src itself. Fault lines are rare: the copy costs nothing on
// the hot path.
func (s *State) podSource(src *Source, pid int) *Source {
	pr := s.procs[ProcessKey{src.Dir, pid}]
	if pr != nil && pr.ownerPod[1] != "" {
		// The kernel names the writer's pod (its cgroup): a device its
		// lines print cannot put its faults in another pod.
		labelled := *src
		labelled.Namespace, labelled.Pod, labelled.Container = pr.ownerPod[0], pr.ownerPod[1], pr.ownerPod[2]
		return &labelled
	}
	if s.opts.PodOfDevice == nil {
		return src
	}
	if pr == nil || pr.devicePhyID < 0 {
		return src
	}
	ns, pod, ctr, ok := s.opts.PodOfDevice(pr.devicePhyID)
	if !ok {
		return src
	}
	labelled := *src
	labelled.Namespace, labelled.Pod, labelled.Container = ns, pod, ctr
	return &labelled
}
