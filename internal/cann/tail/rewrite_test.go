package tail

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// rewriteLines returns n numbered lines of the given prefix, padded so that
// the whole text is exactly size bytes when size > 0 (the last line takes
// the slack).
func rewriteLines(prefix string, first, n, size int) (data string, want []string) {
	var b strings.Builder
	for i := range n {
		l := fmt.Sprintf("%s-%05d", prefix, first+i)
		if i == n-1 && size > 0 {
			if pad := size - b.Len() - len(l) - 1; pad > 0 {
				l += " " + strings.Repeat("p", pad-1)
			}
		}
		b.WriteString(l + "\n")
		want = append(want, l)
	}
	return b.String(), want
}

// pollUntil polls until the sink holds n lines or a second has passed.
func pollUntil(t *testing.T, f *Follower, s *sink, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); len(s.lines) < n && time.Now().Before(deadline); {
		poll(t, f, s)
		if len(s.lines) >= n {
			return // no sleep after the poll that delivered: trials run back to back
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestSameLengthRewrite is the attack of issue 24: a log truncated and
// written again to exactly its old length was not read until it grew
// again, and never if it did not; the truncation was counted only at that
// later append. With inotify driving the follower (the rescan an hour
// away) the new content must be read at once, from the start, and the
// truncation counted then.
func TestSameLengthRewrite(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(plogDir(t, root), plogName(7, 1))
			oldData, oldLines := rewriteLines("old", 0, 40, 0)
			appendFile(t, p, oldData)
			cfg := Config{Roots: []string{root}, RescanInterval: time.Hour, DisableNotify: !notify}
			f := newTestFollower(t, cfg)
			var s sink
			poll(t, f, &s)
			expectLines(t, s.lines, oldLines...)
			if notify && !f.Stats().Notify {
				testtools.NeedsKernel(t, "inotify unavailable here")
			}
			newData, newLines := rewriteLines("new", 0, 30, len(oldData))
			if len(newData) != len(oldData) {
				t.Fatalf("test set-up: %d bytes, want %d", len(newData), len(oldData))
			}
			if err := os.WriteFile(p, []byte(newData), 0o640); err != nil { // O_TRUNC, same inode
				t.Fatal(err)
			}
			// Without inotify the file is stat'ed on every Poll (it changed
			// less than idleAfter ago); the change time tells.
			pollUntil(t, f, &s, len(oldLines)+len(newLines))
			expectLines(t, s.lines, slices.Concat(oldLines, newLines)...)
			if st := f.Stats(); st.Truncations != 1 {
				t.Fatalf("truncations = %d, want 1", st.Truncations)
			}
			// Nothing more on later polls.
			poll(t, f, &s)
			expectLines(t, s.lines, slices.Concat(oldLines, newLines)...)
		})
	}
}

// TestRandomizedRewrites: ≥ 100 trials of truncate-and-rewrite to a
// shorter, equal or longer length, interleaved with appends, partial lines
// and CANN rotation, with and without inotify; every line is delivered
// exactly once and every rewrite counted as one truncation.
func TestRandomizedRewrites(t *testing.T) {
	t.Parallel()
	trials := 120
	if longTests() {
		trials = 1200
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 24))
	for trial := range trials {
		notify := trial%2 == 0
		root := t.TempDir()
		dir := plogDir(t, root)
		// Without inotify only a rescan finds the file a rotation starts.
		rescan := []time.Duration{time.Hour, time.Nanosecond}[trial%4/2]
		if !notify {
			rescan = []time.Duration{5 * time.Millisecond, time.Nanosecond}[trial%4/2]
		}
		f := newTestFollower(t, Config{Roots: []string{root}, RescanInterval: rescan, DisableNotify: !notify})
		var s sink
		next, seq := 0, 1
		var want []string
		path := filepath.Join(dir, plogName(9, seq))
		rewrites := 0
		write := func(n int) {
			data, lines := rewriteLines("l", next, n, 0)
			next += n
			want = append(want, lines...)
			if rng.IntN(3) == 0 && len(data) > 2 {
				// Two writes: the follower may see a partial line.
				cut := 1 + rng.IntN(len(data)-1)
				appendFile(t, path, data[:cut])
				poll(t, f, &s)
				data = data[cut:]
			}
			appendFile(t, path, data)
		}
		write(1 + rng.IntN(20))
		for range 4 + rng.IntN(6) {
			pollUntil(t, f, &s, len(want))
			switch op := rng.IntN(10); {
			case op < 4:
				write(1 + rng.IntN(10))
			case op < 5:
				seq++ // CANN rotation: the pid goes on in a newer file
				path = filepath.Join(dir, plogName(9, seq))
				write(1 + rng.IntN(5))
			default:
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				size := int(fi.Size())
				switch op {
				case 5, 6:
					// same length
				case 7:
					size = max(size/2, 12)
				default:
					size += 1 + rng.IntN(300)
				}
				n := max(1, size/16)
				data, lines := rewriteLines("l", next, n, size)
				next += n
				want = append(want, lines...)
				if err := os.WriteFile(path, []byte(data), 0o640); err != nil {
					t.Fatal(err)
				}
				rewrites++
			}
		}
		pollUntil(t, f, &s, len(want))
		poll(t, f, &s)
		if strings.Join(s.lines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("trial %d (notify %v): lines\n got %q\nwant %q", trial, notify, s.lines, want)
		}
		if got := f.Stats().Truncations; got != uint64(rewrites) {
			t.Fatalf("trial %d: truncations = %d, want %d", trial, got, rewrites)
		}
		_ = f.Close()
	}
}
