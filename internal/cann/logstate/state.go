package logstate

import (
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// SourceKind says how the lines of a source are read.
type SourceKind int

const (
	// SourcePlog is a host CANN process log (run/, debug/, security/ plog).
	SourcePlog SourceKind = iota
	// SourceDevicePlog is a device application log sent back to the host;
	// same grammar as plog.
	SourceDevicePlog
	// SourceScreen is a training screen log: plain text, Kubernetes CRI or
	// Docker json-file lines.
	SourceScreen
)

// Source describes where a line comes from. The collector builds one per
// followed file; diagnose builds one per file of a bundle. Namespace, Pod
// and Container label the fault series of screen logs of Kubernetes pods.
// Dir is the CANN log directory of a plog (see LogDir): a process is known
// by its Dir and pid, because processes of different pods write to their own
// directories and often have the same pid inside their own pid namespaces.
type Source struct {
	Path                      string
	Kind                      SourceKind
	Namespace, Pod, Container string
	Dir                       string
	// Location is the zone its writer printed times in; nil means
	// Options.Location. The collector sets it per log root under
	// --cannlog.timezone=auto.
	Location *time.Location
	// PID is the pid the file's own name gives (plog-<pid>_…,
	// device-<pid>_…), 0 where it gives none. CANN names a process's files
	// after it and no other process writes them: a line of a plog that
	// prints another pid was not written by CANN and is refused
	// (hccl_exporter_log_lines_refused_total), and a device log speaks for
	// the process of its name only. A file cannot speak for other
	// processes.
	PID int
	// Owner is who wrote the file: for a root discovered through
	// --path.procfs what the kernel says of its process, the pod of its
	// cgroup ("pod:<uid>") or else its uid ("uid:<n>"); for a configured
	// root the root ("root:<path>"), which the kernel does not vouch for;
	// for a screen log outside Kubernetes, the owner of the discovered
	// process that holds it open (its writer), where the kernel names one;
	// "" where the reader knows nothing (diagnose). Caps are shared per
	// owner, and a communicator claimed by the processes of two owners is
	// not trusted as a job's identity (trusted).
	Owner string
	// OwnerNamespace, OwnerPod and OwnerContainer name the pod of a
	// "pod:<uid>" Owner where the kubelet's log layout does: the pod labels
	// of its processes' plog faults (rather than the pod of a device their
	// lines name, Options.PodOfDevice).
	OwnerNamespace, OwnerPod, OwnerContainer string
	// PodUID is the pod UID of a Kubernetes screen log's path
	// (/var/log/pods/<ns>_<pod>_<uid>/…): a report's [PID: n] is the
	// process of that pid whose owner is that pod's cgroup.
	PodUID string
}

// curOwner is the owner of the line being ingested; the caller holds the
// lock. Computed only where a process or a fault series is created: the
// hot path allocates nothing.
func (s *State) curOwner() string {
	if s.curSrc == nil {
		return ""
	}
	return s.curSrc.ownerOf()
}

// ownerOf is the owner a source's processes and fault series are
// accounted to: Owner where its reader named it, else the screen log's pod
// or path, else "" (no identity: every such plog is one owner, as in
// diagnose).
func (src *Source) ownerOf() string {
	switch {
	case src.Owner != "":
		return src.Owner
	case src.Kind == SourceScreen && src.Pod != "":
		return "screen:" + src.Namespace + "/" + src.Pod
	case src.Kind == SourceScreen:
		return "screen:" + src.Path
	}
	return ""
}

// ProcessKey identifies a process in the logs: the CANN log directory its
// plogs are in (Source.Dir) and the pid printed in its lines (the pid in its
// own pid namespace).
type ProcessKey struct {
	Dir string
	PID int
}

// cannSortDirs are the CANN log sort directories below a log root.
var cannSortDirs = map[string]bool{"run": true, "debug": true, "security": true}

// LogDir returns the CANN log directory of a plog path: the parent of the
// nearest enclosing run/, debug/ or security/ directory (the root the
// process wrote to, $ASCEND_PROCESS_LOG_PATH or its default), so the run and
// debug plogs of one process land in one entry. A path outside that layout
// yields its own directory.
func LogDir(path string) string {
	dir := filepath.Dir(path)
	for d := dir; ; {
		parent := filepath.Dir(d)
		if cannSortDirs[filepath.Base(d)] {
			return parent
		}
		if parent == d {
			return dir
		}
		d = parent
	}
}

// Fault-event sources, the `source` label.
const (
	FaultSourceScreen = "screen"
	FaultSourcePlog   = "plog"
)

// Label names counted in hccl_exporter_label_values_dropped_total.
const (
	labelPID          = "pid"
	labelCommunicator = "communicator"
	labelCode         = "code"
	labelPod          = "pod"
	labelModule       = "module"
	labelVariable     = "variable"
)

var droppedLabels = []string{labelCode, labelCommunicator, labelModule, labelPID, labelPod, labelVariable}

// Formats counted in hccl_exporter_log_unparsable_lines_total.
const (
	formatPlog   = "plog"
	formatCRI    = "cri"
	formatDocker = "docker"
)

var unparsableFormats = []string{formatCRI, formatDocker, formatPlog}

// Options tune a State. Zero fields take the defaults of DefaultOptions.
type Options struct {
	// Location is the zone of the times CANN prints (it prints local time
	// without a zone); nil means the exporter's local zone (TZ). A Source's
	// own Location takes precedence.
	Location *time.Location
	// ScreenZoneFromRuntime reads a fault line's printed time in the zone
	// that makes it agree with its CRI or Docker time stamp (which carries
	// a zone), rounded to whole quarter-hours: a UTC container on a UTC+8
	// node is then read right (--cannlog.timezone=auto).
	ScreenZoneFromRuntime bool
	// ProcessTTL is how long a process that is no longer alive keeps its
	// series after its last log write.
	ProcessTTL time.Duration
	// FaultTTL is how long the fault series of a pod or a job keep
	// existing after their latest event was read (expireFaults): longer
	// than any rule looks back (HCCLJobFailed: the longest timer + 10
	// minutes).
	FaultTTL time.Duration
	// Caps on distinct label values; values beyond a cap are dropped and
	// counted in hccl_exporter_label_values_dropped_total{label}.
	MaxPIDs          int // processes with settings or communicators
	MaxCommunicators int // communicators over all processes
	MaxCodes         int // fault codes outside the catalog
	MaxPods          int // distinct namespace/pod/container of fault series
	MaxModules       int // plog modules
	MaxEnvPerPID     int // variables per process
	// MaxPartialBytes caps a screen-log line joined from partial entries.
	MaxPartialBytes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnFault, when set, is called for every fault event the state counts,
	// synchronously inside Ingest (with the state's lock held: it must not
	// call back into the State). The offline diagnose command uses it to
	// keep each event, where the collector keeps only counters.
	OnFault func(FaultEvent)
	// OnHCCLLine, when set, sees every HCCL line that is not an error
	// (INFO, WARNING, EVENT, TRACE), parsed and classified, under the same
	// rules as OnFault; the line is only valid during the call. diagnose
	// reads ranks and communicator initialisation times from it without
	// parsing the line a second time. The line is passed by value so that
	// the hot path keeps it on the stack.
	OnHCCLLine func(parse.LineKind, parse.PlogLine)
	// PodOfDevice, when set, names the container that holds a physical
	// NPU (the kubelet's PodResources answer), so that a fault a plog
	// reports is labelled with the pod of the device its process drives, as
	// screen-log faults are with the pod of their log path. ok is false
	// when no single container holds it. It is called with the state's lock
	// held and must not call back into the State.
	PodOfDevice func(phy int) (namespace, pod, container string, ok bool)
	// FaultJobGrace, when positive, holds a fault whose process has
	// printed no communicator yet for up to this long, read time, before
	// it is counted (holdFault): under load a screen report, or a run/
	// plog, is read before the lines that name the process's job, and the
	// fault would otherwise take a fallback hccl_job (its pod, or the
	// node) that a second later would have been the job's: two series, two
	// pages. Zero counts at once (diagnose reads a bundle whole).
	FaultJobGrace time.Duration
	// WorkloadTTL and MaxWorkloads bound the workload memory
	// (workload.go): a workload not seen for WorkloadTTL is forgotten, and
	// past MaxWorkloads the one seen longest ago. Zero: the defaults.
	WorkloadTTL  time.Duration
	MaxWorkloads int
}

// DefaultOptions returns the defaults of the cannlog flags.
func DefaultOptions() Options {
	return Options{
		ProcessTTL:       time.Hour,
		FaultTTL:         6 * time.Hour,
		MaxPIDs:          1024,
		MaxCommunicators: 4096,
		MaxCodes:         128,
		MaxPods:          256,
		MaxModules:       128,
		MaxEnvPerPID:     256,
		MaxPartialBytes:  1 << 20,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.ProcessTTL == 0 {
		o.ProcessTTL = d.ProcessTTL
	}
	if o.FaultTTL <= 0 {
		o.FaultTTL = d.FaultTTL
	}
	for _, p := range []struct{ v, def *int }{
		{&o.MaxPIDs, &d.MaxPIDs}, {&o.MaxCommunicators, &d.MaxCommunicators},
		{&o.MaxCodes, &d.MaxCodes}, {&o.MaxPods, &d.MaxPods}, {&o.MaxModules, &d.MaxModules},
		{&o.MaxEnvPerPID, &d.MaxEnvPerPID}, {&o.MaxPartialBytes, &d.MaxPartialBytes},
	} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

const (
	maxSummaryPIDs = 64
	maxValueLen    = 128 // longest value label kept (paths are truncated)
	dedupWindow    = 64  // screen reports remembered to drop repeats
)

// State holds what the logs said: counters, per-process settings and
// communicators, fault events. It is safe for concurrent use: the
// collector's poll goroutine writes it (Ingest, Expire, MarkGone, and
// UnmarshalBinary at start) while scrapes read it. It does no I/O, so the offline diagnose command can feed it
// the files of a bundle. Its jobs live in their own files: plog ingest
// (plog_ingest.go), HCCL settings, communicators, buffers and links
// (links.go), screen-log reassembly (screen.go), faults (faults.go), the
// processes and their views (processes.go), the state file (persist.go)
// the metrics (metrics.go) and the workload memory (workload.go).
type State struct {
	mu   sync.Mutex
	opts Options
	cur  *time.Location // zone of the line being ingested
	// curSrc is the source of the line being ingested, during Ingest.
	curSrc *Source
	cat    *catalogIndex

	lines  map[string]*[parse.NumLevels]uint64
	procs  map[ProcessKey]*process
	nComms int
	// commGen changes whenever a communicator is added or dropped; claims
	// (contested) is rebuilt when it moved.
	commGen, claimsGen uint64
	claims             map[string]claim
	// firstClaims is the first claimant of each job identity, kept across
	// rebuilds of claims (claims.go).
	firstClaims map[string]claim
	// held are faults waiting for their process's communicator
	// (holdFault).
	held       []heldFault
	faults     map[faultKey]*faultCount
	extraCodes map[string]struct{}
	pods       map[podKey]struct{}
	summaries  map[string]*FaultSummary
	plogErrors map[plogErrKey]uint64
	dropped    map[string]uint64
	unparsable map[string]uint64
	// rejected counts settings values HCCL would refuse, by variable
	// (variables of internal/hcclenv; "other" for the rest).
	rejected map[string]uint64
	// refused counts plog lines not taken, by reason (refusedReasons).
	refused map[string]uint64
	// untied counts screen reports with a pid not tied to that pid's
	// process, by reason (untiedReasons).
	untied map[string]uint64
	// podOrigin is the owner that brought each label set of pods (the
	// fault-label cap is shared per owner, not first come).
	podOrigin map[podKey]string
	partial   map[partialKey][]byte
	// pending are screen reports of other components held until their
	// traceback says whether HCCL requested the memory or a communication
	// kernel timed out (screen.go), by screen-log path.
	pending map[string]*pendingReport
	// faultsExpired counts the fault series expireFaults dropped.
	faultsExpired uint64
	recent        [dedupWindow]string
	recentNext    int
	// incidents are the open cause lines of two-line failures (countsAsNew).
	incidents map[incidentKey]openIncident
	// repeats are the recent events of fingerprints HCCL repeats
	// (notARepeat).
	repeats map[repeatKey]*repeatState
	// wl is the workload memory (workload.go).
	wl workloadMemory
	// ext are other packages' blobs in the state file (AttachExtension);
	// they have a lock of their own.
	ext extensions
}

// NewState returns an empty state.
func NewState(opts Options) *State {
	opts = opts.withDefaults()
	return &State{
		opts:       opts,
		cur:        opts.Location,
		cat:        defaultCatalog,
		lines:      map[string]*[parse.NumLevels]uint64{},
		procs:      map[ProcessKey]*process{},
		faults:     map[faultKey]*faultCount{},
		extraCodes: map[string]struct{}{},
		pods:       map[podKey]struct{}{},
		summaries:  map[string]*FaultSummary{},
		plogErrors: map[plogErrKey]uint64{},
		dropped:    map[string]uint64{},
		unparsable: map[string]uint64{},
		rejected:   map[string]uint64{},
		refused:    map[string]uint64{},
		untied:     map[string]uint64{},
		podOrigin:  map[podKey]string{},
		partial:    map[partialKey][]byte{},
		pending:    map[string]*pendingReport{},
		incidents:  map[incidentKey]openIncident{},
	}
}

// Ingest reads one line (without its newline) of src. The line is only
// read during the call.
func (s *State) Ingest(src *Source, line []byte) {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = src.Location
	if s.cur == nil {
		s.cur = s.opts.Location
	}
	s.curSrc = src
	if len(s.held) > 0 {
		s.flushHeld(false)
	}
	if src.Kind == SourceScreen {
		s.ingestScreen(src, line)
	} else {
		s.ingestPlog(src, line)
	}
	s.curSrc = nil
}

// labelValue makes a log-derived string a valid label value: valid UTF-8
// (invalid bytes become U+FFFD) and at most max bytes.
func labelValue(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
