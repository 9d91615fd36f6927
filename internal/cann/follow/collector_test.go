package follow

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// copyTree copies testdata into a temporary log root.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type testRig struct {
	dir   string
	cfg   Config
	clock *fakeClock
}

func newRig(t *testing.T) *testRig {
	dir := t.TempDir()
	copyTree(t, stateTestdata+"/cann-log", filepath.Join(dir, "log"))
	copyTree(t, stateTestdata+"/screen-log", filepath.Join(dir, "screen"))
	return &testRig{
		dir: dir,
		cfg: Config{
			Roots:       []string{filepath.Join(dir, "log")},
			ScreenGlobs: []string{filepath.Join(dir, "screen", "*.log")},
			StateFile:   filepath.Join(dir, "state"),
			ProcessTTL:  time.Hour,
			// The goldens read the samples in UTC (testOptions): under
			// auto their communicator identifiers would show the zone
			// some of them printed in, which depends on which copy is
			// newest.
			Timezone: "UTC",
		},
		clock: &fakeClock{t: time.Date(2026, 3, 18, 12, 0, 0, 0, time.UTC)},
	}
}

func (r *testRig) collector(t *testing.T, live logstate.Liveness) *Service {
	t.Helper()
	f, err := tail.New(tail.Config{Roots: r.cfg.Roots, ScreenGlobs: r.cfg.ScreenGlobs, StateFile: r.cfg.StateFile, DisableNotify: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return newService(r.cfg, Deps{}, live, nil, f, logstate.NewState(testOptions(r.clock)))
}

var allAlive = logstate.LivenessFunc(func(int) bool { return true })

// stateOnly renders the state metrics (without the follower's counters).
func stateOnly(t *testing.T, c *Service) string { return string(exposition(t, c.state)) }

func TestCollectorSamples(t *testing.T) {
	r := newRig(t)
	c := r.collector(t, allAlive)
	defer c.Close()
	c.pollOnce(r.clock.Now())
	want, err := os.ReadFile(stateTestdata + "/golden/samples.prom")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOnly(t, c); got != string(want) {
		t.Errorf("followed samples differ from the ingested ones:\n%s", got)
	}
	extra := `
# HELP hccl_exporter_log_files_tracked Log files followed (CANN plogs and screen logs).
# TYPE hccl_exporter_log_files_tracked gauge
hccl_exporter_log_files_tracked 29
# HELP hccl_exporter_log_read_errors_total Errors reading log files and directories (missing roots, unreadable directories, failed reads).
# TYPE hccl_exporter_log_read_errors_total counter
hccl_exporter_log_read_errors_total 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(extra), "hccl_exporter_log_files_tracked", "hccl_exporter_log_read_errors_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	if p, ok := onlyProcess(t, c.state, 1595259); !ok || p.Env["HCCL_BUFFSIZE"].Number != 1<<20 || p.Label != "1595259" {
		t.Errorf("process 1595259 = %+v %v", p, ok)
	}
	if _, ok := onlyProcess(t, c.state, 1); ok {
		t.Error("unknown pid found")
	}
}

// TestCollectorRestart checks that a restart with the state file neither
// recounts old lines nor loses settings, and counts what came meanwhile.
func TestCollectorRestart(t *testing.T) {
	r := newRig(t)
	c := r.collector(t, allAlive)
	c.pollOnce(r.clock.Now())
	before := stateOnly(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2 := r.collector(t, allAlive)
	if got := stateOnly(t, c2); got != before {
		t.Fatalf("restored state differs:\n%s", got)
	}
	c2.pollOnce(r.clock.Now())
	if got := stateOnly(t, c2); got != before {
		t.Fatalf("restart recounted lines:\n%s", got)
	}
	// New lines after the restart are counted once.
	appendTo(t, filepath.Join(r.dir, "screen", "train-ei0011.log"),
		"[PID: 2103452] 2025-11-03-20:30:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate\n")
	appendTo(t, filepath.Join(r.dir, "log", "run", "plog", "plog-1595259_20260106153829881.log"),
		"[INFO] HCCL(1595259,alltoall_test):2026-01-06-15:40:00.000.000 [externalinput.cc:1420] [1595259][HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [8]\n")
	c2.pollOnce(r.clock.Now())
	if n := countOf(t, c2.state, "EI0011", "screen"); n != 2 {
		t.Errorf("EI0011 after restart and one new report = %d, want 2", n)
	}
	if p, _ := onlyProcess(t, c2.state, 1595259); p.Env["HCCL_RDMA_QPS_PER_CONNECTION"].Number != 8 {
		t.Errorf("new setting not applied: %+v", p.Env["HCCL_RDMA_QPS_PER_CONNECTION"])
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestCollectorExpiresDeadProcesses runs the background loop: the sample
// processes are long gone, so their series go at the first expiry.
func TestCollectorExpiresDeadProcesses(t *testing.T) {
	r := newRig(t)
	r.cfg.PollInterval = 10 * time.Millisecond
	c := r.collector(t, nil) // its own liveness: no npu-smi, no procfs, nothing runs
	c.Start(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for countOf(t, c.state, "EI0011", "screen") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if countOf(t, c.state, "EI0011", "screen") != 1 {
		t.Fatal("the loop did not read the logs")
	}
	if ps := c.Processes(); len(ps) != 0 {
		t.Errorf("dead processes kept: %+v", ps)
	}
	if err := c.Update(context.Background(), make(chan prometheus.Metric, 1000)); err != nil {
		t.Errorf("Update after Close: %v", err)
	}
}

func TestCollectorMissingRoot(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Roots: []string{filepath.Join(dir, "missing")}, ScreenGlobs: []string{filepath.Join(dir, "nothing", "*.log")}}
	c, err := New(cfg, Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.pollOnce(time.Now())
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	// No log read: no fault series (logstate's
	// TestFaultSeriesBornAtFirstEvent).
	if n := testutil.CollectAndCount(c, "hccl_fault_events_total"); n != 0 {
		t.Errorf("%d fault series with no log read, want 0", n)
	}
}

type notReady struct{ ready *bool }

func (n notReady) Alive(int) bool { return false }
func (n notReady) Ready() bool    { return *n.ready }

// TestExpiryWaitsForLiveness: before npu-smi first ran, its process table
// cannot tell that a process is alive; expiry waits (up to ReadyGrace).
func TestExpiryWaitsForLiveness(t *testing.T) {
	r := newRig(t)
	ready := false
	live := notReady{&ready}
	c := r.collector(t, live)
	defer c.Close()
	now := time.Now()
	c.pollOnce(now)
	if len(c.Processes()) == 0 {
		t.Fatal("processes expired before liveness was ready")
	}
	ready = true
	c.pollOnce(now.Add(expireEvery))
	if ps := c.Processes(); len(ps) != 0 {
		t.Fatalf("dead processes kept once liveness is ready: %d", len(ps))
	}
	// A source that never becomes ready stops blocking after the grace.
	r2 := newRig(t)
	ready = false
	c2 := r2.collector(t, live)
	defer c2.Close()
	c2.pollOnce(now)
	c2.pollOnce(now.Add(logstate.ReadyGrace + time.Second))
	if len(c2.Processes()) != 0 {
		t.Error("a never-ready liveness blocks expiry forever")
	}
}
