package hccn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultPath is where the Ascend driver installs hccn_tool.
const DefaultPath = "/usr/local/Ascend/driver/tools/hccn_tool"

// fallbackName is looked up in PATH when DefaultPath does not exist.
const fallbackName = "hccn_tool"

// maxOutputBytes caps what is kept of one call's stdout. The largest output,
// -qp_info of a port with 8192 QPs (DCMI's MAX_QPN_NUM), is about 1 MiB.
const maxOutputBytes = 4 << 20

// waitDelay bounds how long Wait waits for stdout to close after the tool
// exited or was killed: a grandchild holding the pipe must not hang a sweep.
const waitDelay = 2 * time.Second

// ErrNotFound is returned when hccn_tool is neither at the configured path
// nor in PATH.
var ErrNotFound = errors.New("hccn_tool not found")

// resolve finds the binary: path as given when it names a file (or is found
// in PATH when it has no slash); for the default path, hccn_tool in PATH as
// the fallback. It is called at every sweep, so installing the driver later
// needs no restart.
func resolve(path string) (string, error) {
	if path == "" {
		path = DefaultPath
	}
	bin, err := exec.LookPath(path)
	if err == nil {
		return bin, nil
	}
	missing := errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)
	if !missing {
		// There, but not runnable (permissions): a misconfiguration to
		// report at every sweep, not a node without RoCE NICs.
		return "", fmt.Errorf("hccn_tool binary %q: %w", path, err)
	}
	if path == DefaultPath {
		if bin, perr := exec.LookPath(fallbackName); perr == nil {
			return bin, nil
		}
		return "", fmt.Errorf("%w at %s nor in PATH (set --hccn-tool.path, or --no-collector.hccn on nodes without RoCE NICs)", ErrNotFound, DefaultPath)
	}
	return "", fmt.Errorf("%w: --hccn-tool.path=%s: %v", ErrNotFound, path, err)
}

// output is what one call left behind.
type output struct {
	stdout, stderr []byte
	exitCode       int // -1 when killed or not started
	timedOut       bool
	err            error // start failures and other errors of exec itself
	duration       time.Duration
}

// runTool runs `bin args...` without a shell, in its own process group,
// and kills the whole group at the timeout (and after every call, so nothing
// the tool spawned outlives it). ctx cancels a call early (shutdown).
func runTool(ctx context.Context, bin string, args []string, timeout time.Duration) output {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Negative pid: the whole process group, which is the child's pid.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	stdout := &capBuffer{max: maxOutputBytes}
	stderr := &capBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err := cmd.Run()
	if cmd.Process != nil {
		// Reap anything the tool left behind in its group; ESRCH when none.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out := output{stdout: stdout.Bytes(), stderr: stderr.Bytes(), exitCode: -1, duration: time.Since(begin)}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		out.timedOut = true
		return out
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		out.exitCode = 0
	case errors.As(err, &exitErr):
		out.exitCode = exitErr.ExitCode()
	default:
		out.err = err
	}
	if out.err == nil && stdout.truncated {
		out.err = fmt.Errorf("printed more than %d bytes; output rejected", maxOutputBytes)
	}
	return out
}

// Call results, the values of ascend_hccn_tool_calls_total{result}.
const (
	resultSuccess     = "success"
	resultTimeout     = "timeout"
	resultBusy        = "busy"
	resultUnsupported = "unsupported"
	resultError       = "error"
	resultParseError  = "parse_error"
)

var callResults = []string{resultSuccess, resultTimeout, resultBusy, resultUnsupported, resultError, resultParseError}

// failureMessages classifies a failed call by the message the tool printed
// (on stdout for "info level" errors, stderr otherwise). Exit statuses are
// derived from the tool's enum and shared by several errors, so the message
// decides. First match wins; anything else is resultError.
var failureMessages = []struct{ text, result string }{
	// EBUSY from the driver or a failed internal lock: another caller holds
	// the device. Try again next sweep; never a link fault.
	{"hccn_tool is busy", resultBusy},
	{"Get lock failed", resultBusy},
	// The product or this build lacks the command: a fact, not a failure.
	{"not supported on this product", resultUnsupported},
	{"Command unsupported on this product", resultUnsupported},
	{"does not support this function", resultUnsupported},
	{"does not support optical cmd", resultUnsupported},
	{"The VM does not support this command", resultUnsupported},
	// A driver too old to know the command (e.g. -qp_info).
	{"Get invalid major cmd", resultUnsupported},
}

// classify turns a finished call into a result and, for failures, an error
// that quotes what the tool said.
func classify(o output) (string, error) {
	switch {
	case o.timedOut:
		return resultTimeout, fmt.Errorf("timed out after %s (its process group was killed)", o.duration.Round(time.Millisecond))
	case o.err != nil:
		return resultError, o.err
	case o.exitCode == 0:
		return resultSuccess, nil
	}
	msg := firstLine(o.stderr)
	if msg == "" {
		msg = firstLine(o.stdout)
	}
	both := string(o.stdout) + "\n" + string(o.stderr)
	result := resultError
	for _, m := range failureMessages {
		if strings.Contains(both, m.text) {
			result = m.result
			break
		}
	}
	if msg == "" {
		return result, fmt.Errorf("exit status %d with no output", o.exitCode)
	}
	return result, fmt.Errorf("exit status %d: %s", o.exitCode, clip(msg))
}

func firstLine(b []byte) string {
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

func (c *capBuffer) Bytes() []byte { return c.buf.Bytes() }
