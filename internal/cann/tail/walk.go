package tail

import (
	"errors"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Caps per root, applied to every CANN root (configured or discovered) at
// each rescan. CANN writes at most {run,debug,security}/{plog,device-<id>}
// (one device-<id> per NPU of the node, 16 at most today), so a root that
// reaches a cap was not made by CANN; what lies past a cap is not followed
// and each rescan that reaches a cap counts it once in
// Stats.LimitsReached[limit].
const (
	DefaultMaxDirsPerRoot    = 128
	DefaultMaxWatchesPerRoot = 128
	// DefaultMaxEntriesPerRoot bounds the names listed per root and
	// rescan. CANN keeps 10 files per process and directory; a host path
	// shared by every job of a node for months can hold many more, hence
	// the margin.
	DefaultMaxEntriesPerRoot = 100_000
	// DefaultMaxBytesPerPoll is how much of one file is read per Poll; the
	// rest is read by the next Poll (nothing is skipped). It is above
	// CANN's 20 MB file size, so a whole plog is still read in one Poll.
	DefaultMaxBytesPerPoll = 32 << 20
)

// Limit names, the keys of Stats.LimitsReached.
const (
	limitDirs    = "dirs"
	limitWatches = "watches"
	limitEntries = "entries"
	limitBytes   = "bytes"
	limitOrphans = "orphans"
)

// LimitReasons lists every key Stats.LimitsReached can hold.
var LimitReasons = []string{limitDirs, limitWatches, limitEntries, limitBytes, limitOrphans}

// reasonRefused is a problem of a directory that was not entered (a symlink
// or a mount point where CANN writes a directory): logged, not an error.
const reasonRefused = "refused"

// rootWalk is one root's listing during a rescan.
type rootWalk struct {
	path string // the root as followed names are built
	fd   int
	dev  uint64
	// proc: a discovered root, whose files are not followed through links
	// either.
	proc                   bool
	hung                   bool // its worker abandoned a call: stop
	dirs, watches, entries int
	capped                 [3]bool // dirs, watches, entries counted this scan
}

// walkRoot lists one CANN root: CANN's own layout only,
// <root>/<sort dir>/{plog,device-<id>}/{plog,device}-<pid>_<time>.log, each
// directory opened from its parent's descriptor (see resolve.go). anchor is
// set for a discovered root: rel is then resolved inside anchor.
func (f *Follower) walkRoot(path, anchor, rel string, proc bool, sortDirs []string, sc *scanCtx) {
	rw := &rootWalk{path: path, fd: -1, proc: proc}
	defer f.closeDir(rw, sc)
	fd := -1
	var dev uint64
	var err error
	var kind string
	if !f.walkCall(rw, sc, func() {
		if anchor != "" {
			fd, err = openInRoot(anchor, rel, f.log)
		} else {
			fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		}
		if err == nil {
			dev, err = fdDev(fd)
			kind = remoteKind(fd)
		}
	}, &fd) {
		return
	}
	rw.fd, rw.dev = fd, dev
	if err != nil {
		f.dirErr(path, err, sc)
		return
	}
	if proc && !f.cfg.CrossFilesystems && kind != "" {
		sc.c.refused(refusedRemote)
		sc.problems[path] = problem{reasonRefused, "on a " + kind + " file system (--cannlog.cross-filesystems allows it)"}
		f.keepBelow(path, sc.gen)
		return
	}
	f.watchIn(rw, path, rw.fd, sc)
	for _, sd := range sortDirs {
		if rw.hung {
			return
		}
		f.walkSortDir(rw, sd, sc)
	}
}

// walkCall runs one blocking step of a walk through the root's worker
// (sc.rio; directly for configured roots). If the root does not answer,
// the walk stops, the root's files are kept as they are, and a descriptor
// the step opens late is closed.
func (f *Follower) walkCall(rw *rootWalk, sc *scanCtx, fn func(), opened *int) bool {
	if rw.hung {
		return false
	}
	var cleanup func()
	if opened != nil {
		cleanup = func() {
			if *opened >= 0 {
				_ = syscall.Close(*opened)
			}
		}
	}
	if f.call(sc.rio, sc.c, fn, cleanup) {
		return true
	}
	rw.hung = true
	f.keepBelow(rw.path, sc.gen)
	return false
}

// closeDir closes the root's descriptor (on a discovered root without
// waiting: a close can block there too).
func (f *Follower) closeDir(rw *rootWalk, sc *scanCtx) {
	closeDirFD(rw.fd, sc.rio)
}

func closeDirFD(fd int, rio *rootIO) { closeOn(rio, fd) }

// walkSortDir lists <root>/<sd> and CANN's directories in it.
func (f *Follower) walkSortDir(rw *rootWalk, sd string, sc *scanCtx) {
	p := rw.path + "/" + sd
	fd, ok := f.enterDir(rw, rw.fd, sd, p, sc)
	if !ok {
		return
	}
	defer closeDirFD(fd, sc.rio)
	names, err := f.list(rw, p, fd, sc)
	if err != nil {
		f.dirErr(p, err, sc) // names listed before the error are still followed
	}
	for _, name := range names {
		if !layoutDir(name) || rw.hung {
			continue
		}
		f.walkLogDir(rw, fd, p+"/"+name, name, sc)
	}
}

// walkLogDir lists one plog/ or device-<id>/ directory and considers the
// CANN log files in it.
func (f *Follower) walkLogDir(rw *rootWalk, parent int, p, name string, sc *scanCtx) {
	fd, ok := f.enterDir(rw, parent, name, p, sc)
	if !ok {
		return
	}
	defer closeDirFD(fd, sc.rio)
	names, err := f.list(rw, p, fd, sc)
	if err != nil {
		f.dirErr(p, err, sc)
	}
	for _, n := range names {
		if rw.hung || (sc.rio != nil && sc.rio.hung.Load()) {
			rw.hung = true
			f.keepBelow(rw.path, sc.gen)
			return
		}
		if kind, pid, ok := parseCANNName(n); ok && (sc.only == 0 || pid == sc.only) {
			f.consider(p+"/"+n, kind, pid, dirRef{fd: fd, name: n}, sc)
		}
	}
}

// enterDir opens the directory name below parent within the root's caps and
// watches it.
func (f *Follower) enterDir(rw *rootWalk, parent int, name, p string, sc *scanCtx) (int, bool) {
	if rw.dirs >= f.maxDirs {
		f.capReached(rw, 0, limitDirs, sc)
		f.keepBelow(p, sc.gen)
		return -1, false
	}
	rw.dirs++
	fd := -1
	var err error
	if !f.walkCall(rw, sc, func() { fd, err = openDirBelow(parent, name, rw.dev, f.cfg.CrossFilesystems, f.log) }, &fd) {
		return -1, false
	}
	if err != nil {
		f.dirErr(p, err, sc)
		return -1, false
	}
	f.watchIn(rw, p, fd, sc)
	return fd, true
}

// list reads the names of the directory fd within the root's entry cap.
func (f *Follower) list(rw *rootWalk, p string, fd int, sc *scanCtx) ([]string, error) {
	left := f.maxEntries - rw.entries
	if left <= 0 {
		f.capReached(rw, 2, limitEntries, sc)
		f.keepBelow(p, sc.gen)
		return nil, nil
	}
	var names []string
	var more bool
	var err error
	if !f.walkCall(rw, sc, func() { names, more, err = f.listDir(p, fd, left) }, nil) {
		return nil, nil
	}
	rw.entries += len(names)
	if more {
		f.capReached(rw, 2, limitEntries, sc)
		f.keepBelow(p, sc.gen)
	}
	return names, err
}

// listDir returns up to max names of the directory fd (path p), and whether
// there were more. Tests replace it to inject errors.
func listDir(_ string, fd int, max int) (names []string, more bool, err error) {
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return names, false, err
		}
		if n <= 0 {
			return names, false, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		if len(names) > max {
			return names[:max], true, nil
		}
	}
}

