package tail

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
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
	}, nil
}

// add watches dir unless it is watched already.
func (w *watcher) add(dir string) {
	if _, ok := w.dirs[dir]; ok {
		return
	}
	wd, err := syscall.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) && !w.failed {
			w.failed = true
			w.log.Warn("inotify watch limit reached (fs.inotify.max_user_watches); checking every log file on each poll", "dir", dir)
		}
		return
	}
	if !slices.Contains(w.wds[int32(wd)], dir) {
		w.wds[int32(wd)] = append(w.wds[int32(wd)], dir)
	}
	w.dirs[dir] = int32(wd)
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
