package npusmi

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// fakeClock is a settable clock for the min-interval logic.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

var testEpoch = time.Unix(1700000000, 0)

// scripted is a fake exec hook returning the queued outputs/errors in turn
// (the last one repeats) and counting calls.
type scripted struct {
	mu    sync.Mutex
	steps []step
	calls int
}

type step struct {
	out []byte
	err error
}

func (s *scripted) exec(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.steps[min(s.calls, len(s.steps)-1)]
	s.calls++
	return st.out, st.err
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// hooks replace the runner's npu-smi and clock in a test; nil fields keep
// the real ones.
type hooks struct {
	exec func(ctx context.Context) ([]byte, error)
	now  func() time.Time
}

// newTestCollector builds a collector over a runner of its own whose exec
// and clock the returned hooks replace.
func newTestCollector(cfg npusmi.RunnerConfig, deps Deps, logger *slog.Logger) (*Collector, *hooks) {
	h := &hooks{}
	path, timeout := cfg.Tool.Or(vendorcli.NPUSMI).Path, cfg.Tool.Or(vendorcli.NPUSMI).Timeout
	cfg.Exec = func(ctx context.Context) ([]byte, error) {
		if h.exec != nil {
			return h.exec(ctx)
		}
		return npusmi.RunInfo(ctx, path, timeout)
	}
	cfg.Now = func() time.Time {
		if h.now != nil {
			return h.now()
		}
		return time.Now()
	}
	deps.Runner = npusmi.NewRunner(cfg, logger)
	c, err := New(Config{Run: cfg}, deps, logger)
	if err != nil {
		panic(err)
	}
	return c, h
}

func newScripted(minInterval time.Duration, steps ...step) (*Collector, *scripted, *fakeClock) {
	c, s, clk, _ := newScriptedHooks(minInterval, steps...)
	return c, s, clk
}

// newScriptedHooks is newScripted with the hooks, for a test that replaces
// the script later.
func newScriptedHooks(minInterval time.Duration, steps ...step) (*Collector, *scripted, *fakeClock, *hooks) {
	c, h := newTestCollector(npusmi.RunnerConfig{MinInterval: minInterval, Tool: vendorcli.Tool{Path: "npu-smi", Timeout: time.Second}}, Deps{}, nil)
	s := &scripted{steps: steps}
	clk := &fakeClock{t: testEpoch}
	h.exec, h.now = s.exec, clk.now
	return c, s, clk, h
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gather(t *testing.T, c *Collector) []*dto.MetricFamily {
	t.Helper()
	return metrictest.Gather(t, metrictest.Unchecked(c))
}

// value returns the value of the sample of name whose labels include want;
// it fails the test when there is none.
func value(t *testing.T, fams []*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := metrictest.Find(fams, name, want)
	if !ok {
		t.Fatalf("no %s%v", name, want)
	}
	return v
}

// failingInputs are the testdata files Parse must reject.
var failingInputs = map[string]error{
	"error-dcmi-init-failed.txt":      npusmi.ErrDCMIInit,
	"error-no-card.txt":               npusmi.ErrNoCard,
	"info-l-910b4.txt":                npusmi.ErrNoTable,
	"info-m-910a.txt":                 npusmi.ErrNoTable,
	"info-m-910b4-mcu.txt":            npusmi.ErrNoTable,
	"info-t-proc-mem-a3.txt":          npusmi.ErrNoTable,
	"info-t-usages-910b1.txt":         npusmi.ErrNoTable,
	"info-910a-warning-v23.0.rc1.txt": npusmi.ErrTruncated,
}

// TestGolden runs every captured and written npu-smi output through the
// collector and compares the exposition with testdata/golden/<file>.prom.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) < 20 {
		t.Fatalf("testdata: %d files, %v", len(files), err)
	}
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			out := readFile(t, file)
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(base, ".txt")+".prom")

			c, _, _ := newScripted(time.Minute, step{out: out})
			err := c.Update(context.Background(), make(chan prometheus.Metric, 10000))
			if want, bad := failingInputs[base]; bad {
				if !errors.Is(err, want) {
					t.Fatalf("Update err = %v, want %v", err, want)
				}
			} else if err != nil {
				t.Fatalf("Update: %v", err)
			}

			metrictest.Golden(t, golden, metrictest.Unchecked(c))
		})
	}
}

