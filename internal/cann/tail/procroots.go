package tail

import (
	"slices"
	"strings"
)

// ProcRoot is the CANN log root of one running process, reached through the
// host's /proc (<procfs>/<host pid>/root/<its root>), so that a process
// whose logs live only inside its container is read without a host path.
// Only that process's own files are followed below it: its pid (as printed
// in its file names, the pid in its own pid namespace) selects them, since
// the ranks of one pod share a root and each is reached through its own
// /proc entry. Such files are pinned while their root is set: not closed
// when idle, and under budget pressure the Config.MaxPinnedPerProcess most
// recently written of each root keep their descriptors, because once the
// process exits its /proc entry, and with it the only way to reopen them,
// is gone, and the last lines it wrote (EI0011) must still be read.
//
// Which host process owns a root is the caller's to know (its table of
// roots): the follower only hands Path back in File.ProcRoot.
type ProcRoot struct {
	// Path reaches the root from the exporter: <procfs>/<host pid>/root
	// followed by the root as the process sees it.
	Path string
	// PID is the process's pid in its own pid namespace (NSpid): only
	// plog-<PID>_* and device-<PID>_* files are followed below Path.
	PID int
	// Anchor is the process's root directory (<procfs>/<pid>/root), Path
	// lying below it: the part of Path after Anchor is resolved inside the
	// process's root (links in it cannot lead out). Empty: Path is opened
	// as it is.
	Anchor string
}

// DefaultMaxPinnedPerProcess is the default Config.MaxPinnedPerProcess: a
// CANN process writes one live plog in run/ and one in debug/, and one
// device log per device it drives; 16 leaves room for rotation.
const DefaultMaxPinnedPerProcess = 16

// procSortDirs are the sort directories followed below a ProcRoot: HCCL and
// HCCP write to run/ and debug/ (plog/ and device-<id>/); security/ holds no
// HCCL line.
var procSortDirs = []string{"run", "debug"}

// SetProcRoots replaces the set of per-process roots. Files of a root that
// is dropped (the process left npu-smi's table) or that disappears (the
// process exited) are not dropped at once: like a deleted or renamed file,
// each is read to its end through the descriptor held since it was found,
// then let go; they are no longer pinned. The watch names below a dropped
// root go with it (a pod's ranks share a directory, and the names of an
// exited rank would otherwise turn every write of the others into a
// rescan). A root that cannot be listed is not counted as a read error
// here: the caller, which found it, says why (ascend_npu_processes).
//
// Saved offsets of the state file wait for the first call when
// Config.AwaitProcRoots is set, so that a restart resumes the files of
// processes that are found only through /proc instead of reading them again.
// The next Poll rescans, also when the roots did not change: the caller
// calls when it has news (a root that was empty has a log now, and a root
// created after it was set has no watch yet).
func (f *Follower) SetProcRoots(roots []ProcRoot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, old := range f.procRoots {
		if !slices.ContainsFunc(roots, func(r ProcRoot) bool { return r.Path == old.Path }) && f.w != nil {
			f.w.dropBelow(old.Path)
		}
	}
	f.procRootsSet = true
	f.procRoots = slices.Clone(roots)
	// A worker per root; files found through a dropped root keep theirs
	// (t.rio) while they are drained.
	ios := make(map[string]*rootIO, len(roots))
	for _, r := range roots {
		if ios[r.Path] = f.rootIOs[r.Path]; ios[r.Path] == nil {
			ios[r.Path] = &rootIO{}
		}
	}
	f.rootIOs = ios
	f.nextScan = f.now().Add(-1)
}

// scanProcRoots walks every per-process root after the configured ones, so
// a file that a configured root also reaches keeps the configured path.
func (f *Follower) scanProcRoots(sc *scanCtx) {
	defer func() { sc.only, sc.root, sc.rio, sc.croot = 0, "", nil, nil }()
	for _, r := range f.procRoots {
		sc.only, sc.root, sc.rio = r.PID, r.Path, f.rootIOs[r.Path]
		sc.croot = &cannRoot{path: r.Path, anchor: r.Anchor}
		if sc.rio.hung.Load() {
			// Its file system does not answer: its files wait as they are.
			f.keepBelow(r.Path, sc.gen)
			continue
		}
		rel := ""
		if r.Anchor != "" {
			rel = strings.TrimPrefix(r.Path, r.Anchor)
		}
		// A directory that cannot be listed is not a problem of the
		// follower (see SetProcRoots); a process that exited leaves its
		// files unseen by this scan, and they are drained as orphans.
		saved := sc.problems
		sc.problems = make(map[string]problem)
		f.walkRoot(r.Path, r.Anchor, rel, true, procSortDirs, sc)
		for p, pr := range sc.problems {
			f.keepBelow(p, sc.gen)
			if pr.reason == reasonRefused {
				saved[p] = pr // logged once: the job's tree is not followed there
			}
		}
		sc.problems = saved
	}
}

// rootIOOf returns the worker of the root path lies in, if any.
func (f *Follower) rootIOOf(path string) *rootIO {
	for p, r := range f.rootIOs {
		if hasDirPrefix(path, p) {
			return r
		}
	}
	for p, r := range f.cfgIOs {
		if path == p || hasDirPrefix(path, p) {
			return r
		}
	}
	return nil
}

// wantedCANN reports whether a CANN log name with events belongs to a
// followed root: under a per-process root only that process's own files do
// (the other ranks of a pod share the directory and are followed through
// their own roots); elsewhere every name does.
func (f *Follower) wantedCANN(path string, pid int) bool {
	under := false
	for _, r := range f.procRoots {
		if hasDirPrefix(path, r.Path) {
			if r.PID == pid {
				return true
			}
			under = true
		}
	}
	if !under {
		return true
	}
	for _, root := range f.cfg.Roots {
		if hasDirPrefix(path, root) {
			return true
		}
	}
	return false
}

// pinned reports whether t's root is set: its descriptor is not closed
// when idle.
func (f *Follower) pinned(t *tracked) bool {
	return t.ProcRoot != "" && slices.ContainsFunc(f.procRoots, func(r ProcRoot) bool { return r.Path == t.ProcRoot })
}

// pinnedSet returns the open files evict must leave open: of each set
// root, its MaxPinnedPerProcess most recently written ones.
func (f *Follower) pinnedSet() map[*tracked]struct{} {
	if len(f.procRoots) == 0 {
		return nil
	}
	byRoot := map[string][]*tracked{}
	for _, t := range f.order {
		if t.h.isOpen() && f.pinned(t) {
			byRoot[t.ProcRoot] = append(byRoot[t.ProcRoot], t)
		}
	}
	out := map[*tracked]struct{}{}
	for _, ts := range byRoot {
		if len(ts) > f.cfg.MaxPinnedPerProcess {
			slices.SortStableFunc(ts, func(a, b *tracked) int { return b.lastChange.Compare(a.lastChange) })
			ts = ts[:f.cfg.MaxPinnedPerProcess]
		}
		for _, t := range ts {
			out[t] = struct{}{}
		}
	}
	return out
}
