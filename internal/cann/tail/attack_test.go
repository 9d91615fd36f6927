package tail

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// The attacks of issue 27 on a job's log tree (B1-B5), each as a
// regression test. A tenant controls everything below its log root:
// names, directories, links, sparse files, what its reads do.

// fakeProc makes <procfs>/<hostPID>/root, a link to a directory standing
// for the process's root file system (as /proc/<pid>/root shows it), and
// returns that directory and the ProcRoot of its log root /logs.
func fakeProc(t testing.TB, procfs string, hostPID, nspid int) (rootfs string, pr ProcRoot) {
	t.Helper()
	rootfs = filepath.Join(t.TempDir(), "rootfs")
	mkdir(t, filepath.Join(rootfs, "logs"))
	base := filepath.Join(procfs, strconv.Itoa(hostPID))
	mkdir(t, base)
	if err := os.Symlink(rootfs, filepath.Join(base, "root")); err != nil {
		t.Fatal(err)
	}
	anchor := filepath.Join(base, "root")
	return rootfs, ProcRoot{Path: anchor + "/logs", Anchor: anchor, PID: nspid}
}

// pollWithin polls once and fails the test if the Poll takes longer than d
// (the Poll is left running then).
func pollWithin(t *testing.T, f *Follower, handle func(*File, []byte), d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.Poll(handle) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("Poll still running after %v", d)
	}
}

// B2: a job links debug/ (or run/, or a CANN directory) to / . On the old
// code every rescan walked the host's whole file system (20,000 watches,
// +13.9 s CPU a minute). Now the link is not entered: no watch, no listing
// beyond the job's own directories, counted as refused.
func TestAttackB2DebugLinkedToSlash(t *testing.T) {
	for _, kind := range []string{"discovered", "configured"} {
		t.Run(kind, func(t *testing.T) {
			procfs := t.TempDir()
			rootfs, pr := fakeProc(t, procfs, 4100, 7)
			logs := filepath.Join(rootfs, "logs")
			dir := plogDir(t, logs)
			appendFile(t, filepath.Join(dir, plogName(7, 1)), "own line\n")
			if err := os.Symlink("/", filepath.Join(logs, "debug")); err != nil {
				t.Fatal(err)
			}
			mkdir(t, filepath.Join(logs, "run", "device-0"))
			if err := os.Symlink("/", filepath.Join(logs, "run", "device-1")); err != nil {
				t.Fatal(err)
			}
			cfg := Config{}
			if kind == "configured" {
				cfg.Roots = []string{logs}
			}
			f := newTestFollower(t, cfg)
			if kind == "discovered" {
				f.SetProcRoots([]ProcRoot{pr})
			}
			var s sink
			for range 3 {
				pollWithin(t, f, s.handle, 2*time.Second)
			}
			expectLines(t, s.lines, "own line")
			st := f.Stats()
			if st.Notify && st.Watches > 8 {
				t.Errorf("%d inotify watches for a root of 4 directories", st.Watches)
			}
			if st.Refused[refusedSymlink] == 0 {
				t.Errorf("the links were not counted as refused: %v", st.Refused)
			}
			if st.FilesTracked != 1 {
				t.Errorf("files tracked %d, want 1", st.FilesTracked)
			}
		})
	}
}

// B5: a tenant links its run/ (or its whole log root) to another tenant's
// logs through /proc/<pid>/root. On the old code the victim's settings,
// communicators and faults were read as the attacker's (and, pointed at a
// running victim, its new lines moved to the attacker's row). Now neither
// link leads out of the attacker's own root.
func TestAttackB5CrossTenantLink(t *testing.T) {
	for _, how := range []string{"run-dir", "root-path"} {
		t.Run(how, func(t *testing.T) {
			procfs := t.TempDir()
			victimFS, victim := fakeProc(t, procfs, 5000, 30)
			vdir := plogDir(t, filepath.Join(victimFS, "logs"))
			appendFile(t, filepath.Join(vdir, plogName(30, 1)), "victim secret\n")
			// The attacker's pid in its own namespace is the victim's (both
			// are the 30th process of their container): only the link
			// tells them apart.
			attackerFS, attacker := fakeProc(t, procfs, 6000, 30)
			target := filepath.Join(procfs, "5000", "root", "logs")
			switch how {
			case "run-dir":
				if err := os.Symlink(target+"/run", filepath.Join(attackerFS, "logs", "run")); err != nil {
					t.Fatal(err)
				}
			case "root-path":
				// ASCEND_PROCESS_LOG_PATH=/evil, /evil -> the victim's
				// logs: absolute, so resolved in the exporter's file
				// system on the old code.
				if err := os.Symlink(target, filepath.Join(attackerFS, "evil")); err != nil {
					t.Fatal(err)
				}
				attacker.Path = attacker.Anchor + "/evil"
			}
			f := newTestFollower(t, Config{})
			f.SetProcRoots([]ProcRoot{victim, attacker})
			got := map[string]string{} // line -> the root (the process's row) it was read through
			handle := func(file *File, line []byte) { got[string(line)] = file.ProcRoot }
			for range 3 {
				pollWithin(t, f, handle, 2*time.Second)
			}
			if len(got) != 1 || got["victim secret"] != victim.Path {
				t.Fatalf("lines by root %v, want the victim's line on the victim's row (%s) only", got, victim.Path)
			}
			// The victim's later lines stay the victim's.
			appendFile(t, filepath.Join(vdir, plogName(30, 1)), "victim later\n")
			for range 2 {
				pollWithin(t, f, handle, 2*time.Second)
			}
			if got["victim later"] != victim.Path {
				t.Fatalf("lines by root %v", got)
			}
		})
	}
}

