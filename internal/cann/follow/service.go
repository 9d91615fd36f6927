package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// Config is the cannlog collector's configuration, filled by AddFlags.
type Config struct {
	Roots              []string      // CANN log roots holding run/, debug/, security/
	ScreenGlobs        []string      // screen log globs
	StateFile          string        // offsets and state across restarts; empty: none
	ProcessTTL         time.Duration // series of a dead process stay this long after its last write
	FaultTTL           time.Duration // fault series of a pod or job stay this long after their latest event
	PollInterval       time.Duration
	RescanInterval     time.Duration
	CheckpointInterval time.Duration
	MaxLineBytes       int
	MaxOpenFiles       int // descriptor budget for log files; 0: from RLIMIT_NOFILE
	MaxPIDs            int
	MaxCommunicators   int
	MaxCodes           int
	MaxPods            int
	MaxModules         int
	Timezone           string // auto, Local or an IANA name
	// CrossFilesystems lets the walk below a log root enter mount points,
	// and discovered roots be on FUSE or network file systems.
	CrossFilesystems bool
	// FaultJobGrace is how long a fault read before its process's
	// communicator waits for it (logstate.Options.FaultJobGrace); no flag:
	// 0 is the default, negative counts at once.
	FaultJobGrace time.Duration
}

// Deps are what main wires into the collector besides its own flags: the
// shared host path, the bounds of the workload memory the log state keeps
// for the headroom model, and the other sources of the node. Each may be
// zero.
type Deps struct {
	// Procfs is the host's /proc (--path.procfs, registered by main with
	// the other host paths): every process of Processes is read from its
	// own log root found there (discovery.go). Empty disables discovery.
	Procfs string
	// WorkloadTTL and MaxWorkloads bound the workload memory
	// (--headroom.workload-memory-ttl and -max: the headroom model's
	// flags, the memory's state this collector's); zero: the defaults.
	WorkloadTTL  time.Duration
	MaxWorkloads int

	// PodOfDevice labels plog faults with the pod of their device (the
	// kubelet's answer); see logstate.Options.PodOfDevice.
	PodOfDevice func(phy int) (namespace, pod, container string, ok bool)
	// Processes is npu-smi's process table; nil disables discovery.
	Processes ProcessTable
	// PodOfProcess names the pod a host pid's own cgroup puts it in (the
	// pods package's cgroup reading and the kubelet's log layout): the
	// owner of a discovered root's files is that pod, else the process's
	// uid (logstate.Source.Owner), and the pod labels of its plog faults
	// are its pod's, not the pod of a device its lines name. nil: the uid
	// alone.
	PodOfProcess func(hostPID int) (ProcessPod, bool)
	// Extensions are other packages' state kept in the state file, by
	// name (the headroom model's learned QP sizes), given here so that
	// what the file holds reaches them when it is read.
	Extensions map[string]logstate.Extension
}

// ProcessPod is the pod a process's own cgroup names: its UID, and its
// namespace, pod and container where the kubelet's log layout names them
// ("" otherwise).
type ProcessPod struct {
	UID, Namespace, Pod, Container string
}

// DefaultRoot is the CANN log root a process writes to, by CANN's own
// precedence: $ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log, else
// $HOME/ascend/log.
func DefaultRoot(getenv func(string) string) string {
	if p := getenv("ASCEND_PROCESS_LOG_PATH"); p != "" {
		return p
	}
	if p := getenv("ASCEND_WORK_PATH"); p != "" {
		return filepath.Join(p, "log")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, "ascend", "log")
}

// faultJobGrace is how long at least a fault waits for its process's
// job, and faultJobGracePolls in polls: the lines that name it are read
// within a poll or two of the fault's, even under load.
const (
	faultJobGrace      = 5 * time.Second
	faultJobGracePolls = 5
)

