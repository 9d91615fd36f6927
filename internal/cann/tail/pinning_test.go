package tail

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// Which process owns a file below a ProcRoot, and what that costs the
// others (issue 27, B7, B9, 4b).

// procRootOn makes <procfs>/<hostPID>/root a link to rootfs (a process's
// root file system, as /proc shows it) and returns the ProcRoot of its log
// root /logs, whose pid in its own namespace is nspid.
func procRootOn(t testing.TB, procfs, rootfs string, hostPID, nspid int) ProcRoot {
	t.Helper()
	base := filepath.Join(procfs, strconv.Itoa(hostPID))
	mkdir(t, base)
	mkdir(t, filepath.Join(rootfs, "logs"))
	if err := os.Symlink(rootfs, filepath.Join(base, "root")); err != nil {
		t.Fatal(err)
	}
	anchor := filepath.Join(base, "root")
	return ProcRoot{Path: anchor + "/logs", Anchor: anchor, PID: nspid}
}

// B7: a job spreads its own (pinned) files over 100 device directories
// under a 32-file budget. Before, pinned files were never evicted: the
// budget stayed spent and another job's new file, with its EI0011, waited
// for ever. Now pinned files count against the budget, and past
// MaxPinnedPerProcess the drained ones are evicted like any other.
// Zero-padded pid spellings (device-009_…) are not the process's files.
func TestPinnedFilesWithinBudget(t *testing.T) {
	procfs := t.TempDir()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	pr := procRootOn(t, procfs, rootfs, 4200, 9)
	logs := filepath.Join(rootfs, "logs")
	for i := range 100 {
		dir := filepath.Join(logs, "run", fmt.Sprintf("device-%d", i))
		mkdir(t, dir)
		appendFile(t, filepath.Join(dir, fmt.Sprintf("device-9_2025010100000%04d.log", i)), fmt.Sprintf("dev %d\n", i))
		// The same pid, spelled with leading zeros: not pid 9's file.
		appendFile(t, filepath.Join(dir, fmt.Sprintf("device-009_2025010100000%04d.log", i)), "padded\n")
	}
	other := t.TempDir()
	otherDir := plogDir(t, other)
	f := newTestFollower(t, Config{Roots: []string{other}, MaxOpenFiles: 32, MaxPinnedPerProcess: 8,
		MaxDirsPerRoot: 1000, MaxWatchesPerRoot: 1000, RescanInterval: time.Hour})
	f.SetProcRoots([]ProcRoot{pr})
	var s sink
	for range 10 { // each poll opens what the budget allows and reads it
		poll(t, f, &s)
	}
	for _, l := range s.lines {
		if l == "padded" {
			t.Fatal("a zero-padded pid spelling was read as the process's file")
		}
	}
	if st := f.Stats(); st.FilesOpen > 32 {
		t.Fatalf("%d files open over a budget of 32", st.FilesOpen)
	}
	// Another job's first plog, written once the budget is spent.
	appendFile(t, filepath.Join(otherDir, plogName(77, 1)), "EI0011 other job\n")
	f.nextScan = f.now().Add(-1)
	s.lines = nil
	for range 5 {
		poll(t, f, &s)
	}
	if !containsLine(s.lines, "EI0011 other job") {
		t.Fatalf("another job's line never read while a process's pinned files hold the budget; stats %+v", f.Stats())
	}
	pinnedOpen := 0
	for _, tr := range f.byID {
		if tr.h.isOpen() && tr.ProcRoot == pr.Path {
			pinnedOpen++
		}
	}
	if pinnedOpen > 32 {
		t.Fatalf("%d of the process's files open", pinnedOpen)
	}
}

