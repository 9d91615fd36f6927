package tail

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultPollInterval   = time.Second
	DefaultRescanInterval = 30 * time.Second
	// DefaultMaxLineBytes caps a delivered line. CANN lines are far shorter
	// (the fault code and keywords sit in the first bytes); a longer line is
	// delivered truncated and counted. Keeping the cap well below the read
	// buffer means the buffer never grows.
	DefaultMaxLineBytes = 64 << 10
)

const (
	// readBufSize is the size of the one read buffer shared by all files:
	// large reads keep syscalls per byte low during the initial ingest.
	readBufSize = 256 << 10
	// fpSize is how many leading bytes of a file form its fingerprint, so a
	// restart does not apply an old offset to a new file that reuses an
	// inode number.
	fpSize = 256
	// idleClose is how long a fully read file must stay unchanged before
	// its descriptor is closed (it is reopened when it changes; a hot file
	// keeps its descriptor so that deletion never loses unread data).
	idleClose = 5 * time.Minute
	// orphanRetire is how long a file renamed out of every followed name
	// (and not deleted) keeps being read before it is given up.
	orphanRetire = 5 * time.Minute
	// Without inotify, files unchanged for idleAfter are checked on every
	// idleCheckEvery-th Poll only.
	idleAfter      = 10 * time.Second
	idleCheckEvery = 10
	// pendingScans is how many clean rescans saved offsets wait for the
	// files they belong to.
	pendingScans = 3
	// lostScans is how many rescans a closed file may go unfound before it
	// is forgotten.
	lostScans = 2
)

// cannSortDirs are the CANN log sort directories below each root
// (RT log_file_info.h: RUN_DIR_NAME, DEBUG_DIR_NAME, SECURITY_DIR_NAME).
var cannSortDirs = []string{"run", "debug", "security"}

// Config says what to follow. Zero durations and sizes take the defaults.
type Config struct {
	// Roots are CANN log roots holding run/, debug/ and security/.
	Roots []string
	// ScreenGlobs are filepath.Match patterns of screen logs. Matches
	// ending in .gz (compressed kubelet rotations) are skipped.
	ScreenGlobs []string
	// StateFile keeps offsets and the caller's blob across restarts; empty
	// disables Checkpoint and Restore.
	StateFile string
	// PollInterval is how often the caller is expected to call Poll.
	PollInterval time.Duration
	// RescanInterval is how often the directories are listed again to find
	// new, renamed and deleted files and changes missed by notifications.
	RescanInterval time.Duration
	// MaxLineBytes caps a delivered line; longer lines are truncated.
	MaxLineBytes int
	// DisableNotify turns off inotify and falls back to pure polling.
	DisableNotify bool
	// AwaitProcRoots keeps the saved offsets of the state file until the
	// first SetProcRoots call (see there).
	AwaitProcRoots bool
	// MaxPinnedPerProcess caps the files of one ProcRoot kept open under
	// budget pressure (see evict); 0 takes DefaultMaxPinnedPerProcess.
	MaxPinnedPerProcess int
	// MaxOpenFiles caps the descriptors held on log files; 0 takes
	// DefaultMaxOpenFiles. Past it, fully read files are closed least
	// recently written first and opened again (by path, checked to be
	// the same device and inode) when they are written again.
	MaxOpenFiles int
	// MaxDirsPerRoot, MaxWatchesPerRoot and MaxEntriesPerRoot cap what one
	// CANN root costs per rescan (directories entered, inotify watches,
	// names listed); MaxBytesPerPoll caps what one file costs per Poll.
	// Zero takes the Default* values.
	MaxDirsPerRoot, MaxWatchesPerRoot, MaxEntriesPerRoot int
	MaxBytesPerPoll                                      int64
	// CrossFilesystems lets the walk below a root enter other file systems
	// (mount points), and discovered roots be on FUSE or network file
	// systems. Off, neither is touched (see resolve.go).
	CrossFilesystems bool
	// IODeadline is how long one call on a discovered root may take before
	// it is abandoned and the root waits (see rootio.go); 0 takes
	// DefaultIODeadline.
	IODeadline time.Duration
}

// OpenFilesReserve is the part of RLIMIT_NOFILE the default descriptor
// budget leaves to the rest of the exporter: the HTTP listener and its
// connections (--web.max-connections, 512 by default), npu-smi and
// hccn_tool pipes, the kubelet socket, inotify, the state file.
const OpenFilesReserve = 640

