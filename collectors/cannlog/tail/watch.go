package tail

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// maxPendingEvents bounds the set of changed names kept between Polls; past
// it the set is dropped and the next Poll rescans everything.
const maxPendingEvents = 1 << 16

// watcher turns inotify events on the followed directories into a set of
// changed names, so that an idle Poll touches no file at all. Events are
// only hints: periodic rescans still catch whatever they miss (a full
// queue, NFS, a directory not watched because of the watch limit).
type watcher struct {
	fw  *fsnotify.Watcher
	log *slog.Logger

	mu       sync.Mutex
	changed  map[string]fsnotify.Op
	spare    map[string]fsnotify.Op
	overflow bool
	dirs     map[string]bool // directories watched
	failed   bool            // some directory could not be watched
	done     chan struct{}
}

// notifyHint is what happened since the previous Poll.
type notifyHint struct {
	overflow bool                   // events were lost: rescan
	all      bool                   // not every directory is watched: check every file
	changed  map[string]fsnotify.Op // names that had events, and which
	files    map[*tracked]struct{}
}

func newWatcher(logger *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, err
	}
	w := &watcher{
		fw:      fw,
		log:     logger,
		changed: make(map[string]fsnotify.Op),
		spare:   make(map[string]fsnotify.Op),
		dirs:    make(map[string]bool),
		done:    make(chan struct{}),
	}
	go w.loop()
	return w, nil
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.mu.Lock()
			if op, seen := w.changed[ev.Name]; seen || len(w.changed) < maxPendingEvents {
				w.changed[ev.Name] = op | ev.Op
			} else {
				w.overflow = true
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// A watched directory that goes away loses its watch; let
				// the next scan add it again if it comes back.
				delete(w.dirs, ev.Name)
			}
			w.mu.Unlock()
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.mu.Lock()
			w.overflow = true
			w.mu.Unlock()
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("inotify error; rescanning log directories", "err", err)
			}
		}
	}
}

// take returns the names changed since the last call.
func (w *watcher) take() *notifyHint {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := &notifyHint{overflow: w.overflow, all: w.failed, changed: w.changed}
	w.changed, w.spare = w.spare, w.changed
	clear(w.changed)
	w.overflow = false
	return h
}

// add watches dir unless it is watched already.
func (w *watcher) add(dir string) {
	w.mu.Lock()
	watched := w.dirs[dir]
	w.mu.Unlock()
	if watched {
		return
	}
	if err := w.fw.Add(dir); err != nil {
		w.mu.Lock()
		if !w.failed && errors.Is(err, syscall.ENOSPC) {
			w.log.Warn("inotify watch limit reached (fs.inotify.max_user_watches); checking every log file on each poll", "dir", dir)
		}
		if errors.Is(err, syscall.ENOSPC) {
			w.failed = true
		}
		w.mu.Unlock()
		return
	}
	w.mu.Lock()
	w.dirs[dir] = true
	w.mu.Unlock()
}

func (w *watcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirs)
}

func (w *watcher) close() error {
	err := w.fw.Close()
	<-w.done
	return err
}

func (f *Follower) watchDir(dir string) {
	if f.w != nil {
		f.w.add(dir)
	}
}

// applyHint turns the changed names into files to check this Poll. A name
// that is not followed but could be (a new plog, a new directory, a kubelet
// rotation) asks for a full rescan, which is what finds files.
func (f *Follower) applyHint(h *notifyHint, now time.Time, c *pollCounters) (rescan bool) {
	h.files = make(map[*tracked]struct{}, len(h.changed))
	for name, op := range h.changed {
		if t := f.byPath[name]; t != nil {
			if op.Has(fsnotify.Create) || op.Has(fsnotify.Rename) || op.Has(fsnotify.Remove) {
				// The name may hold another file now (replacement,
				// kubelet rotation): let a scan sort it out.
				rescan = true
			}
			if t.fd < 0 && !t.done {
				var st syscall.Stat_t
				if err := syscall.Stat(name, &st); err != nil ||
					(fileID{uint64(st.Dev), uint64(st.Ino)}) != t.id || !f.sameFile(t, name, st.Size) {
					rescan = true
					continue
				}
				f.reopen(t, c)
			}
			h.files[t] = struct{}{}
			continue
		}
		if f.interesting(name) {
			rescan = true
		}
	}
	return rescan
}

// interesting reports whether a name with events but not followed may be
// one to follow: a CANN log name, a screen log (or its kubelet rotation),
// or a directory (new device-N/, run/, a root created late).
func (f *Follower) interesting(name string) bool {
	if _, _, ok := parseCANNName(filepath.Base(name)); ok {
		return true
	}
	for _, g := range f.cfg.ScreenGlobs {
		if ok, _ := filepath.Match(g, name); ok {
			return true
		}
		if base, rot := kubeletRotated(name); rot {
			if ok, _ := filepath.Match(g, base); ok {
				return true
			}
		}
	}
	var st syscall.Stat_t
	return syscall.Stat(name, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}
