package logstate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Liveness says whether a process is still running. main wires npu-smi's
// process table and ProcLiveness through AnyAlive; a containerised exporter
// without the host pid namespace still sees npu-smi's host pids.
type Liveness interface {
	Alive(pid int) bool
}

// LivenessReady may be implemented by a Liveness that cannot answer yet,
// such as npu-smi's process table before npu-smi first ran. The collector
// expires no process while Ready reports false (for at most ReadyGrace after
// it starts), so that a restart does not drop the series of running
// processes whose last log write is old.
type LivenessReady interface {
	Ready() bool
}

// ProcessLiveness may be implemented by a Liveness that can tell a process
// of the logs alive by more than its pid: a pod's process prints the pid in
// its container, which neither npu-smi (on A2) nor the host's /proc shows,
// but the joins match it to npu-smi's row by the device it drives.
type ProcessLiveness interface {
	AliveProcess(key ProcessKey) bool
}

// aliveProcess asks AliveProcess where live implements it, else Alive.
func aliveProcess(live Liveness, key ProcessKey) bool {
	if pl, ok := live.(ProcessLiveness); ok {
		return pl.AliveProcess(key)
	}
	return live.Alive(key.PID)
}

// ReadyGrace bounds how long expiry waits for a Liveness to become ready;
// after it, a never-ready source (npu-smi always failing) counts as "not
// alive" and the TTL alone decides.
const ReadyGrace = 5 * time.Minute

// ProcLiveness checks /proc/<pid>. Root defaults to /proc.
type ProcLiveness struct {
	Root string
}

// Alive reports whether <Root>/<pid> exists.
func (p ProcLiveness) Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	_, err := os.Stat(filepath.Join(root, strconv.Itoa(pid)))
	return err == nil
}

// AliveProcess checks the host pid of a process read through
// <Root>/<host pid>/root (discovery): the pid its logs print is its pid in
// its own namespace, which in the host's /proc is some other process. Other
// processes are checked by their pid as Alive does.
func (p ProcLiveness) AliveProcess(key ProcessKey) bool {
	if host, ok := p.hostPIDOf(key.Dir); ok {
		return p.Alive(host)
	}
	return p.Alive(key.PID)
}

// hostPIDOf parses <Root>/<pid>/{root,cwd}/… of a discovered log directory.
func (p ProcLiveness) hostPIDOf(dir string) (int, bool) {
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	rest, ok := strings.CutPrefix(dir, strings.TrimSuffix(root, "/")+"/")
	if !ok {
		return 0, false
	}
	pidPart, sub, ok := strings.Cut(rest, "/")
	if !ok || !(sub == "root" || sub == "cwd" || strings.HasPrefix(sub, "root/") || strings.HasPrefix(sub, "cwd/")) {
		return 0, false
	}
	pid, err := strconv.Atoi(pidPart)
	return pid, err == nil && pid > 0
}

// AnyAlive is alive when any of its members says so; nil members are skipped.
type AnyAlive []Liveness

// Alive reports whether any member reports pid alive.
func (a AnyAlive) Alive(pid int) bool {
	for _, l := range a {
		if l != nil && l.Alive(pid) {
			return true
		}
	}
	return false
}

// AliveProcess reports whether any member reports the process alive,
// by AliveProcess where the member has it, else by its pid.
func (a AnyAlive) AliveProcess(key ProcessKey) bool {
	for _, l := range a {
		if l != nil && aliveProcess(l, key) {
			return true
		}
	}
	return false
}

// Ready reports whether every member that can be not ready is ready.
func (a AnyAlive) Ready() bool {
	for _, l := range a {
		if r, ok := l.(LivenessReady); ok && !r.Ready() {
			return false
		}
	}
	return true
}

// LivenessFunc adapts a function to Liveness.
type LivenessFunc func(pid int) bool

// Alive calls f.
func (f LivenessFunc) Alive(pid int) bool { return f(pid) }