func (cfg Config) stateOptions(deps Deps) logstate.Options {
	o := logstate.DefaultOptions()
	o.ProcessTTL = cfg.ProcessTTL
	o.FaultTTL = cfg.FaultTTL
	o.WorkloadTTL, o.MaxWorkloads = deps.WorkloadTTL, deps.MaxWorkloads
	// A fault read before its process's communicator waits for it this
	// long (logstate.Options.FaultJobGrace): long enough for the next few
	// polls under load, far below any alert's for:.
	o.FaultJobGrace = max(faultJobGrace, faultJobGracePolls*cfg.PollInterval)
	if cfg.FaultJobGrace != 0 {
		o.FaultJobGrace = max(cfg.FaultJobGrace, 0)
	}
	for _, p := range []struct{ dst, src *int }{
		{&o.MaxPIDs, &cfg.MaxPIDs}, {&o.MaxCommunicators, &cfg.MaxCommunicators}, {&o.MaxCodes, &cfg.MaxCodes},
		{&o.MaxPods, &cfg.MaxPods}, {&o.MaxModules, &cfg.MaxModules},
	} {
		if *p.src > 0 {
			*p.dst = *p.src
		}
	}
	return o
}

// follower is what the collector needs of tail.Follower.
type follower interface {
	Poll(handle func(file *tail.File, line []byte)) error
	Checkpoint(blob []byte) error
	Restore() ([]byte, error)
	Stats() tail.Stats
	Close() error
	// SetProcRoots hands the follower the discovered rows of the table of
	// roots, whose files it pins.
	SetProcRoots(roots []tail.ProcRoot)
}

var (
	filesTrackedDesc = prometheus.NewDesc("hccl_exporter_log_files_tracked",
		"Log files followed (CANN plogs and screen logs).", nil, nil)
	filesOpenDesc = prometheus.NewDesc("hccl_exporter_log_files_open",
		"Log files held open now (at most --cannlog.max-open-files).", nil, nil)
	openLimitDesc = prometheus.NewDesc("hccl_exporter_log_open_files_limit_reached_total",
		"Log file opens that found --cannlog.max-open-files spent: a fully read file was closed to make room, or the file waited for one.", nil, nil)
	readErrorsDesc = prometheus.NewDesc("hccl_exporter_log_read_errors_total",
		"Errors reading log files and directories (missing roots, unreadable directories, failed reads).", nil, nil)
	truncatedLinesDesc = prometheus.NewDesc("hccl_exporter_log_truncated_lines_total",
		"Lines longer than --cannlog.max-line-bytes, read cut.", nil, nil)
	truncationsDesc = prometheus.NewDesc("hccl_exporter_log_truncations_total",
		"Followed log files found truncated (shrunk, or rewritten from the start) and read again from their first byte.", nil, nil)
	replacementsDesc = prometheus.NewDesc("hccl_exporter_log_replacements_total",
		"Followed log names found holding another file (replaced, or rotated by the kubelet); the old file is read to its end first.", nil, nil)
	filesLostDesc = prometheus.NewDesc("hccl_exporter_log_files_lost_total",
		"Log files read before a restart that were gone with their directory after it: their process exited while the exporter was down, "+
			"taking its /proc root (the only path to them), so whatever it wrote after the last checkpoint (often its last error) was not read.", nil, nil)
	stateWriteErrorsDesc = prometheus.NewDesc("hccl_exporter_log_state_file_write_errors_total",
		"Checkpoints of --cannlog.state-file that failed; until one succeeds, a restart reads again what was read since the last.", nil, nil)
	limitReachedDesc = prometheus.NewDesc("hccl_exporter_log_limit_reached_total",
		"Times a log root reached a cap in a rescan (limit=dirs|watches|entries: what lies past it is not followed) "+
			"or a file's read was cut at the per-poll byte cap (limit=bytes: the rest is read by the next poll).", []string{"limit"}, nil)
	refusedDesc = prometheus.NewDesc("hccl_exporter_log_paths_refused_total",
		"Paths of a log root not entered or opened, per rescan: a symlink where CANN writes a directory or a log file, a mount point "+
			"where CANN writes a directory, or a discovered root on a FUSE or network file system (--cannlog.cross-filesystems allows the last two).", []string{"reason"}, nil)
	holeBytesDesc = prometheus.NewDesc("hccl_exporter_log_hole_bytes_skipped_total",
		"Bytes of sparse log files' holes skipped unread (SEEK_DATA).", nil, nil)
	hungCallsDesc = prometheus.NewDesc("hccl_exporter_log_hung_calls_total",
		"Calls on a discovered log root (open, stat, read, list) abandoned after 1 s: its file system does not answer "+
			"(a hung FUSE or NFS mount); its files wait until it does, the other roots are read on.", nil, nil)
)

