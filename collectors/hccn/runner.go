package hccn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// DefaultPath is where the Ascend driver installs hccn_tool.
const DefaultPath = "/usr/local/Ascend/driver/tools/hccn_tool"

// fallbackName is looked up in PATH when DefaultPath does not exist.
const fallbackName = "hccn_tool"

// maxOutputBytes caps what is kept of one call's stdout. The largest output,
// -qp_info of a port with 8192 QPs (DCMI's MAX_QPN_NUM), is about 1 MiB.
const maxOutputBytes = 4 << 20

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
		return "", fmt.Errorf("%w at %s nor in PATH (set --hccn.path, or --no-collector.hccn on nodes without RoCE NICs)", ErrNotFound, DefaultPath)
	}
	return "", fmt.Errorf("%w: --hccn.path=%s: %v", ErrNotFound, path, err)
}

// output is what one call left behind.
type output = vendorcli.Result

// runTool runs `bin args...` through vendorcli: no shell, its process group
// killed at the timeout and after every call. ctx cancels a call early
// (shutdown). Output past maxOutputBytes is rejected, not parsed short.
func runTool(ctx context.Context, bin string, args []string, timeout time.Duration) output {
	out := vendorcli.Run(ctx, bin, args, timeout, maxOutputBytes)
	if out.Err == nil && !out.TimedOut && out.Truncated {
		out.Err = fmt.Errorf("printed more than %d bytes; output rejected", maxOutputBytes)
	}
	return out
}

// failureMessages classifies a failed call by the message the tool printed
// (on stdout for "info level" errors, stderr otherwise). Exit statuses are
// derived from the tool's enum and shared by several errors, so the message
// decides. First match wins; anything else is sweep.Error.
var failureMessages = []sweep.Message{
	// EBUSY from the driver or a failed internal lock: another caller holds
	// the device. Try again next sweep; never a link fault.
	{Text: "hccn_tool is busy", Result: sweep.Busy},
	{Text: "Get lock failed", Result: sweep.Busy},
	// The product or this build lacks the command: a fact, not a failure.
	{Text: "not supported on this product", Result: sweep.Unsupported},
	{Text: "Command unsupported on this product", Result: sweep.Unsupported},
	{Text: "does not support this function", Result: sweep.Unsupported},
	{Text: "does not support optical cmd", Result: sweep.Unsupported},
	{Text: "The VM does not support this command", Result: sweep.Unsupported},
	// A driver too old to know the command (e.g. -qp_info).
	{Text: "Get invalid major cmd", Result: sweep.Unsupported},
}

// classify turns a finished call into a result and, for failures, an error
// that quotes what the tool said.
func classify(o output) (string, error) {
	if result, err, ok := sweep.Unfinished(o); ok {
		return result, err
	}
	if o.ExitCode == 0 {
		return sweep.Success, nil
	}
	msg := vendorcli.FirstLine(o.Stderr)
	if msg == "" {
		msg = vendorcli.FirstLine(o.Stdout)
	}
	result := sweep.Error
	if m, _, ok := sweep.Match(failureMessages, o.Stdout, o.Stderr); ok {
		result = m.Result
	}
	if msg == "" {
		return result, fmt.Errorf("exit status %d with no output", o.ExitCode)
	}
	return result, fmt.Errorf("exit status %d: %s", o.ExitCode, clip(msg))
}
