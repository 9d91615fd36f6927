package tail

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sink collects delivered lines.
type sink struct {
	lines []string
	byPID map[int][]string
	files map[string]int
}

func (s *sink) handle(f *File, line []byte) {
	if s.byPID == nil {
		s.byPID = make(map[int][]string)
		s.files = make(map[string]int)
	}
	s.lines = append(s.lines, string(line))
	s.byPID[f.PID] = append(s.byPID[f.PID], string(line))
	s.files[f.Path]++
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newTestFollower returns a follower that rescans on every Poll.
func newTestFollower(t testing.TB, cfg Config) *Follower {
	t.Helper()
	if cfg.RescanInterval == 0 {
		cfg.RescanInterval = time.Nanosecond
	}
	f, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func poll(t testing.TB, f *Follower, s *sink) {
	t.Helper()
	if err := f.Poll(s.handle); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, path, data string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

func plogName(pid int, seq int) string {
	return fmt.Sprintf("plog-%d_%017d.log", pid, 20250101000000000+seq)
}

func expectLines(t testing.TB, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
		t.Fatalf("lines:\n got %q\nwant %q", got, want)
	}
}

func plogDir(t testing.TB, root string) string {
	d := filepath.Join(root, "run", "plog")
	mkdir(t, d)
	return d
}
