package tail

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestStateFileTooLarge: a state file past MaxStateFileBytes (here a
// sparse 512 MiB one; 0.4.0 read a 2 GiB one whole, 2 GiB of memory and
// 13 s before it served) is not read: the follower starts without it, the
// refusal is counted and the logs are read from the start, at once and
// with no memory to speak of.
func TestStateFileTooLarge(t *testing.T) {
	root := t.TempDir()
	appendFile(t, filepath.Join(plogDir(t, root), plogName(1, 1)), "a\n")
	state := filepath.Join(t.TempDir(), "state")
	fh, err := os.Create(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(512 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	fh.Close()
	f := newTestFollower(t, Config{Roots: []string{root}, StateFile: state})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	begin := time.Now()
	blob, err := f.Restore()
	took := time.Since(begin)
	runtime.ReadMemStats(&after)
	if err == nil || blob != nil || !strings.Contains(err.Error(), "MaxStateFileBytes") {
		t.Fatalf("Restore of a 512 MiB state file = %d bytes, %v; want it refused for its size", len(blob), err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 512 MiB state file refused in %s, %d bytes allocated", took, alloc)
	if alloc > 1<<20 || took > time.Second {
		t.Errorf("refusing it allocated %d bytes and took %s; want it refused without reading", alloc, took)
	}
	if st := f.Stats(); st.ReadErrors["state_file"] != 1 {
		t.Errorf("read errors %v, want state_file counted once", st.ReadErrors)
	}
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "a")
}

// TestStateFileNotRegular: a FIFO where the state file should be blocked
// 0.4.0's start for good (os.ReadFile waits for a writer); it is refused.
func TestStateFileNotRegular(t *testing.T) {
	root := t.TempDir()
	appendFile(t, filepath.Join(plogDir(t, root), plogName(1, 1)), "a\n")
	state := filepath.Join(t.TempDir(), "state")
	if err := syscall.Mkfifo(state, 0o600); err != nil {
		testtools.NeedsKernel(t, "mkfifo: %v", err)
	}
	f := newTestFollower(t, Config{Roots: []string{root}, StateFile: state})
	done := make(chan error, 1)
	go func() { _, err := f.Restore(); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Restore of a FIFO = %v, want it refused", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Restore blocks on a FIFO")
	}
	if st := f.Stats(); st.ReadErrors["state_file"] != 1 {
		t.Errorf("read errors %v, want state_file counted once", st.ReadErrors)
	}
}

// TestStateCheckpointPastTheBound: a checkpoint larger than
// MaxStateFileBytes is not written (the next start would refuse it) and is
// counted as a failed checkpoint; the next one that fits is.
func TestStateCheckpointPastTheBound(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	f := newTestFollower(t, Config{Roots: []string{root}, StateFile: state})
	if _, err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := f.Checkpoint(make([]byte, MaxStateFileBytes)); err == nil || !strings.Contains(err.Error(), "MaxStateFileBytes") {
		t.Fatalf("checkpoint past the bound: %v, want it refused", err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a state file was written: %v", err)
	}
	if st := f.Stats(); st.StateWriteErrors != 1 {
		t.Errorf("state write errors %d, want 1", st.StateWriteErrors)
	}
	if err := f.Checkpoint([]byte("small")); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	f2 := newTestFollower(t, Config{Roots: []string{root}, StateFile: state})
	if blob, err := f2.Restore(); err != nil || string(blob) != "small" {
		t.Fatalf("%q %v", blob, err)
	}
}
