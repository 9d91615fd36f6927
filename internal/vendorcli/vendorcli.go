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
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxStderrBytes caps what is kept of a run's stderr: only its first line is
// ever quoted.
const maxStderrBytes = 64 << 10

// WaitDelay bounds how long Wait waits for stdout to close after the tool
// exited or was killed: a grandchild holding the pipe must not hang a run.
// Only the pipe fallback has pipes (see Run).
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

// NPUSMI is npu-smi as a collector runs it when no flag says otherwise
// (the defaults of --npusmi.path and --npusmi.timeout): the one default of
// both collectors that run it.
var NPUSMI = Tool{Path: "npu-smi", Timeout: 10 * time.Second}

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

// usePipes forces the pipe fallback (tests).
var usePipes = false

// Run runs `bin args...` without a shell, in its own process group, and kills
// the whole group at timeout and once the run is over. ctx cancels a run
// early (shutdown). At most maxStdout bytes of stdout are kept.
//
// The tool writes its stdout and stderr into sealed in-memory files
// (memfd), read once it has exited, rather than into pipes the exporter
// reads while it runs: a run then costs the exporter one fork, one wait and
// two reads, no goroutines, poller registrations or wake-ups per write: 1.3
// times a bare exec's CPU instead of 2.3 (docs/benchmarks.md, "CPU at rest, brought
// back"). Where memfd_create is refused (a seccomp profile, a kernel older
// than 3.17) the run falls back to pipes.
func Run(ctx context.Context, bin string, args []string, timeout time.Duration, maxStdout int) Result {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var r Result
	if out, errc, err := newCaptures(maxStdout); err == nil {
		defer out.Close()
		defer errc.Close()
		r = runFiles(ctx, bin, args, out, errc)
	} else {
		r = runPipes(ctx, bin, args, maxStdout)
	}
	r.Duration = time.Since(begin)
	return r
}

// runFiles runs the tool with its stdout and stderr in the captures.
func runFiles(ctx context.Context, bin string, args []string, out, errc *capture) Result {
	r := Result{ExitCode: -1}
	if err := ctx.Err(); err != nil {
		// As exec.CommandContext: a run whose context is done is not started.
		r.TimedOut = errors.Is(err, context.DeadlineExceeded)
		if !r.TimedOut {
			r.Err = err
		}
		return r
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = out.f, errc.f
	if err := cmd.Start(); err != nil {
		r.Err = err
		return r
	}
	pgid := cmd.Process.Pid
	// Negative pid: the whole process group, which is the child's pid. No
	// goroutine waits for ctx: the kill runs only when ctx ends first.
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err := cmd.Wait()
	stop()
	// Reap anything the tool left behind in its group; ESRCH when none.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	r.Stdout, r.Truncated = out.Bytes()
	r.Stderr, _ = errc.Bytes()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.TimedOut = true
		return r
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		r.ExitCode = 0
	case errors.As(err, &exitErr):
		r.ExitCode = exitErr.ExitCode()
	default:
		r.Err = err
	}
	return r
}

// sealAlign: a capture's file is sealed at a multiple of this size. The
// kernel writes to a memfd in chunks aligned to its folio size (a page, or
// up to 2 MiB where tmpfs uses large folios); a write whose chunk would grow
// the file past the seal fails whole, so a seal on such a boundary lets a
// write that crosses it fill the file up to it.
const sealAlign = 2 << 20

// capture is a sealed memfd a tool writes one stream into. Its size is
// fixed past max: writes beyond it fail (EPERM), so a runaway tool cannot
// use more than that much of the node's memory. The tool's file offset,
// which the exporter's descriptor shares, tells how much it wrote.
type capture struct {
	f   *os.File
	max int
}

// newCaptures makes the captures of a run's stdout and stderr.
func newCaptures(maxStdout int) (out, errc *capture, err error) {
	if usePipes {
		return nil, nil, errors.New("pipes forced")
	}
	if out, err = newCapture("stdout", maxStdout); err != nil {
		return nil, nil, err
	}
	if errc, err = newCapture("stderr", maxStderrBytes); err != nil {
		out.Close()
		return nil, nil, err
	}
	return out, errc, nil
}

func newCapture(name string, max int) (*capture, error) {
	fd, err := unix.MemfdCreate("hccl_exporter-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	c := &capture{f: os.NewFile(uintptr(fd), name), max: max}
	// At least 2 MiB past max: only a single write of more than that,
	// starting below max, could fail whole without the offset passing max.
	size := (int64(max) + 2*sealAlign - 1) / sealAlign * sealAlign
	if err := c.f.Truncate(size); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Bytes returns what the tool wrote, at most max bytes, and whether it
// wrote more.
func (c *capture) Bytes() ([]byte, bool) {
	n, err := c.f.Seek(0, io.SeekCurrent)
	if err != nil || n <= 0 {
		return nil, false
	}
	truncated := n > int64(c.max)
	n = min(n, int64(c.max))
	b := make([]byte, n)
	got, _ := c.f.ReadAt(b, 0)
	return b[:got], truncated
}

func (c *capture) Close() { _ = c.f.Close() }

// runPipes is Run over pipes, read while the tool runs.
func runPipes(ctx context.Context, bin string, args []string, maxStdout int) Result {
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
		ExitCode: -1, Truncated: stdout.truncated,
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
