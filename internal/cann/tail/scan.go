package tail

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Problem reasons, also the keys of Stats.ReadErrors for directory trouble.
const (
	reasonRootMissing   = "root_missing"
	reasonDirUnreadable = "dir_unreadable"
	reasonGlobEmpty     = "glob_empty" // logged, not an error
)

// ReadErrorReasons lists every key Stats.ReadErrors can hold, so that a
// collector can export all of them from the start (at 0). state_file is a
// state file that could not be read back; failed writes are counted apart
// (Stats.StateWriteErrors).
var ReadErrorReasons = []string{reasonRootMissing, reasonDirUnreadable, "open", "stat", "read", "state_file"}

type problem struct {
	reason string
	err    string
}

// scanCtx carries one rescan's bookkeeping.
type scanCtx struct {
	gen      uint64
	now      time.Time
	c        *pollCounters
	problems map[string]problem
	changed  bool // the set or names of followed files changed
	// only and root are set while a ProcRoot is walked: only files of
	// pid only are followed, and they carry root (File.ProcRoot); rio is
	// its worker.
	only int
	root string
	// rio is the worker of the root being walked and croot that root
	// (nil while screen logs are listed).
	rio   *rootIO
	croot *cannRoot
}

// rescan lists every root and glob, follows new files, notices renamed,
// replaced and vanished ones, and reports directory problems when their
// state changes.
func (f *Follower) rescan(now time.Time, c *pollCounters) {
	f.gen++
	sc := &scanCtx{gen: f.gen, now: now, c: c, problems: make(map[string]problem)}
	if f.w != nil {
		f.w.beginScan()
		defer f.w.endScan()
	}
	for _, root := range f.cfg.Roots {
		// Watch the root's parent (or, while that is missing too, its
		// nearest existing ancestor): a root deleted and created again,
		// or created late, is then an event and not a wait for the next
		// rescan. Its events ask for a rescan only for directories.
		f.watchAncestor(root)
		rio := f.cfgIOs[root]
		if rio.hung.Load() {
			// Its file system does not answer: its files wait as they are.
			f.keepBelow(root, sc.gen)
			continue
		}
		var st syscall.Stat_t
		var err error
		if !f.call(rio, sc.c, func() { err = syscall.Stat(root, &st) }, nil) {
			f.keepBelow(root, sc.gen)
			continue
		}
		if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				sc.problems[root] = problem{reasonRootMissing, "does not exist"}
			case err == nil:
				sc.problems[root] = problem{reasonDirUnreadable, "not a directory"}
				f.keepBelow(root, sc.gen)
			default:
				sc.problems[root] = problem{reasonDirUnreadable, err.Error()}
				f.keepBelow(root, sc.gen)
			}
			continue
		}
		sc.rio, sc.croot = rio, &cannRoot{path: root}
		f.walkRoot(root, "", "", false, cannSortDirs, sc)
		sc.rio, sc.croot = nil, nil
	}
	f.scanProcRoots(sc)
	for _, g := range f.cfg.ScreenGlobs {
		// Watch before listing, so a file created in between is not missed.
		f.watchGlobDirs(g)
		// g+"*" also lists kubelet rotations (0.log -> 0.log.<time>) of
		// matching files, so a file renamed while the exporter was down is
		// still found and resumed, not lost. Compressed ones are skipped.
		matches, _ := filepath.Glob(g + "*") // the pattern was validated by New
		n := 0
		for _, m := range matches {
			if strings.HasSuffix(m, ".gz") {
				continue
			}
			if ok, _ := filepath.Match(g, m); !ok {
				base, rotated := kubeletRotated(m)
				if !rotated {
					continue
				}
				if ok, _ := filepath.Match(g, base); !ok {
					continue
				}
			}
			n++
			f.consider(m, KindScreen, 0, dirRef{}, sc)
			f.watchDir(filepath.Dir(m))
		}
		if n == 0 {
			sc.problems[g] = problem{reasonGlobEmpty, "matches no file"}
		}
	}
	// Files no name reached this time.
	for _, t := range f.byID {
		if t.seen != sc.gen && !f.stillThere(t, sc.c) {
			f.lose(t, sc)
		}
	}
	if sc.changed {
		f.reorder(sc.c)
	}
	f.reportProblems(sc)
}