// watchIn watches a directory of a root within its watch cap, through its
// descriptor (so the watch is on the directory that was listed, whatever
// its path resolves to now).
func (f *Follower) watchIn(rw *rootWalk, p string, fd int, sc *scanCtx) {
	if f.w == nil || f.w.watching(p) {
		return
	}
	if rw.watches >= f.maxWatches {
		f.capReached(rw, 1, limitWatches, sc)
		f.w.fail(p, "per-root inotify watch cap reached")
		return
	}
	if f.w.addFD(p, fd) {
		rw.watches++
	}
}

// capReached counts a limit once per root and rescan.
func (f *Follower) capReached(rw *rootWalk, i int, limit string, sc *scanCtx) {
	if rw.capped[i] {
		return
	}
	rw.capped[i] = true
	sc.c.limit(limit)
	f.log.Debug("log root limit reached; the rest of it is not followed", "root", rw.path, "limit", limit)
}

// dirErr records why a directory of a root could not be walked.
func (f *Follower) dirErr(p string, err error, sc *scanCtx) {
	var ref *errRefused
	switch {
	case errors.Is(err, syscall.ENOENT):
		// A sort directory CANN has not created (yet), or one deleted
		// while we listed: nothing to report.
	case errors.As(err, &ref):
		sc.c.refused(ref.reason)
		sc.problems[p] = problem{reasonRefused, ref.Error()}
		f.keepBelow(p, sc.gen)
	case errors.Is(err, syscall.ENOTDIR):
		sc.problems[p] = problem{reasonDirUnreadable, "not a directory"}
		f.keepBelow(p, sc.gen)
	default:
		sc.problems[p] = problem{reasonDirUnreadable, err.Error()}
		f.keepBelow(p, sc.gen)
	}
}