// expireEvery bounds how often the process TTL is checked (it may stat /proc).
const expireEvery = 5 * time.Second

// Service serves the cannlog metrics and views. A background goroutine
// started by Start reads the logs; Update only reads the state.
type Service struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger
	// live replaces the collector's own liveness (coverage.go) in tests
	// that need processes kept; nil in the exporter.
	live  logstate.Liveness
	state *logstate.State
	f     follower

	src      logstate.Source // reused for every line by the poll goroutine: no allocation
	srcDir   string          // logstate.LogDir of src.Path
	srcLoc   *time.Location
	srcOwner string     // who writes src.Path (rootTable.ownerOf)
	srcPod   ProcessPod // its pod, where the kernel names one
	// writers are the discovered roots whose processes write files that
	// several roots reach, by path (writers.go); dropped for a pid whose
	// roots change. Poll goroutine only.
	writers map[string]writerDecision
	// looks are the looks at processes' descriptors behind writers, and
	// their budget per poll.
	looks writerLooks
	// screenWriters are the owners of the processes that hold bare-metal
	// screen logs open (screenwriter.go), looked at again when rootGen,
	// bumped at each change of the table of roots, moved on.
	screenWriters map[string]screenWriter
	rootGen       uint64
	// roots is the table of log roots (roots.go), configured and
	// discovered; zones infers and applies the zone of each row.
	roots *rootTable
	zones *zones
	// lastZones is when the roots' zones were last inferred (poll goroutine).
	lastZones time.Time
	// disc finds each NPU process's own log root (the discovered rows of
	// roots); nil without --path.procfs.
	disc *discovery

	// Owned by the poll goroutine.
	dirty          bool
	lastCheckpoint time.Time
	lastExpire     time.Time
	created        time.Time

	mu      sync.Mutex
	pollErr error

	encodeErrors atomic.Uint64 // state that could not be encoded for a checkpoint
	savedGen     uint64        // the state's Generation last marked dirty (poll goroutine only)

	startOnce sync.Once
	closeOnce sync.Once
	cancel    context.CancelFunc
	done      chan struct{}
}

// New builds the collector and its follower and restores the state saved
// in --cannlog.state-file. Which processes still run is the collector's own
// to say (coverage.go): from deps.Processes, its table of roots and
// deps.Procfs; without them only the TTL decides.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Service, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f, err := tail.New(tail.Config{
		Roots:          cfg.Roots,
		ScreenGlobs:    cfg.ScreenGlobs,
		StateFile:      cfg.StateFile,
		PollInterval:   cfg.PollInterval,
		RescanInterval: cfg.RescanInterval,
		MaxLineBytes:   cfg.MaxLineBytes,
		AwaitProcRoots: deps.Procfs != "" && deps.Processes != nil,
		MaxOpenFiles:   cfg.MaxOpenFiles,
		// The tail's Default* caps per root: no flags, a root of CANN's
		// layout stays far below them.
		CrossFilesystems: cfg.CrossFilesystems,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("cannlog: start log follower: %w", err)
	}
	opts, err := cfg.stateOptionsZone(deps)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannlog: %w", err)
	}
	opts.PodOfDevice = deps.PodOfDevice
	return newService(cfg, deps, nil, logger, f, logstate.NewState(opts)), nil
}

// stateOptionsZone is stateOptions with the zone of --cannlog.timezone.
func (cfg Config) stateOptionsZone(deps Deps) (logstate.Options, error) {
	o := cfg.stateOptions(deps)
	loc, auto, err := ParseTimezone(cfg.Timezone)
	if err != nil {
		return o, err
	}
	o.Location, o.ScreenZoneFromRuntime = loc, auto
	return o, nil
}

