package vendorcli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli/clitest"
)

// runBoth runs f once on the memfd path and once on the pipe fallback.
func runBoth(t *testing.T, f func(t *testing.T)) {
	for _, pipes := range []bool{false, true} {
		name := "memfd"
		if pipes {
			name = "pipes"
		}
		t.Run(name, func(t *testing.T) {
			old := usePipes
			usePipes = pipes
			t.Cleanup(func() { usePipes = old })
			f(t)
		})
	}
}

func TestRun(t *testing.T) { runBoth(t, testRun) }

func testRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bin       string
		args      []string
		timeout   time.Duration
		max       int
		want      Result
		wantOut   string
		wantError bool
		// anyExit: the exit status is the tool's business (a tool writing
		// far past the cap gets a write error on the memfd path).
		anyExit bool
	}{
		{name: "exit status and stderr", bin: "/bin/sh", args: []string{"-c", "echo out; echo '  first' >&2; echo second >&2; exit 3"},
			timeout: 5 * time.Second, max: 1 << 10, want: Result{ExitCode: 3}, wantOut: "out\n"},
		{name: "stdout past the cap is cut and flagged", bin: "/bin/sh", args: []string{"-c", "printf abcdef"},
			timeout: 5 * time.Second, max: 3, want: Result{ExitCode: 0, Truncated: true}, wantOut: "abc"},
		// One write of 5 MB crosses the memfd's seal (4 MiB for this cap).
		{name: "stdout past the cap in one write", bin: "/bin/sh", args: []string{"-c", "head -c 5000000 /dev/zero | tr '\\0' a | dd bs=5000000 iflag=fullblock 2>/dev/null"},
			timeout: 5 * time.Second, max: 1 << 10, want: Result{Truncated: true}, anyExit: true, wantOut: strings.Repeat("a", 1<<10)},
		{name: "stdout past the cap in many writes", bin: "/bin/sh", args: []string{"-c", "yes aaaaaaa | head -c 9000000"},
			timeout: 5 * time.Second, max: 5 << 20, want: Result{Truncated: true}, anyExit: true, wantOut: strings.Repeat("aaaaaaa\n", 5<<20/8)},
		{name: "stdout at the cap exactly", bin: "/bin/sh", args: []string{"-c", "printf abc"},
			timeout: 5 * time.Second, max: 3, want: Result{ExitCode: 0}, wantOut: "abc"},
		{name: "a child left in the background does not hold the run", bin: "/bin/sh", args: []string{"-c", "sleep 30 & echo started"},
			timeout: 5 * time.Second, max: 1 << 10, want: Result{ExitCode: 0}, wantOut: "started\n"},
		{name: "killed at the timeout", bin: "/bin/sh", args: []string{"-c", "sleep 30"},
			timeout: 200 * time.Millisecond, max: 1 << 10, want: Result{ExitCode: -1, TimedOut: true}},
		{name: "not startable", bin: filepath.Join(t.TempDir(), "missing"),
			timeout: time.Second, max: 1 << 10, want: Result{ExitCode: -1}, wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Run(context.Background(), tc.bin, tc.args, tc.timeout, tc.max)
			if tc.anyExit {
				r.ExitCode = tc.want.ExitCode
			}
			if r.ExitCode != tc.want.ExitCode || r.TimedOut != tc.want.TimedOut || r.Truncated != tc.want.Truncated {
				t.Errorf("exit %d timedOut %v truncated %v, want %d %v %v", r.ExitCode, r.TimedOut, r.Truncated,
					tc.want.ExitCode, tc.want.TimedOut, tc.want.Truncated)
			}
			if (r.Err != nil) != tc.wantError {
				t.Errorf("err = %v, want error %v", r.Err, tc.wantError)
			}
			if string(r.Stdout) != tc.wantOut {
				t.Errorf("stdout = %.80q (%d bytes), want %.80q (%d bytes)", r.Stdout, len(r.Stdout), tc.wantOut, len(tc.wantOut))
			}
			if !tc.want.TimedOut && r.Duration > 3*time.Second {
				t.Errorf("the run took %s", r.Duration)
			}
			if r.TimedOut && r.Duration > tc.timeout+WaitDelay {
				t.Errorf("a timed-out run took %s", r.Duration)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"\n  \n":                  "",
		"\n  dcmi failed  \nnext": "dcmi failed",
	} {
		if got := FirstLine([]byte(in)); got != want {
			t.Errorf("FirstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestToolOr: the zero fields of a Tool take the defaults, the set ones
// stay (a negative timeout is no timeout a run could use).
func TestToolOr(t *testing.T) {
	def := Tool{Path: "npu-smi", Timeout: 10 * time.Second}
	for _, tc := range []struct{ in, want Tool }{
		{Tool{}, def},
		{Tool{Path: "/usr/local/bin/npu-smi"}, Tool{Path: "/usr/local/bin/npu-smi", Timeout: 10 * time.Second}},
		{Tool{Timeout: 3 * time.Second}, Tool{Path: "npu-smi", Timeout: 3 * time.Second}},
		{Tool{Path: "x", Timeout: -time.Second}, Tool{Path: "x", Timeout: 10 * time.Second}},
	} {
		if got := tc.in.Or(def); got != tc.want {
			t.Errorf("%+v.Or(%+v) = %+v, want %+v", tc.in, def, got, tc.want)
		}
	}
}

// TestRunTimeoutKillsTheGroup: a tool that hangs in a child of its own
// (here sh waiting on sleep) loses the whole process group at the timeout,
// not only the process it started. It runs under -short, where the
// collectors' tests of hung tools skip or answer in-process.
func TestRunTimeoutKillsTheGroup(t *testing.T) {
	r := Run(context.Background(), "/bin/sh", []string{"-c", "sleep 30 & echo $$ $!; wait"}, 300*time.Millisecond, 1<<10)
	if !r.TimedOut {
		t.Fatalf("run not timed out: %+v", r)
	}
	var parent, child int
	if _, err := fmt.Sscanf(string(r.Stdout), "%d %d", &parent, &child); err != nil {
		t.Fatalf("stdout %q: %v", r.Stdout, err)
	}
	clitest.WaitGone(t, parent, parent, child)
}
