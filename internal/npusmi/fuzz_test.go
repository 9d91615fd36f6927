package npusmi

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no input makes Parse panic, and whatever it accepts holds
// the table's invariants (valid label values, no negative memory, used ≤
// total, no duplicate rows); collectors/npusmi's FuzzExport checks that
// it also exports.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	demo, err := os.ReadFile(demoScript)
	if err == nil {
		f.Add(demo)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Parse(in)
		if err != nil {
			if s != nil {
				t.Fatal("snapshot returned with an error")
			}
			return
		}
		checkSnapshot(t, s)
	})
}
