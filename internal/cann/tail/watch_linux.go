package tail

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// watcher reads inotify events of the followed directories. It has no
// goroutine: the kernel queues events (coalescing repeats) and Poll drains
// the non-blocking descriptor, so between Polls nothing runs at all. Events
// are only hints: periodic rescans still catch what they miss (a full
// queue, NFS, a directory beyond the watch limit).
type watcher struct {
	fd  int
	log *slog.Logger
	buf []byte
	// wds maps a watch to every followed name of its directory: inotify
	// gives one watch per inode, and a pod's log directory is reached
	// through the /proc entry of each of its ranks (and perhaps a host
	// path too).
	wds     map[int32][]string
	dirs    map[string]int32
	changed map[string]evOp
	failed  bool // some directory could not be watched
	// failedScan: a directory could not be watched during the current
	// rescan; a rescan that watches every directory clears failed.
	failedScan bool
	// limit caps the watches of the follower as a whole: a share of the
	// user's inotify watches, which kubelet, containerd and every other
	// process of the same user draw from too.
	limit int
}

const watchMask = syscall.IN_CREATE | syscall.IN_MODIFY | syscall.IN_DELETE |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF |
	syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR

// maxPendingEvents bounds the names kept between Polls; past it the next
// Poll rescans everything instead.
const maxPendingEvents = 1 << 16

func newWatcher(logger *slog.Logger) (*watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &watcher{
		fd:      fd,
		log:     logger,
		buf:     make([]byte, 64<<10),
		wds:     make(map[int32][]string),
		dirs:    make(map[string]int32),
		changed: make(map[string]evOp),
		limit:   watchShare(),
	}, nil
}

// watchShare is the follower's share of the user's inotify watches: a
// quarter of the smaller of fs.inotify.max_user_watches and the user
// namespace's max_inotify_watches, at least 64.
func watchShare() int {
	lim := 0
	for _, p := range []string{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && (lim == 0 || n < lim) {
			lim = n
		}
	}
	if lim == 0 {
		lim = 8192 // the kernel's default before 5.11
	}
	return max(lim/4, 64)
}

func (w *watcher) watching(dir string) bool {
	_, ok := w.dirs[dir]
	return ok
}

// addFD watches the directory open at fd under the name dir. It reports
// whether a watch was added.
func (w *watcher) addFD(dir string, fd int) bool {
	if _, ok := w.dirs[dir]; ok {
		return false
	}
	return w.addAs(dir, "/proc/self/fd/"+strconv.Itoa(fd))
}

// add watches dir unless it is watched already.
func (w *watcher) add(dir string) {
	if _, ok := w.dirs[dir]; ok {
		return
	}
	w.addAs(dir, dir)
}

// addAs watches the directory at path (a name of dir) under the name dir.
func (w *watcher) addAs(dir, path string) bool {
	if len(w.dirs) >= w.limit {
		w.fail(dir, "the exporter's share of fs.inotify.max_user_watches is used")
		return false
	}
	wd, err := syscall.InotifyAddWatch(w.fd, path, watchMask)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			w.fail(dir, "inotify watch limit reached (fs.inotify.max_user_watches)")
		}
		return false
	}
	if !slices.Contains(w.wds[int32(wd)], dir) {
		w.wds[int32(wd)] = append(w.wds[int32(wd)], dir)
	}
	w.dirs[dir] = int32(wd)
	return true
}

// fail notes a directory left unwatched: from now on every followed file
// is checked on each Poll (logged once).
func (w *watcher) fail(dir, why string) {
	w.failedScan = true
	if w.failed {
		return
	}
	w.failed = true
	w.log.Warn(why+"; checking every log file on each poll", "dir", dir)
}

// beginScan and endScan bracket a rescan, which tries again to watch every
// directory not watched yet: once one of them watched every directory
// (watches were freed, the limit raised, a crowded root emptied), files
// are checked on their events again instead of on every Poll.
func (w *watcher) beginScan() { w.failedScan = false }

func (w *watcher) endScan() {
	if w.failed && !w.failedScan {
		w.failed = false
		w.log.Info("every log directory is watched again; checking log files on their inotify events")
	}
}

// take drains the queued events into the names changed since the last
// call.
func (w *watcher) take() *notifyHint {
	h := &notifyHint{all: w.failed}
	clear(w.changed)
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			break // EAGAIN: queue empty
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(w.buf[off:]))
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			nameAt := off + syscall.SizeofInotifyEvent
			off = nameAt + nameLen
			if off > n {
				break
			}
			if mask&syscall.IN_Q_OVERFLOW != 0 {
				h.overflow = true
				continue
			}
			dirs, ok := w.wds[wd]
			if !ok {
				continue
			}
			if mask&(syscall.IN_IGNORED|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF) != 0 {
				// The directory went away (or moved): forget its watch so
				// that a later scan adds it again if it comes back.
				if mask&syscall.IN_IGNORED != 0 {
					delete(w.wds, wd)
				}
				for _, dir := range dirs {
					if w.dirs[dir] == wd {
						delete(w.dirs, dir)
					}
					w.note(h, dir, opRemove)
				}
				continue
			}
			name := w.buf[nameAt:off]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			var op evOp
			switch {
			case mask&syscall.IN_MODIFY != 0:
				op = opWrite
			case mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0:
				op = opCreate
			case mask&syscall.IN_DELETE != 0:
				op = opRemove
			case mask&syscall.IN_MOVED_FROM != 0:
				op = opRename
			}
			for _, dir := range dirs {
				w.note(h, dir+"/"+string(name), op)
			}
		}
	}
	h.changed = w.changed
	return h
}

func (w *watcher) note(h *notifyHint, path string, op evOp) {
	if old, ok := w.changed[path]; ok || len(w.changed) < maxPendingEvents {
		w.changed[path] = old | op
	} else {
		h.overflow = true
	}
}

// dropBelow forgets the watch names at or below dir (a dropped ProcRoot).
// A directory still reached by another name keeps its watch; one left
// with no name loses it.
func (w *watcher) dropBelow(dir string) {
	for name, wd := range w.dirs {
		if name != dir && !hasDirPrefix(name, dir) {
			continue
		}
		delete(w.dirs, name)
		names := slices.DeleteFunc(w.wds[wd], func(n string) bool { return n == name })
		if len(names) > 0 {
			w.wds[wd] = names
			continue
		}
		delete(w.wds, wd)
		_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd))
	}
}

func (w *watcher) count() int { return len(w.dirs) }

func (w *watcher) close() error { return syscall.Close(w.fd) }
