package tail

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// Round five of the attacks (issue 38): every open and every walk of a root
// a tenant can write, configured roots included, is descriptor-relative,
// follows no link, checks the file's type before it reads, and runs on the
// root's worker with its deadline.

// C1: a configured root (the DaemonSet's /var/log/npu, which training
// containers mount and write) holds a plog name that is a link to a host
// file. On 0.4.0 the follower followed it and exported the host file's
// lines as the job's.
func TestAttackC1ConfiguredRootFileLink(t *testing.T) {
	host := t.TempDir()
	secret := filepath.Join(host, "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$secret-hash:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := plogDir(t, root)
	appendFile(t, filepath.Join(dir, plogName(10, 1)), "own line\n")
	if err := os.Symlink(secret, filepath.Join(dir, plogName(11, 1))); err != nil {
		t.Fatal(err)
	}
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	poll(t, f, &s)
	if containsLine(s.lines, "root:$6$secret-hash:19000:0:99999:7:::") {
		t.Fatalf("a host file behind a link in a configured root was exported: %q", s.lines)
	}
	expectLines(t, s.lines, "own line")
	if st := f.Stats(); st.Refused[refusedSymlink] == 0 {
		t.Errorf("the link was not counted as refused: %+v", st.Refused)
	}
}

// C2: a file waiting for a descriptor is opened again later (Poll's
// wantOpen). On 0.4.0 that open was by path, following links and before
// the type check: a job that swapped the name for a link to a FIFO (or a
// device node, or a root-only host file) between the listing and the open
// made the exporter open it. A FIFO shows the open: a writer blocked in
// open(O_WRONLY) returns once anyone opens it for reading.
func TestAttackC2SwapBeforeOpen(t *testing.T) {
	host := t.TempDir()
	fifo := filepath.Join(host, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testtools.NeedsKernel(t, "mkfifo: %v", err)
	}
	opened := make(chan struct{})
	go func() {
		fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err == nil {
			close(opened)
			_ = syscall.Close(fd)
		}
	}()
	t.Cleanup(func() {
		// Release the writer if nobody opened the FIFO.
		if fd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			time.Sleep(10 * time.Millisecond)
			_ = syscall.Close(fd)
		}
	})
	root := t.TempDir()
	dir := plogDir(t, root)
	first := filepath.Join(dir, plogName(20, 1))  // read first (path order)
	second := filepath.Join(dir, plogName(21, 1)) // waits for a descriptor
	appendFile(t, first, "first\n")
	appendFile(t, second, "second\n")
	f := newTestFollower(t, Config{Roots: []string{root}, MaxOpenFiles: 1, DisableNotify: true})
	swapped := false
	handle := func(_ *File, line []byte) {
		if string(line) == "first" && !swapped {
			// The job swaps the waiting file's name for a link.
			swapped = true
			if err := os.Remove(second); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(fifo, second); err != nil {
				t.Error(err)
			}
		}
	}
	if err := f.Poll(handle); err != nil {
		t.Fatal(err)
	}
	if !swapped {
		t.Fatal("the first file was not read")
	}
	select {
	case <-opened:
		t.Fatal("the exporter opened a FIFO a link in the job's root named")
	case <-time.After(200 * time.Millisecond):
	}
}

