// Package golden owns the project's golden files in tests: the one -update
// flag (`go test ./pkg/ -update` rewrites a package's golden files from the
// current output) and the comparison every package uses. Review the diff
// of an update before committing it: the golden file is the expectation.
//
// It is only imported by tests.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/…) from the current output")

// Updating reports whether this run rewrites golden files (-update), for
// tests whose golden output is not one byte slice (a tree, a screenshot).
func Updating() bool { return *update }

// Compare compares got with the golden file at path. With -update it
// writes got there first (creating the directory).
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		Write(t, path, got)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (run go test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test with -update to accept it, then review the diff):\n%s", path, FirstDifference(got, want))
	}
}

// Write writes a golden file, creating its directory.
func Write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FirstDifference describes where got and want first differ, by line, with
// a few lines of context: enough to see what changed in a long output.
func FirstDifference(got, want []byte) string {
	g := strings.Split(string(got), "\n")
	w := strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			from := max(0, i-2)
			var b strings.Builder
			fmt.Fprintf(&b, "first difference at line %d:\n", i+1)
			for j := from; j < i; j++ {
				if j < len(w) {
					fmt.Fprintf(&b, "   %s\n", w[j])
				}
			}
			if i < len(w) {
				fmt.Fprintf(&b, "-  %s\n", wl)
			}
			if i < len(g) {
				fmt.Fprintf(&b, "+  %s\n", gl)
			}
			return b.String()
		}
	}
	return "identical"
}
