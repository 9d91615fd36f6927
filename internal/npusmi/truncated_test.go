package npusmi

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// completeTables are captured `npu-smi info` outputs that hold a whole table.
func completeTables(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/info-*.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b := readFile(t, f)
		if _, err := Parse(b); err == nil {
			out[filepath.Base(f)] = b
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d complete tables in testdata", len(out))
	}
	return out
}

// cutPoints are the ends of every line of b and three places inside each.
func cutPoints(b []byte) []int {
	var out []int
	start := 0
	for i, c := range b {
		if c == '\n' {
			if l := i - start; l > 2 {
				out = append(out, start+1, start+l/2, i-1)
			}
			out = append(out, i, i+1)
			start = i + 1
		}
	}
	return out
}

// TestParseRejectsCutOutput cuts every complete capture at every line end
// and inside every line: a cut inside a line, or after a table row rather
// than a separator, is ErrTruncated (or, before the device table, no table
// at all); it never parses as a table.
func TestParseRejectsCutOutput(t *testing.T) {
	for name, full := range completeTables(t) {
		for _, n := range cutPoints(full) {
			if n <= 0 || n >= len(full) {
				continue
			}
			cut := full[:n]
			s, err := Parse(cut)
			if err != nil {
				continue
			}
			// Accepted cuts end a line right after a separator, or after a
			// notice following the table.
			if cut[n-1] != '\n' {
				t.Fatalf("%s cut at byte %d (mid-line) parsed: %d chips", name, n, len(s.Chips))
			}
			lines := bytes.Split(bytes.TrimRight(cut, "\n"), []byte("\n"))
			last := bytes.TrimSpace(lines[len(lines)-1])
			if bytes.HasPrefix(last, []byte("|")) {
				t.Fatalf("%s cut after row %q parsed: %d chips", name, last, len(s.Chips))
			}
		}
	}
}

func TestParseTruncationErrors(t *testing.T) {
	full := readFile(t, sampleTable)
	i := bytes.Index(full, []byte("| 3     910B4"))
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"mid-line", full[:i+20]},
		{"after a row", full[:bytes.IndexByte(full[i:], '\n')+i+1]},
		{"NPU row without its chip row", append(append([]byte{}, full[:bytes.IndexByte(full[i:], '\n')+i+1]...), "+====+\n"...)},
	} {
		if _, err := Parse(tc.in); !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: Parse = %v, want ErrTruncated", tc.name, err)
		}
	}
}

// TestCutBurstsNeverAccepted is the attack of issue 24: after a complete
// run, bursts of cut tables — at a different point each run, and at the
// same point run after run — must never be served as the node. Before, three
// cuts in a row that stopped in the process table at different points were
// taken as "the same smaller table" (the chip list agreed) and served up 1
// with 1 of 8 processes. Every cut point of every captured table is tried.
func TestCutBurstsNeverAccepted(t *testing.T) {
	for name, full := range completeTables(t) {
		want, err := Parse(full)
		if err != nil {
			t.Fatal(err)
		}
		if !procNPUsListed(want) {
			// An excerpt whose process table lists NPUs its device
			// table does not: real npu-smi never prints that, and its
			// cut after the last listed chip's NPU looks whole.
			continue
		}
		// Cuts that only drop what follows the table (a trailing notice)
		// are the whole table.
		whole := func(s *Snapshot) bool {
			return len(s.Chips) == len(want.Chips) && len(s.Processes) == len(want.Processes) &&
				slices.Equal(s.ProcessNPUs, want.ProcessNPUs)
		}
		var cuts [][]byte
		for _, n := range cutPoints(full) {
			if n > 0 && n < len(full) {
				cuts = append(cuts, full[:n])
			}
		}
		run := func(e *expectation, b []byte) (*Snapshot, bool) {
			s, err := Parse(b)
			if err != nil {
				return nil, false
			}
			if _, err := e.check(s); err != nil {
				return nil, false
			}
			return s, true
		}
		// A burst at different points: a sliding window of burst cuts.
		const burst = AcceptRuns + 2
		var e expectation
		if _, ok := run(&e, full); !ok {
			t.Fatalf("%s: the complete table is refused", name)
		}
		for i := range cuts {
			for j := i; j < min(i+burst, len(cuts)); j++ {
				if s, ok := run(&e, cuts[j]); ok && !whole(s) {
					t.Fatalf("%s: burst from cut %d: cut at byte %d served with %d/%d chips, %d/%d processes",
						name, i, len(cuts[j]), len(s.Chips), len(want.Chips), len(s.Processes), len(want.Processes))
				}
			}
			if _, ok := run(&e, full); !ok {
				t.Fatalf("%s: the complete table is refused after a burst", name)
			}
		}
		// The same cut, run after run (a pipe cut at a fixed buffer size).
		for _, cut := range cuts {
			var e expectation
			run(&e, full)
			for r := range burst {
				if s, ok := run(&e, cut); ok && !whole(s) && (want.ProcessNPUs != nil || s.hbm) {
					t.Fatalf("%s: cut at byte %d served on repeat %d with %d/%d chips, %d/%d processes",
						name, len(cut), r+1, len(s.Chips), len(want.Chips), len(s.Processes), len(want.Processes))
				}
			}
		}
	}
}

// procNPUsListed reports whether every NPU of the process table is one of
// the device table's.
func procNPUsListed(s *Snapshot) bool {
	for _, npu := range s.ProcessNPUs {
		if !slices.ContainsFunc(s.Chips, func(c Chip) bool { return c.NPU == npu }) {
			return false
		}
	}
	return true
}