// B1: a job makes thousands of directories in its run/. On the old code
// each took an inotify watch, until root had none left and kubelet and
// containerd failed with ENOSPC. Now a root costs at most its caps.
func TestAttackB1ThousandsOfDirectories(t *testing.T) {
	procfs := t.TempDir()
	rootfs, pr := fakeProc(t, procfs, 4200, 9)
	logs := filepath.Join(rootfs, "logs")
	plogDir(t, logs)
	appendFile(t, filepath.Join(logs, "run", "plog", plogName(9, 1)), "own line\n")
	makeAttackDirs(t, logs, attackDirs())
	f := newTestFollower(t, Config{})
	f.SetProcRoots([]ProcRoot{pr})
	var s sink
	pollWithin(t, f, s.handle, 10*time.Second)
	expectLines(t, s.lines, "own line")
	st := f.Stats()
	if st.Notify && st.Watches > DefaultMaxWatchesPerRoot {
		t.Errorf("%d inotify watches for one root, cap %d", st.Watches, DefaultMaxWatchesPerRoot)
	}
	if st.LimitsReached[limitDirs]+st.LimitsReached[limitWatches] == 0 {
		t.Errorf("no cap counted: %v", st.LimitsReached)
	}
}

// attackDirs is the 3,500 directories, 600 under -short (still
// past every cap and the user namespace's limit below).
func attackDirs() int {
	if testing.Short() {
		return 600
	}
	return 3500
}

