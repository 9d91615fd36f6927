package logstate

import (
	"sort"
	"strings"
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
	// HCCL is false for another component's screen report (EZ9999,
	// EE1001, an EL0004): reported when read, before the lines that follow
	// it can show that HCCL requested the memory (then only its series is
	// HCCL's, hccl_fault_events_total).
	HCCL bool
	// Lag is how many lines after the report's own line it is reported:
	// a screen report header (`EZ9999: Inner Error!`) is held for the
	// detail line that may follow it; 0 otherwise.
	Lag int
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

// faultKey is one fault series. cann marks another component's code
// (ascend_cann_fault_events_total), which never counts as an HCCL fault:
// every code but EI and EJ, and EL0004 where HCCL did not request the
// memory. job is the hccl_job label (jobOf).
type faultKey struct {
	code, resource, source, namespace, pod, container, job string
	cann                                                   bool
	// reason is what a cann series' report says (ReasonCommKernelTimeout),
	// "" otherwise.
	reason string
}

type faultCount struct {
	count uint64
	last  time.Time // the time printed in the latest event's line
	// seen is when the latest event was read (Options.Now): series expire
	// FaultTTL after it, so that logs read long after they were written
	// (a restart, a new root) are not dropped at once.
	seen time.Time
}

// podKey bounds the distinct pod and job label sets of the fault series
// (Options.MaxPods).
type podKey struct{ namespace, pod, container, job string }

type plogErrKey struct{ stage, reason string }

// ReasonCommKernelTimeout is the reason label of another component's
// report that is a communication kernel timing out waiting for its peers
// (parse.MentionsCommKernelTimeout): an MC2 operator's 507014/507034 or a
// vector core timeout. A consequence of a peer's failure, never a root
// cause.
const ReasonCommKernelTimeout = "comm_kernel_timeout"

// jobOf is the job a fault belongs to, the hccl_job label: the first
// communicator of the process that printed it (the world group, created
// first; its identifier is the same on every node of the job; a graph-mode
// world group's identity is derived, jobName), else
// "<namespace>/<pod>" of the training pod, else "" (the rules then use the
// node). The process of a plog line is the one its file is named after
// (Source.PID); the process of a screen report is the process with the
// report's [PID: n] that the screen log may speak for (screenProcess). A
// communicator is the identity of the first owner that named it only
// (trusted): a tenant cannot raise a fault under another job's name, nor
// take the name from the job. The caller holds the lock.
func (s *State) jobOf(source string, src *Source, pid int) string {
	if pid > 0 {
		var pr *process
		if source == FaultSourcePlog {
			pr = s.procs[ProcessKey{src.Dir, pid}]
		} else {
			pr, _ = s.screenProcess(src, pid)
		}
		if pr != nil && len(pr.comms) > 0 {
			if name := jobName(pr, &pr.comms[0]); s.trusted(name, pr) {
				return name
			}
		}
	}
	if src.Pod != "" {
		return src.Namespace + "/" + src.Pod
	}
	return ""
}

// Reasons a screen report's pid is not tied to a process
// (hccl_exporter_screen_reports_untied_total).
const (
	UntiedOtherOwner  = "other_owner"
	UntiedSeveralJobs = "several_jobs"
	UntiedNoProcess   = "no_process"
)

var untiedReasons = []string{UntiedNoProcess, UntiedOtherOwner, UntiedSeveralJobs}

// screenProcess is the process a screen report with pid speaks for: the
// process of that pid whose owner is the screen log's writer
// (screenTies). nil, and why, where there is none, or where processes of
// two jobs qualify (pids of several pid namespaces). A report that ties to
// no process is the screen log's own: it carries the log's pod (or no
// hccl_job) and is remembered under no workload. The caller holds the
// lock.
func (s *State) screenProcess(src *Source, pid int) (*process, string) {
	var found *process
	other := false
	for k, pr := range s.procs {
		if k.PID != pid {
			continue
		}
		if !s.screenTies(src, pr) {
			other = true
			continue
		}
		switch {
		case found == nil:
			found = pr
		case len(pr.comms) == 0:
			// A process without a communicator names no job.
		case len(found.comms) == 0:
			found = pr
		case found.comms[0].Name != pr.comms[0].Name:
			return nil, UntiedSeveralJobs
		case s.lastWrite(pr).After(s.lastWrite(found)):
			found = pr // one job's processes: the one written to last
		}
	}
	switch {
	case found != nil:
		return found, ""
	case other:
		return nil, UntiedOtherOwner
	}
	return nil, UntiedNoProcess
}

// screenTies reports whether a screen log may speak for process pr: its
// writer and pr share an owner. The writer of a Kubernetes log
// (/var/log/pods/<ns>_<pod>_<uid>/…) is that pod, whose processes are the
// ones whose cgroup names it (or, for processes of a configured root, whose
// device the kubelet assigns to it). Elsewhere the writer is the owner the
// reader found holding the file (Source.Owner: a pod, or a uid and
// cgroup); a file whose writer the kernel does not name (a glob's file no
// discovered process holds, diagnose) speaks only for processes no kernel
// names either (a --cannlog.root, a bundle): a tenant's screen log cannot
// print its way into a process the kernel says is someone else's. The
// caller holds the lock.
func (s *State) screenTies(src *Source, pr *process) bool {
	if src.Pod != "" {
		if kernelOwner(pr.owner) {
			return src.PodUID != "" && pr.owner == "pod:"+src.PodUID
		}
		return s.inPod(src, pr)
	}
	if kernelOwner(src.Owner) {
		return pr.owner == src.Owner
	}
	return !kernelOwner(pr.owner)
}

// inPod reports whether process pr runs in the pod of the screen log src
// (pids repeat across pods): its cgroup names the pod of the log's path, or
// the kubelet assigns its device to that pod. The caller holds the lock.
func (s *State) inPod(src *Source, pr *process) bool {
	if src.PodUID != "" && pr.owner == "pod:"+src.PodUID {
		return true
	}
	if s.opts.PodOfDevice == nil || pr.devicePhyID < 0 {
		return false
	}
	ns, pod, _, ok := s.opts.PodOfDevice(pr.devicePhyID)
	return ok && ns == src.Namespace && pod == src.Pod
}

// kernelOwner reports whether an owner was named by the kernel (a pod's
// cgroup, a uid; Source.Owner) rather than stood for by a log directory.
func kernelOwner(owner string) bool {
	return strings.HasPrefix(owner, "pod:") || strings.HasPrefix(owner, "uid:")
}

// claim is who claims a job identity (jobName): the kernel-named
// claimant (claimantOf) that named it first, and the first log directory
// without a kernel identity. In claims, claimContested marks a side
// another claimant also takes (hccl_exporter_communicators_contested).
type claim struct {
	kernel, dir string
	// others: a claimant other than the first also names it.
	others bool
}

// claimContested marks a side of a claim several owners take when none of
// them claimed it first (the first left).
const claimContested = "\x00contested"

// trusted reports whether job identity name may be the hccl_job of a
// fault of pr. The first kernel-named claimant keeps it for as long as its
// processes name it: a second pod (or uid and container) naming it later is
// a tenant taking another job's identity, or another job with the same
// world group; its faults carry their own pod, or no hccl_job, and never
// take the identity from the first. A directory without a kernel identity
// (a configured root a tenant can write) never outranks a kernel-named
// claimant: its processes cannot use a communicator a kernel-named
// claimant names, but their claim does not take it from that claimant.
// The caller holds the lock.
func (s *State) trusted(name string, pr *process) bool {
	s.refreshClaims()
	cl := s.claims[name]
	if kernelOwner(pr.owner) {
		return cl.kernel == claimantOf(pr)
	}
	return cl.kernel == "" && cl.dir == claimantOf(pr)
}

// refreshClaims rebuilds claims when communicators changed: the first
// claimant of each side keeps it while it still names it; where it left,
// a sole remaining claimant takes it, several take nothing. The caller
// holds the lock.
func (s *State) refreshClaims() {
	if s.claims != nil && s.claimsGen == s.commGen {
		return
	}
	// Per job identity and side: the first claimant met, whether another
	// claims it too, and whether the recorded first claimant still does.
	type side struct {
		one          string
		multi, first bool
	}
	type acc struct{ kernel, dir side }
	byName := make(map[string]*acc, s.nComms)
	if s.firstClaims == nil {
		s.firstClaims = map[string]claim{}
	}
	for _, pr := range s.procs {
		if len(pr.comms) == 0 {
			continue
		}
		who := claimantOf(pr)
		kernel := kernelOwner(pr.owner)
		for i := range pr.comms {
			name := jobName(pr, &pr.comms[i])
			a := byName[name]
			if a == nil {
				a = &acc{}
				byName[name] = a
			}
			sd, first := &a.dir, s.firstClaims[name].dir
			if kernel {
				sd, first = &a.kernel, s.firstClaims[name].kernel
			}
			switch sd.one {
			case "":
				sd.one = who
			case who:
			default:
				sd.multi = true
			}
			sd.first = sd.first || who == first
		}
	}
	pick := func(sd side, first string) string {
		switch {
		case sd.first:
			return first
		case sd.multi:
			return claimContested
		}
		return sd.one
	}
	s.claims = make(map[string]claim, len(byName))
	for name, a := range byName {
		fc := s.firstClaims[name]
		cl := claim{kernel: pick(a.kernel, fc.kernel), dir: pick(a.dir, fc.dir)}
		cl.others = a.kernel.multi || a.dir.multi || (a.kernel.one != "" && a.dir.one != "")
		s.claims[name] = cl
		// The sole claimant left becomes the first.
		keep := claim{kernel: cl.kernel, dir: cl.dir}
		if keep.kernel == claimContested {
			keep.kernel = ""
		}
		if keep.dir == claimContested {
			keep.dir = ""
		}
		s.firstClaims[name] = keep
	}
	for name := range s.firstClaims {
		if byName[name] == nil {
			delete(s.firstClaims, name) // nobody names it any more
		}
	}
	s.claimsGen = s.commGen
}

// contestedCount is the number of job identities claimed by more than one
// claimant: two kernel-named ones, two directories, or a directory next
// to a kernel-named one (hccl_exporter_communicators_contested). The
// caller holds the lock.
func (s *State) contestedCount() int {
	s.refreshClaims()
	n := 0
	for _, cl := range s.claims {
		if cl.others {
			n++
		}
	}
	return n
}

// recordFault counts an HCCL fault event (hccl_fault_events_total) and
// reports it (summaries, Options.OnFault).
// lag is how many lines after its own the event is reported (a screen
// report header held for its detail line; FaultEvent.Lag).
func (s *State) recordFault(code, resource, source string, src *Source, pid int, ts time.Time, lag int) {
	if s.admitCode(code) {
		s.report(FaultEvent{Code: code, Resource: resource, Source: source, PID: pid, Time: ts, HCCL: true, Lag: lag})
		if s.holdFault(code, resource, source, src, pid, ts) {
			return
		}
		s.countFault(code, resource, source, src, pid, ts)
	}
}

// countFault counts an HCCL fault event and remembers it under its
// workload.
func (s *State) countFault(code, resource, source string, src *Source, pid int, ts time.Time) {
	s.count(faultKey{code: code, resource: resource, source: source}, src, pid, ts)
	s.rememberFailure(code, resource, source, src, pid, ts)
}

// reportCANN reports another component's screen report when it is read
// (summaries, Options.OnFault: the offline report shows it with its line);
// countCANN counts it (ascend_cann_fault_events_total) once the lines that
// follow it have been read (screen.go).
func (s *State) reportCANN(code, source string, pid int, ts time.Time, lag int) bool {
	if !s.admitCode(code) {
		return false
	}
	s.report(FaultEvent{Code: code, Source: source, PID: pid, Time: ts, Lag: lag})
	return true
}

func (s *State) countCANN(code, reason, source string, src *Source, pid int, ts time.Time) {
	s.count(faultKey{code: code, source: source, cann: true, reason: reason}, src, pid, ts)
}

// admitCode applies the cap on codes outside the catalog.
func (s *State) admitCode(code string) bool {
	if _, known := s.cat.codes[code]; known {
		return true
	}
	if _, seen := s.extraCodes[code]; seen {
		return true
	}
	if len(s.extraCodes) >= s.opts.MaxCodes {
		s.dropped[labelCode]++
		return false
	}
	s.extraCodes[code] = struct{}{}
	return true
}

// count adds one event to its series.
func (s *State) count(k faultKey, src *Source, pid int, ts time.Time) {
	ns, pod, ctr := labelValue(src.Namespace, maxValueLen), labelValue(src.Pod, maxValueLen), labelValue(src.Container, maxValueLen)
	job := ""
	if !k.cann {
		job = labelValue(s.jobOf(k.source, src, pid), 2*maxValueLen)
	}
	if ns != "" || pod != "" || ctr != "" || job != "" {
		pk := podKey{ns, pod, ctr, job}
		if _, seen := s.pods[pk]; !seen {
			origin := src.ownerOf()
			if len(s.pods) >= s.opts.MaxPods && !s.evictPodShare(origin) {
				// Keep the event, lose its pod and job labels.
				s.dropped[labelPod]++
				ns, pod, ctr, job = "", "", "", ""
			} else {
				s.pods[pk] = struct{}{}
				s.podOrigin[pk] = origin
			}
		}
	}
	k.namespace, k.pod, k.container, k.job = ns, pod, ctr, job
	fc := s.faults[k]
	if fc == nil {
		fc = &faultCount{}
		s.faults[k] = fc
	}
	fc.count++
	if ts.After(fc.last) {
		fc.last = ts
	}
	fc.seen = s.opts.Now()
}

// evictPodShare makes room under the cap on pod and job label sets
// (--cannlog.max-fault-pods) for a label set that origin's logs bring: the
// cap is shared per owner, not first come. When another origin holds more
// than one label set more than origin would with the new one, the series of
// its label set read least recently are dropped (counted in
// hccl_exporter_label_values_dropped_total{label="pod"}): a tenant that
// makes up jobs fills its own share and cannot strip the job of another
// tenant's fault. The caller holds the lock.
func (s *State) evictPodShare(origin string) bool {
	held := map[string]int{}
	for pk := range s.pods {
		held[s.podOrigin[pk]]++
	}
	largest, most := "", 0
	for o, n := range held {
		if n > most || (n == most && o < largest) {
			largest, most = o, n
		}
	}
	if most <= held[origin]+1 {
		return false
	}
	seen := map[podKey]time.Time{}
	for k, fc := range s.faults {
		pk := podKey{k.namespace, k.pod, k.container, k.job}
		if s.podOrigin[pk] == largest && fc.seen.After(seen[pk]) {
			seen[pk] = fc.seen
		}
	}
	var victim podKey
	var at time.Time
	found := false
	for pk := range s.pods {
		if s.podOrigin[pk] != largest {
			continue
		}
		w := seen[pk]
		if !found || w.Before(at) || (w.Equal(at) && lessPodKey(pk, victim)) {
			victim, at, found = pk, w, true
		}
	}
	for k := range s.faults {
		if (podKey{k.namespace, k.pod, k.container, k.job}) == victim {
			delete(s.faults, k)
		}
	}
	delete(s.pods, victim)
	delete(s.podOrigin, victim)
	s.dropped[labelPod]++
	return true
}

func lessPodKey(a, b podKey) bool {
	if a.namespace != b.namespace {
		return a.namespace < b.namespace
	}
	if a.pod != b.pod {
		return a.pod < b.pod
	}
	if a.container != b.container {
		return a.container < b.container
	}
	return a.job < b.job
}

// report adds one event to the per-code summary and hands it to OnFault.
func (s *State) report(ev FaultEvent) {
	code, source, pid, ts := ev.Code, ev.Source, ev.PID, ev.Time
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
		s.opts.OnFault(ev)
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

// expireFaults drops the fault series of a pod or a job whose latest
// event was read more than Options.FaultTTL ago: the pod is gone or the
// job is over
// (a pod that fails again starts a new series, which the rules see as
// new). Series without pod and job (the catalog's pre-initialised zeros
// and bare-metal faults) stay. The drops are counted
// (hccl_exporter_fault_series_expired_total). The caller holds the lock.
func (s *State) expireFaults(now time.Time) {
	n := 0
	for k, fc := range s.faults {
		if k.namespace == "" && k.pod == "" && k.container == "" && k.job == "" {
			continue
		}
		if now.Sub(fc.seen) > s.opts.FaultTTL {
			delete(s.faults, k)
			n++
		}
	}
	if n == 0 {
		return
	}
	s.faultsExpired += uint64(n)
	clear(s.pods)
	for k := range s.faults {
		if k.namespace != "" || k.pod != "" || k.container != "" || k.job != "" {
			s.pods[podKey{k.namespace, k.pod, k.container, k.job}] = struct{}{}
		}
	}
	for pk := range s.podOrigin {
		if _, ok := s.pods[pk]; !ok {
			delete(s.podOrigin, pk)
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
