package follow

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/discover"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/join"
)

// Discovery: every process npu-smi lists gets its own CANN log root,
// found through --path.procfs (package discover) and followed as a
// tail.ProcRoot. It runs in the poll goroutine, only when npu-smi has run
// again (and, for a process whose logs are still missing, at most every
// discoveryRecheck): never on the scrape path, and on a node without NPU
// processes it does nothing at all.

// ProcessTable gives discovery, coverage, liveness and hccl_process_info
// npu-smi's process table without running npu-smi (so that nothing of it
// runs on the scrape path); join.ProcessTable over the shared run. It must
// not call back into the service.
type ProcessTable interface {
	// NPUProcesses returns the rows of the last successful npu-smi run and
	// when it ran; ok is false before the first.
	NPUProcesses() (rows []ascend.Process, at time.Time, ok bool)
	// Match pairs every row of that run with the process of the logs it
	// is, among devs (join.Match), in row order; ok is false before
	// npu-smi first answered.
	Match(devs []logstate.ProcessDevice) (rows []join.Matched, ok bool)
}

// discoveryRecheck is how often a process is looked at again in /proc:
// one whose logs were not found (it may not have written its first plog
// yet), and one whose logs are read (a pid reused by a new process, an
// exec or a rewritten environment give it another root).
const discoveryRecheck = 15 * time.Second

type discovery struct {
	procfs string
	table  ProcessTable

	// Owned by the poll goroutine.
	lastAt time.Time
	set    bool // the follower was given the roots once
	// listing are the looks for a process's own plogs (discover.LogsInRoot)
	// that outlived their deadline, by host pid: the job's log tree is on
	// a file system that does not answer (a hung FUSE or NFS mount). The
	// poll goroutine never waits for one again; it takes the answer when
	// the call returns.
	listing map[int]chan listed
	// hung counts the looks abandoned at the deadline (served in
	// hccl_exporter_log_hung_calls_total with the follower's).
	hung atomic.Uint64
}

// listed is the answer of one discover.LogsInRoot call.
type listed struct {
	path  string
	found bool
	err   error
}

// errListing marks a process whose log tree did not answer in time.
var errListing = errors.New("its CANN log directory did not answer within the deadline (a hung file system?); looked at again later")

// listDeadline is how long discovery waits for a process's log directory
// to be listed, as long as the follower waits for a call on a discovered
// root (tail.DefaultIODeadline).
var listDeadline = tail.DefaultIODeadline

// logsOf runs discover.LogsInRoot for pid off the poll goroutine and waits for
// it at most listDeadline, once: a call still running is not waited for
// again, its answer is taken when a later look finds it returned (for the
// same path; a call for another path is dropped).
func (d *discovery) logsOf(pid int, p discover.Process) (bool, error) {
	dir := p.Path
	ch, running := d.listing[pid]
	if !running {
		ch = make(chan listed, 1)
		go func() {
			found, err := discover.LogsInRoot(p.Anchor, strings.TrimPrefix(p.Path, p.Anchor), p.NSpid)
			ch <- listed{dir, found, err}
		}()
	}
	var r listed
	if running {
		select {
		case r = <-ch:
		default:
			return false, errListing
		}
	} else {
		t := time.NewTimer(listDeadline)
		defer t.Stop()
		select {
		case r = <-ch:
		case <-t.C:
			if d.listing == nil {
				d.listing = map[int]chan listed{}
			}
			d.listing[pid] = ch
			d.hung.Add(1)
			return false, errListing
		}
	}
	delete(d.listing, pid)
	if r.path != dir {
		return d.logsOf(pid, p)
	}
	return r.found, r.err
}

func newDiscovery(procfs string, table ProcessTable) *discovery {
	if procfs == "" || table == nil {
		return nil
	}
	return &discovery{procfs: procfs, table: table}
}

// discover brings the discovered rows of the table of roots up to date
// with npu-smi's latest process table.
func (c *Service) discover(now time.Time) {
	d := c.disc
	if d == nil {
		return
	}
	rows, at, ok := d.table.NPUProcesses()
	if !ok {
		if !d.set && now.Sub(c.created) >= logstate.ReadyGrace {
			// npu-smi never answered: let the saved offsets go (see
			// tail.Config.AwaitProcRoots) rather than keep them for ever.
			d.set = true
			c.f.SetProcRoots(nil)
		}
		return
	}
	t := c.roots
	t.mu.Lock()
	recheck := false
	for _, r := range t.byPID {
		if now.Sub(r.checked) >= discoveryRecheck {
			recheck = true
			break
		}
	}
	t.mu.Unlock()
	if at.Equal(d.lastAt) && d.set && !recheck {
		return
	}
	d.lastAt = at
	listed := make(map[int]bool, len(rows))
	changed := !d.set
	// nspids whose roots changed: who writes a shared file of that pid is
	// looked at again (writers.go); other decisions stay.
	changedNS := map[int]bool{}
	var gone []*logRoot
	for _, row := range rows {
		if row.PID <= 0 || listed[row.PID] {
			continue
		}
		listed[row.PID] = true
		t.mu.Lock()
		old := t.byPID[row.PID]
		t.mu.Unlock()
		if old != nil && now.Sub(old.checked) < discoveryRecheck {
			continue
		}
		n := c.resolve(row.PID, now, old)
		if n == old {
			continue
		}
		if old != nil && old.ok && (!n.ok || n.path != old.path || n.proc != old.proc) {
			gone = append(gone, old)
		}
		changed = true
		changedNS[n.nspid] = true
		if old != nil {
			changedNS[old.nspid] = true
		}
		t.mu.Lock()
		t.byPID[row.PID] = n
		t.mu.Unlock()
	}
	for pid, ch := range d.listing {
		if listed[pid] {
			continue
		}
		// A process gone from npu-smi's table: forget its listing once
		// the call has returned (one still hung keeps its entry, so a
		// pid that returns does not start a second call on that mount).
		select {
		case <-ch:
			delete(d.listing, pid)
		default:
		}
	}
	t.mu.Lock()
	for pid, r := range t.byPID {
		if !listed[pid] {
			// Gone from npu-smi's table: its files, found already, are
			// read to their end by the follower, then let go.
			delete(t.byPID, pid)
			changedNS[r.nspid] = true
			if r.ok {
				gone = append(gone, r)
			}
			changed = true
		}
	}
	if changed {
		t.reorder()
	}
	live := map[logstate.ProcessKey]bool{}
	for _, r := range t.byPID {
		if r.ok {
			live[logstate.ProcessKey{Dir: r.path, PID: r.nspid}] = true
		}
	}
	t.mu.Unlock()
	if !changed {
		return
	}
	d.set = true
	c.forgetWriters(changedNS)
	c.rootGen++ // who writes a screen log is looked at again
	c.f.SetProcRoots(t.procRoots())
	for _, r := range gone {
		// Its series stay for the TTL, but no longer hold a place under
		// the pid cap that a live process needs.
		if k := (logstate.ProcessKey{Dir: r.path, PID: r.nspid}); !live[k] {
			c.state.MarkGone(k)
		}
		for dir := range r.aliases {
			c.state.MarkGone(logstate.ProcessKey{Dir: dir, PID: r.nspid})
		}
	}
}

