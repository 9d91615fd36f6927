package tail

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
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
	fd int // -1 when closed

	// offset is the first byte not yet delivered: a line start, or the
	// position reached inside an over-long line (skipping). Only offset is
	// saved; bytes between offset and scanned are a partial line that is
	// read again once its newline arrives.
	offset   int64
	scanned  int64
	skipping bool

	group   string // CANN rotation group; empty for screen logs
	sortKey string // read order
	sealed  bool   // CANN: a newer file of the group exists, no more writes
	done    bool   // drained and closed for good (sealed or retired)
	orphan  bool   // no longer reachable under a followed name
	// pollAlways: reached through a symlink, whose directory's events say
	// nothing about the target, so it is checked on every Poll.
	pollAlways bool
	// midLine: offset is not at a line start (a partial last line was
	// delivered as final), so rewritten cannot check the byte before it.
	midLine bool
	// changed: the last scan saw a size other than what was read.
	changed bool
	// size is the size at the last look; with offset == scanned == size
	// the file is fully read and its descriptor may go to the budget.
	size int64
	// wantOpen: the file needs a descriptor the budget could not give yet;
	// Poll opens it as soon as one is free. fresh: saved offsets were not
	// applied to it yet (it was never opened).
	wantOpen bool
	fresh    bool
	// missed counts rescans a closed file was not found by (see lose).
	missed int

	lastChange time.Time
	seen       uint64 // rescan generation

	prefix []byte // leading bytes until fpSize are known
	fpLen  int
	fpHash uint64
	// tailLen and tailHash fingerprint the bytes just before offset (at
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
	waiting      int // tracked files with wantOpen
	pollSeq      uint64
	w            *watcher
	// procRoots are the per-process roots of SetProcRoots; procRootsSet
	// says it was called.
	procRoots    []ProcRoot
	procRootsSet bool

	statsMu sync.Mutex
	stats   Stats

	lock *os.File // flock on <StateFile>.lock while the follower lives

	// Hooks replaced by tests.
	readDir func(string) ([]fs.DirEntry, error)
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
		readDir:  os.ReadDir,
		now:      time.Now,
	}
	f.stats.ReadErrors = make(map[string]uint64)
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
		_ = f.lock.Close() // releases the flock
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
		if hint.overflow {
			rescan = true
		}
		if !rescan && f.applyHint(hint, now, &c) {
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
		if t.done {
			continue
		}
		if t.fd < 0 {
			if !t.wantOpen {
				continue
			}
			// Found while the budget was spent: open it now that reading
			// the files before it made some evictable.
			if !f.open(t, &c) {
				continue
			}
			t.changed = false
			if !f.check(t, handle, true, now, &c) {
				gone = true
			}
			continue
		}
		// A write event on a file whose size did not grow is a rewrite in
		// place (truncated and written again to the same length): check
		// looks at its content then, whatever the change time says.
		event := hint != nil && hint.changed[t.Path]&opWrite != 0
		if !t.sealed && !t.pollAlways {
			switch {
			case rescan:
				if !t.changed && !event {
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
		t.changed = false
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
	limitReached                                    uint64
	errs                                            map[string]uint64
}

func (c *pollCounters) err(reason string) {
	if c.errs == nil {
		c.errs = make(map[string]uint64)
	}
	c.errs[reason]++
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
	s.OpenFilesLimitReached += c.limitReached
	s.OpenFilesLimit = f.maxOpen
	for k, v := range c.errs {
		s.ReadErrors[k] += v
	}
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
	var st syscall.Stat_t
	if err := fstat(t.fd, &st); err != nil {
		f.fileErr(t, "stat", err, c)
		return true
	}
	if st.Nlink == 0 {
		// Deleted (CANN removed the oldest file of a pid): read to the end
		// through the descriptor we still hold, then let go.
		f.readFile(t, handle, true, c)
		f.untrack(t)
		t.orphan = true
		return false
	}
	f.readIfChanged(t, &st, event, handle, now, c)
	switch {
	case t.sealed && t.scanned >= st.Size:
		// A newer file of this pid exists, so CANN will not write here
		// again: a partial last line is final.
		f.finish(t, handle, c)
		f.closeFD(t)
		t.done = true
	case t.offset == st.Size && now.Sub(t.lastChange) >= idleClose && !f.pinned(t):
		f.closeFD(t)
	}
	return true
}

// readIfChanged handles truncation, rewrites and growth given the file's
// current status. event says inotify reported a write since the last look.
func (f *Follower) readIfChanged(t *tracked, st *syscall.Stat_t, event bool, handle func(*File, []byte), now time.Time, c *pollCounters) {
	size := st.Size
	switch {
	case size < t.scanned || size < t.offset:
		f.truncated(t, size, c)
	case size == t.scanned && size > 0 && (event || st.Ctim != t.ctime) && f.rewrittenInPlace(t):
		// Written without growing: an appending writer always grows the
		// file, so this is a truncate-and-rewrite to the same length.
		f.truncated(t, size, c)
	}
	t.ctime = st.Ctim
	t.size = size
	if size > t.scanned {
		t.lastChange = now
		f.readFile(t, handle, false, c)
	}
}

// truncated restarts a file that shrank (or was rewritten) at its start.
func (f *Follower) truncated(t *tracked, size int64, c *pollCounters) {
	f.log.Info("log file truncated, reading it again from the start", "path", t.Path, "size", size, "offset", t.offset)
	c.truncations++
	t.offset, t.scanned, t.skipping, t.midLine = 0, 0, false, false
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
func (f *Follower) rewrittenInPlace(t *tracked) bool {
	if t.fpLen > 0 {
		m, err := pread(t.fd, f.buf[:t.fpLen], 0)
		if err == nil && (m < t.fpLen || fingerprint(f.buf[:m]) != t.fpHash) {
			return true
		}
	}
	if t.tailLen > 0 && int64(t.tailLen) <= t.offset {
		m, err := pread(t.fd, f.buf[:t.tailLen], t.offset-int64(t.tailLen))
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
	if t.fd < 0 {
		return false
	}
	var st syscall.Stat_t
	if err := fstat(t.fd, &st); err != nil {
		f.fileErr(t, "stat", err, c)
		f.closeFD(t)
		return false
	}
	f.readIfChanged(t, &st, false, handle, now, c)
	if st.Nlink == 0 || now.Sub(t.lastChange) >= orphanRetire {
		f.finish(t, handle, c)
		f.closeFD(t)
		return false
	}
	return true
}

// finish delivers a partial last line of a file that will not grow again.
func (f *Follower) finish(t *tracked, handle func(*File, []byte), c *pollCounters) {
	if t.scanned > t.offset {
		f.readFile(t, handle, true, c)
	}
}

// untrack forgets a live file (it stays followed as an orphan if it still
// has a descriptor and was not drained).
func (f *Follower) untrack(t *tracked) {
	if f.byID[t.id] == t {
		delete(f.byID, t.id)
	}
	if f.byPath[t.Path] == t {
		delete(f.byPath, t.Path)
	}
	f.closeFD(t)
	f.dirty = true
}

func (f *Follower) closeFD(t *tracked) {
	if t.wantOpen {
		t.wantOpen = false
		f.waiting--
	}
	if t.fd >= 0 {
		_ = syscall.Close(t.fd)
		t.fd = -1
		f.openFDs--
	}
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
	if t.fd < 0 {
		return false
	}
	if t.offset > 0 && t.fpLen > 0 {
		m, err := pread(t.fd, f.buf[:t.fpLen], 0)
		if err == nil && (m < t.fpLen || fingerprint(f.buf[:m]) != t.fpHash) {
			return true
		}
	}
	// The bytes just before the offset must still be those read there
	// (their fingerprint), or at least the newline that ended the last line.
	tl, tlNL := 0, false
	if t.offset > 0 {
		if t.tailLen > 0 && int64(t.tailLen) <= t.offset {
			tl = t.tailLen
		} else if !t.skipping && !t.midLine {
			tl, tlNL = 1, true
		}
	}
	buf := f.buf
	maxLine := f.cfg.MaxLineBytes
	pos := t.offset // file offset of buf[0]
	n := 0          // valid bytes in buf
	startOffset := t.offset
	for {
		want := len(buf) - n
		var m int
		var err error
		if tl > 0 {
			m, err = pread(t.fd, buf, pos-int64(tl))
			if err == nil && m > 0 {
				if m < tl || (tlNL && buf[0] != '\n') || (!tlNL && fingerprint(buf[:tl]) != t.tailHash) {
					return true
				}
				copy(buf, buf[tl:m])
				m -= tl
			}
			want -= tl
			tl = 0
		} else {
			m, err = pread(t.fd, buf[n:], pos+int64(n))
		}
		if err != nil {
			f.fileErr(t, "read", err, c)
			break
		}
		if t.prefix != nil || t.fpLen == 0 {
			t.addPrefix(buf[n:n+m], pos+int64(n))
		}
		n += m
		c.bytes += uint64(m)
		start := 0
		for start < n {
			i := bytes.IndexByte(buf[start:n], '\n')
			if i < 0 {
				break
			}
			line := buf[start : start+i]
			start += i + 1
			if t.skipping {
				t.skipping = false
				continue
			}
			if len(line) > maxLine {
				line = line[:maxLine]
				c.truncLines++
			}
			c.lines++
			handle(&t.File, line)
		}
		rest := n - start
		switch {
		case t.skipping:
			// Inside an over-long line whose head went out: drop the rest.
			start = n
			rest = 0
		case rest >= maxLine:
			handle(&t.File, buf[start:start+maxLine])
			c.lines++
			c.truncLines++
			t.skipping = true
			start = n
			rest = 0
		}
		if start > 0 {
			t.setTail(buf[:start])
			copy(buf, buf[start:n])
			pos += int64(start)
			n = rest
		}
		if m < want {
			// A short read of a regular file means its end.
			break
		}
	}
	if pos != startOffset {
		t.midLine = false // a newline was consumed
	}
	t.offset = pos
	t.scanned = pos + int64(n)
	if final && n > 0 && !t.skipping {
		t.midLine = true
		c.lines++
		line := buf[:n]
		if len(line) > maxLine {
			line = line[:maxLine]
			c.truncLines++
		}
		handle(&t.File, line)
		t.offset = t.scanned
		t.setTail(buf[:n])
	} else if final && t.skipping {
		t.offset = t.scanned
		t.skipping = false
		t.midLine = true
	}
	if t.offset != startOffset {
		f.dirty = true
	}
	return false
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

// openVerified opens path and checks it is still the file identified by id.
func openVerified(path string, id fileID) (int, syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
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
		if p.reason != reasonGlobEmpty {
			return true
		}
	}
	return false
}
