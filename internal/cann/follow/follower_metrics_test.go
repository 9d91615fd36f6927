package follow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"

	"log/slog"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// TestFollowerEventsExported: truncations, replacements and failed state
// file writes are exported, each in a metric of its own; a failed write is
// not a read error.
func TestFollowerEventsExported(t *testing.T) {
	r := newRig(t)
	blocker := filepath.Join(r.dir, "not-a-dir")
	r.cfg.StateFile = filepath.Join(blocker, "state")
	f, err := tail.New(tail.Config{Roots: r.cfg.Roots, ScreenGlobs: r.cfg.ScreenGlobs, StateFile: r.cfg.StateFile,
		DisableNotify: true, RescanInterval: time.Nanosecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := newService(r.cfg, Deps{}, allAlive, nil, f, logstate.NewState(testOptions(r.clock)))
	t.Cleanup(func() { _ = c.Close() })
	// Now the state file's directory is a regular file: every write fails,
	// whoever the test runs as.
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.pollOnce(r.clock.Now())

	screen := filepath.Join(r.dir, "screen", "train-ei0011.log")
	if err := os.Truncate(screen, 0); err != nil {
		t.Fatal(err)
	}
	c.pollOnce(r.clock.Now())
	tmp := filepath.Join(r.dir, "screen", "replacement.tmp")
	if err := os.WriteFile(tmp, []byte("a new file under the old name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, screen); err != nil {
		t.Fatal(err)
	}
	c.pollOnce(r.clock.Now())
	// The first poll's checkpoint failed; the next is tried an interval
	// later, not at every poll.
	c.checkpoint(r.clock.Now().Add(time.Minute))

	want := `
# HELP hccl_exporter_log_read_errors_total Errors reading log files and directories (missing roots, unreadable directories, failed reads).
# TYPE hccl_exporter_log_read_errors_total counter
hccl_exporter_log_read_errors_total 0
# HELP hccl_exporter_log_replacements_total Followed log names found holding another file (replaced, or rotated by the kubelet); the old file is read to its end first.
# TYPE hccl_exporter_log_replacements_total counter
hccl_exporter_log_replacements_total 1
# HELP hccl_exporter_log_state_file_write_errors_total Checkpoints of --cannlog.state-file that failed; until one succeeds, a restart reads again what was read since the last.
# TYPE hccl_exporter_log_state_file_write_errors_total counter
hccl_exporter_log_state_file_write_errors_total 2
# HELP hccl_exporter_log_truncations_total Followed log files found truncated (shrunk, or rewritten from the start) and read again from their first byte.
# TYPE hccl_exporter_log_truncations_total counter
hccl_exporter_log_truncations_total 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"hccl_exporter_log_read_errors_total", "hccl_exporter_log_replacements_total", "hccl_exporter_log_state_file_write_errors_total", "hccl_exporter_log_truncations_total"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c, "hccl_exporter_log_replacements_total", "hccl_exporter_log_state_file_write_errors_total", "hccl_exporter_log_truncations_total")
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestNewPodEI0011CountedBeforeRescan: a pod directory created after the
// start, whose container prints EI0011, is counted (with its pod labels)
// within a second although the rescan is an hour away.
func TestNewPodEI0011CountedBeforeRescan(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods")
	if err := os.MkdirAll(pods, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Roots:          []string{filepath.Join(dir, "log")},
		ScreenGlobs:    []string{filepath.Join(pods, "*", "*", "*.log")},
		PollInterval:   20 * time.Millisecond,
		RescanInterval: time.Hour,
		// No plog names the process's job: the fault waits this long.
		FaultJobGrace: 300 * time.Millisecond,
	}
	c, err := New(cfg, Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t.Context())
	t.Cleanup(func() { _ = c.Close() })
	time.Sleep(100 * time.Millisecond) // the first poll and its scan
	if !c.f.Stats().Notify {
		testtools.NeedsKernel(t, "inotify unavailable here")
	}
	container := filepath.Join(pods, "train_job-0_0f3c", "trainer")
	if err := os.MkdirAll(container, 0o755); err != nil {
		t.Fatal(err)
	}
	line := "2026-03-18T12:00:00.000000000+00:00 stderr F [PID: 4242] 2026-03-18-12:00:00.000.000 " +
		"Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate\n"
	if err := os.WriteFile(filepath.Join(container, "0.log"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for countOf(t, c.state, "EI0011", "screen") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("EI0011 of a new pod not counted within a second")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its series, once the grace for its process's job is over.
	body := ""
	for deadline = time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if body = string(exposition(t, c.state)); strings.Contains(body, `namespace="train",pod="job-0"`) {
			break
		}
	}
	if !strings.Contains(body, `namespace="train",pod="job-0"`) {
		t.Errorf("pod labels missing:\n%s", body)
	}
}