// DefaultMaxOpenFiles is the log-file descriptor budget derived from the
// process's RLIMIT_NOFILE (which the Go runtime raises to the hard limit at
// start): the limit minus OpenFilesReserve, but at least half the limit
// (and at least 16) where the limit is small.
func DefaultMaxOpenFiles() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 1 << 20
	}
	return maxOpenFor(int(rl.Cur))
}

func maxOpenFor(nofile int) int {
	return max(nofile-OpenFilesReserve, nofile/2, 16)
}

// ErrClosed is returned by methods of a closed Follower.
var ErrClosed = errors.New("tail: follower closed")

type fileID struct{ dev, ino uint64 }

// tracked is the follower's state for one file, identified by (device,
// inode) so that a rename is not a new file.
type tracked struct {
	File
	id fileID
	// The file's state (see lifecycle.go): where it is in its life,
	// its descriptor, where reading it stands.
	life life
	h    handle
	pos  readPos

	group   string // CANN rotation group; empty for screen logs
	sortKey string // read order

	// How the file is reached. rio is the worker of the root the file was
	// found in, and root that root (its files are reached again from it);
	// both nil for screen logs. pollAlways: reached through a symlink,
	// whose directory's events say nothing about the target, so it is
	// checked on every Poll.
	rio        *rootIO
	root       *cannRoot
	pollAlways bool

	// missed counts rescans a closed file was not found by (see lose).
	missed int
	// checkedAt is the Poll (pollSeq) that last looked at the file: a
	// write event of this Poll is consumed only once it was looked at
	// (see evict).
	checkedAt uint64

	lastChange time.Time
	seen       uint64 // rescan generation

	prefix []byte // leading bytes until fpSize are known
	fpLen  int
	fpHash uint64
	// tailLen and tailHash fingerprint the bytes just before pos.offset (at
	// most fpSize of them), and ctime is the change time of the last look:
	// together with the head fingerprint they tell a file truncated and
	// written again to its old length (or longer) from one that did not
	// change, which its size cannot.
	tailLen  int
	tailHash uint64
	ctime    syscall.Timespec

	errMsg string // last logged error, so each failure is logged once
}

// Follower finds and follows the configured logs. Poll, Checkpoint,
// Restore and Close must not be called concurrently with each other (they
// serialise on a mutex anyway); Stats may be called at any time and never
// waits for file I/O.
type Follower struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	closed   bool
	polled   bool
	byID     map[fileID]*tracked
	byPath   map[string]*tracked
	order    []*tracked // followed files in path order (per-pid time order)
	orphans  []*tracked
	buf      []byte
	gen      uint64
	nextScan time.Time
	problems map[string]problem
	pending  *savedState
	// pendingScans counts clean rescans since Restore.
	pendingScans int
	dirty        bool // offsets changed since the last checkpoint
	lastBlob     []byte
	hasBlob      bool
	enc          []byte
	openFDs      int
	maxOpen      int
	waiting      int // tracked files whose handle is waiting
	pollSeq      uint64
	w            *watcher
	// hint is the current Poll's events (nil outside Poll or without
	// inotify): evict must not close a file whose write event it holds
	// before the file was looked at, or that write is never read.
	hint *notifyHint
	// procRoots are the per-process roots of SetProcRoots; procRootsSet
	// says it was called.
	procRoots    []ProcRoot
	procRootsSet bool
	// Caps of Config, defaults applied.
	maxDirs, maxWatches, maxEntries int
	maxBytes                        int64
	ioDeadline                      time.Duration
	// rootIOs are the workers of the discovered roots, by ProcRoot path;
	// cfgIOs those of the configured roots, by root.
	rootIOs map[string]*rootIO
	cfgIOs  map[string]*rootIO

	statsMu sync.Mutex
	stats   Stats

	lock *os.File // flock on <StateFile>.lock while the follower lives

	// Hooks replaced by tests.
	listDir func(path string, fd, max int) ([]string, bool, error)
	now     func() time.Time
}

