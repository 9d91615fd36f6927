package npusmi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli/clitest"
)

const sampleTable = "testdata/info-910b4-procs-v24.1.rc3.txt"

func TestRunnerNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := npusmi.RunInfo(context.Background(), "npu-smi", time.Second)
	if !errors.Is(err, npusmi.ErrNotFound) || !strings.Contains(err.Error(), "npu-smi not found in PATH; set --npusmi.path") {
		t.Fatalf("err = %v, want npusmi.ErrNotFound with the flag hint", err)
	}
	missing := filepath.Join(t.TempDir(), "npu-smi")
	_, err = npusmi.RunInfo(context.Background(), missing, time.Second)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v, want an error naming %s", err, missing)
	}
}

func TestRunnerSuccessAndSlowRun(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	path := useFake(t, "output", map[string]string{fakeFileEnv: sampleTable, fakeSleepEnv: "700ms", fakeLogEnv: log})
	begin := time.Now()
	out, err := npusmi.RunInfo(context.Background(), path, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(begin) < 700*time.Millisecond {
		t.Fatal("slow fake returned too early")
	}
	want, _ := os.ReadFile(sampleTable)
	if string(out) != string(want) {
		t.Fatal("output differs from what the fake printed")
	}
}

func TestRunnerNonZeroExit(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stdout, stderr string
		code           string
		is             error
		want           []string
	}{
		{name: "dcmi on stdout", stdout: "DrvMngGetConsoleLogLevel failed. (ret=4)\ndcmi module initialize failed. ret is -8005\n",
			code: "255", is: npusmi.ErrDCMIInit, want: []string{"exit status 255", "-8005", "reboot"}},
		{name: "stderr message", stderr: "Error: permission denied\n", code: "3",
			want: []string{"exit status 3", "permission denied"}},
		{name: "silent", code: "1", want: []string{"exit status 1", "no output"}},
		{name: "table but failed", stdout: "+---+\n| NPU Name | Health | Power(W) |\n", code: "4",
			want: []string{"exit status 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := useFake(t, "exit", map[string]string{fakeStdoutEnv: tc.stdout, fakeStderrEnv: tc.stderr, fakeCodeEnv: tc.code})
			_, err := npusmi.RunInfo(context.Background(), path, 10*time.Second)
			if err == nil {
				t.Fatal("no error for a non-zero exit")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestRunnerTimeoutKillsProcessGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("timing: waits for a run to be killed at its timeout: skipped under -short")
	}
	pids := filepath.Join(t.TempDir(), "pids")
	path := useFake(t, "hang", map[string]string{fakePidsEnv: pids})
	const timeout = 3 * time.Second
	begin := time.Now()
	_, err := npusmi.RunInfo(context.Background(), path, timeout)
	elapsed := time.Since(begin)
	if !errors.Is(err, npusmi.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "process group") {
		t.Errorf("err = %q should say the process group was killed", err)
	}
	// Killing the group closes the child's copy of stdout too, so Wait does
	// not need the WaitDelay grace.
	if elapsed > timeout+vendorcli.WaitDelay {
		t.Errorf("run took %s, timeout %s", elapsed, timeout)
	}
	parent, child := clitest.ReadPids(t, pids)
	clitest.WaitGone(t, parent, parent, child)
}

func TestRunnerGrandchildHoldingStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("timing: waits for a grandchild holding stdout to be killed: skipped under -short")
	}
	pids := filepath.Join(t.TempDir(), "pids")
	path := useFake(t, "hold-stdout", map[string]string{fakeFileEnv: sampleTable, fakePidsEnv: pids})
	begin := time.Now()
	out, err := npusmi.RunInfo(context.Background(), path, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(begin); elapsed > vendorcli.WaitDelay+3*time.Second {
		t.Errorf("run took %s: a grandchild holding stdout must not hang the scrape", elapsed)
	}
	if _, err := npusmi.Parse(out); err != nil {
		t.Errorf("output of an npu-smi that exited 0 should be kept: %v", err)
	}
	parent, child := clitest.ReadPids(t, pids)
	clitest.WaitGone(t, parent, child)
}

func TestCollectorGarbageAndExitThroughBinary(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("\x00\xff\xfe garbage\nnot a table | at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := useFake(t, "output", map[string]string{fakeFileEnv: garbage})
	c, _ := newTestCollector(npusmi.RunnerConfig{MinInterval: time.Minute, Tool: vendorcli.Tool{Path: path, Timeout: 10 * time.Second}}, Deps{}, nil)
	if err := c.Update(context.Background(), make(chan prometheus.Metric, 100)); !errors.Is(err, npusmi.ErrNoTable) {
		t.Fatalf("err = %v, want ErrNoTable", err)
	}
	fams := gather(t, c)
	if got := value(t, fams, "hccl_exporter_npu_smi_up", nil); got != 0 {
		t.Errorf("hccl_exporter_npu_smi_up = %v, want 0", got)
	}
	if got := value(t, fams, "hccl_exporter_npu_smi_runs_total", map[string]string{"result": "parse_error"}); got != 1 {
		t.Errorf("parse_error runs = %v, want 1", got)
	}
}

// TestConcurrentCallersShareOneRun: 100 concurrent scrapes and headroom
// lookups start exactly one npu-smi.
func TestConcurrentCallersShareOneRun(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	path := useFake(t, "output", map[string]string{fakeFileEnv: sampleTable, fakeSleepEnv: "500ms", fakeLogEnv: log})
	c, _ := newTestCollector(npusmi.RunnerConfig{MinInterval: 5 * time.Second, Tool: vendorcli.Tool{Path: path, Timeout: 10 * time.Second}}, Deps{}, nil)

	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i%2 == 0 {
				ch := make(chan prometheus.Metric, 1000)
				errs <- c.Update(context.Background(), ch)
				return
			}
			_, err := c.run.Snapshot(context.Background())
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countStarts(t, log); n != 1 {
		t.Fatalf("npu-smi started %d times for 100 concurrent callers, want 1", n)
	}
}

// TestNeverTwoRunsAtOnce: without a min interval, callers that arrive
// after a run finished start a new one, but runs never overlap.
func TestNeverTwoRunsAtOnce(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	path := useFake(t, "output", map[string]string{fakeFileEnv: sampleTable, fakeSleepEnv: "50ms", fakeLogEnv: log})
	c, _ := newTestCollector(npusmi.RunnerConfig{MinInterval: 0, Tool: vendorcli.Tool{Path: path, Timeout: 10 * time.Second}}, Deps{}, nil)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if _, err := c.run.Snapshot(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(log)
	lines := strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
	running := 0
	for i := 0; i+1 < len(lines); i += 2 {
		switch lines[i] {
		case "start":
			running++
		case "end":
			running--
		}
		if running > 1 {
			t.Fatalf("two npu-smi processes at once:\n%s", b)
		}
	}
	if n := countStarts(t, log); n < 1 || n > 60 {
		t.Fatalf("%d runs", n)
	}
}

func countStarts(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "start ")
}