// resolve looks at one process in /proc and returns its row: old itself
// when nothing changed but the time of the look, a new row otherwise (a
// new process, another root, logs found). It logs what changed.
func (c *Service) resolve(pid int, now time.Time, old *logRoot) *logRoot {
	p, err := discover.Resolve(c.disc.procfs, pid)
	n := &logRoot{proc: procID{pid, p.Start}, nspid: p.NSpid, root: p.Root, via: p.Via, path: p.Path, anchor: p.Anchor, checked: now}
	if err == nil {
		n.ok = true
		n.owner, n.pod = c.ownerOfProcess(pid, p.UID, p.Cgroup)
		if old != nil && old.ok && old.found && old.path == n.path && old.anchor == n.anchor && old.proc == n.proc && old.nspid == n.nspid {
			// The same process with the same root, whose logs are read:
			// nothing to list again.
			c.roots.mu.Lock()
			old.checked = now
			c.roots.mu.Unlock()
			return old
		}
		n.found, err = c.disc.logsOf(pid, p)
		if errors.Is(err, discover.ErrGone) {
			// No such directory yet: CANN creates it with the first log.
			err = nil
		}
	}
	n.err = err
	same := old != nil && old.proc == n.proc && old.path == n.path && old.nspid == n.nspid && old.ok == n.ok &&
		old.found == n.found && (old.err == nil) == (n.err == nil)
	if same {
		c.roots.mu.Lock()
		old.checked = now
		c.roots.mu.Unlock()
		return old
	}
	if old != nil && old.ok && n.ok && (old.proc != n.proc || old.path != n.path) {
		// B10: a pid reused by a new process (another start time), or
		// the same process with another root (an exec, or an environment
		// it rewrote): the new root is read, the old one drained.
		c.logger.Info("NPU process changed its CANN log root (a new process with this pid, or a new environment)",
			"pid", pid, "nspid", n.nspid, "root", n.root, "from", viaName(n.via))
	}
	switch {
	case n.found:
		// Only the root and how it was chosen are logged: never a value
		// of another variable.
		c.logger.Info("reading the CANN logs of an NPU process through procfs", "pid", pid, "nspid", n.nspid,
			"root", n.root, "from", viaName(n.via))
	case errors.Is(err, discover.ErrPermission):
		c.logger.Warn("cannot read an NPU process's CANN log root through procfs: run the exporter as root "+
			"(or with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH) and mount the host's /proc (--path.procfs)",
			"pid", pid, "procfs", c.disc.procfs, "err", err)
	case errors.Is(err, discover.ErrGone):
		c.logger.Debug("NPU process not in procfs (exited, or --path.procfs is not the host's /proc)",
			"pid", pid, "procfs", c.disc.procfs)
	case err != nil:
		c.logger.Info("cannot find an NPU process's CANN log root through procfs", "pid", pid, "err", err)
	default:
		c.logger.Debug("NPU process has written no CANN log yet", "pid", pid, "root", n.root)
	}
	return n
}

// ownerOfProcess is who the kernel says a discovered process is: the pod
// its own cgroup names, else its uid and the cgroup of the container it
// runs in (two root containers are two owners; discover.ParseContainerCgroup),
// else the process itself.
func (c *Service) ownerOfProcess(pid, uid int, cgroup string) (string, ProcessPod) {
	if c.deps.PodOfProcess != nil {
		if pod, ok := c.deps.PodOfProcess(pid); ok && pod.UID != "" {
			return "pod:" + pod.UID, pod
		}
	}
	if uid >= 0 && cgroup != "" {
		return "uid:" + strconv.Itoa(uid) + "/ctr:" + cgroup, ProcessPod{}
	}
	if uid >= 0 {
		return "uid:" + strconv.Itoa(uid), ProcessPod{}
	}
	return "pid:" + strconv.Itoa(pid), ProcessPod{}
}

func viaName(v string) string {
	if v == "" {
		return "default for uid 0"
	}
	return v
}

// DiscoveredLogs returns, for every host pid of npu-smi's last table that
// discovery looked at, whether its own CANN logs were found through
// --path.procfs. Nil without discovery.
func (c *Service) DiscoveredLogs() map[int]bool {
	if c.disc == nil {
		return nil
	}
	return c.roots.found()
}
