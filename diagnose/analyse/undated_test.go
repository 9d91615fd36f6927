package analyse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An event whose line printed no time (`EZ9999: Inner Error!` with no
// detail line after it, Ascend/pytorch #7) was left out of every incident
// (only counted in untimed_events). It now takes the time of the nearest
// line of its file that printed a date and time, and the report says
// which line.
func TestUndatedEventTakesNearestDatedLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
		from  int64
	}{
		// Nearer the line before it.
		{"before", []string{
			"2026-01-06 15:40:11 | INFO | rank 0 | step 0 | first collective: all_reduce of 1.2 GB gradients",
			"EZ9999: Inner Error!",
			"        TraceBack (most recent call last):",
			"        build op model failed, result = 500001[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]",
			"2026-01-06 15:40:13 | ERROR | rank 0 | training aborted at link setup",
		}, "2026-01-06 15:40:11", 1},
		// Nearer the line after it; CANN's own time format.
		{"after", []string{
			"2026-01-06 15:40:11 | INFO | rank 0 | step 0",
			"step 1",
			"step 2",
			"EZ9999: Inner Error!",
			"[ERROR] 2026-01-06-15:40:14 (PID:366, Device:7, RankID:-1) ERR00100 PTA call acl api failed",
		}, "2026-01-06 15:40:14", 5},
		// Only a line before it, at the file's end.
		{"last", []string{
			"2026-01-06 15:40:11 | INFO | rank 0 | step 0",
			"EZ9999: Inner Error!",
		}, "2026-01-06 15:40:11", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "train.log"), []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Run([]string{dir}, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if r.UntimedEvents != 0 {
				t.Errorf("untimed events %d, want 0", r.UntimedEvents)
			}
			found := false
			for _, in := range r.Incidents {
				for _, e := range in.Events {
					if e.Code != "EZ9999" {
						continue
					}
					found = true
					if got := e.Time.Format(time.DateTime); got != tc.want || e.TimeFromLine != tc.from || e.Line != int64(indexOf(tc.lines, "EZ9999: Inner Error!")+1) {
						t.Errorf("EZ9999 at %s from line %d (its line %d), want %s from line %d", got, e.TimeFromLine, e.Line, tc.want, tc.from)
					}
					if !strings.HasPrefix(e.Text, "EZ9999: Inner Error!") {
						t.Errorf("event text %q, want its own line", e.Text)
					}
				}
			}
			if !found {
				t.Error("the EZ9999 event is in no incident")
			}
		})
	}
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}

// With no dated line in its file, an undated event takes the file's
// modification time, and says so.
func TestUndatedEventTakesFileTime(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "train.log")
	// Ascend/pytorch #7: a header, its untimed detail and traceback.
	lines := "EH9999: Inner Error!\nEH9999  [Init][Env]init env failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]\n        TraceBack (most recent call last):\n"
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 1, 6, 7, 40, 13, 0, time.UTC)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	r, err := Run([]string{dir}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r.UntimedEvents != 0 || len(r.Incidents) == 0 || len(r.Incidents[0].Events) == 0 {
		t.Fatalf("untimed %d, incidents %+v", r.UntimedEvents, r.Incidents)
	}
	e := r.Incidents[0].Events[0]
	if !e.Time.Equal(mtime) || !e.TimeFromFile || e.TimeFromLine != 0 || e.Line != 1 {
		t.Errorf("EH9999 at %v (from file %v, line %d, its line %d), want the file's %v", e.Time, e.TimeFromFile, e.TimeFromLine, e.Line, mtime)
	}
}
