package tail

import (
	"path/filepath"
	"testing"
)

func TestNewFileFromFirstByte(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(100, 1))
	appendFile(t, p1, "a1\na2\n")
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "a1", "a2")
	appendFile(t, p1, "a3\n")
	p2 := filepath.Join(root, "debug", "device-0", "device-200_20250101000000000.log")
	mkdir(t, filepath.Dir(p2))
	appendFile(t, p2, "d1\nd2\n")
	poll(t, f, &s)
	expectLines(t, s.lines, "a1", "a2", "d1", "d2", "a3")
	poll(t, f, &s)
	if len(s.lines) != 5 {
		t.Fatalf("re-delivered: %q", s.lines)
	}
	st := f.Stats()
	if st.FilesTracked != 2 || st.LinesRead != 5 {
		t.Fatalf("stats %+v", st)
	}
}
