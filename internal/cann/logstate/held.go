package logstate

import "time"

// Held faults: a fault whose process has printed no communicator yet is
// held, for at most Options.FaultJobGrace of read time, until the lines
// that name the process's job are read (claimed releases it), then
// counted. Under load the exporter reads a job's screen log, or its run/
// plog, a poll before the plog lines that name the job; counted at once,
// the fault took a fallback hccl_job (the pod, or node/<instance> in the
// rules) that a second later would have been the job's, and the job's
// owner was paged twice. The event itself is reported when read
// (Options.OnFault, the summaries): only its series waits.

// maxHeldFaults bounds the held faults; past it the oldest is counted.
const maxHeldFaults = 1024

type heldFault struct {
	code, resource, source string
	src                    Source
	pid                    int
	ts                     time.Time
	read                   time.Time // Options.Now when read
}

// holdFault holds a fault of pid whose process has no communicator yet,
// and reports whether it did. The caller holds the lock.
func (s *State) holdFault(code, resource, source string, src *Source, pid int, ts time.Time) bool {
	if s.opts.FaultJobGrace <= 0 || pid <= 0 || s.hasCommunicator(source, src, pid) {
		return false
	}
	if len(s.held) >= maxHeldFaults {
		h := s.held[0]
		s.held = s.held[1:]
		s.countFault(h.code, h.resource, h.source, &h.src, h.pid, h.ts)
	}
	h := heldFault{code: code, resource: resource, source: source, src: *src, pid: pid, ts: ts, read: s.opts.Now()}
	h.src.Location = nil // times are parsed already
	s.held = append(s.held, h)
	return true
}

// hasCommunicator reports whether the process a fault speaks for has
// printed a communicator: a plog line's process (its directory and pid);
// for a screen report, a process of the logs with its pid, in the screen
// log's pod where it has one (which one is jobOf's to decide). The caller
// holds the lock.
func (s *State) hasCommunicator(source string, src *Source, pid int) bool {
	if source == FaultSourcePlog {
		pr := s.procs[ProcessKey{src.Dir, pid}]
		return pr != nil && len(pr.comms) > 0
	}
	for k, pr := range s.procs {
		if k.PID == pid && len(pr.comms) > 0 && (src.Pod == "" || s.inPod(src, pr)) {
			return true
		}
	}
	return false
}

// releaseHeld counts the held faults of process key, which now names a
// communicator: its plog faults, and screen reports of its pid. The
// caller holds the lock.
func (s *State) releaseHeld(key ProcessKey, _ *process) {
	if len(s.held) == 0 {
		return
	}
	s.releaseWhere(func(h *heldFault) bool {
		if h.pid != key.PID {
			return false
		}
		return h.source != FaultSourcePlog || h.src.Dir == key.Dir
	})
}

// flushHeld counts the held faults read FaultJobGrace ago or earlier
// (every one when all). The caller holds the lock.
func (s *State) flushHeld(all bool) {
	if len(s.held) == 0 {
		return
	}
	now := s.opts.Now()
	s.releaseWhere(func(h *heldFault) bool { return all || now.Sub(h.read) >= s.opts.FaultJobGrace })
}

func (s *State) releaseWhere(due func(*heldFault) bool) {
	kept := s.held[:0]
	var out []heldFault
	for _, h := range s.held {
		if due(&h) {
			out = append(out, h)
		} else {
			kept = append(kept, h)
		}
	}
	// Cleared so that the backing array holds no stale Source.
	clear(s.held[len(kept):])
	s.held = kept
	for i := range out {
		h := &out[i]
		s.countFault(h.code, h.resource, h.source, &h.src, h.pid, h.ts)
	}
}

// The held faults on disk: a checkpoint inside the grace keeps them held.

type snapHeld struct {
	Code      string    `json:"code"`
	Resource  string    `json:"resource,omitempty"`
	Source    string    `json:"source"`
	PID       int       `json:"pid"`
	Time      time.Time `json:"time"`
	Read      time.Time `json:"read"`
	Path      string    `json:"path,omitempty"`
	Kind      int       `json:"kind"`
	Dir       string    `json:"dir,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	Container string    `json:"container,omitempty"`
	Owner     string    `json:"owner,omitempty"`
	OwnerPod  [3]string `json:"owner_pod"`
	PodUID    string    `json:"pod_uid,omitempty"`
	SrcPID    int       `json:"src_pid,omitempty"`
}

func (s *State) snapshotHeld() []snapHeld {
	out := make([]snapHeld, 0, len(s.held))
	for _, h := range s.held {
		out = append(out, snapHeld{Code: h.code, Resource: h.resource, Source: h.source, PID: h.pid, Time: h.ts, Read: h.read,
			Path: h.src.Path, Kind: int(h.src.Kind), Dir: h.src.Dir, Namespace: h.src.Namespace, Pod: h.src.Pod, Container: h.src.Container,
			Owner: h.src.Owner, OwnerPod: [3]string{h.src.OwnerNamespace, h.src.OwnerPod, h.src.OwnerContainer}, PodUID: h.src.PodUID, SrcPID: h.src.PID})
	}
	return out
}

func restoreHeld(in []snapHeld) []heldFault {
	var out []heldFault
	for _, h := range in {
		if len(out) >= maxHeldFaults || h.Code == "" || h.PID <= 0 {
			continue
		}
		out = append(out, heldFault{code: h.Code, resource: h.Resource, source: h.Source, pid: h.PID, ts: h.Time, read: h.Read,
			src: Source{Path: h.Path, Kind: SourceKind(h.Kind), Dir: h.Dir, Namespace: h.Namespace, Pod: h.Pod, Container: h.Container,
				Owner: h.Owner, OwnerNamespace: h.OwnerPod[0], OwnerPod: h.OwnerPod[1], OwnerContainer: h.OwnerPod[2], PodUID: h.PodUID, PID: h.SrcPID}})
	}
	return out
}
