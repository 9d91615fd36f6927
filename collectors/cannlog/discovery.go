package cannlog

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/discover"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/logstate"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/tail"
)

// Discovery: every process npu-smi lists gets its own CANN log root,
// found through --path.procfs (package discover) and followed as a
// tail.ProcRoot. It runs in the poll goroutine, only when npu-smi has run
// again (and, for a process whose logs are still missing, at most every
// discoveryRecheck): never on the scrape path, and on a node without NPU
// processes it does nothing at all.

// NPUProcess is a row of npu-smi's process table: a host pid on a chip.
type NPUProcess struct {
	NPU, Chip string
	PID       int
}

// ProcessTable gives discovery and coverage npu-smi's process table without
// running npu-smi.
type ProcessTable interface {
	// NPUProcesses returns the rows of the last successful npu-smi run and
	// when it ran; ok is false before the first.
	NPUProcesses() (rows []NPUProcess, at time.Time, ok bool)
}

// discoveryRecheck is how often a process whose logs were not found is
// looked at again (it may not have written its first plog yet).
const discoveryRecheck = 15 * time.Second

type discovered struct {
	p       discover.Process
	err     error // resolving failed: no root for it
	found   bool  // its root holds a log of its own pid
	checked time.Time
}

type discovery struct {
	procfs string
	table  ProcessTable

	// Owned by the poll goroutine.
	lastAt time.Time
	procs  map[int]*discovered // by host pid
	set    bool                // SetProcRoots was called once

	mu    sync.Mutex
	found map[int]bool // host pid → its logs are read (published copy)
}

func newDiscovery(cfg Config) *discovery {
	if cfg.Procfs == "" || cfg.Processes == nil {
		return nil
	}
	return &discovery{procfs: cfg.Procfs, table: cfg.Processes, procs: map[int]*discovered{}, found: map[int]bool{}}
}

// discover brings the per-process roots up to date with npu-smi's latest
// process table.
func (c *Collector) discover(now time.Time) {
	d := c.disc
	if d == nil {
		return
	}
	rows, at, ok := d.table.NPUProcesses()
	if !ok {
		if !d.set && now.Sub(c.created) >= logstate.ReadyGrace {
			// npu-smi never answered: let the saved offsets go (see
			// tail.Config.AwaitProcRoots) rather than keep them for ever.
			c.setProcRoots(nil)
		}
		return
	}
	recheck := false
	for _, e := range d.procs {
		if !e.found && now.Sub(e.checked) >= discoveryRecheck {
			recheck = true
			break
		}
	}
	if at.Equal(d.lastAt) && d.set && !recheck {
		return
	}
	d.lastAt = at
	listed := make(map[int]bool, len(rows))
	changed := !d.set
	for _, r := range rows {
		if r.PID <= 0 || listed[r.PID] {
			continue
		}
		listed[r.PID] = true
		e := d.procs[r.PID]
		if e != nil && (e.found || now.Sub(e.checked) < discoveryRecheck) {
			continue
		}
		n := c.resolve(r.PID, now, e)
		if e == nil || n.p != e.p || n.found != e.found || (n.err == nil) != (e.err == nil) {
			changed = true
		}
		d.procs[r.PID] = n
	}
	for pid := range d.procs {
		if !listed[pid] {
			// Gone from npu-smi's table: its files, found already, are
			// read to their end by the follower.
			delete(d.procs, pid)
			changed = true
		}
	}
	if !changed {
		return
	}
	var roots []tail.ProcRoot
	found := make(map[int]bool, len(d.procs))
	hostPIDs := make(map[logstate.ProcessKey]int, len(d.procs))
	for pid, e := range d.procs {
		found[pid] = e.found
		if e.err != nil {
			continue
		}
		roots = append(roots, tail.ProcRoot{Path: e.p.Path, Anchor: e.p.Anchor, PID: e.p.NSpid, HostPID: pid})
		hostPIDs[logstate.ProcessKey{Dir: e.p.Path, PID: e.p.NSpid}] = pid
	}
	slices.SortFunc(roots, func(a, b tail.ProcRoot) int { return a.HostPID - b.HostPID })
	c.setProcRoots(roots)
	c.state.SetHostPIDs(hostPIDs)
	d.mu.Lock()
	d.found = found
	d.mu.Unlock()
}

// resolve finds one process's root and whether its logs are there, and
// logs what changed since prev (nil: first look).
func (c *Collector) resolve(pid int, now time.Time, prev *discovered) *discovered {
	e := &discovered{checked: now}
	e.p, e.err = discover.Resolve(c.disc.procfs, pid)
	if e.err == nil {
		e.found, e.err = discover.Logs(e.p.Path, e.p.NSpid)
		if errors.Is(e.err, discover.ErrGone) {
			// No such directory yet: CANN creates it with the first log.
			e.err = nil
		}
	}
	if prev != nil && prev.found == e.found && (prev.err == nil) == (e.err == nil) {
		return e
	}
	switch {
	case e.found:
		// Only the root and how it was chosen are logged: never a value
		// of another variable.
		c.logger.Info("reading the CANN logs of an NPU process through procfs", "pid", pid, "nspid", e.p.NSpid,
			"root", e.p.Root, "from", viaName(e.p.Via))
	case errors.Is(e.err, discover.ErrPermission):
		c.logger.Warn("cannot read an NPU process's CANN log root through procfs: run the exporter as root "+
			"(or with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH) and mount the host's /proc (--path.procfs)",
			"pid", pid, "procfs", c.disc.procfs, "err", e.err)
	case errors.Is(e.err, discover.ErrGone):
		c.logger.Debug("NPU process not in procfs (exited, or --path.procfs is not the host's /proc)",
			"pid", pid, "procfs", c.disc.procfs)
	case e.err != nil:
		c.logger.Info("cannot find an NPU process's CANN log root through procfs", "pid", pid, "err", e.err)
	default:
		c.logger.Debug("NPU process has written no CANN log yet", "pid", pid, "root", e.p.Root)
	}
	return e
}

func viaName(v string) string {
	if v == "" {
		return "default for uid 0"
	}
	return v
}

func (c *Collector) setProcRoots(roots []tail.ProcRoot) {
	c.disc.set = true
	if pr, ok := c.f.(interface{ SetProcRoots([]tail.ProcRoot) }); ok {
		pr.SetProcRoots(roots)
	}
}

// DiscoveredLogs returns, for every host pid of npu-smi's last table that
// discovery looked at, whether its own CANN logs were found through
// --path.procfs. Nil without discovery.
func (c *Collector) DiscoveredLogs() map[int]bool {
	if c.disc == nil {
		return nil
	}
	c.disc.mu.Lock()
	defer c.disc.mu.Unlock()
	return maps.Clone(c.disc.found)
}
