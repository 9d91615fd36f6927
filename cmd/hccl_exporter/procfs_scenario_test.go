package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// npuSMITwoChips is an npu-smi capture of NPUs 0 and 1 (HBM usedMiB of
// 65536 MiB each) running pidA on NPU 0 and pidB on NPU 1.
func npuSMITwoChips(usedMiB, pidA, pidB int) string {
	var chips []testtools.NPUSMIChip
	for npu := range 2 {
		chips = append(chips, testtools.NPUSMIChip{NPU: npu, PowerW: 95, TempC: 40, BusID: fmt.Sprintf("0000:C%d:00.0", npu+1), HBMUsedMiB: usedMiB})
	}
	return testtools.NPUSMITable(chips, []testtools.NPUSMIProcess{{NPU: 0, PID: pidA, MemoryMiB: usedMiB - 3000}, {NPU: 1, PID: pidB, MemoryMiB: usedMiB - 3000}})
}

// requireUnshare skips the test where this user may not create pid and
// mount namespaces (not root, no unshare(1), a seccomp profile that forbids
// it); CI runs as root.
func requireUnshare(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testtools.Unavailable(t, "needs root to run `unshare --pid --fork --mount` and mount a tmpfs (CI runs it as root)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		testtools.Unavailable(t, "unshare(1) not found (util-linux)")
	}
	dir := t.TempDir()
	out, err := exec.Command("unshare", "--pid", "--fork", "--mount", "sh", "-c", "mount -t tmpfs tmpfs '"+dir+"'").CombinedOutput()
	if err != nil {
		testtools.Unavailable(t, "`unshare --pid --fork --mount` with a tmpfs is not permitted here: %v %s", err, out)
	}
}

// nsProcess is a process in its own pid and mount namespaces, started by
// unshare --pid --fork --mount: hostPID is the pid of its first process (pid
// 1 inside) on the host.
type nsProcess struct {
	cmd     *exec.Cmd
	hostPID int
	done    chan struct{}
}