// New validates cfg and returns a Follower. It does no I/O on the logs:
// the first Poll discovers and reads them.
func New(cfg Config, logger *slog.Logger) (*Follower, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.RescanInterval <= 0 {
		cfg.RescanInterval = DefaultRescanInterval
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	for _, g := range cfg.ScreenGlobs {
		if _, err := filepath.Match(g, ""); err != nil {
			return nil, fmt.Errorf("screen log glob %q: %w", g, err)
		}
	}
	bufSize := readBufSize
	if 2*cfg.MaxLineBytes > bufSize {
		bufSize = 2 * cfg.MaxLineBytes
	}
	if cfg.MaxOpenFiles <= 0 {
		cfg.MaxOpenFiles = DefaultMaxOpenFiles()
	}
	if cfg.MaxPinnedPerProcess <= 0 {
		cfg.MaxPinnedPerProcess = DefaultMaxPinnedPerProcess
	}
	f := &Follower{
		maxOpen:  cfg.MaxOpenFiles,
		cfg:      cfg,
		log:      logger,
		byID:     make(map[fileID]*tracked),
		byPath:   make(map[string]*tracked),
		buf:      make([]byte, bufSize),
		problems: make(map[string]problem),
		listDir:  listDir,
		now:      time.Now,
	}
	f.maxDirs = orDefault(cfg.MaxDirsPerRoot, DefaultMaxDirsPerRoot)
	f.maxWatches = orDefault(cfg.MaxWatchesPerRoot, DefaultMaxWatchesPerRoot)
	f.maxEntries = orDefault(cfg.MaxEntriesPerRoot, DefaultMaxEntriesPerRoot)
	f.maxBytes = cfg.MaxBytesPerPoll
	if f.maxBytes <= 0 {
		f.maxBytes = DefaultMaxBytesPerPoll
	}
	f.ioDeadline = cfg.IODeadline
	if f.ioDeadline <= 0 {
		f.ioDeadline = DefaultIODeadline
	}
	f.rootIOs = make(map[string]*rootIO)
	f.cfgIOs = make(map[string]*rootIO, len(cfg.Roots))
	for _, r := range cfg.Roots {
		f.cfgIOs[r] = &rootIO{unbudgeted: true}
	}
	f.stats.ReadErrors = make(map[string]uint64)
	f.stats.LimitsReached = make(map[string]uint64)
	f.stats.Refused = make(map[string]uint64)
	if cfg.StateFile != "" {
		lock, err := lockState(cfg.StateFile)
		if err != nil {
			return nil, err
		}
		f.lock = lock
	}
	if !cfg.DisableNotify {
		w, err := newWatcher(logger)
		if err != nil {
			logger.Warn("inotify unavailable, polling log files instead", "err", err)
		} else {
			f.w = w
		}
	}
	return f, nil
}

// Close releases every descriptor and the notification watcher. Nothing is
// checkpointed: call Checkpoint first for a clean shutdown.
func (f *Follower) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	for _, t := range f.byID {
		f.closeFD(t)
	}
	for _, t := range f.orphans {
		f.closeFD(t)
	}
	if f.lock != nil {
		unlockState(f.lock)
	}
	if f.w != nil {
		return f.w.close()
	}
	return nil
}

// Poll reads every complete new line of every followed file since the last
// call and calls handle for each, in file order: files of one process in
// name (creation time) order, a rotated-away file before the file that
// replaced it. line excludes the newline and is valid only during the call.
// Problems with single files or directories are logged and counted, never
// returned: Poll fails only on a closed Follower.
func (f *Follower) Poll(handle func(file *File, line []byte)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	now := f.now()
	var c pollCounters
	f.pollSeq++
	rescan := !f.polled || !now.Before(f.nextScan)
	var hint *notifyHint
	if f.w != nil {
		hint = f.w.take()
		f.hint = hint
		defer func() { f.hint = nil }()
		if hint.overflow {
			rescan = true
		}
		if !rescan && f.applyHint(hint, &c) {
			rescan = true
		}
	}
	if rescan {
		f.rescan(now, &c)
		f.nextScan = now.Add(f.cfg.RescanInterval)
		f.polled = true
		if f.pending != nil && !f.hasDirProblems() && (f.procRootsSet || !f.cfg.AwaitProcRoots) && f.waiting == 0 {
			// Entries not matched by a few clean full scans belong to
			// files deleted while we were down. One scan is not enough: a
			// file renamed while it was listed (kubelet rotation) is only
			// found under its new name by the next one.
			f.pendingScans++
			if f.pendingScans >= pendingScans {
				f.countLost(f.pending, &c)
				f.pending = nil
			}
		}
	}

	// Orphans first: their data is older than what replaced them.
	if len(f.orphans) > 0 {
		kept := f.orphans[:0]
		for _, t := range f.orphans {
			if f.followOrphan(t, handle, now, &c) {
				kept = append(kept, t)
			}
		}
		clear(f.orphans[len(kept):])
		f.orphans = kept
	}
	var gone bool
	for _, t := range f.order {
		if t.life == lifeDrained {
			continue
		}
		switch t.h.state {
		case handleClosed:
			continue
		case handleWaiting:
			// Found while the budget was spent: open it now that reading
			// the files before it made some evictable.
			if !f.open(t, &c, dirRef{}) {
				continue
			}
			t.pos.changed = false
			if !f.check(t, handle, true, now, &c) {
				gone = true
			}
			continue
		}
		// A write event on a file whose size did not grow is a rewrite in
		// place (truncated and written again to the same length): check
		// looks at its content then, whatever the change time says.
		event := hint != nil && hint.changed[t.Path]&opWrite != 0
		if !t.sealed() && !t.pollAlways && !t.pos.capped {
			switch {
			case rescan:
				if !t.pos.changed && !event {
					continue // the scan's stat saw no change
				}
			case hint != nil && !hint.all:
				if _, ok := hint.files[t]; !ok {
					continue // no event for it
				}
			case (f.pollSeq+t.id.ino)%idleCheckEvery != 0 && now.Sub(t.lastChange) > idleAfter:
				// Polling without events: a file idle for a while is
				// looked at every idleCheckEvery-th Poll only (staggered),
				// which keeps the fstat cost of thousands of quiet files
				// down. Its descriptor stays open, so nothing is lost.
				continue
			}
		}
		t.pos.changed = false
		if !f.check(t, handle, event, now, &c) {
			gone = true
		}
	}
	if gone {
		f.order = slices.DeleteFunc(f.order, func(t *tracked) bool { return f.byID[t.id] != t })
	}
	f.flush(&c)
	return nil
}

