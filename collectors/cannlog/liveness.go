package cannlog

import (
	"os"
	"path/filepath"
	"strconv"
)

// Liveness says whether a process is still running. main wires npu-smi's
// process table and ProcLiveness through AnyAlive; a containerised exporter
// without the host pid namespace still sees npu-smi's host pids.
type Liveness interface {
	Alive(pid int) bool
}

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

// LivenessFunc adapts a function to Liveness.
type LivenessFunc func(pid int) bool

// Alive calls f.
func (f LivenessFunc) Alive(pid int) bool { return f(pid) }
