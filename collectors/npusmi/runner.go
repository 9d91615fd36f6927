package npusmi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// maxOutputBytes caps what is kept of npu-smi's stdout: a real table of 16
// NPUs with full process tables is a few tens of KiB.
const maxOutputBytes = 8 << 20

// waitDelay bounds how long Wait waits for stdout to close after npu-smi
// exited or was killed: a grandchild holding the pipe must not hang a scrape.
const waitDelay = 2 * time.Second

// ErrTimeout is returned when npu-smi did not finish within --npu-smi.timeout.
var ErrTimeout = errors.New("npu-smi timed out")

// ErrNotFound is returned when the npu-smi binary cannot be found.
var ErrNotFound = errors.New("npu-smi not found in PATH; set --npu-smi.path")

// runNPUSMI runs `<path> info` without a shell and returns its stdout. The
// child gets its own process group, and the whole group is killed at the
// timeout (and after every run, so nothing npu-smi spawned outlives it).
func runNPUSMI(ctx context.Context, path string, timeout time.Duration) ([]byte, error) {
	bin, err := exec.LookPath(path)
	if err != nil {
		if !strings.Contains(path, "/") && errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%w (looked for %q)", ErrNotFound, path)
		}
		return nil, fmt.Errorf("npu-smi binary %q: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, "info")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Negative pid: the whole process group, which is the child's pid.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	stdout := &capBuffer{max: maxOutputBytes}
	stderr := &capBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err = cmd.Run()
	if cmd.Process != nil {
		// Reap anything npu-smi left behind in its group; ESRCH when none.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w after %s (its process group was killed)", ErrTimeout, timeout)
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, exitError(exitErr, stdout.Bytes(), stderr.Bytes())
		}
		return nil, fmt.Errorf("run %s info: %w", bin, err)
	}
	if stdout.truncated {
		return nil, fmt.Errorf("npu-smi info printed more than %d bytes; output rejected", maxOutputBytes)
	}
	return stdout.Bytes(), nil
}

// exitError explains a non-zero exit, preferring a known failure message
// (npu-smi prints DCMI errors on stdout) over the bare status.
func exitError(exitErr *exec.ExitError, stdout, stderr []byte) error {
	if _, perr := Parse(stdout); perr != nil && !errors.Is(perr, ErrNoTable) {
		return fmt.Errorf("npu-smi info %s: %w", exitErr, perr)
	}
	msg := firstLine(stderr)
	if msg == "" {
		msg = firstLine(stdout)
	}
	if msg == "" {
		return fmt.Errorf("npu-smi info %s with no output", exitErr)
	}
	return fmt.Errorf("npu-smi info %s: %q", exitErr, msg)
}

func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return clip(l)
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

func (c *capBuffer) Bytes() []byte { return c.buf.Bytes() }
