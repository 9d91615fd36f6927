package golden

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct{ got, want, has string }{
		{"a\nb\nc\n", "a\nb\nc\n", "identical"},
		{"a\nB\nc\n", "a\nb\nc\n", "line 2:\n   a\n-  b\n+  B\n"},
		{"a\nb\n", "a\nb\nc\n", "line 3:"},
		{"a\nb\nc\nd", "a\nb\nc\n", "+  d"},
	} {
		if got := FirstDifference([]byte(tc.got), []byte(tc.want)); !strings.Contains(got, tc.has) {
			t.Errorf("FirstDifference(%q, %q) = %q, want it to contain %q", tc.got, tc.want, got, tc.has)
		}
	}
}

// A differing golden file fails the test (seen through a recording TB).
func TestCompareFailsOnDifference(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g", "out.txt")
	Write(t, path, []byte("want\n"))
	rec := &recorder{TB: t}
	Compare(rec, path, []byte("got\n"))
	if !rec.failed || !strings.Contains(rec.msg, "-update") {
		t.Errorf("Compare of a differing file: failed=%v msg=%q", rec.failed, rec.msg)
	}
	rec = &recorder{TB: t}
	Compare(rec, path, []byte("want\n"))
	if rec.failed {
		t.Errorf("Compare of an equal file failed: %q", rec.msg)
	}
}

type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = strings.TrimSpace(strings.ReplaceAll(format, "%s", "")) + " " + strings.TrimSpace(fmtArgs(args))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func fmtArgs(args []any) string {
	var b strings.Builder
	for _, a := range args {
		if s, ok := a.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}
