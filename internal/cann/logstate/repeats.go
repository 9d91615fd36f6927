package logstate

import (
	"bytes"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Fault.Repeat values: how HCCL prints one event more than once.
const (
	// repeatCQE: EI0013. The heartbeat thread prints an error CQE once
	// (`[ROCE CQE ERROR]cqe error status[…], time:[<CQE time>], …,
	// remoteIP{…deviceIp[<remote>]}`), and every HcclGetCommAsyncError
	// call prints `find cqe error, localIP[…], remoteIP[<remote>]` again
	// for each CQE still recorded (HCOMM-HEAD heartbeat.cc CheckErrorCqe).
	repeatCQE = "cqe"
	// repeatTimeout: EI0002. Each exception callback of the timed-out
	// tasks prints `Task run failed, base information …`; HCCL reports the
	// code once per process (task_exception_handler.cc errMsgFlag_).
	repeatTimeout = "timeout"
)

// repeatWindow: a repeat of an event follows the previous line of the
// same process (and remote address) within this long. Frameworks poll
// HcclGetCommAsyncError every few seconds while a job winds down, and
// every stream's callback of one timeout arrives within one
// HCCL_EXEC_TIMEOUT of the others.
const repeatWindow = 10 * time.Minute

// maxRepeats bounds the table; it is cleared when full (an event may
// then count twice, never be lost).
const maxRepeats = 4096

type repeatKey struct {
	dir    string
	pid    int
	kind   string
	remote string // repeatCQE: the remote device address
}

type repeatState struct {
	last time.Time
	// times are the CQE times seen (repeatCQE frames), at most maxCQETimes.
	times map[string]struct{}
	// findOnly: counted by a `find cqe error` line before any frame of
	// the CQE; the frame that follows is that event.
	findOnly bool
}

const maxCQETimes = 256

var (
	markCQEFrame   = []byte("cqe error status[")
	markRemoteIP   = []byte("remoteIP{")
	markFindRemote = []byte("remoteIP[")
)

// notARepeat reports whether a plog line of fp is a new event rather than
// HCCL printing one it already counted. The caller holds the lock.
func (s *State) notARepeat(fp *fingerprint, dir string, pid int, msg []byte, ts time.Time) bool {
	if fp.repeat == "" {
		return true
	}
	if s.repeats == nil || len(s.repeats) >= maxRepeats {
		s.repeats = map[repeatKey]*repeatState{}
	}
	k := repeatKey{dir: dir, pid: pid, kind: fp.repeat}
	switch fp.repeat {
	case repeatTimeout:
		st := s.repeats[k]
		fresh := st == nil || ts.Sub(st.last) > repeatWindow || st.last.Sub(ts) > repeatWindow
		if st == nil {
			st = &repeatState{}
			s.repeats[k] = st
		}
		st.last = ts
		return fresh
	case repeatCQE:
		if bytes.Contains(msg, markCQEFrame) {
			// The heartbeat's frame: remoteIP{…deviceIp[X]…} and time:[T].
			remote := ""
			if i := bytes.Index(msg, markRemoteIP); i >= 0 {
				if v, ok := parse.BracketField(msg[i:], "deviceIp"); ok {
					remote = string(v)
				}
			}
			at, _ := parse.BracketField(msg, "time:")
			k.remote = remote
			st := s.repeats[k]
			if st == nil || ts.Sub(st.last) > repeatWindow || st.last.Sub(ts) > repeatWindow {
				st = &repeatState{times: map[string]struct{}{}}
				s.repeats[k] = st
			}
			st.last = ts
			if st.times == nil {
				st.times = map[string]struct{}{}
			}
			if _, seen := st.times[string(at)]; seen {
				return false
			}
			if len(st.times) < maxCQETimes {
				st.times[string(at)] = struct{}{}
			}
			if st.findOnly {
				st.findOnly = false // this CQE was counted by its find line
				return false
			}
			return true
		}
		if v, ok := parse.BracketField(msg, "remoteIP"); ok && bytes.Contains(msg, markFindRemote) {
			k.remote = string(v)
		}
		st := s.repeats[k]
		if st != nil && ts.Sub(st.last) <= repeatWindow && st.last.Sub(ts) <= repeatWindow {
			st.last = ts
			return false // the CQE its frame or an earlier call already counted
		}
		s.repeats[k] = &repeatState{last: ts, findOnly: true}
		return true
	}
	return true
}