// TestFailureAfterSuccess: a failed run exports up 0, keeps the timestamp of
// the last success and exports no per-chip value at all.
func TestFailureAfterSuccess(t *testing.T) {
	good := readFile(t, sampleTable)
	c, s, clk := newScripted(5*time.Second,
		step{out: good},
		step{err: npusmi.ErrTimeout},
		step{out: []byte("dcmi module initialize failed. ret is -8005\n")},
	)
	fams := gather(t, c)
	if value(t, fams, "hccl_exporter_npu_smi_up", nil) != 1 {
		t.Fatal("first run should be up")
	}
	if got := value(t, fams, "ascend_npu_hbm_used_bytes", map[string]string{"npu": "0", "chip": "0"}); got != 22283*mib {
		t.Fatalf("hbm used = %v", got)
	}

	for i, wantResult := range []string{"timeout", "parse_error"} {
		clk.advance(6 * time.Second)
		if err := c.Update(context.Background(), make(chan prometheus.Metric, 1000)); err == nil {
			t.Fatalf("failure %d: Update returned no error", i)
		}
		fams = gather(t, c) // within the interval: the same failed run
		if value(t, fams, "hccl_exporter_npu_smi_up", nil) != 0 {
			t.Fatal("up should be 0 after a failed run")
		}
		if got := value(t, fams, "hccl_exporter_npu_smi_last_success_timestamp_seconds", nil); got != 1700000000 {
			t.Errorf("last success = %v, want the first run's time", got)
		}
		if got := value(t, fams, "hccl_exporter_npu_smi_runs_total", map[string]string{"result": wantResult}); got != 1 {
			t.Errorf("runs_total{%s} = %v", wantResult, got)
		}
		for _, f := range fams {
			if !strings.HasPrefix(f.GetName(), "hccl_exporter_npu_smi_") {
				t.Errorf("failed run still exports %s", f.GetName())
			}
		}
	}
	if s.count() != 3 {
		t.Errorf("%d runs, want 3", s.count())
	}
	snap, at, ok := c.run.Latest()
	if !ok || !at.Equal(testEpoch) || len(snap.Chips) != 8 {
		t.Errorf("Latest = %v chips at %v ok=%v, want the first run", snap, at, ok)
	}
	if _, err := c.run.Snapshot(context.Background()); err == nil {
		t.Error("npusmi.Snapshot after a failed run returned no error")
	}
}

// TestMinInterval: results (good or bad) are reused within the interval,
// and a failure is never turned into a success.
func TestMinInterval(t *testing.T) {
	good := readFile(t, sampleTable)
	c, s, clk := newScripted(5*time.Second, step{err: errors.New("boom")}, step{out: good})
	if _, _, ok := c.run.Latest(); ok {
		t.Fatal("Latest before any run")
	}
	for range 3 {
		if _, err := c.run.Snapshot(context.Background()); err == nil {
			t.Fatal("failed run served as success")
		}
		clk.advance(time.Second)
	}
	if s.count() != 1 {
		t.Fatalf("%d runs within the interval, want 1", s.count())
	}
	clk.advance(3 * time.Second)
	snap, err := c.run.Snapshot(context.Background())
	if err != nil || len(snap.Chips) != 8 {
		t.Fatalf("after the interval: %v, %v", snap, err)
	}
	if s.count() != 2 {
		t.Fatalf("%d runs, want 2", s.count())
	}
	if _, at, ok := c.run.Latest(); !ok || !at.Equal(testEpoch.Add(6*time.Second)) {
		t.Errorf("Latest at %v ok=%v", at, ok)
	}
}

