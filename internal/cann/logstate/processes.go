package logstate

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Processes: what the logs say about each training process (keyed by log
// directory and pid), the read-only views other packages take of it, and
// expiry once a process is gone.

// ProcessView is what the logs say about one training process.
type ProcessView struct {
	PID int
	// Dir is the CANN log directory of its plogs (ProcessKey.Dir).
	Dir string
	// Label is the value of its pid label: the pid alone, or
	// "<pid>@<dir>" when a process of another log directory had the pid
	// first (see pidLabel).
	Label     string
	Name      string
	LastWrite time.Time // time printed in its last plog line
	// Settings is the id of its settings set (hcclenv.SettingsID), the
	// settings label of its series; "" when it printed none of the set's
	// variables.
	Settings string
	// Env holds the effective settings by variable name, e.g. "HCCL_BUFFSIZE".
	Env           map[string]EnvSetting
	Communicators []comm.Communicator
	// DevicePhyID is the physical id of the NPU it drives, as its
	// communicator lines printed it; -1 unknown.
	DevicePhyID int
	// UnattributedBufferBytes are cclBuffer allocations not yet tied to a
	// communicator (HCCL's line names none; the next link set does), and
	// UnattributedQPs QPs whose operator tag names no live communicator.
	UnattributedBufferBytes uint64
	UnattributedQPs         uint64
	// QPMode is what the process's QP mode lines said (parse.KindQPMode).
	QPMode QPModeView
	// QPNs are the qpns of the QPs its transport lines logged (`rdma
	// qpn[…]`), sorted; the headroom model tells HCCL's own live QPs from
	// other RDMA users' by them.
	QPNs []uint32
	// Owner is who wrote its logs (Source.Owner: "pod:<uid>", "uid:<n>"
	// from the kernel; "root:<path>" for a configured root), "" unknown;
	// OwnerKernel: the kernel named it (kernelOwner), so no text a tenant
	// prints can.
	Owner       string
	OwnerKernel bool
}

// QPModeView is what a process printed about the QPs of its RoCE links.
type QPModeView struct {
	// Offline: `… is not effective in offline mode.`: graph mode, one QP
	// per link.
	Offline bool
	// NoMultiQP: `… does not support multi-QP.`: one QP per link.
	NoMultiQP bool
	// MultiQPFrom: `[MultiQp][MulQpInfo] Init Success … config from
	// type[X]`: multi-QP is on, configured by X (parse.MultiQPFrom*).
	MultiQPFrom string
}

// EnvSetting is one effective HCCL setting of a process.
type EnvSetting struct {
	Value     string // as printed, e.g. "200"
	SetBy     string // environment, default, ge_option or unset
	Number    float64
	HasNumber bool // Number is in base units: bytes, seconds, count
}

type process struct {
	label     string // the pid label value, fixed when the entry is created
	name      string
	lastWrite time.Time
	// lastRaw is the latest standard-layout time printed by the process,
	// kept as bytes so that the hot path compares and copies instead of
	// parsing; resolve folds it into lastWrite when someone reads it.
	lastRaw  []byte
	rawDirty bool
	loc      *time.Location // zone of its printed times
	env      map[string]EnvSetting
	comms    []comm.Communicator
	links    processLinks
	// devicePhyID is the physical id of the NPU the process drives, from
	// the latest communicator line that printed one (devicePhyId[] of
	// [LocalRank Key Info], phydevId[] of SetupAgent); -1 unknown. Kept
	// when its communicators are destroyed.
	devicePhyID int
	qpMode      QPModeView
	// settingsID caches SettingsID(env) while settingsOK: it is read for
	// every process on every scrape (series, joins), a hash over the set's
	// values; any write to env clears settingsOK.
	settingsID string
	settingsOK bool
	// gone: its owner said the process left (MarkGone). Its series stay
	// for the TTL, but it holds no place under the pid cap.
	gone bool
	// owner is who the kernel says wrote its logs (Source.ownerOf): the
	// pid cap is shared per owner, and its communicators are checked
	// against the other owners' (contested). ownerPod names the owner's
	// pod (namespace, pod, container) where the kernel and the kubelet's
	// log layout do.
	owner    string
	ownerPod [3]string
	// rankTable is the rank table file its world group was created from
	// (graph mode), "" otherwise: part of that job's identity
	// (worldGroupJob).
	rankTable string
	// wl is its part in the workload memory (workload.go).
	wl processWorkload
}

// settings is the process's settings set, SettingsID(pr.env), computed
// once per change of its settings; the caller holds the state's lock.
func (pr *process) settings() string {
	if !pr.settingsOK {
		pr.settingsID, pr.settingsOK = SettingsID(pr.env), true
	}
	return pr.settingsID
}

func (pr *process) touchRaw(raw []byte) {
	if bytes.Compare(raw, pr.lastRaw) > 0 {
		pr.lastRaw = append(pr.lastRaw[:0], raw...)
		pr.rawDirty = true
	}
}

// lastWrite is the process's last write, its printed time read in the zone
// of its log root; the caller holds s.mu.
func (s *State) lastWrite(pr *process) time.Time {
	loc := pr.loc
	if loc == nil {
		loc = s.opts.Location
	}
	return pr.resolve(loc, s.opts.Now())
}

// resolve folds lastRaw into lastWrite. A time printed ahead of now counts
// as now, once: lastRaw is then let go, so that it neither keeps the
// process alive for ever nor hides the true times printed after it.
func (pr *process) resolve(loc *time.Location, now time.Time) time.Time {
	if pr.rawDirty {
		if t, ok := parse.ParsePlogTime(pr.lastRaw, loc); ok {
			if !now.IsZero() && t.After(now) {
				t = now
				pr.lastRaw = pr.lastRaw[:0]
			}
			if t.After(pr.lastWrite) {
				pr.lastWrite = t
			}
		}
		pr.rawDirty = false
	}
	return pr.lastWrite
}

// process returns the entry of key, creating it within the pid cap.
func (s *State) process(key ProcessKey, name []byte, t time.Time) *process {
	pr := s.procs[key]
	if pr == nil {
		if old := s.procs[ProcessKey{PID: key.PID}]; old != nil && key.Dir != "" {
			// Restored from a state file written before processes were
			// keyed by directory: the same process, now with its directory.
			delete(s.procs, ProcessKey{PID: key.PID})
			s.procs[key] = old
			pr = old
		}
	}
	if pr == nil {
		owner := s.curOwner()
		if len(s.procs) >= s.opts.MaxPIDs && !s.evictGone() && !s.evictFairShare(owner) {
			s.dropped[labelPID]++
			return nil
		}
		pr = &process{label: s.pidLabel(key), env: map[string]EnvSetting{}, lastWrite: notAfter(t, s.opts.Now()), devicePhyID: -1, loc: s.cur, owner: owner}
		s.setOwnerPod(pr)
		s.procs[key] = pr
	}
	if o := s.curOwner(); o != "" && o != pr.owner && (pr.owner == "" || kernelOwner(o) && !kernelOwner(pr.owner) ||
		strings.HasPrefix(o, pr.owner+"/ctr:")) {
		// Restored from a state file, or read before discovery named its
		// writer: the kernel's word replaces the root's (and a container's
		// cgroup refines a uid saved before owners named it).
		pr.owner = o
		s.setOwnerPod(pr)
		s.commGen++
	} else if pr.ownerPod[1] == "" && s.curSrc != nil && s.curSrc.OwnerPod != "" && s.curSrc.Owner == pr.owner {
		// Restored from a state file that did not name its pod: the
		// pod's workload is its claimant (claimantOf).
		s.setOwnerPod(pr)
		s.commGen++
	}
	if pr.name != string(name) {
		if v := labelValue(string(name), maxValueLen); v != pr.name {
			pr.name = v
		}
	}
	if t = notAfter(t, s.opts.Now()); t.After(pr.lastWrite) {
		// A time printed ahead of now does not extend its life.
		pr.lastWrite = t
	}
	return pr
}

// evictGone makes room under the pid cap for a live process: it drops the
// process marked gone whose last write is oldest, and reports whether
// there was one. The cap protects the processes that run: a stream of
// short-lived processes (each gone from npu-smi's table within seconds)
// must not keep the next healthy job's settings out for the TTL.
func (s *State) evictGone() bool {
	var oldest ProcessKey
	var at time.Time
	found := false
	for k, pr := range s.procs {
		if !pr.gone {
			continue
		}
		if w := s.lastWrite(pr); !found || w.Before(at) || (w.Equal(at) && lessKey(k, oldest)) {
			oldest, at, found = k, w, true
		}
	}
	if !found {
		return false
	}
	s.nComms -= len(s.procs[oldest].comms)
	s.commGen++
	delete(s.procs, oldest)
	return true
}

// setOwnerPod copies the pod names of the current source's kernel owner.
func (s *State) setOwnerPod(pr *process) {
	if src := s.curSrc; src != nil && src.OwnerPod != "" && kernelOwner(src.Owner) {
		pr.ownerPod = [3]string{labelValue(src.OwnerNamespace, maxValueLen), labelValue(src.OwnerPod, maxValueLen), labelValue(src.OwnerContainer, maxValueLen)}
	}
}

// evictFairShare makes room under the pid cap for a process of owner: the
// cap is shared per owner (a pod, a uid, a log directory), not first come.
// When another owner holds more than one process more than owner would
// with the new one, its process written least recently is dropped (counted
// in hccl_exporter_label_values_dropped_total{label="pid"}): a tenant that
// makes up processes fills its own share, never the node's.
func (s *State) evictFairShare(owner string) bool {
	held := map[string]int{}
	for _, pr := range s.procs {
		held[pr.owner]++
	}
	largest, most := "", 0
	for o, n := range held {
		if n > most || (n == most && o < largest) {
			largest, most = o, n
		}
	}
	if most <= held[owner]+1 {
		return false
	}
	var oldest ProcessKey
	var at time.Time
	found := false
	for k, pr := range s.procs {
		if pr.owner != largest {
			continue
		}
		if w := s.lastWrite(pr); !found || w.Before(at) || (w.Equal(at) && lessKey(k, oldest)) {
			oldest, at, found = k, w, true
		}
	}
	s.dropped[labelPID]++
	s.nComms -= len(s.procs[oldest].comms)
	s.commGen++
	delete(s.procs, oldest)
	return true
}

func lessKey(a, b ProcessKey) bool {
	if a.PID != b.PID {
		return a.PID < b.PID
	}
	return a.Dir < b.Dir
}

// MarkGone says the process of key has left (its owner's table of running
// processes no longer lists it; its last lines may still be read). It
// keeps its series for the TTL, but when the pid cap is reached it is the
// first to make room for a new process. A key not known does nothing.
func (s *State) MarkGone(key ProcessKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr := s.procs[key]; pr != nil {
		pr.gone = true
	}
}

// pidLabel is the pid label of a new process: its pid, as always on a node
// with one log directory or unique pids; "<pid>@<dir>" when a process of
// another directory holds that pid already, so the two never share series.
// The label is fixed for the life of the entry: a second pod starting with
// the same pid does not rename the first one's series.
func (s *State) pidLabel(key ProcessKey) string {
	used := func(label string) bool {
		for _, pr := range s.procs {
			if pr.label == label {
				return true
			}
		}
		return false
	}
	label := strconv.Itoa(key.PID)
	if !used(label) {
		return label
	}
	label = labelValue(label+"@"+key.Dir, 2*maxValueLen)
	// Directories longer than a label value can end alike: never let two
	// processes share series.
	for n, base := 2, label; used(label); n++ {
		label = base + "#" + strconv.Itoa(n)
	}
	return label
}

// Processes returns copies of the processes whose series are exported:
// those the logs described and that have not expired, sorted by pid and
// directory.
func (s *State) Processes() []ProcessView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcessView, 0, len(s.procs))
	for k, pr := range s.procs {
		out = append(out, s.view(k, pr, nil))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PID != out[j].PID {
			return out[i].PID < out[j].PID
		}
		return out[i].Dir < out[j].Dir
	})
	return out
}

