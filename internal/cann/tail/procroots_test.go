package tail

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A per-process root follows only its own pid's files and labels them with
// the root (the caller's key of the process); the other ranks sharing the directory are not read through
// it.
func TestProcRootFollowsOnlyItsPID(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	dev := filepath.Join(root, "run", "device-0")
	mkdir(t, dev)
	appendFile(t, filepath.Join(dir, plogName(10, 1)), "mine-1\n")
	appendFile(t, filepath.Join(dir, plogName(11, 1)), "other-1\n")
	appendFile(t, filepath.Join(dev, "device-10_20250101000000001.log"), "mine-dev\n")
	// A link the process planted: not followed below a process's root.
	outside := filepath.Join(t.TempDir(), "exporter-file")
	appendFile(t, outside, "outside\n")
	if err := os.Symlink(outside, filepath.Join(dir, plogName(10, 0))); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(root, "security", "plog"))
	appendFile(t, filepath.Join(root, "security", "plog", plogName(10, 1)), "security\n")
	f := newTestFollower(t, Config{})
	f.SetProcRoots([]ProcRoot{{Path: root, PID: 10}})
	hosts := map[string]string{}
	var s sink
	if err := f.Poll(func(file *File, line []byte) {
		s.handle(file, line)
		hosts[string(line)] = file.ProcRoot
	}); err != nil {
		t.Fatal(err)
	}
	expectLines(t, s.lines, "mine-dev", "mine-1") // path order
	if hosts["mine-1"] != root || hosts["mine-dev"] != root {
		t.Fatalf("roots: %v", hosts)
	}
	// A new file of the other rank raises no rescan through this root; a
	// new file of this one is found.
	appendFile(t, filepath.Join(dir, plogName(11, 2)), "other-2\n")
	appendFile(t, filepath.Join(dir, plogName(10, 2)), "mine-2\n")
	s.lines = nil
	f.cfg.RescanInterval = time.Hour
	f.nextScan = f.now().Add(time.Hour)
	for i := 0; i < 3 && len(s.lines) == 0; i++ {
		poll(t, f, &s)
	}
	if f.w != nil {
		expectLines(t, s.lines, "mine-2")
	}
}

// A file that a configured root and a per-process root both reach is read
// once, under the configured path, and still carries its root.
func TestProcRootSameFileAsConfiguredRoot(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	appendFile(t, filepath.Join(dir, plogName(10, 1)), "one\ntwo\n")
	// The process sees the same directory under another path (its mount
	// namespace); a symlink stands in for <procfs>/<pid>/root.
	link := filepath.Join(t.TempDir(), "procroot")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	f := newTestFollower(t, Config{Roots: []string{root}})
	f.SetProcRoots([]ProcRoot{{Path: link, PID: 10}})
	var paths []string
	var procRoots []string
	var s sink
	for range 3 {
		if err := f.Poll(func(file *File, line []byte) {
			s.handle(file, line)
			paths = append(paths, file.Path)
			procRoots = append(procRoots, file.ProcRoot)
		}); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, s.lines, "one", "two")
	if paths[0] != filepath.Join(dir, plogName(10, 1)) || procRoots[0] != link {
		t.Fatalf("read as %v root %v", paths, procRoots)
	}
	if st := f.Stats(); st.FilesTracked != 1 {
		t.Fatalf("files tracked %d, want 1", st.FilesTracked)
	}
}

// The process exits: its root vanishes from /proc. The file, held open since
// it was found (also past the idle close), is read to its end: the EI0011
// written just before exit is delivered. A vanished root is no read error.
func TestProcRootExitedProcessDrained(t *testing.T) {
	for _, how := range []string{"unmounted", "deleted"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "proc-1234-root")
			dir := plogDir(t, root)
			p := filepath.Join(dir, plogName(10, 1))
			appendFile(t, p, "start\n")
			f := newTestFollower(t, Config{RescanInterval: time.Hour})
			now := time.Now()
			f.now = func() time.Time { return now }
			f.SetProcRoots([]ProcRoot{{Path: root, PID: 10}})
			var s sink
			poll(t, f, &s)
			// Idle far beyond the idle close: the descriptor stays.
			now = now.Add(2 * idleClose)
			poll(t, f, &s)
			if st := f.Stats(); st.FilesOpen != 1 {
				t.Fatalf("files open %d after idling, want 1 (held for the process's last lines)", st.FilesOpen)
			}
			appendFile(t, p, "EI0011 last words\n")
			switch how {
			case "unmounted":
				// Unreachable, not deleted: as a private tmpfs once its
				// mount namespace is gone.
				if err := os.Rename(root, filepath.Join(base, "elsewhere")); err != nil {
					t.Fatal(err)
				}
			case "deleted":
				if err := os.RemoveAll(root); err != nil {
					t.Fatal(err)
				}
			}
			f.SetProcRoots([]ProcRoot{{Path: root, PID: 10}})
			poll(t, f, &s)
			poll(t, f, &s)
			expectLines(t, s.lines, "start", "EI0011 last words")
			st := f.Stats()
			for reason, n := range st.ReadErrors {
				if n != 0 {
					t.Errorf("read error %s = %d for a process that exited", reason, n)
				}
			}
			if st.RootsMissing != 0 || st.DirsUnreadable != 0 {
				t.Errorf("problems %+v", st)
			}
		})
	}
}

// With AwaitProcRoots, the saved offsets of files found only through /proc
// survive the rescans before discovery first answers: a restart resumes
// them rather than reading them again.
func TestProcRootResumeAfterRestart(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p := filepath.Join(dir, plogName(10, 1))
	appendFile(t, p, "a1\na2\n")
	state := filepath.Join(t.TempDir(), "tail.state")
	cfg := Config{StateFile: state, AwaitProcRoots: true}
	roots := []ProcRoot{{Path: root, PID: 10}}

	f1 := newTestFollower(t, cfg)
	if _, err := f1.Restore(); err != nil {
		t.Fatal(err)
	}
	f1.SetProcRoots(roots)
	var s1 sink
	poll(t, f1, &s1)
	if err := f1.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	_ = f1.Close()
	expectLines(t, s1.lines, "a1", "a2")

	appendFile(t, p, "a3\n")
	f2 := newTestFollower(t, cfg)
	if _, err := f2.Restore(); err != nil {
		t.Fatal(err)
	}
	var s2 sink
	for range 2 * pendingScans {
		poll(t, f2, &s2) // npu-smi has not answered yet
	}
	f2.SetProcRoots(roots)
	poll(t, f2, &s2)
	expectLines(t, s2.lines, "a3")
}
