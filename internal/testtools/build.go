package testtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// exporterBuild is the one binary a test binary builds: every test of a
// package runs the same exporter, so it is compiled once.
var exporterBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// BuildExporter compiles ./cmd/hccl_exporter of the module at root (the
// path from the test's package directory, e.g. "../..") once per test
// binary, without cgo as it is released, and returns the binary's path.
// A build error fails t. Main removes it when the tests are done.
func BuildExporter(t testing.TB, root string) string {
	t.Helper()
	b := &exporterBuild
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "hccl_exporter-test-")
		if b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, "hccl_exporter")
		cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/hccl_exporter")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/hccl_exporter: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// Main is the TestMain of packages that run the exporter binary: it runs
// the tests, then removes what BuildExporter built.
func Main(m *testing.M) {
	code := m.Run()
	if exporterBuild.dir != "" {
		os.RemoveAll(exporterBuild.dir)
	}
	os.Exit(code)
}
