// Package vendorcli runs the vendor command-line tools the exporter reads
// (npu-smi, hccn_tool) the one way they must be run: without a shell, in a
// process group of their own that is killed at a timeout and after every run
// (so nothing a tool spawned outlives it), with bounded output. What a
// result means is the caller's business: each tool reports failures its own
// way.
package vendorcli

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// maxStderrBytes caps what is kept of a run's stderr: only its first line is
// ever quoted.
const maxStderrBytes = 64 << 10

// WaitDelay bounds how long Wait waits for stdout to close after the tool
// exited or was killed: a grandchild holding the pipe must not hang a run.
const WaitDelay = 2 * time.Second

// Tool is one vendor CLI as its flags give it, shared by every collector
// that runs it (npu-smi: the npusmi collector's table and the npuhealth
// sweep's detail queries, both from --npusmi.path and --npusmi.timeout).
type Tool struct {
	// Path is the binary; without a slash it is looked up in PATH at every
	// run, so installing the driver later needs no restart.
	Path string
	// Timeout kills one run (its whole process group) after this long.
	Timeout time.Duration
}

// Or returns t with its zero fields replaced by def's.
func (t Tool) Or(def Tool) Tool {
	if t.Path == "" {
		t.Path = def.Path
	}
	if t.Timeout <= 0 {
		t.Timeout = def.Timeout
	}
	return t
}

// Result is what one run left behind.
type Result struct {
	Stdout, Stderr []byte
	// ExitCode is the tool's exit status; -1 when it was killed or did not start.
	ExitCode int
	// TimedOut is set when the run was killed at its timeout (or at ctx's
	// deadline, whichever came first).
	TimedOut bool
	// Truncated is set when stdout exceeded the cap given to Run; Stdout
	// then holds only its first bytes.
	Truncated bool
	// Err holds failures of exec itself (the binary could not be started).
	Err      error
	Duration time.Duration
}

// Run runs `bin args...` without a shell, in its own process group, and kills
// the whole group at timeout and once the run is over. ctx cancels a run
// early (shutdown). At most maxStdout bytes of stdout are kept.
func Run(ctx context.Context, bin string, args []string, timeout time.Duration, maxStdout int) Result {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Negative pid: the whole process group, which is the child's pid.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = WaitDelay
	stdout := &capBuffer{max: maxStdout}
	stderr := &capBuffer{max: maxStderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err := cmd.Run()
	if cmd.Process != nil {
		// Reap anything the tool left behind in its group; ESRCH when none.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	r := Result{
		Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(),
		ExitCode: -1, Truncated: stdout.truncated, Duration: time.Since(begin),
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.TimedOut = true
		return r
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		r.ExitCode = 0
	case errors.As(err, &exitErr):
		r.ExitCode = exitErr.ExitCode()
	default:
		r.Err = err
	}
	return r
}

// FirstLine is the first non-blank line of b, trimmed: what a tool says
// first is what it says about a failure.
func FirstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// capBuffer keeps the first max bytes written and remembers whether more came,
// so a runaway child cannot exhaust the exporter's memory.
type capBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}