// B9: two ranks of a pod share one log directory, each reached through its
// own /proc entry. One exits and its root is dropped: its watch names go
// with it, so the other rank's writes are no rescan each (before, every
// write raised an event under the dead rank's name that asked for one).
func TestDroppedRootTakesItsWatchNames(t *testing.T) {
	procfs := t.TempDir()
	shared := filepath.Join(t.TempDir(), "rootfs")
	a := procRootOn(t, procfs, shared, 5000, 30)
	b := procRootOn(t, procfs, shared, 5001, 31)
	dir := plogDir(t, filepath.Join(shared, "logs"))
	appendFile(t, filepath.Join(dir, plogName(30, 1)), "a1\n")
	pb := filepath.Join(dir, plogName(31, 1))
	appendFile(t, pb, "b1\n")
	f := newTestFollower(t, Config{RescanInterval: time.Hour})
	if f.w == nil {
		testtools.NeedsKernel(t, "no inotify here: nothing to watch")
	}
	f.SetProcRoots([]ProcRoot{a, b})
	var s sink
	poll(t, f, &s)
	poll(t, f, &s)
	f.SetProcRoots([]ProcRoot{b}) // rank 30 left npu-smi's table
	poll(t, f, &s)
	for name := range f.w.dirs {
		if hasDirPrefix(name, a.Path) || name == a.Path {
			t.Fatalf("watch name %s of the dropped root kept", name)
		}
	}
	gen := f.gen
	for i := range 10 {
		appendFile(t, pb, fmt.Sprintf("b%d\n", i+2))
		poll(t, f, &s)
	}
	if n := f.gen - gen; n > 1 {
		t.Fatalf("%d rescans for 10 writes of the live rank: the dead rank's names still ask for them", n)
	}
	if !containsLine(s.lines, "b11") {
		t.Fatalf("the live rank's lines were not read: %v", s.lines)
	}
}

// 4b: a process exits while the exporter is down; /proc takes its root,
// and with it the only path to what it wrote after the last checkpoint.
// The restart cannot read it, but says so: the file is counted lost. A
// plog CANN deleted from a directory that still exists is rotation, not
// loss.
func TestFilesOfAProcessGoneWhileDownCounted(t *testing.T) {
	procfs := t.TempDir()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	pr := procRootOn(t, procfs, rootfs, 4300, 12)
	dir := plogDir(t, filepath.Join(rootfs, "logs"))
	appendFile(t, filepath.Join(dir, plogName(12, 1)), "before\n")
	host := t.TempDir() // a host path's process, still running
	hostDir := plogDir(t, host)
	rotated := filepath.Join(hostDir, plogName(5, 0))
	appendFile(t, rotated, "old\n")
	appendFile(t, filepath.Join(hostDir, plogName(5, 1)), "new\n")
	state := filepath.Join(t.TempDir(), "tail.state")
	cfg := Config{Roots: []string{host}, StateFile: state, AwaitProcRoots: true}
	f1 := newTestFollower(t, cfg)
	if _, err := f1.Restore(); err != nil {
		t.Fatal(err)
	}
	f1.SetProcRoots([]ProcRoot{pr})
	var s1 sink
	poll(t, f1, &s1)
	if err := f1.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	_ = f1.Close()
	expectLines(t, s1.lines, "before", "old", "new")

	// Down: CANN deletes the host process's oldest plog; the other process
	// writes its last line and exits, and its /proc entry goes.
	if err := os.Remove(rotated); err != nil {
		t.Fatal(err)
	}
	appendFile(t, filepath.Join(dir, plogName(12, 1)), "EI0011 last words\n")
	if err := os.RemoveAll(filepath.Join(procfs, "4300")); err != nil {
		t.Fatal(err)
	}

	f2 := newTestFollower(t, cfg)
	if _, err := f2.Restore(); err != nil {
		t.Fatal(err)
	}
	f2.SetProcRoots(nil) // npu-smi no longer lists it
	var s2 sink
	for range 2 * pendingScans {
		f2.nextScan = f2.now().Add(-1)
		poll(t, f2, &s2)
	}
	if st := f2.Stats(); st.FilesLost != 1 {
		t.Fatalf("files lost %d, want 1 (the exited process's plog; not the rotated one)", st.FilesLost)
	}
}