// watchAncestor watches the nearest existing directory above path.
func (f *Follower) watchAncestor(path string) {
	if f.w == nil {
		return
	}
	for d := filepath.Dir(filepath.Clean(path)); ; d = filepath.Dir(d) {
		if isDir(d) {
			f.w.add(d)
			return
		}
		if d == filepath.Dir(d) {
			return
		}
	}
}

// watchGlobDirs watches every existing directory the directory part of a
// screen-log glob can match, level by level: for /var/log/pods/*/*/*.log,
// /var/log/pods, each pod directory and each container directory. A new
// pod directory (or the first file of a directory that matched nothing)
// then raises an event at once instead of waiting for the next rescan,
// which a pod that logs EI0011 and is deleted quickly could outlive.
func (f *Follower) watchGlobDirs(g string) {
	if f.w == nil {
		return
	}
	for _, d := range globDirs(g) {
		f.w.add(d)
	}
}

// globDirs lists the existing directories at every level of the directory
// part of pattern g: its fixed prefix, then what each further component
// matches.
func globDirs(g string) []string {
	dir := filepath.Dir(filepath.Clean(g))
	parts := strings.Split(dir, string(filepath.Separator))
	fixed := 0
	for fixed < len(parts) && !hasMeta(parts[fixed]) {
		fixed++
	}
	prefix := strings.Join(parts[:fixed], string(filepath.Separator))
	if prefix == "" {
		prefix = string(filepath.Separator)
		if !filepath.IsAbs(dir) {
			prefix = "."
		}
	}
	if !isDir(prefix) {
		return nil
	}
	out := []string{prefix}
	level := []string{prefix}
	for _, part := range parts[fixed:] {
		var next []string
		for _, d := range level {
			matches, _ := filepath.Glob(filepath.Join(globEscape(d), part))
			for _, m := range matches {
				if isDir(m) {
					next = append(next, m)
				}
			}
		}
		out = append(out, next...)
		level = next
		if len(level) == 0 {
			break
		}
	}
	return out
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// globEscape quotes the metacharacters of a literal path for filepath.Glob.
func globEscape(s string) string {
	if !hasMeta(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isDir(path string) bool {
	var st syscall.Stat_t
	return syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

// keepBelow marks the files under an unreadable directory as seen, so that
// they are neither dropped nor, once the directory is readable again, read
// a second time from the start.
func (f *Follower) keepBelow(dir string, gen uint64) {
	for _, t := range f.byID {
		if hasDirPrefix(t.Path, dir) {
			t.seen = gen
		}
	}
}

// stillThere reports whether an unseen file is still at its path (a glob
// can miss it when a directory is momentarily unreadable).
func (f *Follower) stillThere(t *tracked, c *pollCounters) bool {
	var st syscall.Stat_t
	if err := f.statPath(t, t.Path, &st, c); err == errHung {
		return true // its root does not answer: keep it as it is
	} else if err != nil {
		return false
	}
	return (fileID{uint64(st.Dev), uint64(st.Ino)}) == t.id
}

// consider follows path if it is a new file, or updates what is known of
// a followed one.
func (f *Follower) consider(path string, kind Kind, pid int, at dirRef, sc *scanCtx) {
	st, ok := f.statCandidate(path, at, sc)
	if !ok {
		return
	}
	id := fileID{uint64(st.Dev), uint64(st.Ino)}
	if t := f.byID[id]; t != nil && !t.h.isOpen() && t.seen != sc.gen {
		f.recheckClosed(t, path, st.Size, sc)
	}
	switch t := f.byID[id]; {
	case t != nil:
		f.refresh(t, path, &st, at, sc)
	case f.adoptOrphan(id, path, sc):
	default:
		f.follow(path, kind, pid, id, &st, at, sc)
	}
}

// statCandidate stats a name a listing found (from its directory's
// descriptor where at is set) and reports whether it is a regular file.
func (f *Follower) statCandidate(path string, at dirRef, sc *scanCtx) (syscall.Stat_t, bool) {
	var st syscall.Stat_t
	var err error
	if at.set() {
		if !f.call(sc.rio, sc.c, func() { err = at.stat(&st) }, nil) {
			return st, false
		}
	} else {
		err = syscall.Stat(path, &st)
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.c.err("stat")
			f.log.Debug("cannot stat log file", "path", path, "err", err)
		}
		return st, false
	}
	if at.set() && st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		// A link where CANN writes a log: not followed (it could name any
		// file of the host, or a hung file system).
		sc.c.refused(refusedSymlink)
		sc.problems[path] = problem{reasonRefused, "a symlink where CANN writes a log file"}
	}
	return st, st.Mode&syscall.S_IFMT == syscall.S_IFREG
}

// recheckClosed looks at a followed file whose descriptor was closed
// (descriptor budget, idle) and that a listing finds again: truncated
// meanwhile, or not the same file at all.
func (f *Follower) recheckClosed(t *tracked, path string, size int64, sc *scanCtx) {
	if t.life != lifeDrained && path == t.Path && size < t.pos.offset {
		// Shorter than what was read, under the same name: truncated (or
		// deleted and created again on the same inode: reading it from
		// the start is right for both).
		f.truncated(t, size, sc.c)
	}
	if !f.sameFile(t, path, size, sc.c) {
		// We held no descriptor, so the inode number may have been freed
		// and reused by a new file (CANN deletes old plogs; sealed ones
		// are closed once read): the old file is gone.
		f.log.Debug("inode reused by a new file", "path", path, "was", t.Path)
		delete(f.byID, t.id)
		if f.byPath[t.Path] == t {
			delete(f.byPath, t.Path)
		}
		sc.changed = true
	}
}

// refresh updates a followed file found by a listing: seen, renamed,
// changed since the last look (and then opened if it was closed).
func (f *Follower) refresh(t *tracked, path string, st *syscall.Stat_t, at dirRef, sc *scanCtx) {
	if sc.root != "" {
		// Also (or only) reached through its process's /proc entry.
		t.ProcRoot = sc.root
	}
	if t.seen == sc.gen {
		return // a second name (symlink, hard link, /proc) of a file seen already
	}
	t.seen, t.missed = sc.gen, 0
	if t.Path != path {
		// Renamed, and the new name is followed too (kubelet rotation).
		if f.byPath[t.Path] == t {
			delete(f.byPath, t.Path)
		}
		t.setPath(path)
		sc.changed = true
	}
	f.byPath[path] = t
	t.pos.changed = st.Size != t.pos.scanned || st.Ctim != t.ctime
	t.pos.size = st.Size
	if !t.h.isOpen() && t.pos.changed {
		f.open(t, sc.c, at)
	}
}

// adoptOrphan follows again an orphan renamed back under a followed name.
func (f *Follower) adoptOrphan(id fileID, path string, sc *scanCtx) bool {
	i := slices.IndexFunc(f.orphans, func(o *tracked) bool { return o.id == id })
	if i < 0 {
		return false
	}
	t := f.orphans[i]
	f.orphans = slices.Delete(f.orphans, i, i+1)
	t.life, t.seen, t.pos.changed = lifeLive, sc.gen, true // reorder seals it again if need be
	t.setPath(path)
	f.byID[id] = t
	f.byPath[path] = t
	sc.changed = true
	return true
}

// follow starts following a new file and opens it.
func (f *Follower) follow(path string, kind Kind, pid int, id fileID, st *syscall.Stat_t, at dirRef, sc *scanCtx) {
	t := &tracked{
		File:       File{Kind: kind, PID: pid, ProcRoot: sc.root},
		rio:        sc.rio,
		root:       sc.croot,
		id:         id,
		lastChange: sc.now,
		seen:       sc.gen,
		pos:        readPos{size: st.Size, changed: true}, // unplaced
	}
	t.setPath(path)
	if kind == KindScreen {
		t.Namespace, t.Pod, t.Container = podLabels(path)
		var lst syscall.Stat_t
		t.pollAlways = syscall.Lstat(path, &lst) == nil && lst.Mode&syscall.S_IFMT == syscall.S_IFLNK
	} else {
		t.group = cannGroup(path)
	}
	if old := f.byPath[path]; old != nil && old != t {
		sc.c.replaced++
		f.log.Info("log file replaced by a new file", "path", path)
	}
	f.byID[id] = t
	f.byPath[path] = t
	sc.changed = true
	f.dirty = true
	f.open(t, sc.c, at)
}

// open gives a file whose descriptor was closed (or never opened) one,
// within the budget: at the limit, fully read files are closed least
// recently written first; if none can be, the file waits (see handle)
// and Poll tries again. It reports whether the file is open.
//
// at, when set, names the file by its directory's descriptor (a rescan's
// listing); otherwise it is opened by path. Either way it must be the
// device and inode followed.
func (f *Follower) open(t *tracked, c *pollCounters, at dirRef) bool {
	if t.h.isOpen() {
		return true
	}
	if f.openFDs >= f.maxOpen {
		c.limitReached++
		f.evict(f.openFDs - f.maxOpen + 1)
		if f.openFDs >= f.maxOpen {
			f.wait(t)
			return false
		}
	}
	fd, st, err := f.openT(t, at, c)
	if err == errHung {
		return false // its root does not answer: tried again later
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// The process (or the system) is out of descriptors although the
		// budget is not spent: give some back and wait for them.
		c.limitReached++
		f.evict(max(1, f.maxOpen/64))
		f.wait(t)
		return false
	}
	if err != nil {
		f.unwait(t)
		if errors.Is(err, errReplaced) || errors.Is(err, fs.ErrNotExist) {
			return false // the next scan sees the new file
		}
		f.fileErr(t, "open", err, c)
		return false
	}
	f.setOpen(t, fd)
	if t.life == lifeDrained {
		t.life = lifeSealed // it grew after all: read it to its end again
	}
	t.errMsg = ""
	if t.pos.unplaced() {
		t.pos.place()
		if f.pending != nil {
			f.applyPending(t, st.Size)
			// Whatever was saved for this inode no longer applies: this
			// tracked file owns it now.
			if e := f.pending.byID[t.id]; e != nil {
				e.used = true
			}
		}
	}
	return true
}

// evictBatch is the share of the budget closed at once when it is spent,
// so that the sort by last write is not paid on every open.
const evictBatch = 64

// evict closes at least n descriptors of fully read, followed files, least
// recently written first. Files with unread bytes, files with a write
// event of this Poll not looked at yet (see eventPending), orphans (deleted or
// renamed away: they could not be opened again), symlinked screen logs and
// the pinned files of a process's /proc root (pinned: that root goes with
// the process, often right after its last lines, such as an EI0011; at
// most MaxPinnedPerProcess per process, its most recently written) keep
// theirs. Pinned files count against the budget like any other, and once
// their process left the roots they are drained and let go. A closed file
// stays followed: an inotify write event (or a rescan seeing a new size or
// change time) opens it again by path, after checking it is the same
// device and inode with the same leading bytes.
func (f *Follower) evict(n int) {
	pinned := f.pinnedSet()
	var cand []*tracked
	for _, t := range f.order {
		// Cheap field tests first: at the budget with 20,000 files this
		// loop runs for every open (most files closed or with unread
		// bytes), and the map lookups cost several times the rest.
		// A file whose last line is not terminated yet (offset <
		// scanned == size) is a candidate too: its partial line is read
		// again from offset when it is opened again, so nothing is lost,
		// and a job that never ends its last line cannot keep
		// descriptors for ever.
		if !t.h.isOpen() || !t.pos.caughtUp() || t.pollAlways || t.life == lifeOrphan {
			continue
		}
		if _, pin := pinned[t]; !pin && f.byID[t.id] == t && !f.eventPending(t) {
			cand = append(cand, t)
		}
	}
	if len(cand) == 0 {
		return
	}
	n = max(n, min(f.maxOpen/evictBatch, len(cand)))
	if n < len(cand) {
		// Fair shares: the files of roots holding more than their share
		// of the budget (the budget over the roots holding any) go
		// first, then the least recently written.
		held := map[string]int{}
		for _, t := range f.order {
			if t.h.isOpen() {
				held[t.rootKey()]++
			}
		}
		share := f.maxOpen / max(1, len(held))
		over := func(t *tracked) int {
			if held[t.rootKey()] > share {
				return 0
			}
			return 1
		}
		slices.SortFunc(cand, func(a, b *tracked) int {
			if d := over(a) - over(b); d != 0 {
				return d
			}
			return a.lastChange.Compare(b.lastChange)
		})
		cand = cand[:n]
	}
	for _, t := range cand {
		f.closeFD(t)
	}
}

// eventPending reports whether this Poll's events say t was written and
// t was not looked at since. Its size at the last look says nothing about
// that write, and closing it would drop the event: a closed file is opened
// again only by a later event or a rescan, so with a long RescanInterval
// the last lines a process wrote would wait for the next rescan.
func (f *Follower) eventPending(t *tracked) bool {
	return f.hint != nil && t.checkedAt != f.pollSeq && f.hint.changed[t.Path]&opWrite != 0
}

// lose handles a file no followed name reaches any more: deleted, renamed
// away, or replaced by a new file under its name. A file with an open
// descriptor is drained as an orphan; one without is forgotten.
func (f *Follower) lose(t *tracked, sc *scanCtx) {
	if !t.h.isOpen() && t.life != lifeDrained && t.missed < lostScans {
		// Closed (descriptor budget, idle): a rename racing the listing
		// (kubelet rotation) hides it from one scan; forgotten now, it
		// would be read again from the start under its new name.
		t.missed++
		if f.byPath[t.Path] == t {
			delete(f.byPath, t.Path)
		}
		return
	}
	delete(f.byID, t.id)
	if f.byPath[t.Path] == t {
		delete(f.byPath, t.Path)
	}
	sc.changed = true
	f.dirty = true
	if t.h.isOpen() && t.life != lifeDrained && f.orphanRoom(t, sc.c) {
		t.life = lifeOrphan
		t.lastChange = sc.now
		f.orphans = append(f.orphans, t)
		return
	}
	f.closeFD(t)
}

// orphanRoom reports whether a file of a CANN root that no followed name
// reaches any more may stay open as an orphan. CANN never renames its logs
// and deletes one at a time, so a root with many orphans is a job renaming
// files out of the layout and writing on, which would hold descriptors for
// as long as it pleases: past maxOrphans per root, what such a file writes
// from now on is not read (counted as the limit "orphans").
func (f *Follower) orphanRoom(t *tracked, c *pollCounters) bool {
	if t.root == nil {
		return true // a screen log: kubelet rotations
	}
	n := 0
	for _, o := range f.orphans {
		if o.rootKey() == t.rootKey() {
			n++
		}
	}
	if n < f.maxOrphans() {
		return true
	}
	c.limit(limitOrphans)
	f.log.Debug("too many files of one log root renamed or deleted while being read; not read on", "path", t.Path)
	return false
}

// maxOrphans is the cap of orphans per CANN root: the pinned files of a
// process, and at most a quarter of the descriptor budget.
func (f *Follower) maxOrphans() int {
	return max(1, min(DefaultMaxPinnedPerProcess, f.maxOpen/4))
}

// reorder rebuilds the read order and the CANN sealing: in each rotation
// group every file but the newest (by name, i.e. creation time) is sealed.
func (f *Follower) reorder(c *pollCounters) {
	f.order = f.order[:0]
	newest := make(map[string]string)
	for _, t := range f.byID {
		f.order = append(f.order, t)
		if t.group != "" && t.Path > newest[t.group] {
			newest[t.group] = t.Path
		}
	}
	slices.SortFunc(f.order, func(a, b *tracked) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, t := range f.order {
		if t.group == "" || t.sealed() || t.life == lifeOrphan {
			continue
		}
		if t.Path != newest[t.group] {
			t.life = lifeSealed
			if !t.h.isOpen() {
				// Closed to keep within the descriptor budget, it may
				// have been written since, or end in a partial line
				// that is final now: read it to its end first.
				var st syscall.Stat_t
				if f.statPath(t, t.Path, &st, c) == nil && (fileID{uint64(st.Dev), uint64(st.Ino)}) == t.id && !t.pos.fullyRead(st.Size) {
					f.wait(t)
				} else {
					t.life = lifeDrained
				}
			}
		}
	}
}

// reportProblems logs directory problems when they appear, change or go
// away, and counts each appearance.
func (f *Follower) reportProblems(sc *scanCtx) {
	for path, p := range sc.problems {
		old, had := f.problems[path]
		if had && old == p {
			continue
		}
		switch p.reason {
		case reasonGlobEmpty:
			f.log.Info("screen log glob matches no file (yet)", "glob", path)
		case reasonRefused:
			f.log.Warn("log directory not followed", "path", path, "why", p.err)
		case reasonRootMissing:
			sc.c.err(p.reason)
			f.log.Warn("CANN log root does not exist (yet); it is picked up once created", "root", path)
		default:
			sc.c.err(p.reason)
			f.log.Warn("cannot read log directory", "path", path, "err", p.err)
		}
	}
	for path, old := range f.problems {
		if _, still := sc.problems[path]; !still {
			f.log.Info("log path readable again", "path", path, "was", old.reason)
		}
	}
	f.problems = sc.problems
}

// rootKey names the root whose share of the descriptor budget t draws on.
func (t *tracked) rootKey() string {
	switch {
	case t.ProcRoot != "":
		return t.ProcRoot
	case t.root != nil:
		return t.root.path
	}
	return ""
}

// setPath sets the path and the read-order key: a kubelet-rotated file
// sorts just before the file that replaced it, older rotations first.
func (t *tracked) setPath(path string) {
	t.Path = path
	if t.Kind == KindScreen {
		if base, ok := kubeletRotated(path); ok {
			t.sortKey = base + "\x00" + path[len(base):]
			return
		}
		t.sortKey = path + "\x01"
		return
	}
	t.sortKey = path
}

// kubeletRotated recognises the kubelet's rotated log names,
// <name>.<YYYYMMDD-hhmmss> (container_log_manager.go timestampFormat), and
// returns <name>.
func kubeletRotated(path string) (base string, ok bool) {
	const tsLen = len(".20060102-150405")
	if len(path) <= tsLen {
		return "", false
	}
	suf := path[len(path)-tsLen:]
	if suf[0] != '.' || suf[9] != '-' || !allDigits(suf[1:9]) || !allDigits(suf[10:]) {
		return "", false
	}
	return path[:len(path)-tsLen], true
}

// sameFile checks that a closed file found again at path (same device and
// inode) is the file we read before and not a new one reusing the inode:
// it is no smaller than what was read and starts with the same bytes.
func (f *Follower) sameFile(t *tracked, path string, size int64, c *pollCounters) bool {
	if path == t.Path && size == t.pos.scanned {
		return true // unchanged: nothing would be read anyway
	}
	if path != t.Path && (filepath.Dir(path) != filepath.Dir(t.Path) || (t.group != "" && cannGroup(path) != t.group)) {
		// Renames that keep a file followed stay in their directory
		// (kubelet rotation), and CANN never renames its logs: the inode
		// number was freed and reused by another file. A file closed
		// before its first bytes were read has no fingerprint to tell.
		return false
	}
	if size < t.pos.offset {
		return false
	}
	if t.fpLen == 0 {
		return true
	}
	// Read the head through a descriptor of the file as it is now, opened
	// from its root (never by path: see cannRoot) on its root's worker.
	probe := &tracked{File: File{Path: path}, id: t.id, rio: t.rio, root: t.root}
	fd, _, err := f.openT(probe, dirRef{}, c)
	if err != nil {
		return true // cannot tell; reopen will fail and retry later
	}
	probe.h = openHandle(fd)
	defer closeT(probe, fd)
	head := f.buf[:t.fpLen]
	n, err := f.preadT(probe, head, 0, c)
	return err == nil && n == t.fpLen && fingerprint(head) == t.fpHash
}
