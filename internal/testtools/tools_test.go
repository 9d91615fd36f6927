package testtools

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records whether it was failed or skipped.
type recorder struct {
	testing.TB
	fatal, skipped string
}

func (r *recorder) Helper() {}

// Fatalf and Skipf end the calling goroutine, as testing's do.
func (r *recorder) Fatalf(format string, a ...any) {
	r.fatal = fmt.Sprintf(format, a...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, a ...any) {
	r.skipped = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

// run calls f with r in a goroutine of its own, which Fatalf and Skipf end.
func (r *recorder) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// TestNeedsKernelFailsWhereToolsAreRequired: a missing kernel feature is
// a failure under make test (RequireToolsEnv) or CI, as a missing tool is,
// and a skip under a plain go test.
func TestNeedsKernelFailsWhereToolsAreRequired(t *testing.T) {
	for _, tc := range []struct {
		require, ci string
		fail        bool
	}{{"", "", false}, {"1", "", true}, {"", "true", true}} {
		t.Setenv(RequireToolsEnv, tc.require)
		t.Setenv("CI", tc.ci)
		r := &recorder{TB: t}
		r.run(func(tb testing.TB) { NeedsKernel(tb, "no FUSE mount here: %v", "ENODEV") })
		if (r.fatal != "") != tc.fail || (r.skipped != "") == tc.fail {
			t.Errorf("require=%q ci=%q: failed %q, skipped %q; want a failure %v", tc.require, tc.ci, r.fatal, r.skipped, tc.fail)
		}
	}
}

// TestEnsureToolNeverInstalls: a tool missing from PATH is reported
// (make test-deps installs it), never installed by the test.
func TestEnsureToolNeverInstalls(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireToolsEnv, "")
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	p := "unset"
	r.run(func(tb testing.TB) { p = EnsureTool(tb, "promtool-that-is-not-here", "prometheus") })
	if p != "unset" || r.skipped == "" {
		t.Errorf("EnsureTool = %q, skipped %q; want a skip naming make test-deps", p, r.skipped)
	}
}
