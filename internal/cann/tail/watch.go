package tail

import (
	"path/filepath"
	"slices"
	"syscall"
)

// evOp is what an inotify event said about a name.
type evOp uint8

const (
	opWrite  evOp = 1 << iota // content changed
	opCreate                  // created or moved in
	opRemove                  // deleted
	opRename                  // moved away
)

// notifyHint is what happened since the previous Poll.
type notifyHint struct {
	overflow bool            // events were lost: rescan
	all      bool            // not every directory is watched: check every file
	changed  map[string]evOp // names that had events, and which
	files    map[*tracked]struct{}
}

func (f *Follower) watchDir(dir string) {
	if f.w != nil {
		f.w.add(dir)
	}
}

// applyHint turns the changed names into files to check this Poll. A name
// that is not followed but could be (a new plog, a new directory, a kubelet
// rotation) asks for a full rescan, which is what finds files.
func (f *Follower) applyHint(h *notifyHint, c *pollCounters) (rescan bool) {
	if len(h.changed) == 0 {
		return false
	}
	h.files = make(map[*tracked]struct{}, len(h.changed))
	for name, op := range h.changed {
		if t := f.byPath[name]; t != nil {
			if op&(opCreate|opRename|opRemove) != 0 {
				// The name may hold another file now (replacement,
				// kubelet rotation): let a scan sort it out.
				rescan = true
			}
			if !t.h.isOpen() && t.life != lifeDrained {
				var st syscall.Stat_t
				if err := f.statPath(t, name, &st, c); err != nil ||
					(fileID{uint64(st.Dev), uint64(st.Ino)}) != t.id || !f.sameFile(t, name, st.Size, c) {
					rescan = true
					continue
				}
				t.pos.size = st.Size
				if !f.open(t, c, dirRef{}) {
					continue
				}
			}
			h.files[t] = struct{}{}
			continue
		}
		if f.interesting(name, c) {
			rescan = true
		}
	}
	return rescan
}

// interesting reports whether a name with events but not followed may be
// one to follow: a CANN log name, a screen log (or its kubelet rotation),
// or a directory (new device-N/, run/, a root created late).
func (f *Follower) interesting(name string, c *pollCounters) bool {
	if _, pid, ok := parseCANNName(filepath.Base(name)); ok {
		return f.wantedCANN(name, pid)
	}
	for _, g := range f.cfg.ScreenGlobs {
		if ok, _ := filepath.Match(g, name); ok {
			return true
		}
		if base, rot := kubeletRotated(name); rot {
			if ok, _ := filepath.Match(g, base); ok {
				return true
			}
		}
	}
	if rio := f.rootIOOf(name); rio != nil {
		// Below a CANN root (a tree a job can write) nothing is looked
		// up by path: a name of CANN's layout asks for a rescan, which
		// opens it from the root's descriptor; a configured root created
		// late is one too.
		base := filepath.Base(name)
		return slices.Contains(cannSortDirs, base) || layoutDir(base) || slices.Contains(f.cfg.Roots, name)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(name, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}