// Process returns a copy of one process of Processes.
func (s *State) Process(key ProcessKey) (ProcessView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.procs[key]
	if pr == nil {
		return ProcessView{}, false
	}
	return s.view(key, pr, nil), true
}

// ProcessVars is Process with only the named variables copied into Env: the
// headroom model asks for three variables of every process on every scrape
// and need not clone the whole environment.
func (s *State) ProcessVars(key ProcessKey, names ...string) (ProcessView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.procs[key]
	if pr == nil {
		return ProcessView{}, false
	}
	if names == nil {
		names = []string{}
	}
	return s.view(key, pr, names), true
}

// Keys returns the keys of the processes with the given pid, in any log
// directory, sorted by directory; nil when the logs know no such pid.
func (s *State) Keys(pid int) []ProcessKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ProcessKey
	for k := range s.procs {
		if k.PID == pid {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// ProcessDevice is a process and the NPU it drives, for joins that must
// not copy every process's settings.
type ProcessDevice struct {
	Key         ProcessKey
	Label       string // its pid label
	Name        string // the process name its lines print
	Settings    string // its settings set (ProcessView.Settings)
	DevicePhyID int    // -1 unknown
	LastWrite   time.Time
	// HostPID is its pid on the host where discovery found it through
	// --path.procfs; 0 unknown. The state does not know it: the cannlog
	// collector's table of roots fills it in (Collector.Devices).
	HostPID int
}

// Devices returns every process with its device, sorted by key.
func (s *State) Devices() []ProcessDevice {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcessDevice, 0, len(s.procs))
	for k, pr := range s.procs {
		out = append(out, ProcessDevice{Key: k, Label: pr.label, Name: pr.name, Settings: pr.settings(),
			DevicePhyID: pr.devicePhyID, LastWrite: s.lastWrite(pr)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.PID != out[j].Key.PID {
			return out[i].Key.PID < out[j].Key.PID
		}
		return out[i].Key.Dir < out[j].Key.Dir
	})
	return out
}

// view copies a process; names, when non-nil, restricts Env to them.
func (s *State) view(k ProcessKey, pr *process, names []string) ProcessView {
	pv := ProcessView{PID: k.PID, Dir: k.Dir, Label: pr.label, Name: pr.name, LastWrite: s.lastWrite(pr),
		Settings: pr.settings(), DevicePhyID: pr.devicePhyID,
		Communicators:           pr.commViews(),
		UnattributedBufferBytes: pr.links.pendingBuf, UnattributedQPs: pr.links.orphanQPs, QPMode: pr.qpMode,
		QPNs: pr.links.sortedQPNs(), Owner: pr.owner, OwnerKernel: kernelOwner(pr.owner)}
	if names != nil {
		pv.Env = make(map[string]EnvSetting, len(names))
		for _, n := range names {
			if v, ok := pr.env[n]; ok {
				pv.Env[n] = v
			}
		}
		return pv
	}
	pv.Env = make(map[string]EnvSetting, len(pr.env))
	for k, v := range pr.env {
		pv.Env[k] = v
	}
	return pv
}

// Expire drops the processes that are not alive and whose last log write is
// older than the TTL, and returns how many it dropped. live may do I/O (it
// reads /proc), so it is called without the lock held.
func (s *State) Expire(live Liveness) int {
	now := s.opts.Now()
	s.mu.Lock()
	var stale, dead []ProcessKey
	for k, pr := range s.procs {
		if now.Sub(s.lastWrite(pr)) > s.opts.ProcessTTL {
			if pr.gone {
				dead = append(dead, k) // its owner saw it leave: no need to ask
			} else {
				stale = append(stale, k)
			}
		}
	}
	s.mu.Unlock()
	for _, k := range stale {
		if live == nil || !aliveProcess(live, k) {
			dead = append(dead, k)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range dead {
		pr := s.procs[k]
		if pr == nil || now.Sub(s.lastWrite(pr)) <= s.opts.ProcessTTL {
			continue // written to meanwhile
		}
		s.nComms -= len(pr.comms)
		s.commGen++
		delete(s.procs, k)
		n++
	}
	return n
}
