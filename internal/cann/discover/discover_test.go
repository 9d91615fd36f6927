package discover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeProc writes <procfs>/<pid>/{status,environ} and the root and cwd
// links of one process, its root being a directory of the test.
func fakeProc(t *testing.T, procfs string, pid, status, environ string) (root string) {
	t.Helper()
	dir := filepath.Join(procfs, pid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(t.TempDir(), "container-root")
	if err := os.MkdirAll(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"status": status, "environ": environ} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(root, filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "work"), filepath.Join(dir, "cwd")); err != nil {
		t.Fatal(err)
	}
	return root
}

const statusNS = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t1\n" +
	"Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nNSpid:\t4242\t7\nNSpgid:\t4242\t7\n"

func env(kv ...string) string { return strings.Join(kv, "\x00") + "\x00" }

func TestResolve(t *testing.T) {
	cases := []struct {
		name, status, environ string
		wantRoot, wantVia     string
		wantNSpid             int
		wantRel               bool
		wantPath              string // below <procfs>/<pid>/root, where it is not Root
		wantErr               error
	}{
		{name: "process log path wins", status: statusNS,
			environ:  env("PATH=/bin", "ASCEND_WORK_PATH=/w", "ASCEND_PROCESS_LOG_PATH=/logs/a", "HOME=/home/u", "TOKEN=secret"),
			wantRoot: "/logs/a", wantVia: VarProcessLogPath, wantNSpid: 7},
		{name: "work path", status: statusNS, environ: env("HOME=/home/u", "ASCEND_WORK_PATH=/w"),
			wantRoot: "/w/log", wantVia: VarWorkPath, wantNSpid: 7},
		{name: "home", status: statusNS, environ: env("HOME=/home/u"),
			wantRoot: "/home/u/ascend/log", wantVia: VarHome, wantNSpid: 7},
		{name: "empty value is unset", status: statusNS, environ: env("ASCEND_PROCESS_LOG_PATH=", "HOME=/h"),
			wantRoot: "/h/ascend/log", wantVia: VarHome, wantNSpid: 7},
		{name: "first occurrence wins", status: statusNS, environ: env("HOME=/first", "HOME=/second"),
			wantRoot: "/first/ascend/log", wantVia: VarHome, wantNSpid: 7},
		{name: "no NSpid line: host pid", status: "Name:\tx\nUid:\t0\t0\t0\t0\n", environ: env("HOME=/root"),
			wantRoot: "/root/ascend/log", wantVia: VarHome, wantNSpid: 4242},
		{name: "root without HOME", status: "Uid:\t0\t0\t0\t0\nNSpid:\t4242\n", environ: env("A=b"),
			wantRoot: "/root/ascend/log", wantVia: "", wantNSpid: 4242},
		{name: "user without HOME", status: statusNS, environ: env("A=b"), wantErr: ErrNoRoot},
		{name: "relative path from the working directory", status: statusNS, environ: env("ASCEND_PROCESS_LOG_PATH=plogs"),
			wantRoot: "plogs", wantVia: VarProcessLogPath, wantNSpid: 7, wantRel: true},
		{name: "dot-dot stays inside the root", status: statusNS, environ: env("ASCEND_PROCESS_LOG_PATH=/../../../../var/log/pods"),
			wantRoot: "/../../../../var/log/pods", wantVia: VarProcessLogPath, wantNSpid: 7, wantPath: "var/log/pods"},
		{name: "overlong value dropped", status: statusNS,
			environ:  env("ASCEND_PROCESS_LOG_PATH=/"+strings.Repeat("x", maxValueLen+1), "HOME=/h"),
			wantRoot: "/h/ascend/log", wantVia: VarHome, wantNSpid: 7},
		{name: "cut last entry", status: statusNS, environ: "HOME=/h\x00ASCEND_WORK_PATH=/cut",
			wantRoot: "/cut/log", wantVia: VarWorkPath, wantNSpid: 7},
		{name: "bad NSpid", status: "NSpid:\tx\n", environ: env("HOME=/h"), wantErr: errors.New("bad NSpid")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			procfs := t.TempDir()
			fakeProc(t, procfs, "4242", tc.status, tc.environ)
			p, err := Resolve(procfs, 4242)
			if tc.wantErr != nil {
				if err == nil || (!errors.Is(err, tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr.Error())) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Root != tc.wantRoot || p.Via != tc.wantVia || p.NSpid != tc.wantNSpid || p.HostPID != 4242 {
				t.Fatalf("got %+v, want root %q via %q nspid %d", p, tc.wantRoot, tc.wantVia, tc.wantNSpid)
			}
			want := filepath.Join(procfs, "4242", "root", tc.wantRoot)
			if tc.wantPath != "" {
				want = filepath.Join(procfs, "4242", "root", tc.wantPath)
			}
			if tc.wantRel {
				want = filepath.Join(procfs, "4242", "cwd", tc.wantRoot)
			}
			if p.Path != want {
				t.Fatalf("path %q, want %q", p.Path, want)
			}
		})
	}
}

func TestResolveGone(t *testing.T) {
	_, err := Resolve(t.TempDir(), 99)
	if !errors.Is(err, ErrGone) {
		t.Fatalf("err %v, want ErrGone", err)
	}
}

