package follow

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// The table of log roots: every CANN log root the collector reads, the
// configured ones (--cannlog.root) and the ones discovery found through
// --path.procfs alike, with what is known of each: its path, the process
// that owns it (host pid and start time, its pid in its own namespace), its
// zone and whether its files are pinned. It is the only place these facts
// live: discovery writes the discovered rows, the zones are inferred per
// row, the follower pins the files of the rows handed to it
// (tail.Follower.SetProcRoots), and coverage, the joins (HostPID) and
// liveness read it. The poll goroutine is its only writer; scrapes read it
// under its lock.

// procID names one process for as long as the node runs: a host pid and
// its start time (a reused pid has another).
type procID struct {
	pid   int
	start uint64
}

// logRoot is one row of the table.
type logRoot struct {
	// path reaches the root from the exporter: a --cannlog.root, or
	// <procfs>/<host pid>/root/<its root> for a discovered one.
	path string
	zone rootZone

	// Of a discovered root only (proc.pid == 0 for a configured one):
	proc  procID
	nspid int    // its pid in its own namespace: the pid of its file names
	root  string // the root as the process sees it, and the variable that chose it
	via   string
	// anchor is the process's root directory (<procfs>/<pid>/root or
	// cwd) that path lies below (tail.ProcRoot.Anchor).
	anchor string
	ok     bool // resolved: path is its root (else err says why not)
	found  bool // the root holds a log of its own pid
	err    error
	// checked is when the process's /proc entry was last read.
	checked time.Time
	// aliases are log directories of configured roots that reach this
	// process's files too (a host-path mount): its lines are read under
	// those, and the joins still know its host pid.
	aliases map[string]bool
	// owner is who the kernel says the process is (logstate.Source.Owner):
	// "pod:<uid>" of its cgroup, else "uid:<n>"; pod names that pod.
	owner string
	pod   ProcessPod
}

// pinned reports whether the follower keeps this root's files open
// (tail.ProcRoot): a discovered root whose process npu-smi lists now.
// Rows leave the table when their process leaves npu-smi's table, so every
// resolved discovered row is pinned.
func (r *logRoot) pinned() bool { return r.proc.pid != 0 && r.ok }

type rootTable struct {
	mu         sync.Mutex
	configured []*logRoot
	byPID      map[int]*logRoot // discovered rows by host pid
	order      []*logRoot       // every row, longest path first
}

func newRootTable(configured []string) *rootTable {
	t := &rootTable{byPID: map[int]*logRoot{}}
	seen := map[string]bool{}
	for _, r := range configured {
		r = filepath.Clean(r)
		if !seen[r] {
			seen[r] = true
			t.configured = append(t.configured, &logRoot{path: r})
		}
	}
	t.reorder()
	return t
}

// reorder rebuilds the prefix-matching order; called with mu held.
func (t *rootTable) reorder() {
	t.order = append(t.order[:0], t.configured...)
	for _, r := range t.byPID {
		if r.ok {
			t.order = append(t.order, r)
		}
	}
	slices.SortStableFunc(t.order, func(a, b *logRoot) int {
		if d := len(b.path) - len(a.path); d != 0 {
			return d
		}
		return strings.Compare(a.path, b.path)
	})
}

// rootOfLocked returns the row a log directory lies in; mu held.
func (t *rootTable) rootOfLocked(dir string) *logRoot {
	for _, r := range t.order {
		if dir == r.path || strings.HasPrefix(dir, r.path+string(filepath.Separator)) {
			return r
		}
	}
	return nil
}

// rows returns the rows in prefix order (a copy of the slice; the rows
// themselves are shared and read under mu).
func (t *rootTable) rows() []*logRoot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.order)
}

// procRoots are the rows the follower pins, by host pid.
func (t *rootTable) procRoots() []tail.ProcRoot {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tail.ProcRoot
	for _, r := range t.byPID {
		if r.pinned() {
			out = append(out, tail.ProcRoot{Path: r.path, Anchor: r.anchor, PID: r.nspid})
		}
	}
	slices.SortFunc(out, func(a, b tail.ProcRoot) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// HostPID returns the host pid of the process the logs know by key, when a
// discovered row owns it; 0 otherwise.
func (t *rootTable) HostPID(key logstate.ProcessKey) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.byPID {
		if r.ok && r.nspid == key.PID && (r.path == key.Dir || r.aliases[key.Dir]) {
			return r.proc.pid
		}
	}
	return 0
}

// ownerOf is the owner of the lines of a file in log directory dir,
// reached through the discovered root at procRoot ("" for none): the
// kernel's word on that root's process (and its pod's names); for a
// configured root's file the root itself ("root:<path>"), which no kernel
// vouches for.
func (t *rootTable) ownerOf(procRoot, dir string) (string, ProcessPod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if procRoot != "" {
		for _, r := range t.byPID {
			if r.path == procRoot && r.owner != "" {
				return r.owner, r.pod
			}
		}
	}
	if r := t.rootOfLocked(dir); r != nil && r.proc.pid == 0 {
		return "root:" + r.path, ProcessPod{}
	}
	return "", ProcessPod{}
}

// noteAlias records that the files of the row at procRoot are read under
// the log directory dir of a configured root.
func (t *rootTable) noteAlias(procRoot, dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.byPID {
		if r.path == procRoot && !r.aliases[dir] {
			if r.aliases == nil {
				r.aliases = map[string]bool{}
			}
			r.aliases[dir] = true
			return
		}
	}
}

// found returns, for every host pid of the discovered rows, whether its
// own logs were found.
func (t *rootTable) found() map[int]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int]bool, len(t.byPID))
	for pid, r := range t.byPID {
		out[pid] = r.found
	}
	return out
}

// hasDirPrefix reports whether path lies below dir.
func hasDirPrefix(path, dir string) bool {
	return len(path) > len(dir) && strings.HasPrefix(path, dir) && path[len(dir)] == filepath.Separator
}
