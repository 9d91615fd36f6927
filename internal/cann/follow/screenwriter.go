package follow

import "strings"

// Who writes a screen log outside Kubernetes. A screen report's [PID: n]
// may name any process; the state ties it to that pid's process only where
// the file's writer and the process share an owner (logstate screenTies).
// The kernel knows the writer of a training job's stdout capture: the
// process that holds it open (`python train.py > train.log` gives the
// training process the file as its descriptor 1). So a bare-metal screen
// log's owner is the owner of the discovered NPU process that holds it,
// where exactly one owner's processes do; "" (no writer the kernel names)
// otherwise, and then it speaks for no discovered process.

// maxScreenWriters bounds the screen logs whose writer is remembered.
const maxScreenWriters = 4096

type screenWriter struct {
	owner string
	pod   ProcessPod
	gen   uint64 // rootGen when it was looked at
}

// screenWriterOf returns the owner of the writer of the screen log at path
// (and its pod). It is looked at again after the table of roots changed;
// a writer once found is kept while no other owner holds the file (a
// process that failed and exited no longer holds its log, whose last
// lines are still being read). Poll goroutine only.
func (c *Service) screenWriterOf(path string) (string, ProcessPod) {
	w, ok := c.screenWriters[path]
	if ok && w.gen == c.rootGen {
		return w.owner, w.pod
	}
	owner, pod, final := c.roots.holderOf(path, c.lookFDs)
	if !final {
		// A look at a holder's descriptors is not done within this
		// poll's budget (writers.go): what was known stands, and the
		// file is looked at again at the next report.
		return w.owner, w.pod
	}
	if owner == "" && ok {
		owner, pod = w.owner, w.pod
	}
	if c.screenWriters == nil || len(c.screenWriters) >= maxScreenWriters {
		c.screenWriters = map[string]screenWriter{}
	}
	c.screenWriters[path] = screenWriter{owner: owner, pod: pod, gen: c.rootGen}
	return owner, pod
}

// holderOf is the owner whose discovered processes hold the file at path
// open, "" where none or several owners do. A bare-metal process sees the
// file at the path the exporter reads (one mount namespace); a
// container's sees it below its root, where the exporter reaches it
// through the row's anchor. look reads a process's descriptors within the
// poll's budget (lookFDs); final is false while a look it needs is not
// done.
func (t *rootTable) holderOf(path string, look func(procID) (map[string]bool, bool)) (owner string, pod ProcessPod, final bool) {
	type cand struct {
		proc  procID
		rel   string
		owner string
		pod   ProcessPod
	}
	t.mu.Lock()
	var cands []cand
	for _, r := range t.byPID {
		if r.proc.pid == 0 || r.owner == "" {
			continue
		}
		rel := path
		if r.anchor != "" && hasDirPrefix(path, r.anchor) {
			rel = strings.TrimPrefix(path, r.anchor)
		}
		cands = append(cands, cand{proc: r.proc, rel: rel, owner: r.owner, pod: r.pod})
	}
	t.mu.Unlock()
	for _, cd := range cands {
		links, ok := look(cd.proc)
		if !ok {
			return "", ProcessPod{}, false
		}
		if _, held := links[cd.rel]; !held {
			continue
		}
		switch owner {
		case "":
			owner, pod = cd.owner, cd.pod
		case cd.owner:
		default:
			return "", ProcessPod{}, true // a file two owners write speaks for neither
		}
	}
	return owner, pod, true
}
