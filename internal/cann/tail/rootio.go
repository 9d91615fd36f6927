package tail

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A discovered root lies in a job's own file system: a FUSE dataset mount
// or an NFS share there can leave any call on it blocked for as long as
// its server pleases (B4). Every call that touches such a root (open,
// stat, read, seek, getdents, close) therefore runs on a goroutine of its
// own, and the follower waits for it at most Config.IODeadline. A call
// still blocked then is abandoned and counted (Stats.HungCalls), the root
// is hung: no further call is made on it until the abandoned one returns
// (its result is dropped, a descriptor it opened closed), and its files
// are kept as they are, neither read nor forgotten. Every other root, and
// Close, go on at once. A root whose calls each return just inside the
// deadline is also bounded: once its calls took IODeadline in one Poll,
// it waits for the next one.
//
// Configured roots are no different: the shipped DaemonSet configures
// /var/log/npu and /root/ascend/log, which training containers mount and
// write, so a job can put a hung FUSE mount (or a link to one) there too.
// They have a worker each as well (Config.Roots), without the per-Poll
// time budget (their initial ingest may take longer than IODeadline in
// one Poll; each call still has its deadline). Only screen logs (the
// kubelet's files) are read directly.

// DefaultIODeadline is how long the follower waits for one call on a
// discovered root.
const DefaultIODeadline = time.Second

// errHung is returned by calls on a root that does not answer.
var errHung = errors.New("file system not answering (call abandoned)")

// rootIO is the worker state of one discovered root.
type rootIO struct {
	hung atomic.Bool // an abandoned call has not returned yet
	// unbudgeted: a configured root, whose calls have no per-Poll budget
	// (only each call's deadline).
	unbudgeted bool
	// Time spent in this root's calls during Poll seq.
	seq   uint64
	spent time.Duration
}

// ioCall is one call handed to a root's goroutine.
type ioCall struct {
	fn func()
	// cleanup runs instead of the caller's use of the result when the
	// call was abandoned (closes a descriptor it opened).
	cleanup   func()
	mu        sync.Mutex
	done      bool
	abandoned bool
	finished  chan struct{}
}

func (c *ioCall) run(r *rootIO) {
	c.fn()
	c.mu.Lock()
	c.done = true
	if c.abandoned {
		if c.cleanup != nil {
			c.cleanup()
		}
		r.hung.Store(false)
	}
	c.mu.Unlock()
	close(c.finished)
}

