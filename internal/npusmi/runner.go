package npusmi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// maxOutputBytes caps what is kept of npu-smi's stdout: a real table of 16
// NPUs with full process tables is a few tens of KiB.
const maxOutputBytes = 8 << 20

// ErrTimeout is returned when npu-smi did not finish within --npusmi.timeout.
var ErrTimeout = errors.New("npu-smi timed out")

// ErrNotFound is returned when the npu-smi binary cannot be found.
var ErrNotFound = errors.New("npu-smi not found in PATH; set --npusmi.path")

// RunInfo runs `<path> info` through vendorcli (no shell; its process group
// killed at the timeout and after every run) and returns its stdout.
func RunInfo(ctx context.Context, path string, timeout time.Duration) ([]byte, error) {
	bin, err := exec.LookPath(path)
	if err != nil {
		if !strings.Contains(path, "/") && errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%w (looked for %q)", ErrNotFound, path)
		}
		if errors.Is(err, fs.ErrNotExist) {
			// No file at the path: absent, as for a name not in PATH, so
			// that collectors which only enrich with npu-smi (pods) can
			// tell "not installed here" from "failed".
			return nil, fmt.Errorf("%w: %q does not exist", ErrNotFound, path)
		}
		return nil, fmt.Errorf("npu-smi binary %q: %w", path, err)
	}
	r := vendorcli.Run(ctx, bin, []string{"info"}, timeout, maxOutputBytes)
	switch {
	case r.TimedOut:
		return nil, fmt.Errorf("%w after %s (its process group was killed)", ErrTimeout, timeout)
	case r.Err != nil:
		return nil, fmt.Errorf("run %s info: %w", bin, r.Err)
	case r.ExitCode != 0:
		return nil, exitError(r.ExitCode, r.Stdout, r.Stderr)
	case r.Truncated:
		return nil, fmt.Errorf("npu-smi info printed more than %d bytes; output rejected", maxOutputBytes)
	}
	return r.Stdout, nil
}

// exitError explains a non-zero exit, preferring a known failure message
// (npu-smi prints DCMI errors on stdout) over the bare status.
func exitError(code int, stdout, stderr []byte) error {
	if _, perr := Parse(stdout); perr != nil && !errors.Is(perr, ErrNoTable) {
		return fmt.Errorf("npu-smi info exit status %d: %w", code, perr)
	}
	msg := vendorcli.FirstLine(stderr)
	if msg == "" {
		msg = vendorcli.FirstLine(stdout)
	}
	if msg == "" {
		return fmt.Errorf("npu-smi info exit status %d with no output", code)
	}
	return fmt.Errorf("npu-smi info exit status %d: %q", code, clip(msg))
}
