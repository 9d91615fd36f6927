package follow

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Which process writes a file of a discovered root. Below a discovered
// root only files named after the root's process (its pid in its own
// namespace) are followed, but two pods can mount one log volume at the
// same path and both run their training process as the same pid of their
// container: each root then reaches both processes' plogs. The kernel knows
// the writer: the process that holds the file open (/proc/<pid>/fd). Where
// another discovered process with the same pid holds the file and the
// root's own does not, the file is that process's, and its lines go to that
// process's row.

// maxFDsLooked bounds the descriptors of one process read to find a file.
const maxFDsLooked = 1 << 16

// writerRoot returns the discovered root the file at path lies in (from)
// and the one whose process writes it (to): the same unless the kernel
// says otherwise; "" and "" for a file of no discovered root. Decisions are
// kept until the table of roots changes. Called on the poll goroutine.
func (c *Service) writerRoot(path string) (from, to string) {
	if w, ok := c.writers[path]; ok {
		return w[0], w[1]
	}
	from, to = c.roots.writerOf(path, c.holds)
	if c.writers == nil || len(c.writers) >= 4096 {
		c.writers = map[string][2]string{}
	}
	c.writers[path] = [2]string{from, to}
	return from, to
}

// writerOf is writerRoot's decision; holds reads a process's descriptors.
func (t *rootTable) writerOf(path string, holds func(pid int, rel string) bool) (from, to string) {
	type cand struct {
		pid  int
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
		return "", ""
	}
	from, anchor, ownPID := own.path, own.anchor, own.proc.pid
	var others []cand
	for _, r := range t.byPID {
		if r != own && r.ok && r.nspid == own.nspid && r.anchor != "" {
			others = append(others, cand{r.proc.pid, r.path})
		}
	}
	t.mu.Unlock()
	if len(others) == 0 || !hasDirPrefix(path, anchor) {
		return from, from
	}
	// The path as the processes see it: the same mount point in each
	// container (the shared volume at the same path).
	rel := strings.TrimPrefix(path, anchor)
	if holds(ownPID, rel) {
		return from, from
	}
	for _, o := range others {
		if holds(o.pid, rel) {
			return from, o.path
		}
	}
	return from, from
}

// holds reports whether host process pid holds the file rel (a path in its
// own mount namespace) open, from <procfs>/<pid>/fd.
func (c *Service) holds(pid int, rel string) bool {
	dir := filepath.Join(c.deps.Procfs, strconv.Itoa(pid), "fd")
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	for n := 0; n < maxFDsLooked; {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			if l, lerr := os.Readlink(filepath.Join(dir, name)); lerr == nil && l == rel {
				return true
			}
		}
		n += len(names)
		if err != nil || len(names) == 0 {
			return false
		}
	}
	return false
}