func newService(cfg Config, deps Deps, live logstate.Liveness, logger *slog.Logger, f follower, st *logstate.State) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = tail.DefaultPollInterval
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = 10 * time.Second
	}
	c := &Service{cfg: cfg, deps: deps, live: live, logger: logger, state: st, f: f, done: make(chan struct{}), created: time.Now()}
	if c.live == nil {
		c.live = liveness{c}
	}
	// An invalid zone was refused by New; tests passing none get auto.
	fixed, auto, err := ParseTimezone(cfg.Timezone)
	if err != nil {
		fixed, auto = time.Local, false
	}
	c.roots = newRootTable(cfg.Roots)
	c.zones = newZones(c.roots, auto, fixed, cfg.CrossFilesystems)
	c.disc = newDiscovery(deps.Procfs, deps.Processes)
	for name, ext := range deps.Extensions {
		if err := st.AttachExtension(name, ext); err != nil {
			logger.Warn("cannot restore a state file extension; it starts over", "extension", name, "err", err)
		}
	}
	blob, err := f.Restore()
	if err != nil {
		logger.Warn("cannot restore the log state file; reading from the start", "file", cfg.StateFile, "err", err)
	}
	if err := st.UnmarshalBinary(blob); err != nil {
		// The offsets were restored, the counters were not: counters start
		// again from zero rather than count lines twice.
		logger.Warn("cannot restore the cannlog counters; they restart from zero", "file", cfg.StateFile, "err", err)
	}
	return c
}

// Start launches the goroutine that reads the logs every poll interval
// until ctx ends or Close is called. Calling it again does nothing.
func (c *Service) Start(ctx context.Context) {
	c.startOnce.Do(func() {
		ctx, c.cancel = context.WithCancel(ctx)
		go c.loop(ctx)
	})
}

func (c *Service) loop(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.cfg.PollInterval)
	defer t.Stop()
	for {
		c.pollOnce(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollOnce reads what is new, expires processes and checkpoints.
func (c *Service) pollOnce(now time.Time) {
	if now.Sub(c.lastZones) >= zoneEvery {
		// Before the first lines are read, and then and again: the zone a
		// line is read in must be known when it is read.
		c.lastZones = now
		c.zones.inferAll(now, c.logger.Warn)
		c.src.Path = "" // work the zone out again for the next line
	}
	c.discover(now)
	c.looks.resetPoll()
	err := c.f.Poll(c.handle)
	c.mu.Lock()
	c.pollErr = err
	c.mu.Unlock()
	if err != nil {
		c.logger.Error("reading logs failed", "err", err)
		return
	}
	if now.Sub(c.lastExpire) >= expireEvery && c.livenessReady(now) {
		c.lastExpire = now
		if n := c.state.Expire(c.live); n > 0 {
			c.logger.Debug("expired processes", "count", n)
			c.dirty = true
		}
	}
	if g := c.state.Generation(); g != c.savedGen {
		// Learned or remembered without a line read (workload.go).
		c.savedGen, c.dirty = g, true
	}
	if c.dirty && now.Sub(c.lastCheckpoint) >= c.cfg.CheckpointInterval {
		c.checkpoint(now)
	}
}

// livenessReady reports whether expiry may ask the liveness.
func (c *Service) livenessReady(now time.Time) bool {
	r, ok := c.live.(logstate.LivenessReady)
	return !ok || r.Ready() || now.Sub(c.created) >= logstate.ReadyGrace
}

func (c *Service) handle(f *tail.File, line []byte) {
	if f.Path != c.src.Path {
		// Lines arrive file by file: the directory and its zone are worked
		// out once per run of lines.
		c.srcDir, c.srcLoc, c.srcOwner, c.srcPod = "", nil, "", ProcessPod{}
		if f.Kind != tail.KindScreen {
			c.srcDir = logstate.LogDir(f.Path)
			procRoot := f.ProcRoot
			if procRoot != "" {
				// A volume two pods share: the file is the row's whose
				// process holds it open (writers.go).
				from, to, shared := c.writerRoot(f.Path)
				if from != to {
					c.srcDir = to + strings.TrimPrefix(c.srcDir, from)
					procRoot = to
				}
				if shared {
					// No single process: a row of its own, and no
					// owner the kernel names.
					c.srcDir += sharedSuffix
					procRoot = ""
				}
			}
			c.srcLoc = c.zones.locationFor(c.srcDir, time.Now(), c.logger.Warn)
			if procRoot != "" && !hasDirPrefix(f.Path, procRoot) {
				// A configured root reaches a discovered process's file
				// first: its lines are read under the configured path.
				c.roots.noteAlias(procRoot, c.srcDir)
			}
			c.srcOwner, c.srcPod = c.roots.ownerOf(procRoot, c.srcDir)
		} else if f.Pod == "" {
			// A bare-metal screen log speaks for the processes of its
			// writer's owner only (logstate screenTies).
			c.srcOwner, _ = c.screenWriterOf(f.Path)
		}
	}
	// PID: the file's own name (plog-<pid>_…) says whose lines it holds;
	// Owner: who the kernel (or the configured root) says writes it.
	c.src = logstate.Source{Path: f.Path, Kind: kindOf(f.Kind), Namespace: f.Namespace, Pod: f.Pod, Container: f.Container, Dir: c.srcDir,
		Location: c.srcLoc, PID: f.PID, Owner: c.srcOwner,
		OwnerNamespace: c.srcPod.Namespace, OwnerPod: c.srcPod.Pod, OwnerContainer: c.srcPod.Container}
	if f.Pod != "" {
		c.src.PodUID = podUIDOf(f.Path)
	}
	c.state.Ingest(&c.src, line)
	c.dirty = true
}

// podUIDOf is the pod UID of a kubelet log path,
// /var/log/pods/<ns>_<pod>_<uid>/<container>/N.log; "" for other paths.
func podUIDOf(path string) string {
	podDir := filepath.Base(filepath.Dir(filepath.Dir(path)))
	if filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))) != "pods" {
		return ""
	}
	if parts := strings.Split(podDir, "_"); len(parts) == 3 {
		return parts[2]
	}
	return ""
}