// pollCounters accumulate one Poll's counts so that the stats mutex is
// taken once per Poll, not once per line.
type pollCounters struct {
	lines, bytes, truncLines, truncations, replaced uint64
	lost                                            uint64
	limitReached                                    uint64
	holeBytes, hung                                 uint64
	errs, limits, refusals                          map[string]uint64
}

func (c *pollCounters) err(reason string)     { c.errs = inc(c.errs, reason) }
func (c *pollCounters) limit(name string)     { c.limits = inc(c.limits, name) }
func (c *pollCounters) refused(reason string) { c.refusals = inc(c.refusals, reason) }

func inc(m map[string]uint64, k string) map[string]uint64 {
	if m == nil {
		m = make(map[string]uint64)
	}
	m[k]++
	return m
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func (f *Follower) flush(c *pollCounters) {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	s := &f.stats
	s.LinesRead += c.lines
	s.BytesRead += c.bytes
	s.TruncatedLines += c.truncLines
	s.Truncations += c.truncations
	s.Replacements += c.replaced
	s.FilesLost += c.lost
	s.OpenFilesLimitReached += c.limitReached
	s.OpenFilesLimit = f.maxOpen
	for k, v := range c.errs {
		s.ReadErrors[k] += v
	}
	for k, v := range c.limits {
		s.LimitsReached[k] += v
	}
	for k, v := range c.refusals {
		s.Refused[k] += v
	}
	s.HoleBytesSkipped += c.holeBytes
	s.HungCalls += c.hung
	s.FilesTracked = len(f.byID)
	s.FilesOpen = f.openFDs
	s.DirsUnreadable, s.RootsMissing = 0, 0
	for _, p := range f.problems {
		switch p.reason {
		case reasonRootMissing:
			s.RootsMissing++
		case reasonDirUnreadable:
			s.DirsUnreadable++
		}
	}
	s.Notify = f.w != nil
	if f.w != nil {
		s.Watches = f.w.count()
	}
}

// check follows one live file: detects deletion, truncation and growth and
// reads what is new. It returns false when the file was dropped.
func (f *Follower) check(t *tracked, handle func(*File, []byte), event bool, now time.Time, c *pollCounters) bool {
	t.checkedAt = f.pollSeq
	var st syscall.Stat_t
	if err := f.fstatT(t, &st, c); err != nil {
		if err != errHung {
			f.fileErr(t, "stat", err, c)
		}
		return true
	}
	if st.Nlink == 0 {
		// Deleted (CANN removed the oldest file of a pid): read to the end
		// through the descriptor we still hold, then let go.
		f.readFile(t, handle, true, c)
		if t.pos.capped {
			// Past the byte cap: read on as an orphan by the next Polls.
			f.forget(t)
			t.life, t.lastChange = lifeOrphan, now
			f.orphans = append(f.orphans, t)
			return false
		}
		f.untrack(t)
		t.life = lifeOrphan
		return false
	}
	f.readIfChanged(t, &st, event, handle, now, c)
	switch {
	case t.life == lifeSealed && !t.pos.behind():
		// A newer file of this pid exists, so CANN will not write here
		// again: a partial last line is final.
		f.finish(t, handle, c)
		f.closeFD(t)
		t.life = lifeDrained
	case t.pos.caughtUp() && now.Sub(t.lastChange) >= idleClose && !f.pinned(t):
		// Idle and read to its end (a partial last line included: it is
		// read again from offset once the file grows).
		f.closeFD(t)
	}
	return true
}

// readIfChanged handles truncation, rewrites and growth given the file's
// current status. event says inotify reported a write since the last look.
func (f *Follower) readIfChanged(t *tracked, st *syscall.Stat_t, event bool, handle func(*File, []byte), now time.Time, c *pollCounters) {
	size := st.Size
	switch {
	case t.pos.readPast(size):
		f.truncated(t, size, c)
	case size == t.pos.scanned && size > 0 && (event || st.Ctim != t.ctime) && f.rewrittenInPlace(t, c):
		// Written without growing: an appending writer always grows the
		// file, so this is a truncate-and-rewrite to the same length.
		f.truncated(t, size, c)
	}
	t.ctime = st.Ctim
	t.pos.size = size
	if size > t.pos.scanned {
		t.lastChange = now
		f.readFile(t, handle, false, c)
	}
}

// truncated restarts a file that shrank (or was rewritten) at its start.
func (f *Follower) truncated(t *tracked, size int64, c *pollCounters) {
	f.log.Info("log file truncated, reading it again from the start", "path", t.Path, "size", size, "offset", t.pos.offset)
	c.truncations++
	t.pos.restart()
	t.prefix, t.fpLen, t.fpHash = nil, 0, 0
	t.tailLen, t.tailHash = 0, 0
	f.dirty = true
}

// rewrittenInPlace reports whether the bytes already read changed: the
// leading bytes or those just before the offset no longer match their
// fingerprints. A file whose change time moved without growing (or with an
// event saying it was written) is checked this way; it costs at most two
// preads of fpSize bytes. A rewrite that keeps both the first and the last
// read bytes identical cannot be told from no change at all.
func (f *Follower) rewrittenInPlace(t *tracked, c *pollCounters) bool {
	if f.headChanged(t, c) {
		return true
	}
	if t.tailLen > 0 && int64(t.tailLen) <= t.pos.offset {
		m, err := f.preadT(t, f.buf[:t.tailLen], t.pos.offset-int64(t.tailLen), c)
		if err == nil && (m < t.tailLen || fingerprint(f.buf[:m]) != t.tailHash) {
			return true
		}
	}
	return false
}

// followOrphan reads a file that no followed name reaches any more (renamed
// by the kubelet, replaced, or deleted). It returns false once the file is
// drained and dropped.
func (f *Follower) followOrphan(t *tracked, handle func(*File, []byte), now time.Time, c *pollCounters) bool {
	if !t.h.isOpen() {
		return false
	}
	var st syscall.Stat_t
	if err := f.fstatT(t, &st, c); err == errHung {
		return true // its root does not answer: keep it as it is
	} else if err != nil {
		f.fileErr(t, "stat", err, c)
		f.closeFD(t)
		return false
	}
	f.readIfChanged(t, &st, false, handle, now, c)
	if t.pos.capped {
		return true // past the byte cap: more next Poll
	}
	if st.Nlink == 0 || now.Sub(t.lastChange) >= orphanRetire {
		f.finish(t, handle, c)
		if t.pos.capped {
			return true
		}
		f.closeFD(t)
		return false
	}
	return true
}

// finish delivers a partial last line of a file that will not grow again.
func (f *Follower) finish(t *tracked, handle func(*File, []byte), c *pollCounters) {
	if t.pos.partial() {
		f.readFile(t, handle, true, c)
	}
}

// untrack forgets a live file and closes it.
func (f *Follower) untrack(t *tracked) {
	f.forget(t)
	f.closeFD(t)
}

// forget drops a live file from the maps of followed names.
func (f *Follower) forget(t *tracked) {
	if f.byID[t.id] == t {
		delete(f.byID, t.id)
	}
	if f.byPath[t.Path] == t {
		delete(f.byPath, t.Path)
	}
	f.dirty = true
}

// readFile reads t from its offset to the end and delivers complete lines.
// With final set, a partial last line is delivered too.
func (f *Follower) readFile(t *tracked, handle func(*File, []byte), final bool, c *pollCounters) {
	if f.readFrom(t, handle, final, c) {
		f.truncated(t, -1, c)
		f.readFrom(t, handle, final, c)
	}
}

// readFrom does the work of readFile. It reports true, having read
// nothing, when the file was truncated and written again past our offset
// between two looks (copytruncate), which its size cannot show: its
// leading bytes no longer match the fingerprint taken when they were read,
// or the byte before the offset is not the newline that ended the last
// line read. The newline check alone misses a rewrite whose lines have the
// lengths of the old ones; the head check costs one pread of at most
// fpSize bytes per read, not per line.
func (f *Follower) readFrom(t *tracked, handle func(*File, []byte), final bool, c *pollCounters) (rewritten bool) {
	if !t.h.isOpen() {
		return false
	}
	if t.pos.offset > 0 && f.headChanged(t, c) {
		return true
	}
	r := reader{f: f, t: t, handle: handle, c: c, buf: f.buf, pos: t.pos.offset, start: t.pos.offset, size: t.pos.size}
	if t.rio != nil {
		// A discovered root's read gets a buffer of its own: an
		// abandoned read keeps it (see rootio.go).
		r.buf = getReadBuf(len(f.buf))
		defer func() {
			if !r.abandoned {
				putReadBuf(r.buf)
			}
		}()
	}
	r.tl, r.tlNL = t.tailCheck()
	for {
		r.skipHole()
		m, want, rewritten, err := r.fill()
		if rewritten {
			return true
		}
		if err == errHung {
			r.abandoned = true
			break // its root does not answer: what was read is delivered
		}
		if err != nil {
			f.fileErr(t, "read", err, c)
			break
		}
		r.deliver()
		if m < want {
			break // a short read of a regular file means its end
		}
		if r.read >= f.maxBytes {
			// Enough of this file for one Poll: the rest is read by
			// the next one, after every other file had its turn.
			r.more = true
			c.limit(limitBytes)
			break
		}
	}
	r.finish(final)
	return false
}

// reader is one readFrom: the bytes of buf are the file's from pos on.
type reader struct {
	f      *Follower
	t      *tracked
	handle func(*File, []byte)
	c      *pollCounters
	buf    []byte
	pos    int64 // file offset of buf[0]
	n      int   // valid bytes in buf
	start  int64 // t.pos.offset when the read began
	read   int64 // bytes read so far
	more   bool  // stopped at the byte cap, not at the end
	// abandoned: a read on buf was abandoned and may still write to it.
	abandoned bool
	// dataEnd is where the data region being read ends (SEEK_HOLE): reads
	// stop there, so that no hole is read as NULs.
	dataEnd int64
	// size is the file's size at the look before this read.
	size int64
	// nulEnd: the last chunk ended in a NUL, perhaps a hole's first.
	nulEnd bool
	// tl bytes before pos are read again with the first chunk and checked
	// against the tail fingerprint (or, tlNL, must be the newline that
	// ended the last line).
	tl   int
	tlNL bool
}

// headChanged reports whether the file's leading bytes no longer match
// their fingerprint: it was truncated and written again.
func (f *Follower) headChanged(t *tracked, c *pollCounters) bool {
	if t.fpLen == 0 {
		return false
	}
	m, err := f.preadT(t, f.buf[:t.fpLen], 0, c)
	return err == nil && (m < t.fpLen || fingerprint(f.buf[:m]) != t.fpHash)
}

// tailCheck says what of the bytes just before the offset the next read
// checks: their fingerprint, or at least the newline that ended the last
// line.
func (t *tracked) tailCheck() (tl int, tlNL bool) {
	if t.pos.offset == 0 {
		return 0, false
	}
	if t.tailLen > 0 && int64(t.tailLen) <= t.pos.offset {
		return t.tailLen, false
	}
	if t.pos.newlineBefore() {
		return 1, true
	}
	return 0, false
}

// skipHole looks, when the read reaches the end of a data region, for the
// next one (SEEK_DATA, SEEK_HOLE: two lseeks per read of a file without
// holes). A hole of at least MaxLineBytes is skipped, not read: its NULs
// would make one over-long line, so the line it falls in is delivered cut
// to what precedes the hole (and counted) and the rest of it, up to the
// next newline, is skipped. A 10 GB hole costs no read. Smaller holes are
// read as they are.
func (r *reader) skipHole() {
	at := r.pos + int64(r.n)
	if at < r.dataEnd {
		return
	}
	t := r.t
	r.dataEnd = math.MaxInt64 // unknown: read on
	if r.size-at <= int64(len(r.buf)) && !r.nulEnd {
		// Less than a buffer to read and no NUL seen: an append, the
		// common case, costs no lseek. A hole there is read as NULs,
		// and the NUL that ends the chunk brings us back here.
		return
	}
	r.nulEnd = false
	d, err := r.f.seekT(t, at, unix.SEEK_DATA, r.c)
	if err == unix.ENXIO {
		// No data at or past at when the kernel looked: a hole up to the
		// size the last look saw (taken before this call: asking for the
		// size now would count bytes appended since as hole), or the end.
		d, err = at, nil
		if r.size > at {
			d = r.size
		}
	}
	if err != nil {
		return
	}
	if d > at && (t.pos.inLongLine() || d-at >= int64(r.f.cfg.MaxLineBytes)) {
		// Holes start on block boundaries: NULs just before one are the
		// rest of its block, not text.
		if head := bytes.TrimRight(r.buf[:r.n], "\x00"); len(head) > 0 && !t.pos.inLongLine() {
			r.c.lines++
			r.c.truncLines++
			r.handle(&t.File, head[:min(len(head), r.f.cfg.MaxLineBytes)])
		}
		r.c.holeBytes += uint64(d - at)
		r.pos, r.n, r.tl = d, 0, 0
		t.pos.at = posInLongLine     // the hole's line ends at the next newline
		t.tailLen, t.tailHash = 0, 0 // no byte read ends at pos now
		at = d
	}
	if h, err := r.f.seekT(t, max(d, at), unix.SEEK_HOLE, r.c); err == nil && h > at {
		r.dataEnd = h
	}
}

// fill reads the next chunk into buf after the bytes waiting there. It
// reports rewritten when the tail check failed.
func (r *reader) fill() (m, want int, rewritten bool, err error) {
	t := r.t
	want = len(r.buf) - r.n
	if r.tl > 0 {
		want -= r.tl
	}
	if left := r.dataEnd - (r.pos + int64(r.n)); left < int64(want) {
		want = int(max(left, 1))
	}
	if r.tl > 0 {
		m, err = r.pread(r.buf[:r.tl+want], r.pos-int64(r.tl))
		if err == nil && m > 0 {
			if m < r.tl || (r.tlNL && r.buf[0] != '\n') || (!r.tlNL && fingerprint(r.buf[:r.tl]) != t.tailHash) {
				return 0, 0, true, nil
			}
			copy(r.buf, r.buf[r.tl:m])
			m -= r.tl
		}
		r.tl = 0
	} else {
		m, err = r.pread(r.buf[r.n:r.n+want], r.pos+int64(r.n))
	}
	if err != nil {
		return m, want, false, err
	}
	if t.prefix != nil || t.fpLen == 0 {
		t.addPrefix(r.buf[r.n:r.n+m], r.pos+int64(r.n))
	}
	if m > 0 && r.buf[r.n+m-1] == 0 {
		r.nulEnd, r.dataEnd = true, 0 // look for a hole before reading on
	}
	r.n += m
	r.read += int64(m)
	r.c.bytes += uint64(m)
	return m, want, false, nil
}

func (r *reader) pread(p []byte, off int64) (int, error) {
	if r.t.rio == nil {
		return pread(r.t.h.sysfd(), p, off)
	}
	return r.f.preadVia(r.t, p, off, r.c, true)
}

// deliver hands every complete line in buf to the handler, cuts an
// over-long one, and keeps a partial last line at buf's start.
func (r *reader) deliver() {
	t, c, buf, n := r.t, r.c, r.buf, r.n
	maxLine := r.f.cfg.MaxLineBytes
	start := 0
	for start < n {
		i := bytes.IndexByte(buf[start:n], '\n')
		if i < 0 {
			break
		}
		line := buf[start : start+i]
		start += i + 1
		if t.pos.inLongLine() {
			t.pos.at = posLineStart // its newline: the next line starts
			continue
		}
		if len(line) > maxLine {
			line = line[:maxLine]
			c.truncLines++
		}
		c.lines++
		r.handle(&t.File, line)
	}
	rest := n - start
	switch {
	case t.pos.inLongLine():
		// Inside an over-long line whose head went out: drop the rest.
		start = n
		rest = 0
	case rest >= maxLine:
		r.handle(&t.File, buf[start:start+maxLine])
		c.lines++
		c.truncLines++
		t.pos.at = posInLongLine
		start = n
		rest = 0
	}
	if start > 0 {
		t.setTail(buf[:start])
		copy(buf, buf[start:n])
		r.pos += int64(start)
		r.n = rest
	}
}

// finish moves the file's offsets to what was delivered. With final set
// (and the end reached), a partial last line is delivered too.
func (r *reader) finish(final bool) {
	t, c, buf, n := r.t, r.c, r.buf, r.n
	maxLine := r.f.cfg.MaxLineBytes
	p := &t.pos
	if r.pos != r.start && p.at == posAfterFinal {
		p.at = posLineStart // a newline was consumed
	}
	p.offset = r.pos
	p.scanned = r.pos + int64(n)
	p.capped = r.more
	switch {
	case !final || r.more:
	case n > 0 && !p.inLongLine():
		p.at = posAfterFinal
		c.lines++
		line := buf[:n]
		if len(line) > maxLine {
			line = line[:maxLine]
			c.truncLines++
		}
		r.handle(&t.File, line)
		p.offset = p.scanned
		t.setTail(buf[:n])
	case p.inLongLine():
		p.offset = p.scanned
		p.at = posAfterFinal
	}
	if p.offset != r.start {
		r.f.dirty = true
	}
}

// addPrefix records the leading bytes of a file for its fingerprint.
func (t *tracked) addPrefix(chunk []byte, at int64) {
	l := int64(len(t.prefix))
	if l >= fpSize || at > l || at+int64(len(chunk)) <= l {
		return
	}
	need := min(int64(fpSize)-l, at+int64(len(chunk))-l)
	t.prefix = append(t.prefix, chunk[l-at:l-at+need]...)
	t.fpLen = len(t.prefix)
	t.fpHash = fingerprint(t.prefix)
	if t.fpLen == fpSize {
		t.prefix = nil // hash kept, bytes no longer needed
	}
}

// setTail fingerprints the bytes that end at the new offset.
func (t *tracked) setTail(before []byte) {
	if len(before) > fpSize {
		before = before[len(before)-fpSize:]
	}
	t.tailLen, t.tailHash = len(before), fingerprint(before)
}

// fingerprint is 64-bit FNV-1a (the hash the state file stores), written
// out so that hashing at every read allocates nothing.
func fingerprint(b []byte) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime64
	}
	return h
}