// C3: a hung FUSE file system in a configured root (a training container
// mounts /var/log/npu and puts its own FUSE mount, or a link to one,
// there). On 0.4.0 configured roots were read without a worker: the poll
// goroutine blocked for good, every other root's lines stopped and Close
// never returned. Now the root's calls are abandoned at the deadline.
func TestAttackC3ConfiguredRootHungFilesystem(t *testing.T) {
	if os.Getenv("HCCL_TAIL_C3_CHILD") != "" {
		c3Child(t)
		return
	}
	t.Parallel() // waits on its child in a mount namespace of its own
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttackC3ConfiguredRootHungFilesystem$", "-test.v")
	cmd.Env = append(os.Environ(), "HCCL_TAIL_C3_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	out, err := runWithin(cmd, 30*time.Second)
	if strings.Contains(out, "SKIP-FUSE") {
		testtools.NeedsKernel(t, "no FUSE mount here:\n%s", out)
	}
	if err != nil {
		if !strings.Contains(out, "=== RUN") {
			testtools.NeedsKernel(t, "cannot start a process in a new mount namespace: %v", err)
		}
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func c3Child(t *testing.T) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	attacker, victim := t.TempDir(), t.TempDir()
	vfile := filepath.Join(plogDir(t, victim), plogName(22, 1))
	appendFile(t, vfile, "victim start\n")
	// A mount point below a root is entered only with CrossFilesystems;
	// the root itself may be any file system.
	abort := hungFUSE(t, plogDir(t, attacker))
	defer abort()
	f, err := New(Config{
		Roots:          []string{attacker, victim},
		RescanInterval: 50 * time.Millisecond, IODeadline: 300 * time.Millisecond,
		CrossFilesystems: true,
	}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	handle := func(_ *File, line []byte) { got = append(got, string(line)) }
	for round := range 3 {
		want := fmt.Sprintf("victim EI0011 %d", round)
		written := time.Now()
		appendFile(t, vfile, want+"\n")
		for !containsLine(got, want) {
			if time.Since(written) > 2*time.Second {
				t.Fatalf("round %d: the victim's line not delivered within 2 s", round)
			}
			pollWithin(t, f, handle, 2*time.Second)
			time.Sleep(20 * time.Millisecond)
		}
	}
	st := f.Stats()
	if st.HungCalls == 0 {
		t.Errorf("no call counted as abandoned: %+v", st)
	}
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v with a hung root", d)
	}
}

// C4: files whose last line is never terminated kept their descriptors
// for ever on 0.4.0 (eviction and the idle close wanted offset ==
// size), so once one job's root held the whole budget that way, another
// root's new file waited for ever and its EI0011 was never read. Now such
// files are evicted (the partial line is read again from its start when
// the file is opened again: nothing lost, nothing read twice), the roots
// over their share first.
func TestAttackC4UnterminatedLinesHoldNoBudget(t *testing.T) {
	attacker, victim := t.TempDir(), t.TempDir()
	adir := plogDir(t, attacker)
	const budget = 8
	var afiles []string
	for i := range budget {
		p := filepath.Join(adir, plogName(30+i, 1))
		appendFile(t, p, fmt.Sprintf("a%d\npartial %d", i, i)) // no newline at the end
		afiles = append(afiles, p)
	}
	f := newTestFollower(t, Config{Roots: []string{attacker, victim}, MaxOpenFiles: budget})
	var s sink
	poll(t, f, &s)
	if st := f.Stats(); st.FilesOpen != budget {
		t.Fatalf("%d files open, want the whole budget %d", st.FilesOpen, budget)
	}
	vfile := filepath.Join(plogDir(t, victim), plogName(99, 1))
	appendFile(t, vfile, "victim EI0011\n")
	for range 5 {
		poll(t, f, &s)
	}
	if !containsLine(s.lines, "victim EI0011") {
		t.Fatalf("the victim's new file waited for a descriptor for ever: %+v", f.Stats())
	}
	// The attacker's lines end later: each partial line is delivered
	// once, whole.
	for _, p := range afiles {
		appendFile(t, p, " ends\n")
	}
	for range 5 {
		poll(t, f, &s)
	}
	for i := range budget {
		want := fmt.Sprintf("partial %d ends", i)
		n := 0
		for _, l := range s.lines {
			if l == want {
				n++
			}
			if strings.HasPrefix(l, fmt.Sprintf("partial %d", i)) && l != want {
				t.Errorf("a partial line delivered cut: %q", l)
			}
		}
		if n != 1 {
			t.Errorf("%q delivered %d times, want once", want, n)
		}
	}
}

// C5: once the inotify watches ran out (or the follower's share of them),
// 0.4.0 checked every file on every Poll (and, without events, idle files
// on every 10th) for good, even after watches were free again. Now a
// rescan that watches every directory turns events back on.
func TestAttackC5WatchesRecover(t *testing.T) {
	root := t.TempDir()
	for i := range 4 {
		dir := filepath.Join(root, "run", fmt.Sprintf("device-%d", i))
		mkdir(t, dir)
		appendFile(t, filepath.Join(dir, fmt.Sprintf("device-%d_%017d.log", 40+i, 20250101000000000)), "x\n")
	}
	f := newTestFollower(t, Config{Roots: []string{root}})
	if f.w == nil {
		testtools.NeedsKernel(t, "no inotify here")
	}
	f.w.limit = 2 // the share is used up by other processes' watches
	var s sink
	poll(t, f, &s)
	if !f.w.failed {
		t.Fatal("watches did not run out")
	}
	f.w.limit = 1 << 20 // freed
	poll(t, f, &s)
	if f.w.failed {
		t.Fatalf("still polling every file after watches became available (%d watched)", f.w.count())
	}
	if h := f.w.take(); h.all {
		t.Fatal("the next Poll still checks every file")
	}
}

// C2b: the waiting file's name swapped for a FIFO the job made in its own
// directory (no link at all). On 0.4.0 the open came before the type
// check, so the FIFO was opened (a device node's driver would have run its
// open too). Now the name is opened with O_PATH and type-checked first:
// nothing but a regular file is ever opened for reading.
func TestAttackC2bSwapForFIFO(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	first := filepath.Join(dir, plogName(20, 1))
	second := filepath.Join(dir, plogName(21, 1))
	appendFile(t, first, "first\n")
	appendFile(t, second, "second\n")
	opened := make(chan struct{})
	f := newTestFollower(t, Config{Roots: []string{root}, MaxOpenFiles: 1, DisableNotify: true})
	swapped := false
	handle := func(_ *File, line []byte) {
		if string(line) != "first" || swapped {
			return
		}
		swapped = true
		if err := os.Remove(second); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(second, 0o600); err != nil {
			t.Errorf("mkfifo: %v", err)
			return
		}
		go func() {
			fd, err := syscall.Open(second, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
			if err == nil {
				close(opened)
				_ = syscall.Close(fd)
			}
		}()
		time.Sleep(50 * time.Millisecond) // the writer waits in open
	}
	t.Cleanup(func() {
		if fd, err := syscall.Open(second, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			time.Sleep(10 * time.Millisecond)
			_ = syscall.Close(fd)
		}
	})
	if err := f.Poll(handle); err != nil {
		t.Fatal(err)
	}
	if !swapped {
		t.Fatal("the first file was not read")
	}
	select {
	case <-opened:
		t.Fatal("the exporter opened a FIFO the job put where its log was")
	case <-time.After(200 * time.Millisecond):
	}
}

// C6: a job renames its followed files out of CANN's layout and writes on
// through its own descriptors. On 0.4.0 each stayed an orphan, holding its
// descriptor for as long as it grew, and once they held the budget another
// root's new file waited for ever. Now a root keeps at most a few orphans
// (the limit "orphans" is counted); the rest are let go.
func TestAttackC6OrphansHoldNoBudget(t *testing.T) {
	attacker, victim := t.TempDir(), t.TempDir()
	adir := plogDir(t, attacker)
	away := filepath.Join(attacker, "run", "away") // not CANN's layout: not walked
	mkdir(t, away)
	const budget = 8
	var moved []string
	for i := range budget {
		p := filepath.Join(adir, plogName(50+i, 1))
		appendFile(t, p, fmt.Sprintf("a%d\n", i))
		moved = append(moved, filepath.Join(away, filepath.Base(p)))
	}
	f := newTestFollower(t, Config{Roots: []string{attacker, victim}, MaxOpenFiles: budget, DisableNotify: true})
	var s sink
	poll(t, f, &s)
	for _, p := range moved {
		if err := os.Rename(filepath.Join(adir, filepath.Base(p)), p); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 8 {
		if round == 3 {
			// The victim starts once the attacker's files are orphans.
			appendFile(t, filepath.Join(plogDir(t, victim), plogName(99, 1)), "victim EI0011\n")
		}
		for i, p := range moved {
			appendFile(t, p, fmt.Sprintf("a%d more %d\n", i, round)) // written on, so never idle
		}
		poll(t, f, &s)
	}
	if !containsLine(s.lines, "victim EI0011") {
		t.Fatalf("the victim's new file waited for a descriptor for ever: %+v", f.Stats())
	}
	if st := f.Stats(); st.LimitsReached["orphans"] == 0 {
		t.Errorf("the orphan cap was not counted: %+v", st.LimitsReached)
	}
}
