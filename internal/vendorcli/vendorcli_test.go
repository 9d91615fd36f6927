package vendorcli

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli/clitest"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bin       string
		args      []string
		timeout   time.Duration
		max       int
		want      Result
		wantOut   string
		wantError bool
	}{
		{name: "exit status and stderr", bin: "/bin/sh", args: []string{"-c", "echo out; echo '  first' >&2; echo second >&2; exit 3"},
			timeout: 5 * time.Second, max: 1 << 10, want: Result{ExitCode: 3}, wantOut: "out\n"},
		{name: "stdout past the cap is cut and flagged", bin: "/bin/sh", args: []string{"-c", "printf abcdef"},
			timeout: 5 * time.Second, max: 3, want: Result{ExitCode: 0, Truncated: true}, wantOut: "abc"},
		{name: "killed at the timeout", bin: "/bin/sh", args: []string{"-c", "sleep 30"},
			timeout: 200 * time.Millisecond, max: 1 << 10, want: Result{ExitCode: -1, TimedOut: true}},
		{name: "not startable", bin: filepath.Join(t.TempDir(), "missing"),
			timeout: time.Second, max: 1 << 10, want: Result{ExitCode: -1}, wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Run(context.Background(), tc.bin, tc.args, tc.timeout, tc.max)
			if r.ExitCode != tc.want.ExitCode || r.TimedOut != tc.want.TimedOut || r.Truncated != tc.want.Truncated {
				t.Errorf("exit %d timedOut %v truncated %v, want %d %v %v", r.ExitCode, r.TimedOut, r.Truncated,
					tc.want.ExitCode, tc.want.TimedOut, tc.want.Truncated)
			}
			if (r.Err != nil) != tc.wantError {
				t.Errorf("err = %v, want error %v", r.Err, tc.wantError)
			}
			if string(r.Stdout) != tc.wantOut {
				t.Errorf("stdout = %q, want %q", r.Stdout, tc.wantOut)
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
