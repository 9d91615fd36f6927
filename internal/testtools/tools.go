// Package testtools owns what tests need to run real external programs: it
// finds a tool such as promtool or amtool (make test-deps installs them;
// a test never does), says when a kernel feature a test needs is missing
// (NeedsKernel), hands out free
// loopback ports, and starts a real Prometheus and Alertmanager on loopback,
// each in its own process group that the test's cleanup kills. It also
// builds the exporter binary once per test binary (BuildExporter, Main) and
// prints the npu-smi tables the tests' fake npu-smi answers (NPUSMITable).
//
// It is only imported by tests.
package testtools

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"testing"
)

// EnsureTool returns the path of binary. A plain go test never installs
// anything: `make test-deps` (scripts/ensure-test-deps.sh) installs
// debianPackage. When binary is not in PATH the test fails under the
// README's test command (make test, which sets RequireToolsEnv) and is
// skipped under a plain go test: the suite never silently loses coverage.
func EnsureTool(t testing.TB, binary, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(binary)
	if err != nil {
		Unavailable(t, "%s not in PATH (make test-deps installs Debian package %s)", binary, debianPackage)
		return ""
	}
	return p
}

// RequireToolsEnv is set by `make test` (and so by CI): a test whose
// external tool (promtool, helm, jsonnet, chromium …) cannot be had then
// fails instead of skipping. CI=1 has the same effect.
const RequireToolsEnv = "HCCL_EXPORTER_REQUIRE_TOOLS"

// NeedsKernel reports that a test cannot run because the kernel or the
// sandbox lacks what it exercises (FUSE, a namespace, inotify, mkfifo, a
// second loopback address): like a missing tool, a failure under `make
// test` or CI and a skip under a plain go test, so a runner without the
// feature never reports the test as passed.
func NeedsKernel(t testing.TB, format string, args ...any) {
	t.Helper()
	Unavailable(t, "kernel feature missing: "+format, args...)
}

// Unavailable reports that a tool a test needs cannot be had: a failure
// under `make test` or CI, a skip under a plain go test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireToolsEnv) != "" || os.Getenv("CI") != "" {
		t.Fatalf(format+" (tools are required under make test)", args...)
	}
	t.Skipf(format+" (make test makes this a failure)", args...)
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
