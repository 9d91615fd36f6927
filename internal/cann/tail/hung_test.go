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

// B4: a hung file system in a job's log tree. A FUSE mount whose daemon
// never answers (the kernel's INIT request stays unanswered, so every call
// on it blocks) stands for a hung dataset mount or NFS server. On the old
// code the single poll goroutine blocked on it forever: every other job's
// lines stopped, and shutdown hung. Now each call on a discovered root is
// abandoned at the deadline: another job's line is delivered within 2 s,
// and Close returns at once.
//
// The mount is made in a mount namespace of the test's own (a child
// process), so that nothing else on the machine can trip over it.
func TestAttackB4HungFilesystem(t *testing.T) {
	if os.Getenv("HCCL_TAIL_B4_CHILD") != "" {
		b4Child(t, os.Getenv("HCCL_TAIL_B4_CHILD"))
		return
	}
	t.Parallel() // waits on children in their own mount namespaces
	for _, where := range []string{"root", "plog-dir", "plog-dir-refused"} {
		t.Run(where, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestAttackB4HungFilesystem$", "-test.v")
			cmd.Env = append(os.Environ(), "HCCL_TAIL_B4_CHILD="+where)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
			out, err := runWithin(cmd, 60*time.Second)
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
		})
	}
}

func runWithin(cmd *exec.Cmd, d time.Duration) (string, error) {
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return b.String(), err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return b.String(), fmt.Errorf("child still running after %v (killed)", d)
	}
}

// hungFUSE mounts a FUSE file system at dir whose daemon never answers, and
// returns the function that aborts it (every blocked call then fails) and
// unmounts it.
func hungFUSE(t *testing.T, dir string) func() {
	t.Helper()
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := syscall.Mount("hung", dir, "fuse", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		_ = syscall.Close(fd)
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	return func() {
		_ = syscall.Close(fd)
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
}

func b4Child(t *testing.T, where string) {
	// Our mounts stay in this namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	procfs := t.TempDir()
	attackerFS, attacker := fakeProc(t, procfs, 7100, 21)
	victimFS, victim := fakeProc(t, procfs, 7200, 22)
	vfile := filepath.Join(plogDir(t, filepath.Join(victimFS, "logs")), plogName(22, 1))
	appendFile(t, vfile, "victim start\n")
	cfg := Config{RescanInterval: 50 * time.Millisecond, IODeadline: 300 * time.Millisecond}
	var mnt string
	switch where {
	case "root":
		mnt = filepath.Join(attackerFS, "logs") // a hung dataset mount as the log root
	case "plog-dir":
		mnt = plogDir(t, filepath.Join(attackerFS, "logs"))
		cfg.CrossFilesystems = true // walked into, on purpose
	case "plog-dir-refused":
		// By default a mount point below a root is refused by the kernel
		// (RESOLVE_NO_XDEV) before the hung file system is asked anything.
		mnt = plogDir(t, filepath.Join(attackerFS, "logs"))
	}
	abort := hungFUSE(t, mnt)
	defer abort()

	f, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	f.SetProcRoots([]ProcRoot{attacker, victim})
	var got []string
	handle := func(_ *File, line []byte) { got = append(got, string(line)) }
	for round := range 4 {
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
		t.Logf("round %d: the victim's line delivered %v after its write", round, time.Since(written))
	}
	st := f.Stats()
	switch {
	case where == "plog-dir-refused" && (st.HungCalls != 0 || st.Refused[refusedXDev] == 0):
		t.Errorf("the mount point was not refused untouched: %+v", st)
	case where != "plog-dir-refused" && st.HungCalls == 0:
		t.Errorf("no call counted as abandoned: %+v", st)
	}
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v with a hung root", d)
	}
	t.Logf("hung calls %d; Close took %v", st.HungCalls, time.Since(start))
}
