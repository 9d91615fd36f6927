package follow

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/join"
)

// fakeTable is npu-smi's process table as discovery sees it.
type fakeTable struct {
	mu   sync.Mutex
	rows []ascend.Process
	at   time.Time
}

func (f *fakeTable) NPUProcesses() ([]ascend.Process, time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows, f.at, !f.at.IsZero()
}

// Match matches a row to the process discovery found for its host pid:
// the join's other rules are tested in internal/join.
func (f *fakeTable) Match(devs []logstate.ProcessDevice) ([]join.Matched, bool) {
	rows, _, ok := f.NPUProcesses()
	out := make([]join.Matched, len(rows))
	for i, r := range rows {
		out[i].Row = r
		for _, d := range devs {
			if d.HostPID == r.PID {
				out[i].Log.Key, out[i].By = d.Key, "procfs"
			}
		}
	}
	return out, ok
}

func (f *fakeTable) set(rows ...ascend.Process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows, f.at = rows, f.at.Add(time.Second)
	if f.at.Year() < 2000 {
		f.at = time.Now()
	}
}

// fakeProcess builds <procfs>/<hostPID>/{status,environ,root} for a process
// whose pid in its own namespace is nspid, with its container's files in a
// directory of their own (what <procfs>/<pid>/root shows).
func fakeProcess(t *testing.T, procfs string, hostPID, nspid int, environ ...string) (containerRoot string) {
	t.Helper()
	dir := filepath.Join(procfs, strconv.Itoa(hostPID))
	containerRoot = filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{dir, containerRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := "Name:\tpython3\nPid:\t" + strconv.Itoa(hostPID) + "\nUid:\t0\t0\t0\t0\nNSpid:\t" +
		strconv.Itoa(hostPID) + "\t" + strconv.Itoa(nspid) + "\n"
	files := map[string]string{"status": status, "environ": strings.Join(environ, "\x00") + "\x00"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(containerRoot, filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	return containerRoot
}

// writePlog writes the settings and communicator lines of the test plog as
// process nspid into <root>/run/plog.
func writePlog(t *testing.T, root string, nspid int, extra string) string {
	t.Helper()
	head, err := os.ReadFile(filepath.Join("testdata", "discovery", "plog-head.log"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "plog-"+strconv.Itoa(nspid)+"_20260106153829870.log")
	data := strings.ReplaceAll(string(head), "210001", strconv.Itoa(nspid)) + extra
	if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

// Processes npu-smi lists are read from their own roots found through a
// fake procfs: settings and communicators under their namespace pid, joined
// to their host pid; a process without logs, one not in procfs and one with
// no root are missing; no other variable of any environment leaks into the
// metrics or the log.
func TestDiscoveryThroughProcfs(t *testing.T) {
	procfs := t.TempDir()
	rootA := fakeProcess(t, procfs, 4242, 7, "PATH=/usr/bin", "ASCEND_PROCESS_LOG_PATH=/job/logs",
		"AWS_SECRET_ACCESS_KEY=hunter2", "HOME=/root")
	writePlog(t, filepath.Join(rootA, "job", "logs"), 7, "")
	// Another rank of the same pod writes to the same directory: read
	// through its own entry only.
	fakeProcess(t, procfs, 4243, 8, "ASCEND_PROCESS_LOG_PATH=/job/logs", "DB_PASSWORD=swordfish")
	fakeProcess(t, procfs, 5000, 9, "HOME=/home/nobody", "API_TOKEN=letmein") // no logs yet
	fakeProcess(t, procfs, 5001, 10, "LANG=C", "GITHUB_TOKEN=ghp_secret")     // uid 0 default root, empty
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 5000},
		ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 5001}, ascend.Process{ChipID: ascend.ChipID{NPU: "2", Chip: "0"}, PID: 6000})

	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The logs are older than the TTL: the table of roots keeps them alive
	// while npu-smi lists their host pid.
	c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.pollOnce(time.Now())
	c.pollOnce(time.Now())

	keyA := logstate.ProcessKey{Dir: filepath.Join(procfs, "4242", "root", "job", "logs"), PID: 7}
	pv, ok := c.Process(keyA)
	if !ok {
		t.Fatalf("process not read through procfs; have %+v stats %+v disc %+v log %s", c.Processes(), c.f.Stats(), c.DiscoveredLogs(), logBuf.String())
	}
	if pv.Env["HCCL_BUFFSIZE"].Value == "" || len(pv.Communicators) != 1 || pv.Communicators[0].RankSize != 64 {
		t.Fatalf("settings/communicators not read: %+v", pv)
	}
	var host int
	for _, d := range c.Devices() {
		if d.Key == keyA {
			host = d.HostPID
		}
	}
	if host != 4242 {
		t.Fatalf("host pid of the discovered process = %d, want 4242", host)
	}
	if got := c.DiscoveredLogs(); len(got) != 4 || !got[4242] || got[5000] || got[5001] || got[6000] {
		t.Fatalf("discovered logs %v", got)
	}
	want := `
# HELP ascend_npu_processes Processes npu-smi lists on the chip, by whether the exporter reads their CANN logs: cann_logs=found (through --path.procfs or a --cannlog.root), cann_logs=missing (their settings, link setups and plog faults are not seen; see the HCCLLogsNotVisible runbook; served only where above 0).
# TYPE ascend_npu_processes gauge
ascend_npu_processes{cann_logs="found",chip="0",npu="0"} 1
ascend_npu_processes{cann_logs="found",chip="0",npu="1"} 0
ascend_npu_processes{cann_logs="found",chip="0",npu="2"} 0
ascend_npu_processes{cann_logs="missing",chip="0",npu="1"} 2
ascend_npu_processes{cann_logs="missing",chip="0",npu="2"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ascend_npu_processes"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}

	// The process without logs writes its first plog: found at the next
	// look, without a change in npu-smi's table.
	writePlog(t, filepath.Join(procfs, "5000", "root", "home", "nobody", "ascend", "log"), 9, "")
	c.pollOnce(time.Now().Add(discoveryRecheck))
	c.pollOnce(time.Now().Add(discoveryRecheck))
	if !c.DiscoveredLogs()[5000] {
		t.Fatal("a process's first plog was not found on recheck")
	}
	if _, ok := c.Process(logstate.ProcessKey{Dir: filepath.Join(procfs, "5000", "root", "home", "nobody", "ascend", "log"), PID: 9}); !ok {
		t.Fatal("the late process's settings were not read")
	}

	// Nothing of any environment but the log root reaches metrics or log.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	for _, mf := range mfs {
		page.WriteString(mf.String())
	}
	for _, secret := range []string{"hunter2", "AWS_SECRET", "swordfish", "DB_PASSWORD", "letmein", "API_TOKEN",
		"ghp_secret", "GITHUB_TOKEN", "/usr/bin", "LANG"} {
		if strings.Contains(page.String(), secret) {
			t.Errorf("metrics leak %q", secret)
		}
		if strings.Contains(logBuf.String(), secret) {
			t.Errorf("log leaks %q:\n%s", secret, logBuf.String())
		}
	}
}

// An idle node (npu-smi lists no process) costs nothing: no procfs read, no
// root, no rescan.
func TestDiscoveryIdleNode(t *testing.T) {
	tab := &fakeTable{}
	tab.set()
	c, err := New(Config{Timezone: "UTC"}, Deps{Procfs: filepath.Join(t.TempDir(), "no-such-proc"), Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.pollOnce(time.Now())
	if c.disc.lastAt.IsZero() || !c.disc.set {
		t.Fatal("discovery did not take the empty table")
	}
	at := c.disc.lastAt
	c.pollOnce(time.Now())
	if c.disc.lastAt != at || len(c.DiscoveredLogs()) != 0 {
		t.Fatal("discovery ran again without a new npu-smi run")
	}
}

// The collector's one liveness: a process read through <procfs>/<host
// pid>/root is alive while its row is in the table of roots (npu-smi lists
// its host pid), not while some host process has the pid its logs print; a
// process of a host path is alive while npu-smi lists its pid or /proc has
// it.
func TestLivenessOfTheCollector(t *testing.T) {
	procfs := t.TempDir()
	fakeProcess(t, procfs, 4242, 1, "ASCEND_PROCESS_LOG_PATH=/job/logs")
	if err := os.MkdirAll(filepath.Join(procfs, "1"), 0o755); err != nil { // init
		t.Fatal(err)
	}
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242})
	c, err := New(Config{Timezone: "UTC"}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.pollOnce(time.Now())
	live := c.live.(logstate.ProcessLiveness)
	discovered := logstate.ProcessKey{Dir: filepath.Join(procfs, "4242", "root", "job", "logs"), PID: 1}
	cases := []struct {
		key  logstate.ProcessKey
		want bool
	}{
		{discovered, true},
		{logstate.ProcessKey{Dir: filepath.Join(procfs, "5000", "root", "job", "logs"), PID: 1}, false}, // exited; host pid 1 is init
		{logstate.ProcessKey{Dir: filepath.Join(procfs, "5000", "cwd", "plogs"), PID: 4242}, false},
		{logstate.ProcessKey{Dir: "/var/log/npu", PID: 4242}, true}, // a host path: its pid is a host pid npu-smi lists
		{logstate.ProcessKey{Dir: "/var/log/npu", PID: 1}, true},    // and one /proc has
		{logstate.ProcessKey{Dir: "/var/log/npu", PID: 77}, false},
	}
	for _, tc := range cases {
		if got := live.AliveProcess(tc.key); got != tc.want {
			t.Errorf("AliveProcess(%+v) = %v, want %v", tc.key, got, tc.want)
		}
	}
	// npu-smi no longer lists it: its row leaves the table, and so does its life.
	tab.set()
	c.pollOnce(time.Now())
	if live.AliveProcess(discovered) {
		t.Error("a discovered process npu-smi no longer lists is still alive")
	}
}

// A process whose logs a configured root (a host-path layout) and /proc both
// reach: read once, under the configured directory, and still joined by the
// host pid /proc gave.
func TestDiscoverySameFilesAsConfiguredRoot(t *testing.T) {
	procfs := t.TempDir()
	rootfs := fakeProcess(t, procfs, 7000, 3, "ASCEND_PROCESS_LOG_PATH=/logs")
	hostPath := filepath.Join(rootfs, "logs") // what the pod mounted from the host
	writePlog(t, hostPath, 3, "")
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 7000})
	c, err := New(Config{Roots: []string{hostPath}, Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for range 3 {
		c.pollOnce(time.Now())
	}
	devs := c.Devices()
	if len(devs) != 1 || devs[0].Key != (logstate.ProcessKey{Dir: hostPath, PID: 3}) || devs[0].HostPID != 7000 {
		t.Fatalf("devices %+v, want one process under %s with host pid 7000", devs, hostPath)
	}
	if st := c.f.Stats(); st.FilesTracked != 1 || st.LinesRead != 32 {
		t.Fatalf("files %d, lines %d: want the one file read once", st.FilesTracked, st.LinesRead)
	}
}

// writeStat writes <procfs>/<pid>/stat with start time start (field 22).
func writeStat(t *testing.T, procfs string, pid int, start uint64) {
	t.Helper()
	stat := fmt.Sprintf("%d (py thon) S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %d 1000 10 18446744073709551615\n", pid, start)
	p := filepath.Join(procfs, strconv.Itoa(pid), "stat")
	_ = os.Remove(p)
	if err := os.WriteFile(p, []byte(stat), 0o400); err != nil {
		t.Fatal(err)
	}
}

// rewriteProcess gives host pid hostPID a new status (nspid) and environ,
// as an exec, a rewritten environment or a new process with the pid does.
func rewriteProcess(t *testing.T, procfs string, hostPID, nspid int, environ ...string) {
	t.Helper()
	dir := filepath.Join(procfs, strconv.Itoa(hostPID))
	status := "Name:\tpython3\nPid:\t" + strconv.Itoa(hostPID) + "\nUid:\t0\t0\t0\t0\nNSpid:\t" +
		strconv.Itoa(hostPID) + "\t" + strconv.Itoa(nspid) + "\n"
	for name, data := range map[string]string{"status": status, "environ": strings.Join(environ, "\x00") + "\x00"} {
		_ = os.Remove(filepath.Join(dir, name))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o400); err != nil {
			t.Fatal(err)
		}
	}
}

// B10: a process whose root changes (an environment it rewrote, an exec)
// or a pid npu-smi still lists that a new process took (another start time,
// another root) is read from its new root. Before, a pid whose logs were
// found once was never looked at again: the new job's logs were never read.
func TestDiscoveryFollowsAChangedProcess(t *testing.T) {
	procfs := t.TempDir()
	rootfs := fakeProcess(t, procfs, 4242, 7, "ASCEND_PROCESS_LOG_PATH=/job/a")
	writeStat(t, procfs, 4242, 1000)
	writePlog(t, filepath.Join(rootfs, "job", "a"), 7, "")
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242})
	c, err := New(Config{Timezone: "UTC", ProcessTTL: 10 * 365 * 24 * time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	now := time.Now()
	c.pollOnce(now)
	key := func(dir string, pid int) logstate.ProcessKey {
		return logstate.ProcessKey{Dir: filepath.Join(procfs, "4242", "root", "job", dir), PID: pid}
	}
	if _, ok := c.Process(key("a", 7)); !ok {
		t.Fatal("the first root was not read")
	}

	// The process rewrites its environment (or execs with another one).
	writePlog(t, filepath.Join(rootfs, "job", "b"), 7, "")
	rewriteProcess(t, procfs, 4242, 7, "ASCEND_PROCESS_LOG_PATH=/job/b")
	now = now.Add(discoveryRecheck)
	c.pollOnce(now)
	c.pollOnce(now)
	if _, ok := c.Process(key("b", 7)); !ok {
		t.Fatalf("the rewritten environment's root was not read; processes %+v", c.Processes())
	}

	// The pid is reused by a new process (another start time): pid 8 in
	// its namespace, its own root.
	writePlog(t, filepath.Join(rootfs, "job", "c"), 8, "")
	writeStat(t, procfs, 4242, 2000)
	rewriteProcess(t, procfs, 4242, 8, "ASCEND_PROCESS_LOG_PATH=/job/c")
	now = now.Add(discoveryRecheck)
	c.pollOnce(now)
	c.pollOnce(now)
	if _, ok := c.Process(key("c", 8)); !ok {
		t.Fatalf("the new process with a reused pid was not read; processes %+v", c.Processes())
	}
	if host := c.roots.HostPID(key("c", 8)); host != 4242 {
		t.Fatalf("host pid of the new process %d, want 4242", host)
	}
	if host := c.roots.HostPID(key("a", 7)); host != 0 {
		t.Fatalf("the old root still owns host pid %d", host)
	}
}

// B8: short-lived processes, each gone from npu-smi's table soon after it
// started, fill the pid cap (here 4) within the TTL. The next healthy job
// must still get its settings: processes that left hold no place under
// the cap that protects live ones. Before, it was dropped
// (settings_source="unknown" until the TTL let the others go).
func TestShortLivedProcessesLeaveThePIDCap(t *testing.T) {
	procfs := t.TempDir()
	tab := &fakeTable{}
	tab.set()
	c, err := New(Config{Timezone: "UTC", MaxPIDs: 4, ProcessTTL: 10 * 365 * 24 * time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	now := time.Now()
	for i := range 6 {
		host, ns := 5000+i, 10+i
		rootfs := fakeProcess(t, procfs, host, ns, "ASCEND_PROCESS_LOG_PATH=/logs")
		writePlog(t, filepath.Join(rootfs, "logs"), ns, "")
		tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: host})
		c.pollOnce(now)
		tab.set() // it exits
		c.pollOnce(now)
	}
	rootfs := fakeProcess(t, procfs, 6000, 50, "ASCEND_PROCESS_LOG_PATH=/logs")
	writePlog(t, filepath.Join(rootfs, "logs"), 50, "")
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 6000})
	c.pollOnce(now)
	c.pollOnce(now)
	pv, ok := c.Process(logstate.ProcessKey{Dir: filepath.Join(procfs, "6000", "root", "logs"), PID: 50})
	if !ok || pv.Settings == "" {
		t.Fatalf("the healthy job was kept out by processes that left: %v %+v; have %d processes", ok, pv, len(c.Processes()))
	}
	if n := len(c.Processes()); n > 4 {
		t.Fatalf("%d processes over the cap of 4", n)
	}
}
