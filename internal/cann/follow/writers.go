package follow

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Which process writes a file of a discovered root. Below a discovered
// root only files named after the root's process (its pid in its own
// namespace) are followed, but two pods can mount one log volume at the
// same path and both run their training process as the same pid of their
// container: each root then reaches both processes' plogs. The kernel knows
// the writer: the process that holds the file open (/proc/<pid>/fd), and
// how (/proc/<pid>/fdinfo: for writing or not). Where another discovered
// process with the same pid writes the file and the root's own does not,
// the file is that process's, and its lines go to that process's row.
// Where the kernel does not single one out (two of them hold it for
// writing, or only for reading), the file is shared: its lines go to a row
// of their own that no process's row and no kernel owner claims
// (sharedSuffix), never to the row of the root they were reached through: a
// tenant that mounts another's log directory as its own and opens the
// other's file cannot take its settings onto its own row.
//
// Reading another process's descriptors is kernel work a tenant controls:
// a process can hold tens of thousands. So each process's descriptors are
// read once per look, for every file it is asked about, on a goroutine of
// their own (fdScan), at most maxFDsLooked of them; the poll waits for
// these looks at most writerWaitPerPoll in all and starts at most
// writerScansPerPoll of them. A file whose look is not done is read under
// the root it was reached through until it is, and decided then.
// Decisions are kept until a root of the file's pid changes: other
// processes coming and going do not make them again.

// maxFDsLooked bounds the descriptors of one process read in one look.
const maxFDsLooked = 1 << 16

// writerWaitPerPoll is how long one poll waits, in all, for descriptor
// looks; writerScansPerPoll how many it starts.
const (
	writerWaitPerPoll  = 200 * time.Millisecond
	writerScansPerPoll = 8
)

// scanReuse is how long after it finished a look answers for its process:
// a file opened later is seen by the next look.
const scanReuse = 2 * time.Second

// sharedSuffix marks the log directory of a file the kernel ties to no
// single process (its row's Dir is the directory and this suffix).
const sharedSuffix = "#shared"

// writerDecision is what is known of one file's writer.
type writerDecision struct {
	from, to string
	shared   bool
	nspid    int
}

// fdScan is one look at a process's descriptors.
type fdScan struct {
	done chan struct{}
	// finished is when the look was done; set before done is closed.
	finished time.Time
	// links are the paths its descriptors link to, and whether one of the
	// descriptors on that path is open for writing; set when done is
	// closed.
	links map[string]bool
}

// writerLooks are the looks at descriptors, and this poll's budget.
type writerLooks struct {
	mu    sync.Mutex
	scans map[procID]*fdScan
	// waited and started are this poll's spending (resetPoll); looked
	// counts every look started.
	waited  time.Duration
	started int
	looked  uint64
}

func (w *writerLooks) resetPoll() {
	w.mu.Lock()
	w.waited, w.started = 0, 0
	w.mu.Unlock()
}

// writerRoot returns the discovered root the file at path lies in (from)
// and the one whose process writes it (to): the same unless the kernel
// says otherwise; "" and "" for a file of no discovered root. shared: the
// kernel ties it to no single process of those that reach it. Called on
// the poll goroutine.
func (c *Service) writerRoot(path string) (from, to string, shared bool) {
	if w, ok := c.writers[path]; ok {
		return w.from, w.to, w.shared
	}
	d, final := c.roots.writerOf(path, c.lookFDs)
	if final {
		if c.writers == nil || len(c.writers) >= 4096 {
			c.writers = map[string]writerDecision{}
		}
		c.writers[path] = d
	}
	return d.from, d.to, d.shared
}

// forgetWriters drops the decisions about files of the given namespace
// pids (their roots changed); nil drops all.
func (c *Service) forgetWriters(nspids map[int]bool) {
	for p, d := range c.writers {
		if nspids == nil || nspids[d.nspid] {
			delete(c.writers, p)
		}
	}
}