// Nothing but the three variables survives parsing.
func TestParseEnvironKeepsOnlyLogVars(t *testing.T) {
	in := env("AWS_SECRET_ACCESS_KEY=hunter2", "HOME=/home/u", "HOMEX=/no", "XHOME=/no", "ASCEND_WORK_PATH=/w",
		"ASCEND_PROCESS_LOG_PATHX=/no", "=weird", "noequals")
	e, err := ParseEnviron(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if (e != Env{WorkPath: "/w", Home: "/home/u"}) {
		t.Fatalf("got %+v", e)
	}
}

func TestLogs(t *testing.T) {
	root := t.TempDir()
	if ok, err := Logs(root, 7); ok || err != nil {
		t.Fatalf("empty root: %v %v", ok, err)
	}
	plog := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(plog, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plog, "plog-8_20260101000000000.log"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Logs(root, 7); ok {
		t.Fatal("another rank's plog counted")
	}
	dev := filepath.Join(root, "debug", "device-3")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "device-7_20260101000000000.log"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if ok, err := Logs(root, 7); !ok || err != nil {
		t.Fatalf("device log not found: %v %v", ok, err)
	}
	if ok, err := Logs(filepath.Join(root, "gone"), 7); ok || !errors.Is(err, ErrGone) {
		t.Fatalf("missing root: %v %v", ok, err)
	}
}

// TestLogsInRootFollowsNoLinkOut: a job's tree whose root path, run/ or a
// sort directory link elsewhere (another tenant's logs, the exporter's /)
// is not found to hold the job's logs through them; its own plog, below
// real directories, is.
func TestLogsInRootFollowsNoLinkOut(t *testing.T) {
	anchor := t.TempDir() // the process's root
	other := t.TempDir()  // another tenant's logs, outside that root
	otherPlog := filepath.Join(other, "run", "plog")
	if err := os.MkdirAll(otherPlog, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(otherPlog, "plog-7_20260101000000000.log"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(anchor, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(anchor, p)); err != nil {
			t.Fatal(err)
		}
	}
	// /logs-a: run links to the other tenant's run/.
	mk("logs-a")
	link(filepath.Join(other, "run"), "logs-a/run")
	// /logs-b: run/plog links there.
	mk("logs-b/run")
	link(otherPlog, "logs-b/run/plog")
	// /logs-c: an absolute link inside the root (resolved inside it, so it
	// names anchor/…, not the exporter's path), to a directory holding no
	// plog of pid 7.
	mk("real/run/plog")
	link("/real", "logs-c")
	// /logs-d: the job's own plog.
	mk("logs-d/debug/device-0")
	if err := os.WriteFile(filepath.Join(anchor, "logs-d/debug/device-0/device-7_20260101000000000.log"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	// /logs-e: the root itself is an absolute link to the other tenant's
	// logs by their exporter-side path: inside the root it names nothing.
	link(other, "logs-e")
	for _, fallback := range []bool{false, true} {
		if fallback {
			// A kernel without openat2 (or a seccomp filter refusing
			// it): on 0.4.0 the fallback listed the joined path, links
			// and all.
			openat2 = func(int, string, *unix.OpenHow) (int, error) { return -1, unix.ENOSYS }
			t.Cleanup(func() { openat2 = unix.Openat2 })
		}
		for rel, want := range map[string]bool{"/logs-a": false, "/logs-b": false, "/logs-c": false, "/logs-d": true, "/logs-e": false} {
			got, err := LogsInRoot(anchor, rel, 7)
			if got != want {
				t.Errorf("fallback %v: LogsInRoot(%s) = %v (%v), want %v", fallback, rel, got, err, want)
			}
			if followed := pathGlobFinds(filepath.Join(anchor, rel), 7); (rel == "/logs-a" || rel == "/logs-e") && !followed {
				t.Errorf("a path walk does not follow %s out: the test does not test the links", rel)
			}
		}
	}
}

// pathGlobFinds is the path-string walk the follower must not make: it
// follows every link.
func pathGlobFinds(root string, pid int) bool {
	for _, sd := range []string{"run", "debug"} {
		m, _ := filepath.Glob(filepath.Join(root, sd, "*", fmt.Sprintf("*-%d_*.log", pid)))
		if len(m) > 0 {
			return true
		}
	}
	return false
}

// TestLogsInRootLayoutAndNameCap: only CANN's layout is entered (on 0.4.0
// every sub-directory was, with ReadDir(-1): a job's million names cost
// 413 MiB every 15 s), and at most MaxNamesListed names are read.
func TestLogsInRootLayoutAndNameCap(t *testing.T) {
	root := t.TempDir()
	junk := filepath.Join(root, "run", "not-cann")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "plog-7_20260101000000000.log"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if ok, _ := LogsInRoot(root, "/", 7); ok {
		t.Fatal("a directory outside CANN's layout (run/not-cann) was listed")
	}
	maxNames = 3000
	t.Cleanup(func() { maxNames = MaxNamesListed })
	// More names than the cap in run/plog, the process's own plog among
	// them: the look stops at the cap and says so.
	plog := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(plog, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxNames + 2000 {
		f, err := os.Create(filepath.Join(plog, fmt.Sprintf("x%07d", i)))
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := LogsInRoot(root, "/", 7)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errNamesCapped) {
		t.Errorf("a listing past the cap: err %v, want %v", err, errNamesCapped)
	}
	// Batches of namesChunk names, not the directory at once: a bounded
	// cost whatever the job puts there.
	if kib := (after.TotalAlloc - before.TotalAlloc) >> 10; kib > 2048 {
		t.Errorf("listing %d names allocated %d KiB", maxNames+2000, kib)
	}
}