// startInNamespaces runs script under sh in new pid and mount namespaces
// with env as its whole environment, and waits for ready to exist.
func startInNamespaces(t *testing.T, script, ready string, env []string) *nsProcess {
	t.Helper()
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount", "sh", "-c", script)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &nsProcess{cmd: cmd, done: make(chan struct{})}
	var mu sync.Mutex
	go func() {
		_ = cmd.Wait()
		mu.Lock()
		close(p.done)
		mu.Unlock()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if p.hostPID > 0 {
			_ = syscall.Kill(p.hostPID, syscall.SIGKILL)
		}
		<-p.done
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The namespace's pid 1 is unshare's only child.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) == 1 && p.hostPID == 0 {
			p.hostPID, _ = strconv.Atoi(f[0])
		}
		if _, err := os.Stat(ready); err == nil && p.hostPID > 0 {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("process in namespaces exited early: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("process in namespaces not ready: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allSamples gathers every series (gauge or counter value) and the page.
func allSamples(t *testing.T, reg prometheus.Collector) (map[string][]sample, string) {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(reg)
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sample{}
	var page strings.Builder
	for _, f := range fams {
		page.WriteString(f.String())
		for _, m := range f.Metric {
			s := sample{labels: map[string]string{}, value: m.GetGauge().GetValue() + m.GetCounter().GetValue()}
			for _, l := range m.Label {
				s.labels[l.GetName()] = l.GetValue()
			}
			out[f.GetName()] = append(out[f.GetName()], s)
		}
	}
	return out, page.String()
}

// sumOf sums the values of the samples that have the wanted labels.
func sumOf(ss []sample, want map[string]string) float64 {
	sum := 0.0
next:
	for _, s := range ss {
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		sum += s.value
	}
	return sum
}

func find(ss []sample, want map[string]string) (float64, bool) {
	for _, s := range ss {
		ok := true
		for k, v := range want {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return s.value, true
		}
	}
	return 0, false
}

// TestDiscoveryOfProcessesInTheirOwnNamespaces runs the exporter as main
// wires it against two real processes, each in its own pid and mount
// namespaces like a container: A writes its CANN logs to
// ASCEND_PROCESS_LOG_PATH on a private tmpfs (invisible at the host path),
// B has no logs. No --cannlog.root reaches A's logs: only discovery through
// /proc does. The exporter must read A's settings, communicator and pending
// link setup under its namespace pid joined to its host pid, count the
// EI0011 A writes right before it exits, report B missing, and let no other
// environment variable reach its metrics or its log.
func TestDiscoveryOfProcessesInTheirOwnNamespaces(t *testing.T) {
	requireUnshare(t)
	dir := t.TempDir()
	logRoot := filepath.Join(dir, "job-a", "ascend-logs") // A's ASCEND_PROCESS_LOG_PATH
	if err := os.MkdirAll(logRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	// A is pid 1 in its namespace: its plogs are plog-1_*.log and its lines
	// say HCCL(1,…). 64 ranks on 8 servers, QPS 16, links not set up yet:
	// 56 RoCE peers × 17 QPs = 952 QPs ahead.
	job := jobLog{era: "2026", pid: 1, qps: 16, ranks: 64, servers: 8, comms: []string{"10.0.0.1%eth0_60000_0_1767685109881000"}}
	src := filepath.Join(dir, "plog-src.log")
	if err := os.WriteFile(src, []byte(job.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ready, goFile := filepath.Join(dir, "a.ready"), filepath.Join(dir, "a.go")
	const ei0011 = "[ERROR] HCCP(1,python3):2026-01-07-10:00:59.000.000 [ra_host.c:1] tid:1,ra_qp_create(1): ra qp create fail, reason: out of memory"
	scriptA := `set -e
mount -t tmpfs tmpfs "$ASCEND_PROCESS_LOG_PATH"
mkdir -p "$ASCEND_PROCESS_LOG_PATH/run/plog" "$ASCEND_PROCESS_LOG_PATH/debug/plog"
cp '` + src + `' "$ASCEND_PROCESS_LOG_PATH/run/plog/plog-$$_20260107100000000.log"
echo '[WARNING] HCCL(1,python3):2026-01-07-10:00:00.000.000 [x.cc:1] [1]starting' > "$ASCEND_PROCESS_LOG_PATH/debug/plog/plog-$$_20260107100000000.log"
touch '` + ready + `'
while [ ! -e '` + goFile + `' ]; do sleep 0.02; done
echo '` + ei0011 + `' >> "$ASCEND_PROCESS_LOG_PATH/debug/plog/plog-$$_20260107100000000.log"
exit 0
`
	secrets := []string{"SECRET_TOKEN=hunter2", "DB_PASSWORD=swordfish", "HTTP_PROXY=http://user:pw@proxy"}
	envA := append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "ASCEND_PROCESS_LOG_PATH=" + logRoot, "HOME=/nonexistent-a"}, secrets...)
	a := startInNamespaces(t, scriptA, ready, envA)
	readyB := filepath.Join(dir, "b.ready")
	b := startInNamespaces(t, "touch '"+readyB+"'; exec sleep 600", readyB,
		append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + filepath.Join(dir, "home-b")}, secrets...))

	if entries, _ := os.ReadDir(logRoot); len(entries) != 0 {
		t.Fatalf("A's logs are visible at the host path: %v (the tmpfs is not private)", entries)
	}

	capture := filepath.Join(dir, "npu-smi.txt")
	npuSMI := filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(capture, []byte(npuSMITwoChips(63900, a.hostPID, b.hostPID)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	emptyRoot := filepath.Join(dir, "configured-root")
	if err := os.MkdirAll(emptyRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	var logBuf syncBuffer
	reg := wiredRegistryTo(t, slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		"--npusmi.path="+npuSMI, "--cannlog.root="+emptyRoot, "--path.procfs=/proc",
		"--cannlog.poll-interval=50ms", "--no-collector.hccn", "--no-collector.pods")

	npu0 := map[string]string{"npu": "0", "chip": "0"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	waitFor := func(what string, cond func(map[string][]sample) bool) (map[string][]sample, string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			s, page := allSamples(t, reg)
			if cond(s) {
				return s, page
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never happened; coverage %v, pending %v, faults %v\nlog:\n%s", what, s["ascend_npu_processes"],
					s["hccl_link_setup_pending_queue_pairs"], s["hccl_fault_events_total"], logBuf.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	s, _ := waitFor("A's pending link setup read", func(s map[string][]sample) bool {
		v, ok := find(s["hccl_link_setup_pending_queue_pairs"], with(npu0, "bound", "high"))
		return ok && v == 952
	})
	checks := []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"ascend_npu_processes", with(npu0, "cann_logs", "found"), 1},
		{"ascend_npu_processes", map[string]string{"npu": "1", "chip": "0", "cann_logs": "found"}, 0},
		{"ascend_npu_processes", map[string]string{"npu": "1", "chip": "0", "cann_logs": "missing"}, 1},
		{"hccl_link_setup_processes", with(npu0, "settings_source", "known"), 1},
		{"hccl_env_rdma_qps_per_connection", nil, 16},
		{"hccl_communicator_ranks", nil, 64},
		{"hccl_exporter_collector_success", map[string]string{"collector": "cannlog"}, 1},
	}
	for _, c := range checks {
		if got, ok := find(s[c.metric], c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.metric, c.labels, got, ok, c.want)
		}
	}
	// None missing on NPU 0: no series (served only where above 0).
	if v, ok := find(s["ascend_npu_processes"], with(npu0, "cann_logs", "missing")); ok {
		t.Errorf("ascend_npu_processes{cann_logs=missing} of NPU 0 served (%v)", v)
	}

	// A writes EI0011 and exits; its mount namespace, and the tmpfs with
	// its logs, go with it. The line is still counted.
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not exit")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", a.hostPID)); err == nil {
		t.Fatalf("A (host pid %d) still in /proc", a.hostPID)
	}
	_, page := waitFor("A's last EI0011 counted", func(s map[string][]sample) bool {
		// Over every series of the code: the event is in its job's
		// (hccl_job: A's communicator), the catalog's zero stays.
		return sumOf(s["hccl_fault_events_total"], map[string]string{"code": "EI0011", "source": "plog"}) == 1
	})

	for _, secret := range []string{"hunter2", "SECRET_TOKEN", "swordfish", "DB_PASSWORD", "HTTP_PROXY", "user:pw", "/usr/sbin", "nonexistent-a"} {
		if strings.Contains(page, secret) {
			t.Errorf("metrics leak %q of a process's environment", secret)
		}
		if strings.Contains(logBuf.String(), secret) {
			t.Errorf("log leaks %q of a process's environment:\n%s", secret, logBuf.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the exporter's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDiscoveredRootInItsOwnZone (B6): a process in its own pid and mount
// namespaces writes its plogs in UTC+8 (as a container with TZ=Asia/Shanghai
// does) to a root only /proc reaches; the exporter runs in UTC. The root
// found through /proc gets its own zone: the fault's time is the real one,
// not 8 hours ahead, and the root has its own
// hccl_exporter_log_timezone_*{root} series.
func TestDiscoveredRootInItsOwnZone(t *testing.T) {
	requireUnshare(t)
	if _, off := time.Now().Zone(); off != 0 {
		saved := time.Local
		time.Local = time.UTC
		t.Cleanup(func() { time.Local = saved })
	}
	dir := t.TempDir()
	logRoot := filepath.Join(dir, "job-cst", "ascend-logs")
	if err := os.MkdirAll(logRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	cst := time.FixedZone("CST", 8*3600)
	at := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	printed := at.In(cst).Format("2006-01-02-15:04:05.000") + ".000"
	plog := "[WARNING] HCCL(1,python3):" + printed + " [x.cc:1] [1]starting\n" +
		"[ERROR] HCCP(1,python3):" + printed + " [ra_host.c:1] tid:1,ra_qp_create(1): ra qp create fail, reason: out of memory\n"
	src := filepath.Join(dir, "plog-src.log")
	if err := os.WriteFile(src, []byte(plog), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	script := `set -e
mount -t tmpfs tmpfs "$ASCEND_PROCESS_LOG_PATH"
mkdir -p "$ASCEND_PROCESS_LOG_PATH/debug/plog"
cp '` + src + `' "$ASCEND_PROCESS_LOG_PATH/debug/plog/plog-$$_20260107100000000.log"
touch '` + ready + `'
exec sleep 600
`
	p := startInNamespaces(t, script, ready, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "ASCEND_PROCESS_LOG_PATH=" + logRoot, "TZ=Asia/Shanghai"})

	capture := filepath.Join(dir, "npu-smi.txt")
	npuSMI := filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(capture, []byte(npuSMITwoChips(1000, p.hostPID, 999999)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logBuf syncBuffer
	reg := wiredRegistryTo(t, slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		"--npusmi.path="+npuSMI, "--cannlog.root="+filepath.Join(dir, "configured-root"),
		"--path.procfs=/proc", "--cannlog.poll-interval=50ms", "--no-collector.hccn", "--no-collector.pods")
	root := fmt.Sprintf("/proc/%d/root%s", p.hostPID, logRoot)
	deadline := time.Now().Add(15 * time.Second)
	var s map[string][]sample
	for {
		s, _ = allSamples(t, reg)
		if _, ok := find(s["hccl_fault_last_event_timestamp_seconds"], map[string]string{"code": "EI0011"}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the discovered process's EI0011 was never read; log:\n%s", logBuf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	last, _ := find(s["hccl_fault_last_event_timestamp_seconds"], map[string]string{"code": "EI0011"})
	if got := time.Unix(int64(last), 0); got.Sub(at).Abs() > time.Second {
		t.Errorf("EI0011 at %v, want %v (printed %s in UTC+8): off by %v", got.UTC(), at.UTC(), printed, got.Sub(at))
	}
	if v, ok := find(s["hccl_exporter_log_timezone_offset_seconds"], map[string]string{"root": root}); !ok || v != 8*3600 {
		t.Errorf("hccl_exporter_log_timezone_offset_seconds{root=%q} = %v (present %v), want 28800; have %v", root, v, ok,
			s["hccl_exporter_log_timezone_offset_seconds"])
	}
	if v, ok := find(s["hccl_exporter_log_timezone_applied_offset_seconds"], map[string]string{"root": root}); !ok || v != 8*3600 {
		t.Errorf("hccl_exporter_log_timezone_applied_offset_seconds{root=%q} = %v (present %v), want 28800", root, v, ok)
	}
}
