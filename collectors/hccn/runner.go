package hccn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

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

// Call results, the values of hccl_exporter_hccn_tool_calls_total{result}.
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
	case o.TimedOut:
		return resultTimeout, fmt.Errorf("timed out after %s (its process group was killed)", o.Duration.Round(time.Millisecond))
	case o.Err != nil:
		return resultError, o.Err
	case o.ExitCode == 0:
		return resultSuccess, nil
	}
	msg := vendorcli.FirstLine(o.Stderr)
	if msg == "" {
		msg = vendorcli.FirstLine(o.Stdout)
	}
	both := string(o.Stdout) + "\n" + string(o.Stderr)
	result := resultError
	for _, m := range failureMessages {
		if strings.Contains(both, m.text) {
			result = m.result
			break
		}
	}
	if msg == "" {
		return result, fmt.Errorf("exit status %d with no output", o.ExitCode)
	}
	return result, fmt.Errorf("exit status %d: %s", o.ExitCode, clip(msg))
}
