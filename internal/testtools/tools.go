// Package testtools owns what tests need to run real external programs: it
// finds (or apt-installs) a tool such as promtool or amtool, hands out free
// loopback ports, and starts a real Prometheus and Alertmanager on loopback,
// each in its own process group that the test's cleanup kills. It also
// builds the exporter binary once per test binary (BuildExporter, Main) and
// prints the npu-smi tables the tests' fake npu-smi answers (NPUSMITable).
//
// It is only imported by tests.
package testtools

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// installMu serialises apt-get runs from one test binary; apt-get's own lock
// (waited for with DPkg::Lock::Timeout) serialises the others.
var installMu sync.Mutex

// EnsureTool returns the path of binary, installing debianPackage with
// apt-get when binary is not in PATH. When the tool cannot be had (no
// apt-get, not root, no network) the test fails under the README's test
// command (make test, which sets RequireToolsEnv) and is skipped under a
// plain go test: the suite never silently loses coverage.
func EnsureTool(t testing.TB, binary, debianPackage string) string {
	t.Helper()
	if p, err := exec.LookPath(binary); err == nil {
		return p
	}
	installMu.Lock()
	defer installMu.Unlock()
	if p, err := exec.LookPath(binary); err == nil {
		return p
	}
	if err := aptInstall(debianPackage); err != nil {
		Unavailable(t, "%s not in PATH and installing Debian package %s failed: %v", binary, debianPackage, err)
		return ""
	}
	p, err := exec.LookPath(binary)
	if err != nil {
		Unavailable(t, "Debian package %s installed but %s is still not in PATH: %v", debianPackage, binary, err)
		return ""
	}
	return p
}

// RequireToolsEnv is set by `make test` (and so by CI): a test whose
// external tool (promtool, helm, jsonnet, chromium …) cannot be had then
// fails instead of skipping. CI=1 has the same effect.
const RequireToolsEnv = "HCCL_EXPORTER_REQUIRE_TOOLS"

// Unavailable reports that a tool a test needs cannot be had: a failure
// under `make test` or CI, a skip under a plain go test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireToolsEnv) != "" || os.Getenv("CI") != "" {
		t.Fatalf(format+" (tools are required under make test)", args...)
	}
	t.Skipf(format+" (make test makes this a failure)", args...)
}

// aptInstall installs pkg, refreshing the package lists once when the first
// attempt fails (a fresh container has none).
func aptInstall(pkg string) error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("apt-get not available: %w", err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("apt-get needs root (uid %d)", os.Geteuid())
	}
	install := []string{"-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", pkg}
	if _, err := apt(install...); err == nil {
		return nil
	}
	if out, err := apt("-o", "DPkg::Lock::Timeout=300", "update"); err != nil {
		return fmt.Errorf("apt-get update: %w: %s", err, tail(out, 2048))
	}
	if out, err := apt(install...); err != nil {
		return fmt.Errorf("apt-get install %s: %w: %s", pkg, err, tail(out, 2048))
	}
	return nil
}

func apt(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. A
// small race with other programs remains; the servers started here fail
// loudly if they lose it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail returns at most the last n bytes of b, for error messages.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return bytes.TrimSpace(b)
	}
	return bytes.TrimSpace(b[len(b)-n:])
}