// makeAttackDirs makes n directories in root/run: half named like CANN's
// device-<id> directories (which the walk enters, up to the caps), half
// not (which it never enters).
func makeAttackDirs(t testing.TB, root string, n int) {
	t.Helper()
	for i := range n {
		name := "x" + strconv.Itoa(i)
		if i%2 == 0 {
			name = "device-" + strconv.Itoa(i)
		}
		if err := os.MkdirAll(filepath.Join(root, "run", name, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// B1 with the kernel's own limit: in a user namespace of its own, whose
// inotify watch limit is lowered to 400, the follower walks a root with
// 3,500 directories, and another inotify instance of the same user can
// still add watches afterwards (on the old code: ENOSPC).
func TestAttackB1WatchLimitUserNamespace(t *testing.T) {
	if os.Getenv("HCCL_TAIL_B1_CHILD") == "1" {
		b1Child(t)
		return
	}
	t.Parallel() // waits on its child in a user namespace of its own
	root := t.TempDir()
	plogDir(t, root)
	makeAttackDirs(t, root, attackDirs())
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttackB1WatchLimitUserNamespace$", "-test.v")
	cmd.Env = append(os.Environ(), "HCCL_TAIL_B1_CHILD=1", "HCCL_TAIL_B1_ROOT="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "SKIP-USERNS") {
		testtools.NeedsKernel(t, "cannot lower the inotify limit in a user namespace here")
	}
	if err != nil {
		var ee *exec.ExitError
		if !strings.Contains(string(out), "--- ") && !asExit(err, &ee) {
			testtools.NeedsKernel(t, "cannot start a process in a new user namespace: %v", err)
		}
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

func b1Child(t *testing.T) {
	const limit = 400
	if err := os.WriteFile("/proc/sys/user/max_inotify_watches", []byte(strconv.Itoa(limit)), 0); err != nil {
		fmt.Println("SKIP-USERNS", err)
		t.Skip(err)
	}
	root := os.Getenv("HCCL_TAIL_B1_ROOT")
	f, err := New(Config{Roots: []string{root}, RescanInterval: time.Nanosecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 2 {
		if err := f.Poll(func(*File, []byte) {}); err != nil {
			t.Fatal(err)
		}
	}
	st := f.Stats()
	t.Logf("follower watches %d (limit of the namespace %d), limits reached %v", st.Watches, limit, st.LimitsReached)
	// Another process of the same user (kubelet, containerd) adds watches.
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	other := t.TempDir()
	for i := range 20 {
		d := filepath.Join(other, strconv.Itoa(i))
		mkdir(t, d)
		if _, err := syscall.InotifyAddWatch(fd, d, syscall.IN_CREATE); err != nil {
			t.Fatalf("another process cannot add its watch %d: %v (the follower holds %d)", i, err, st.Watches)
		}
	}
}

// B3: a job makes a 10 GB sparse file named like a plog (and grows it by
// 2 GB between polls). On the old code reading its zeros cost 44 s of CPU
// and delayed every other job's lines by as much. Now its hole is skipped
// (SEEK_DATA) and no file is read past the per-Poll byte cap: another
// job's line arrives within 2 s.
func TestAttackB3SparseFile(t *testing.T) {
	procfs := t.TempDir()
	rootfs, attacker := fakeProc(t, procfs, 4300, 11)
	adir := plogDir(t, filepath.Join(rootfs, "logs"))
	sparse := filepath.Join(adir, plogName(11, 1))
	appendFile(t, sparse, "start\n")
	if err := os.Truncate(sparse, 10<<30); err != nil {
		testtools.NeedsKernel(t, "no sparse files here: %v", err)
	}
	appendFile(t, sparse, "\nafter hole\n")
	victimFS, victim := fakeProc(t, procfs, 4400, 12)
	vfile := filepath.Join(plogDir(t, filepath.Join(victimFS, "logs")), plogName(12, 1))
	appendFile(t, vfile, "victim start\n")

	f := newTestFollower(t, Config{RescanInterval: time.Hour})
	f.SetProcRoots([]ProcRoot{attacker, victim})
	byPID := map[int][]string{}
	handle := func(file *File, line []byte) { byPID[file.PID] = append(byPID[file.PID], string(line)) }
	pollWithin(t, f, handle, 2*time.Second)
	expectLines(t, byPID[11], "start", "after hole")
	expectLines(t, byPID[12], "victim start")
	if st := f.Stats(); st.HoleBytesSkipped < 10<<30-1<<20 {
		t.Errorf("hole bytes skipped %d, want about 10 GiB", st.HoleBytesSkipped)
	}

	// Growing by 2 GB of hole per round, while the victim writes EI0011.
	for round := range 3 {
		fh, err := os.OpenFile(sparse, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := fh.Stat()
		if err := fh.Truncate(st.Size() + 2<<30); err != nil {
			t.Fatal(err)
		}
		_ = fh.Close()
		want := fmt.Sprintf("EI0011 round %d", round)
		written := time.Now()
		appendFile(t, vfile, want+"\n")
		for !containsLine(byPID[12], want) {
			if time.Since(written) > 2*time.Second {
				t.Fatalf("round %d: the victim's line not delivered within 2 s", round)
			}
			pollWithin(t, f, handle, 2*time.Second)
		}
		t.Logf("round %d: victim's line delivered %v after its write", round, time.Since(written))
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// The per-Poll byte cap cuts a read, never a line: the rest comes with the
// next Polls, every line once and in order, also after the file is deleted
// while not yet read to its end.
func TestByteCapPerPoll(t *testing.T) {
	for _, del := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted=%v", del), func(t *testing.T) {
			root := t.TempDir()
			dir := plogDir(t, root)
			big := filepath.Join(dir, plogName(1, 1))
			var b strings.Builder
			var want []string
			for i := range 40000 {
				l := fmt.Sprintf("line %06d %s", i, strings.Repeat("x", 100))
				want = append(want, l)
				b.WriteString(l + "\n")
			}
			appendFile(t, big, b.String()) // 4.4 MB
			small := filepath.Join(dir, plogName(2, 1))
			appendFile(t, small, "other job\n")
			f := newTestFollower(t, Config{Roots: []string{root}, MaxBytesPerPoll: 1 << 20})
			var s sink
			poll(t, f, &s)
			if len(s.byPID[2]) != 1 {
				t.Fatalf("the other file waited for the big one: %v", s.byPID[2])
			}
			first := len(s.byPID[1])
			if first == 0 || first > (1<<20+readBufSize)/108 {
				t.Fatalf("first Poll delivered %d lines of the big file, want at most the cap's worth", first)
			}
			if del {
				if err := os.Remove(big); err != nil {
					t.Fatal(err)
				}
			}
			for range 10 {
				poll(t, f, &s)
			}
			expectLines(t, s.byPID[1], want...)
			if st := f.Stats(); st.LimitsReached[limitBytes] < 3 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