// TestSnapshotContext: a caller that gives up does not cancel the shared
// run; the next caller does not wait for it again, and is served it once it
// has landed.
func TestSnapshotContext(t *testing.T) {
	good := readFile(t, sampleTable)
	release := make(chan struct{})
	var calls atomic.Int64
	c, h := newTestCollector(npusmi.RunnerConfig{MinInterval: time.Minute}, Deps{}, nil)
	h.exec = func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		<-release
		return good, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.run.Snapshot(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	begin := time.Now()
	if _, err := c.run.Snapshot(context.Background()); !errors.Is(err, npusmi.ErrBehind) {
		t.Fatalf("a caller while the given-up run still runs: err = %v, want ErrBehind", err)
	}
	if d := time.Since(begin); d > time.Second {
		t.Fatalf("that caller waited %v", d)
	}
	close(release)
	waitLanded(t, c)
	if snap, err := c.run.Snapshot(context.Background()); err != nil || len(snap.Chips) != 8 {
		t.Fatalf("after the run landed: %v, %v", snap, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d runs, want 1 shared run", n)
	}
}

// waitLanded waits until the run in flight has landed.
func waitLanded(t *testing.T, c *Collector) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		idle := c.run.InFlight() == nil
		if idle {
			return
		}
	}
	t.Fatal("the run never landed")
}

// scrapeCtx is the context of scrape id: Prometheus's 10 s timeout less
// the exporter's 0.5 s offset.
func scrapeCtx(t *testing.T, id uint64) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 9500*time.Millisecond)
	t.Cleanup(cancel)
	return collector.WithScrape(ctx, id)
}

// npu-smi slower than a scrape may wait: each run is served to the scrape
// after the one that started it, without waiting, until npu-smi is quick
// again; then scrapes wait for their own run as before.
func TestSlowNPUSMIServedToTheNextScrape(t *testing.T) {
	good := readFile(t, sampleTable)
	clk := &fakeClock{t: testEpoch}
	c, h := newTestCollector(npusmi.RunnerConfig{MinInterval: 5 * time.Second, Tool: vendorcli.Tool{Timeout: time.Minute}}, Deps{}, nil)
	h.now = clk.now
	release := make(chan time.Duration) // each run takes what is sent (on the fake clock)
	var calls atomic.Int64
	h.exec = func(context.Context) ([]byte, error) {
		calls.Add(1)
		clk.advance(<-release)
		return good, nil
	}
	quick := func(what string, ctx context.Context) (*npusmi.Snapshot, error) {
		t.Helper()
		begin := time.Now()
		snap, err := c.run.Snapshot(ctx)
		if d := time.Since(begin); d > time.Second {
			t.Fatalf("%s waited %v", what, d)
		}
		return snap, err
	}

	// Scrape 1 gives up on the run it started.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.run.Snapshot(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("scrape 1: %v", err)
	}
	release <- 12 * time.Second // npu-smi took 12 s
	waitLanded(t, c)
	first, _, _ := c.run.Latest()

	// Scrape 2, 18 s later: served that run at once; the next run starts.
	clk.advance(18 * time.Second)
	if snap, err := quick("scrape 2", scrapeCtx(t, 2)); err != nil || snap != first {
		t.Fatalf("scrape 2: %v, served the landed run: %v", err, snap == first)
	}
	// Another collector of the same scrape: the same run, no wait.
	if snap, err := quick("scrape 2's headroom", scrapeCtx(t, 2)); err != nil || snap != first {
		t.Fatalf("scrape 2's second caller: %v, same run: %v", err, snap == first)
	}
	// Another scrape while the next run is still out: that run is not
	// served twice, and the running one is not waited for.
	if _, err := quick("a scrape in between", scrapeCtx(t, 22)); !errors.Is(err, npusmi.ErrBehind) {
		t.Fatalf("a scrape in between: %v, want ErrBehind", err)
	}
	for deadline := time.Now().Add(5 * time.Second); calls.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d runs, want 2 (the next one started by scrape 2)", n)
	}
	release <- 12 * time.Second
	waitLanded(t, c)
	second, _, _ := c.run.Latest()

	// Scrape 3: the run scrape 2 started, and the next one starts.
	clk.advance(18 * time.Second)
	if snap, err := quick("scrape 3", scrapeCtx(t, 3)); err != nil || snap != second || snap == first {
		t.Fatalf("scrape 3: %v, served the run started by scrape 2: %v", err, snap == second)
	}
	// npu-smi is quick again: this run takes no time.
	release <- 0
	waitLanded(t, c)

	// Scrape 4: the landed run was quick, so it runs npu-smi and waits.
	clk.advance(18 * time.Second)
	done := make(chan error, 1)
	var got *npusmi.Snapshot
	go func() {
		var err error
		got, err = c.run.Snapshot(scrapeCtx(t, 4))
		done <- err
	}()
	release <- 0
	if err := <-done; err != nil {
		t.Fatalf("scrape 4: %v", err)
	}
	if latest, _, _ := c.run.Latest(); got != latest || calls.Load() != 4 {
		t.Fatalf("scrape 4 not served its own run (%d runs)", calls.Load())
	}

	// A run that no scrape saw is not served past behindMaxAge.
	short2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	clk.advance(time.Minute)
	if _, err := c.run.Snapshot(short2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("scrape 5: %v", err)
	}
	release <- 30 * time.Second
	waitLanded(t, c)
	clk.advance(2 * time.Minute) // npusmi.Runner's behindMaxAge
	go func() { release <- 0 }()
	if snap, err := c.run.Snapshot(scrapeCtx(t, 6)); err != nil || snap == nil {
		t.Fatalf("scrape 6: %v", err)
	}
	if n := calls.Load(); n != 6 {
		t.Fatalf("%d runs: scrape 6 should have run npu-smi for itself", n)
	}
}