// layoutDir reports whether name is one of CANN's directories below a sort
// directory: plog, or device-<id> (RT log_file_info.h).
func layoutDir(name string) bool {
	if name == "plog" {
		return true
	}
	id, ok := strings.CutPrefix(name, "device-")
	if !ok || len(id) > 4 || !allDigits(id) {
		return false
	}
	_, err := strconv.Atoi(id)
	return err == nil
}

// dirRef names a file by the descriptor of its directory, so that it is
// opened in the directory that was listed. The zero dirRef (fd 0 is never
// a directory of ours) means: by path (screen logs only). A name below a
// CANN root is never followed through a link: CANN writes no links, and a
// root a job can write would otherwise let it point the exporter at any
// host file (a 0600 key, a FIFO, a device node).
type dirRef struct {
	fd   int
	name string
}

func (d dirRef) set() bool { return d.name != "" }

// stat stats the file d names (a link is stat'ed as a link, never
// followed).
func (d dirRef) stat(st *syscall.Stat_t) error {
	var ust unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, d.name, &ust, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	*st = syscall.Stat_t{
		Dev: ust.Dev, Ino: ust.Ino, Nlink: ust.Nlink, Mode: ust.Mode, Size: ust.Size,
		Ctim: syscall.Timespec{Sec: ust.Ctim.Sec, Nsec: ust.Ctim.Nsec},
		Mtim: syscall.Timespec{Sec: ust.Mtim.Sec, Nsec: ust.Mtim.Nsec},
	}
	return nil
}

// fileOpenFlags are the flags every log file is opened with: no link
// followed in the last component, no blocking open (a FIFO would wait for
// a writer), no controlling terminal (a tty the job made).
const fileOpenFlags = syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NONBLOCK | syscall.O_NOFOLLOW | syscall.O_NOCTTY

// open opens the file d names read-only. The name is first opened with
// O_PATH (which opens nothing: no FIFO reader appears, no device driver's
// open runs) and fstat'ed; only a regular file is then opened for reading,
// through that very descriptor (/proc/self/fd/N), so a name swapped for a
// FIFO or a device node the job made is never opened. Where /proc is not
// mounted it falls back to an open with fileOpenFlags, type-checked by the
// caller before any read.
func (d dirRef) open() (int, error) {
	pfd, err := openatRetry(d.fd, d.name, unix.O_PATH|syscall.O_NOFOLLOW|syscall.O_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer syscall.Close(pfd)
	var st syscall.Stat_t
	if err := fstat(pfd, &st); err != nil {
		return -1, err
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
	case syscall.S_IFLNK:
		return -1, &errRefused{refusedSymlink}
	default:
		return -1, errNotRegular
	}
	fd, err := openatRetry(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(pfd), fileOpenFlags&^syscall.O_NOFOLLOW)
	if err == syscall.ENOENT {
		fd, err = openatRetry(d.fd, d.name, fileOpenFlags)
	}
	if err == syscall.ELOOP {
		return -1, &errRefused{refusedSymlink}
	}
	return fd, err
}

func openatRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
