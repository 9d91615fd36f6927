package cannlog

import (
	"bytes"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/parse"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
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

// Formats counted in ascend_log_unparsable_lines_total.
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
}

// FaultEvent is one counted fault event, as handed to Options.OnFault.
type FaultEvent struct {
	Code   string
	Source string // FaultSourceScreen or FaultSourcePlog
	PID    int    // 0 when the line printed none
	// Time is the time printed in the line (in Options.Location), or
	// Options.Now() when it printed none.
	Time time.Time
}

// DefaultOptions returns the defaults of the cannlog flags.
func DefaultOptions() Options {
	return Options{
		ProcessTTL:       time.Hour,
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
	// Env holds the effective settings by variable name, e.g. "HCCL_BUFFSIZE".
	Env           map[string]EnvSetting
	Communicators []CommunicatorView
	// DevicePhyID is the physical id of the NPU it drives, as its
	// communicator lines printed it; -1 unknown.
	DevicePhyID int
	// UnattributedBufferBytes are cclBuffer allocations not yet tied to a
	// communicator (HCCL's line names none; the next link set does), and
	// UnattributedQPs QPs whose operator tag names no live communicator.
	UnattributedBufferBytes uint64
	UnattributedQPs         uint64
}

// EnvSetting is one effective HCCL setting of a process.
type EnvSetting struct {
	Value     string // as printed, e.g. "200"
	SetBy     string // environment, default, ge_option or unset
	Number    float64
	HasNumber bool // Number is in base units: bytes, seconds, count
}

// CommunicatorView is one communicator of a process, from whichever
// era's wording created it (parse.Wordings).
type CommunicatorView struct {
	Name     string // the identifier, e.g. "127.0.0.1%enp_60000_0_1765367607599032"
	RankSize int
	// ServerNum and SuperPodNum come from `[Communicator Key Info]` (Dec
	// 2025 on); -1 where the era does not print them.
	ServerNum   int
	SuperPodNum int
	// DeviceType is HCCL's deviceType[N] (parse.DevType*), -1 unknown.
	DeviceType int
	// UserRank and DevicePhyID come from the `[LocalRank Key Info]` line
	// that follows (DevicePhyID also from phydevId[] of older eras); -1
	// when it was not seen.
	UserRank    int
	DevicePhyID int
	// SuperPodID, SuperPodMode (useSuperPodMode) and StandardCard
	// (isStandardCard: a PCIe card) also come from `[LocalRank Key Info]`;
	// "" and -1 when not printed.
	SuperPodID   string
	SuperPodMode int
	StandardCard int
	// BufferSizeBytes is the communicator's own buffer size from `[Load]
	// comm config` (HcclCommConfig.hcclBufferSize); 0 means HCCL_BUFFSIZE.
	BufferSizeBytes uint64
	// CCLBufferBytes is what `Create ccl buffer success` lines show
	// allocated for it: 0 until its first collective (HCCL allocates the
	// cclBuffer lazily, together with link setup).
	CCLBufferBytes uint64
	// EstablishedQPs counts its `create hccl transport:` lines with `rdma
	// qpn[` (one per QP, over every link set it built); RoCEPeers and
	// OtherPeers count the distinct remote ranks linked by RoCE QPs and by
	// links without QP (HCCS, PCIe, SIO).
	EstablishedQPs uint64
	RoCEPeers      int
	OtherPeers     int
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

const (
	maxSummaryPIDs = 64
	maxValueLen    = 128 // longest value label kept (paths are truncated)
	dedupWindow    = 64  // screen reports remembered to drop repeats
)

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
	comms    []CommunicatorView
	links    processLinks
	// devicePhyID is the physical id of the NPU the process drives, from
	// the latest communicator line that printed one (devicePhyId[] of
	// [LocalRank Key Info], phydevId[] of SetupAgent); -1 unknown. Kept
	// when its communicators are destroyed.
	devicePhyID int
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
	return pr.resolve(loc)
}

func (pr *process) resolve(loc *time.Location) time.Time {
	if pr.rawDirty {
		if t, ok := parse.ParsePlogTime(pr.lastRaw, loc); ok && t.After(pr.lastWrite) {
			pr.lastWrite = t
		}
		pr.rawDirty = false
	}
	return pr.lastWrite
}

type faultKey struct {
	code, source, namespace, pod, container string
}

type faultCount struct {
	count uint64
	last  time.Time
}

type podKey struct{ namespace, pod, container string }

type plogErrKey struct{ stage, reason string }

type partialKey struct {
	path   string
	stream uint8
}

// State holds what the logs said: counters, per-process settings and
// communicators, fault events. It is safe for concurrent use; Ingest is the
// only writer. It does no I/O, so the offline diagnose command can feed it
// the files of a bundle.
type State struct {
	mu   sync.Mutex
	opts Options
	cur  *time.Location // zone of the line being ingested
	cat  *catalogIndex

	lines      map[string]*[parse.NumLevels]uint64
	procs      map[ProcessKey]*process
	nComms     int
	faults     map[faultKey]*faultCount
	extraCodes map[string]struct{}
	pods       map[podKey]struct{}
	summaries  map[string]*FaultSummary
	plogErrors map[plogErrKey]uint64
	dropped    map[string]uint64
	unparsable map[string]uint64
	// rejected counts settings values HCCL would refuse, by variable
	// (variables of internal/hcclenv; "other" for the rest).
	rejected   map[string]uint64
	partial    map[partialKey][]byte
	recent     [dedupWindow]string
	recentNext int

	// procMetrics caches the per-process series between scrapes while
	// procMetricsOK; see buildProcMetrics.
	procMetrics   []prometheus.Metric
	procMetricsOK bool
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
		partial:    map[partialKey][]byte{},
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
	if src.Kind == SourceScreen {
		s.ingestScreen(src, line)
		return
	}
	s.ingestPlog(src, line)
}

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
	s.countLine(p.Module, p.Level)
	if pr := s.procs[ProcessKey{src.Dir, p.PID}]; pr != nil {
		if pr.loc != s.cur {
			// Its root's zone was inferred anew: read its last time again.
			pr.loc = s.cur
			if t, ok := parse.ParsePlogTime(pr.lastRaw, s.cur); ok {
				pr.lastWrite, pr.rawDirty = t, false
			}
		}
		if p.StdTime {
			pr.touchRaw(p.Time)
		} else if t, ok := parse.ParsePlogTime(p.Time, s.cur); ok && t.After(pr.lastWrite) {
			pr.lastWrite = t
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
			// are only counted in ascend_log_lines_total.
			return
		}
		stage, reason := parse.StageKeywords(p.Msg)
		s.plogErrors[plogErrKey{stage, reason}]++
		if code, ok := s.cat.match(p.Msg); ok {
			s.recordFault(code, FaultSourcePlog, src, p.PID, s.lineTime(p.Time))
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

// process returns the entry of key, creating it within the pid cap.
func (s *State) process(key ProcessKey, name []byte, t time.Time) *process {
	pr := s.procs[key]
	if pr == nil {
		if old := s.procs[ProcessKey{PID: key.PID}]; old != nil && key.Dir != "" {
			// Restored from a state file written before processes were
			// keyed by directory: the same process, now with its directory.
			delete(s.procs, ProcessKey{PID: key.PID})
			s.procs[key] = old
			s.procsChanged()
			pr = old
		}
	}
	if pr == nil {
		if len(s.procs) >= s.opts.MaxPIDs {
			s.dropped[labelPID]++
			return nil
		}
		pr = &process{label: s.pidLabel(key), env: map[string]EnvSetting{}, lastWrite: t, devicePhyID: -1, loc: s.cur}
		s.procs[key] = pr
		s.procsChanged()
	}
	if pr.name != string(name) {
		if v := labelValue(string(name), maxValueLen); v != pr.name {
			pr.name = v
			s.procsChanged()
		}
	}
	if t.After(pr.lastWrite) {
		pr.lastWrite = t
	}
	return pr
}

// pidLabel is the pid label of a new process: its pid, as always on a node
// with one log directory or unique pids; "<pid>@<dir>" when a process of
// another directory holds that pid already, so the two never share series.
// The label is fixed for the life of the entry: a second pod starting with
// the same pid does not rename the first one's series.
func (s *State) pidLabel(key ProcessKey) string {
	plain := strconv.Itoa(key.PID)
	for k, pr := range s.procs {
		if k.PID == key.PID && pr.label == plain {
			return labelValue(plain+"@"+key.Dir, 2*maxValueLen)
		}
	}
	return plain
}

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
		if old, ok := pr.env[st.Name]; !ok || old != v {
			pr.env[st.Name] = v
			s.procsChanged()
		}
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

var (
	dockerStreamStdout = "stdout"
	dockerStreamStderr = "stderr"
)

func (s *State) ingestScreen(src *Source, line []byte) {
	msg := line
	var fallback []byte // RFC 3339 time of the CRI or Docker entry
	var cri parse.CRILine
	switch {
	case parse.IsDocker(line):
		complete := parse.DockerComplete(line)
		if complete && !s.hasPartial(src.Path) {
			if code, _ := parse.FindFaultCode(line); code == nil {
				return
			}
		}
		d, err := parse.ParseDocker(line)
		if err != nil {
			s.unparsable[formatDocker]++
			return
		}
		key := partialKey{path: src.Path, stream: streamID(d.Stream)}
		text := []byte(d.Log)
		if len(text) == 0 || text[len(text)-1] != '\n' {
			s.appendPartial(key, text)
			return
		}
		if buf, ok := s.partial[key]; ok {
			text = append(buf, text...)
			delete(s.partial, key)
		}
		msg = bytes.TrimRight(text, "\r\n")
		fallback = []byte(d.Time)
	case parse.ParseCRI(line, &cri):
		key := partialKey{path: src.Path, stream: streamID(string(cri.Stream))}
		if cri.Partial {
			s.appendPartial(key, cri.Msg)
			return
		}
		msg = cri.Msg
		if buf, ok := s.partial[key]; ok {
			msg = append(buf, cri.Msg...)
			delete(s.partial, key)
		}
		fallback = cri.Time
	default:
		if len(line) > 0 && (line[0] >= '0' && line[0] <= '9') && bytes.Contains(line[:min(len(line), 40)], []byte(" stdout ")) {
			// Looks like CRI but did not parse.
			s.unparsable[formatCRI]++
		}
	}
	code, _ := parse.FindFaultCode(msg)
	if code == nil {
		return
	}
	raw := parse.FindPlogTime(msg)
	var ts time.Time
	ok := false
	loc := s.cur
	if raw != nil && fallback != nil && s.opts.ScreenZoneFromRuntime {
		if rt, rok := parse.ParseRFC3339(fallback); rok {
			if z, zok := zoneFromPair(raw, rt); zok {
				loc = z
			}
		}
	}
	if raw != nil {
		ts, ok = parse.ParsePlogTime(raw, loc)
	}
	if !ok && fallback != nil {
		ts, ok = parse.ParseRFC3339(fallback)
	}
	if !ok {
		ts = s.opts.Now()
	}
	pid := parse.ScreenPID(msg)
	if raw != nil {
		// The error manager's report is often repeated by the framework's
		// exception text (RuntimeError: …): the same code, pid and printed
		// time count once.
		key := string(code) + "|" + string(raw) + "|" + strconv.Itoa(pid) + "|" + src.Path
		for _, k := range s.recent {
			if k == key {
				return
			}
		}
		s.recent[s.recentNext] = key
		s.recentNext = (s.recentNext + 1) % dedupWindow
	}
	s.recordFault(string(code), FaultSourceScreen, src, pid, ts)
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

func streamID(stream string) uint8 {
	switch stream {
	case dockerStreamStdout:
		return 1
	case dockerStreamStderr:
		return 2
	}
	return 0
}

func (s *State) hasPartial(path string) bool {
	for stream := uint8(0); stream <= 2; stream++ {
		if _, ok := s.partial[partialKey{path, stream}]; ok {
			return true
		}
	}
	return false
}

func (s *State) appendPartial(key partialKey, b []byte) {
	buf := s.partial[key]
	if room := s.opts.MaxPartialBytes - len(buf); room < len(b) {
		if room < 0 {
			room = 0
		}
		b = b[:room] // the start of a line carries the code; drop the excess
	}
	s.partial[key] = append(buf, b...)
}

func (s *State) recordFault(code, source string, src *Source, pid int, ts time.Time) {
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
	k := faultKey{code: code, source: source, namespace: ns, pod: pod, container: ctr}
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
		s.opts.OnFault(FaultEvent{Code: code, Source: source, PID: pid, Time: ts})
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

// HasProcess reports whether the logs of any directory know pid, without
// copying anything.
func (s *State) HasProcess(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.procs {
		if k.PID == pid {
			return true
		}
	}
	return false
}

// view copies a process; names, when non-nil, restricts Env to them.
// ProcessDevice is a process and the NPU it drives, for joins that must
// not copy every process's settings.
type ProcessDevice struct {
	Key         ProcessKey
	Label       string // its pid label
	DevicePhyID int    // -1 unknown
	LastWrite   time.Time
}

// Devices returns every process with its device, sorted by key.
func (s *State) Devices() []ProcessDevice {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcessDevice, 0, len(s.procs))
	for k, pr := range s.procs {
		out = append(out, ProcessDevice{Key: k, Label: pr.label, DevicePhyID: pr.devicePhyID, LastWrite: s.lastWrite(pr)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.PID != out[j].Key.PID {
			return out[i].Key.PID < out[j].Key.PID
		}
		return out[i].Key.Dir < out[j].Key.Dir
	})
	return out
}

func (s *State) view(k ProcessKey, pr *process, names []string) ProcessView {
	pv := ProcessView{PID: k.PID, Dir: k.Dir, Label: pr.label, Name: pr.name, LastWrite: s.lastWrite(pr),
		DevicePhyID:             pr.devicePhyID,
		Communicators:           append([]CommunicatorView(nil), pr.comms...),
		UnattributedBufferBytes: pr.links.pendingBuf, UnattributedQPs: pr.links.orphanQPs}
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

// Expire drops the processes that are not alive and whose last log write is
// older than the TTL, and returns how many it dropped. live may do I/O (it
// reads /proc), so it is called without the lock held.
func (s *State) Expire(live Liveness) int {
	now := s.opts.Now()
	s.mu.Lock()
	var stale []ProcessKey
	for k, pr := range s.procs {
		if now.Sub(s.lastWrite(pr)) > s.opts.ProcessTTL {
			stale = append(stale, k)
		}
	}
	s.mu.Unlock()
	var dead []ProcessKey
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
		delete(s.procs, k)
		s.procsChanged()
		n++
	}
	return n
}