func kindOf(k tail.Kind) logstate.SourceKind {
	switch k {
	case tail.KindDevicePlog:
		return logstate.SourceDevicePlog
	case tail.KindScreen:
		return logstate.SourceScreen
	}
	return logstate.SourcePlog
}

func (c *Service) checkpoint(now time.Time) {
	if c.cfg.StateFile == "" {
		// Nothing keeps the blob: do not encode the state every interval.
		c.dirty = false
		c.lastCheckpoint = now
		return
	}
	blob, err := c.state.MarshalBinary()
	if err != nil {
		c.encodeErrors.Add(1)
	} else {
		err = c.f.Checkpoint(blob)
	}
	// A failed write is tried again at the next interval, not at every
	// poll: the log and the counter then say how long it has failed.
	c.lastCheckpoint = now
	if err != nil {
		c.logger.Error("cannot write the log state file; a restart will read again what was read since the last checkpoint",
			"file", c.cfg.StateFile, "err", err)
		return
	}
	c.dirty = false
}

// Close stops reading, writes a last checkpoint and releases the files.
func (c *Service) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
			<-c.done
		}
		if c.dirty {
			c.checkpoint(time.Now())
		}
		err = c.f.Close()
	})
	return err
}

// Update sends the cannlog metrics. It reads the state under its lock and
// the follower's counters; it does no file I/O and needs no deadline.
func (c *Service) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	c.state.Collect(ch)
	st := c.f.Stats()
	var readErrs uint64
	for _, n := range st.ReadErrors {
		readErrs += n
	}
	ch <- prometheus.MustNewConstMetric(filesTrackedDesc, prometheus.GaugeValue, float64(st.FilesTracked))
	ch <- prometheus.MustNewConstMetric(filesOpenDesc, prometheus.GaugeValue, float64(st.FilesOpen))
	ch <- prometheus.MustNewConstMetric(openLimitDesc, prometheus.CounterValue, float64(st.OpenFilesLimitReached))
	ch <- prometheus.MustNewConstMetric(readErrorsDesc, prometheus.CounterValue, float64(readErrs))
	ch <- prometheus.MustNewConstMetric(truncatedLinesDesc, prometheus.CounterValue, float64(st.TruncatedLines))
	ch <- prometheus.MustNewConstMetric(truncationsDesc, prometheus.CounterValue, float64(st.Truncations))
	ch <- prometheus.MustNewConstMetric(replacementsDesc, prometheus.CounterValue, float64(st.Replacements))
	ch <- prometheus.MustNewConstMetric(filesLostDesc, prometheus.CounterValue, float64(st.FilesLost))
	ch <- prometheus.MustNewConstMetric(stateWriteErrorsDesc, prometheus.CounterValue, float64(st.StateWriteErrors+c.encodeErrors.Load()))
	for _, l := range tail.LimitReasons {
		ch <- prometheus.MustNewConstMetric(limitReachedDesc, prometheus.CounterValue, float64(st.LimitsReached[l]), l)
	}
	for _, r := range tail.RefusedReasons {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(st.Refused[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(holeBytesDesc, prometheus.CounterValue, float64(st.HoleBytesSkipped))
	hung := st.HungCalls
	if c.disc != nil {
		hung += c.disc.hung.Load()
	}
	hung += c.zones.hung.Load()
	ch <- prometheus.MustNewConstMetric(hungCallsDesc, prometheus.CounterValue, float64(hung))
	c.zones.metrics(ch, time.Now())
	c.coverage(ch)
	c.mu.Lock()
	err := c.pollErr
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cannlog: read logs: %w", err)
	}
	return unreadableErr(st)
}

// Describe and Collect make the collector usable with a plain Prometheus
// registry (tests, linting).
func (c *Service) Describe(ch chan<- *prometheus.Desc) {
	c.state.Describe(ch)
	ch <- filesTrackedDesc
	ch <- filesOpenDesc
	ch <- openLimitDesc
	ch <- readErrorsDesc
	ch <- truncatedLinesDesc
	ch <- truncationsDesc
	ch <- replacementsDesc
	ch <- filesLostDesc
	ch <- stateWriteErrorsDesc
	ch <- limitReachedDesc
	ch <- refusedDesc
	ch <- holeBytesDesc
	ch <- hungCallsDesc
	ch <- zoneOffsetDesc
	ch <- zoneAppliedDesc
	ch <- npuProcessesDesc
	ch <- processInfoDesc
}

// Collect sends the metrics of Update.
func (c *Service) Collect(ch chan<- prometheus.Metric) {
	if err := c.Update(context.Background(), ch); err != nil && !errors.Is(err, tail.ErrClosed) {
		c.logger.Debug("cannlog collect", "err", err)
	}
}

// Processes returns copies of the processes whose series are exported:
// alive, or within the TTL after their last log write.
func (c *Service) Processes() []logstate.ProcessView { return c.state.Processes() }

// Process returns one process of Processes.
func (c *Service) Process(key logstate.ProcessKey) (logstate.ProcessView, bool) {
	return c.state.Process(key)
}

// Faults returns the per-code fault summaries.
func (c *Service) Faults() []logstate.FaultSummary { return c.state.Faults() }

// State returns the collector's state, for tools that read it directly.
func (c *Service) State() *logstate.State { return c.state }

// Devices returns every process of the logs with the NPU it drives
// (logstate.State.Devices), each with the host pid the table of roots
// knows for it (discovered through --path.procfs; 0 otherwise).
func (c *Service) Devices() []logstate.ProcessDevice {
	devs := c.state.Devices()
	for i := range devs {
		devs[i].HostPID = c.roots.HostPID(devs[i].Key)
	}
	return devs
}

// ProcessVars returns one process with only the named variables
// (logstate.State.ProcessVars).
func (c *Service) ProcessVars(key logstate.ProcessKey, names ...string) (logstate.ProcessView, bool) {
	return c.state.ProcessVars(key, names...)
}