// fileErr counts an error on one file and logs it when it differs from the
// last one logged for that file.
func (f *Follower) fileErr(t *tracked, reason string, err error, c *pollCounters) {
	c.err(reason)
	msg := reason + ": " + err.Error()
	if msg != t.errMsg {
		t.errMsg = msg
		f.log.Warn("cannot read log file", "path", t.Path, "op", reason, "err", err)
	}
}

func seek(fd int, off int64, whence int) (int64, error) {
	for {
		d, err := unix.Seek(fd, off, whence)
		if err != unix.EINTR {
			return d, err
		}
	}
}

func pread(fd int, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Pread(fd, p, off)
		if err == syscall.EINTR {
			continue
		}
		if n < 0 {
			n = 0
		}
		return n, err
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstat(fd, st)
		if err != syscall.EINTR {
			return err
		}
	}
}

// openVerifiedAt opens the file at names (by path where at is not set:
// screen logs, whose kubelet links are followed) and checks it is a
// regular file, the one identified by id, before anything is read.
func openVerifiedAt(at dirRef, path string, id fileID) (int, syscall.Stat_t, error) {
	var st syscall.Stat_t
	var fd int
	var err error
	if at.set() {
		fd, err = at.open()
	} else {
		fd, err = syscall.Open(path, fileOpenFlags&^syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return -1, st, err
	}
	if err := fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return -1, st, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		_ = syscall.Close(fd)
		return -1, st, errNotRegular
	}
	if id != (fileID{}) && (fileID{uint64(st.Dev), uint64(st.Ino)}) != id {
		_ = syscall.Close(fd)
		return -1, st, errReplaced
	}
	return fd, st, nil
}

var (
	errNotRegular = errors.New("not a regular file")
	errReplaced   = errors.New("replaced by another file")
)

// hasDirPrefix reports whether path lies below dir.
func hasDirPrefix(path, dir string) bool {
	return strings.HasPrefix(path, dir) && len(path) > len(dir) && (path[len(dir)] == filepath.Separator || strings.HasSuffix(dir, string(filepath.Separator)))
}

func (f *Follower) hasDirProblems() bool {
	for _, p := range f.problems {
		if p.reason != reasonGlobEmpty && p.reason != reasonRefused {
			return true
		}
	}
	return false
}