// lookFDs returns what host process p's descriptors link to, from a look
// finished within scanReuse, or starting one within this poll's budget and
// waiting for it within the budget; ok is false when no look is ready.
func (c *Service) lookFDs(p procID) (links map[string]bool, ok bool) {
	w := &c.looks
	w.mu.Lock()
	if w.scans == nil {
		w.scans = map[procID]*fdScan{}
	}
	sc := w.scans[p]
	if sc != nil {
		select {
		case <-sc.done:
			if time.Since(sc.finished) > scanReuse {
				sc = nil // stale: look again
			}
		default:
		}
	}
	if sc == nil {
		if w.started >= writerScansPerPoll {
			w.mu.Unlock()
			return nil, false
		}
		w.started++
		w.looked++
		sc = &fdScan{done: make(chan struct{})}
		if len(w.scans) >= 1024 {
			for k, old := range w.scans {
				select {
				case <-old.done:
					delete(w.scans, k)
				default:
				}
			}
		}
		w.scans[p] = sc
		procfs := c.deps.Procfs
		go func() {
			sc.links = readFDLinks(procfs, p.pid)
			sc.finished = time.Now()
			close(sc.done)
		}()
	}
	left := writerWaitPerPoll - w.waited
	w.mu.Unlock()
	if left <= 0 {
		select {
		case <-sc.done:
			return sc.links, true
		default:
			return nil, false
		}
	}
	t0 := time.Now()
	timer := time.NewTimer(left)
	defer timer.Stop()
	select {
	case <-sc.done:
		ok = true
	case <-timer.C:
	}
	w.mu.Lock()
	w.waited += time.Since(t0)
	w.mu.Unlock()
	if !ok {
		return nil, false
	}
	return sc.links, true
}

// writerOf is writerRoot's decision; look reads a process's descriptors.
// final is false while a look it needs is not done.
func (t *rootTable) writerOf(path string, look func(procID) (map[string]bool, bool)) (d writerDecision, final bool) {
	type cand struct {
		proc procID
		path string
	}
	t.mu.Lock()
	var own *logRoot
	for _, r := range t.byPID {
		if r.ok && r.anchor != "" && hasDirPrefix(path, r.path) && (own == nil || len(r.path) > len(own.path)) {
			own = r
		}
	}
	if own == nil {
		t.mu.Unlock()
		return writerDecision{}, true
	}
	d = writerDecision{from: own.path, to: own.path, nspid: own.nspid}
	anchor := own.anchor
	cands := []cand{{own.proc, own.path}}
	for _, r := range t.byPID {
		if r != own && r.ok && r.nspid == own.nspid && r.anchor != "" {
			cands = append(cands, cand{r.proc, r.path})
		}
	}
	t.mu.Unlock()
	if len(cands) == 1 || !hasDirPrefix(path, anchor) {
		return d, true
	}
	// The path as the processes see it: the same mount point in each
	// container (the shared volume at the same path).
	rel := strings.TrimPrefix(path, anchor)
	var holders, writers []cand
	for _, cd := range cands {
		links, ok := look(cd.proc)
		if !ok {
			return d, false
		}
		if w, held := links[rel]; held {
			holders = append(holders, cd)
			if w {
				writers = append(writers, cd)
			}
		}
	}
	switch {
	case len(writers) == 1:
		d.to = writers[0].path
	case len(writers) == 0 && len(holders) == 1:
		d.to = holders[0].path
	case len(holders) == 0:
		// No process holds it (rotated, or its process gone): it stays
		// with the root it was reached through.
	default:
		d.shared = true
	}
	return d, true
}

// readFDLinks reads what host process pid's descriptors link to, at most
// maxFDsLooked of them, and whether a descriptor on each path is open for
// writing (<procfs>/<pid>/fdinfo/<fd> flags; read only for CANN's file
// names, the only ones asked about).
func readFDLinks(procfs string, pid int) map[string]bool {
	out := map[string]bool{}
	dir := filepath.Join(procfs, strconv.Itoa(pid), "fd")
	f, err := os.Open(dir)
	if err != nil {
		return out
	}
	defer f.Close()
	for n := 0; n < maxFDsLooked; {
		names, err := f.Readdirnames(min(1024, maxFDsLooked-n))
		for _, name := range names {
			l, lerr := os.Readlink(filepath.Join(dir, name))
			if lerr != nil {
				continue
			}
			w := out[l]
			if !w && cannFileName(filepath.Base(l)) {
				w = openForWriting(filepath.Join(procfs, strconv.Itoa(pid), "fdinfo", name))
			}
			out[l] = w
		}
		n += len(names)
		if err != nil || len(names) == 0 {
			break
		}
	}
	return out
}

func cannFileName(base string) bool {
	return strings.HasPrefix(base, "plog-") || strings.HasPrefix(base, "device-")
}

// openForWriting reports whether the descriptor of an fdinfo file is open
// for writing: its flags (octal) have O_WRONLY or O_RDWR.
func openForWriting(fdinfo string) bool {
	f, err := os.Open(fdinfo)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&3 != 0
		}
	}
	return false
}