// call runs fn for root r (nil: here and now) and reports whether it
// completed within the deadline; false means fn's results must not be
// used. Only the goroutine holding f.mu calls it.
func (f *Follower) call(r *rootIO, c *pollCounters, fn, cleanup func()) bool {
	if r == nil {
		fn()
		return true
	}
	if r.hung.Load() {
		return false
	}
	if r.seq != f.pollSeq {
		r.seq, r.spent = f.pollSeq, 0
	}
	if r.spent >= f.ioDeadline && !r.unbudgeted {
		return false // slow: its turn again next Poll
	}
	start := time.Now()
	defer func() { r.spent += time.Since(start) }()
	op := &ioCall{fn: fn, cleanup: cleanup, finished: make(chan struct{})}
	go op.run(r)
	timer := time.NewTimer(f.ioDeadline)
	defer timer.Stop()
	select {
	case <-op.finished:
		return true
	case <-timer.C:
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.done {
		return true
	}
	op.abandoned = true
	r.hung.Store(true)
	c.hung++
	f.log.Warn("a log root does not answer; its files wait until it does, the others are read on",
		"deadline", f.ioDeadline)
	return false
}

// readBufs are the buffers reads on discovered roots go to: an abandoned
// read may still write into its buffer, so it cannot be the shared one.
var readBufs sync.Pool

// The calls below run through the file's root worker (directly for files
// of configured roots and screen logs).

func (f *Follower) fstatT(t *tracked, st *syscall.Stat_t, c *pollCounters) error {
	if t.rio == nil {
		return fstat(t.h.sysfd(), st)
	}
	var err error
	var s syscall.Stat_t
	fd := t.h.sysfd()
	if !f.call(t.rio, c, func() { err = fstat(fd, &s) }, nil) {
		return errHung
	}
	*st = s
	return err
}

func (f *Follower) preadT(t *tracked, p []byte, off int64, c *pollCounters) (int, error) {
	if t.rio == nil {
		return pread(t.h.sysfd(), p, off)
	}
	return f.preadVia(t, p, off, c, false)
}

// preadVia reads through t's root worker. With private set, p is a buffer
// of the read alone (the reader's own, see readFrom), which an abandoned
// read may keep writing to: it is read into directly; otherwise through a
// buffer of the call's own, copied into p on success.
func (f *Follower) preadVia(t *tracked, p []byte, off int64, c *pollCounters, private bool) (int, error) {
	if private {
		var n int
		var err error
		fd := t.h.sysfd()
		if !f.call(t.rio, c, func() { n, err = pread(fd, p, off) }, nil) {
			return 0, errHung
		}
		return n, err
	}
	b := getReadBuf(len(p))
	var n int
	var err error
	fd := t.h.sysfd()
	if !f.call(t.rio, c, func() { n, err = pread(fd, b, off) }, nil) {
		return 0, errHung // b stays with the abandoned read
	}
	copy(p, b[:n])
	putReadBuf(b)
	return n, err
}

func getReadBuf(size int) []byte {
	if b, _ := readBufs.Get().(*[]byte); b != nil && cap(*b) >= size {
		return (*b)[:size]
	}
	return make([]byte, size)
}

func putReadBuf(b []byte) { readBufs.Put(&b) }

func (f *Follower) seekT(t *tracked, off int64, whence int, c *pollCounters) (int64, error) {
	if t.rio == nil {
		return seek(t.h.sysfd(), off, whence)
	}
	var d int64
	var err error
	fd := t.h.sysfd()
	if !f.call(t.rio, c, func() { d, err = seek(fd, off, whence) }, nil) {
		return 0, errHung
	}
	return d, err
}

// statPath stats a file by its path: a file of a CANN root is reached from
// its root's descriptor one component at a time (inRoot: no link, no mount
// point unless Config.CrossFilesystems), on its root's worker; a screen
// log by its path.
func (f *Follower) statPath(t *tracked, path string, st *syscall.Stat_t, c *pollCounters) error {
	var err error
	var s syscall.Stat_t
	root := t.root
	stat := func() {
		if root == nil {
			err = syscall.Stat(path, &s)
			return
		}
		err = f.inRoot(root, path, func(d dirRef) error { return d.stat(&s) })
	}
	if !f.call(t.rio, c, stat, nil) {
		return errHung
	}
	*st = s
	return err
}

// openT opens a file (by the directory descriptor at, or else again from
// its root: see statPath) through its root's worker and verifies it is the
// regular file followed before anything is read.
func (f *Follower) openT(t *tracked, at dirRef, c *pollCounters) (int, syscall.Stat_t, error) {
	fd := -1
	var st syscall.Stat_t
	var err error
	path, id, root := t.Path, t.id, t.root
	open := func() {
		if at.set() || root == nil {
			fd, st, err = openVerifiedAt(at, path, id)
			return
		}
		err = f.inRoot(root, path, func(d dirRef) error {
			var e error
			fd, st, e = openVerifiedAt(d, path, id)
			return e
		})
	}
	if !f.call(t.rio, c, open,
		func() {
			if fd >= 0 {
				_ = syscall.Close(fd)
			}
		}) {
		return -1, st, errHung
	}
	return fd, st, err
}

// cannRoot is the CANN root a file was found below. Its files are opened
// and stat'ed again (after an eviction, on an event, to check a closed
// file) from the root's own descriptor, never by a path string the kernel
// would resolve: a job that swaps a directory for a link between two
// looks makes the exporter read nothing outside its root.
type cannRoot struct {
	path   string // the root as file paths begin
	anchor string // of a discovered root: its process's root directory
}

var errNotBelow = errors.New("not below its log root")

// inRoot resolves path (below r) from r's descriptor: the root as the walk
// opens it, then each directory with openDirBelow, then fn on the last
// component. It blocks as the file system pleases: callers run it on the
// root's worker.
func (f *Follower) inRoot(r *cannRoot, path string, fn func(dirRef) error) error {
	rel, ok := strings.CutPrefix(path, r.path+"/")
	if !ok || rel == "" {
		return errNotBelow
	}
	parts := strings.Split(rel, "/")
	var fd int
	var err error
	if r.anchor != "" {
		fd, err = openInRoot(r.anchor, strings.TrimPrefix(r.path, r.anchor), f.log)
	} else {
		fd, err = syscall.Open(r.path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	for _, name := range parts[:len(parts)-1] {
		dev, err := fdDev(fd)
		if err != nil {
			_ = syscall.Close(fd)
			return err
		}
		nfd, err := openDirBelow(fd, name, dev, f.cfg.CrossFilesystems, f.log)
		_ = syscall.Close(fd)
		if err != nil {
			return err
		}
		fd = nfd
	}
	defer syscall.Close(fd)
	return fn(dirRef{fd: fd, name: parts[len(parts)-1]})
}

// closeT closes a descriptor of a file. On a root with a worker the close
// (a FUSE flush can block) runs on a goroutine of its own and is waited
// for at most the deadline: a descriptor closed late is still closed, and
// the budget's count stays what the process holds in the common case.
func closeT(t *tracked, fd int) { closeOn(t.rio, fd) }

func closeOn(rio *rootIO, fd int) {
	switch {
	case fd < 0:
	case rio == nil:
		_ = syscall.Close(fd)
	case rio.hung.Load():
		go syscall.Close(fd) //nolint:errcheck // nothing to do about it
	default:
		var mu sync.Mutex
		finished, late := false, false
		done := make(chan struct{})
		go func() {
			_ = syscall.Close(fd)
			mu.Lock()
			finished = true
			if late {
				rio.hung.Store(false) // the root answers again
			}
			mu.Unlock()
			close(done)
		}()
		timer := time.NewTimer(DefaultIODeadline)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			// The root does not answer: the next closes do not wait
			// (Close of a follower with many files on it returns at once).
			mu.Lock()
			if !finished {
				late = true
				rio.hung.Store(true)
			}
			mu.Unlock()
		}
	}
}