// A hung npu-smi costs the scrape that started the run its deadline, not
// every scrape after it; its timeout is then served at once, as a failure.
func TestHungNPUSMIHoldsOneScrape(t *testing.T) {
	clk := &fakeClock{t: testEpoch}
	c, h := newTestCollector(npusmi.RunnerConfig{MinInterval: 5 * time.Second, Tool: vendorcli.Tool{Timeout: 10 * time.Second}}, Deps{}, nil)
	h.now = clk.now
	hang := make(chan struct{})
	h.exec = func(context.Context) ([]byte, error) {
		<-hang
		clk.advance(10 * time.Second) // killed at --npusmi.timeout
		return nil, npusmi.ErrTimeout
	}
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.run.Snapshot(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("scrape 1: %v", err)
	}
	begin := time.Now()
	if _, err := c.run.Snapshot(scrapeCtx(t, 2)); !errors.Is(err, npusmi.ErrBehind) || time.Since(begin) > time.Second {
		t.Fatalf("scrape 2 during the hang: %v after %v", err, time.Since(begin))
	}
	close(hang)
	waitLanded(t, c)
	clk.advance(20 * time.Second)
	begin = time.Now()
	if _, err := c.run.Snapshot(scrapeCtx(t, 3)); !errors.Is(err, npusmi.ErrTimeout) || time.Since(begin) > time.Second {
		t.Fatalf("scrape 3, after the run timed out: %v after %v", err, time.Since(begin))
	}
}

func TestAddFlags(t *testing.T) {
	app := kingpin.New("test", "")
	cfg := AddFlags(app, nil)
	tool, run := &cfg.Run.Tool, &cfg.Run
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if tool.Path != "npu-smi" || tool.Timeout != 10*time.Second || run.MinInterval != 5*time.Second {
		t.Errorf("defaults = %+v, %+v", *tool, *run)
	}
	if _, err := app.Parse([]string{"--npusmi.path=/usr/local/bin/npu-smi", "--npusmi.timeout=3s", "--npusmi.min-interval=0s"}); err != nil {
		t.Fatal(err)
	}
	if tool.Path != "/usr/local/bin/npu-smi" || tool.Timeout != 3*time.Second || run.MinInterval != 0 {
		t.Errorf("parsed = %+v, %+v", *tool, *run)
	}
	help := app.GetFlag("npusmi.min-interval").Model().Help
	if !strings.Contains(help, "npu-smi runs at most once per this interval whatever the scrape load") {
		t.Errorf("help does not document --npusmi.min-interval: %q", help)
	}
}

// mib is a MiB in bytes, as npu-smi counts memory.
const mib = 1024 * 1024
