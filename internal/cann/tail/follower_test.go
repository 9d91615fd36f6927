package tail

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
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

func TestParseCANNName(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		pid  int
		ok   bool
	}{
		{"plog-16027_20220618001623878.log", KindPlog, 16027, true},
		{"device-2272_20220617234019449.log", KindDevicePlog, 2272, true},
		{"plog-858941_20251210195327204.log", KindPlog, 858941, true},
		{"device-0", 0, 0, false},
		{"plog-16027_2022061800162387.log", 0, 0, false},    // 16 digits
		{"plog-16027_20220618001623878.log.1", 0, 0, false}, // not CANN
		{"plog-_20220618001623878.log", 0, 0, false},
		{"plog-12a_20220618001623878.log", 0, 0, false},
		{"slogdlog", 0, 0, false},
		{"plog-99999999999_20220618001623878.log", 0, 0, false}, // 11-digit pid
	} {
		kind, pid, ok := parseCANNName(tc.name)
		if ok != tc.ok || (ok && (kind != tc.kind || pid != tc.pid)) {
			t.Errorf("%s: got %v %d %v", tc.name, kind, pid, ok)
		}
	}
}

func TestPodLabels(t *testing.T) {
	for _, tc := range []struct{ path, ns, pod, cont string }{
		{"/var/log/pods/train_job-0-worker-3_0d6c6c41-7a52-4b7c-8c6e-1f2a3b4c5d6e/pytorch/0.log", "train", "job-0-worker-3", "pytorch"},
		{"/var/log/pods/train_job-0_uid/pytorch/0.log.20240102-150405", "train", "job-0", "pytorch"},
		{"/var/log/containers/job-0_train_pytorch-4f5e6d.log", "train", "job-0", "pytorch"},
		{"/data/logs/train.log", "", "", ""},
		{"/var/log/pods/bad/pytorch/0.log", "", "", ""},
	} {
		ns, pod, cont := podLabels(tc.path)
		if ns != tc.ns || pod != tc.pod || cont != tc.cont {
			t.Errorf("%s: got %q %q %q", tc.path, ns, pod, cont)
		}
	}
}

func TestPartialLastLine(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(7, 1))
	appendFile(t, p1, "one\ntw")
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "one")
	poll(t, f, &s)
	expectLines(t, s.lines, "one")
	appendFile(t, p1, "o\nthr")
	poll(t, f, &s)
	expectLines(t, s.lines, "one", "two")
	// Deleted with a partial last line: delivered at the end.
	if err := os.Remove(p1); err != nil {
		t.Fatal(err)
	}
	poll(t, f, &s)
	expectLines(t, s.lines, "one", "two", "thr")
	if st := f.Stats(); st.FilesTracked != 0 || st.FilesOpen != 0 {
		t.Fatalf("deleted file still tracked: %+v", st)
	}
}

func TestSealedPartialLineDeliveredAtRotation(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(7, 1))
	appendFile(t, p1, "one\nno-newline")
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "one")
	appendFile(t, filepath.Join(dir, plogName(7, 2)), "next\n")
	poll(t, f, &s)
	expectLines(t, s.lines, "one", "no-newline", "next")
}

func TestLongLineBinaryAndInvalidUTF8(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(7, 1))
	big := strings.Repeat("x", 1<<20) // a 1 MB line
	bin := "a\x00b\xff\xfe\xc3(\x00"
	appendFile(t, p1, "before\n"+big+"\n"+bin+"\nafter\n")
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "before", big[:DefaultMaxLineBytes], bin, "after")
	if st := f.Stats(); st.TruncatedLines != 1 || st.LinesRead != 4 {
		t.Fatalf("stats %+v", st)
	}
	// A long line still being written: the head goes out once, the rest is
	// skipped up to its newline, even across polls.
	appendFile(t, p1, strings.Repeat("y", 3*DefaultMaxLineBytes))
	poll(t, f, &s)
	appendFile(t, p1, strings.Repeat("y", 5*DefaultMaxLineBytes))
	poll(t, f, &s)
	appendFile(t, p1, "yyy\nend\n")
	poll(t, f, &s)
	expectLines(t, s.lines[4:], strings.Repeat("y", DefaultMaxLineBytes), "end")
	if st := f.Stats(); st.TruncatedLines != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSmallMaxLine(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(7, 1))
	appendFile(t, p1, "12345678\n123\n1234567890123\n")
	f := newTestFollower(t, Config{Roots: []string{root}, MaxLineBytes: 5})
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "12345", "123", "12345")
}

func TestTruncation(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(7, 1))
	appendFile(t, p1, "l1\nl2\nl3\n")
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	if err := os.Truncate(p1, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p1, "n1\n")
	poll(t, f, &s)
	expectLines(t, s.lines, "l1", "l2", "l3", "n1")
	if st := f.Stats(); st.Truncations != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReplacementByNewInode(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(7, 1))
	appendFile(t, p1, "old1\n")
	f := newTestFollower(t, Config{Roots: []string{root}})
	var s sink
	poll(t, f, &s)
	appendFile(t, p1, "old2\n")
	tmp := filepath.Join(dir, "x.tmp")
	appendFile(t, tmp, "new1\nnew2\n")
	if err := os.Rename(tmp, p1); err != nil {
		t.Fatal(err)
	}
	poll(t, f, &s)
	expectLines(t, s.lines, "old1", "old2", "new1", "new2")
	if st := f.Stats(); st.Replacements != 1 || st.FilesTracked != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestKubeletRotation(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pods", "ns_pod-a_uid1", "main")
	mkdir(t, dir)
	p := filepath.Join(dir, "0.log")
	appendFile(t, p, "2024-01-02T15:04:05.000000000Z stdout F a1\n")
	f := newTestFollower(t, Config{ScreenGlobs: []string{filepath.Join(base, "pods", "*", "*", "*.log")}})
	var s sink
	var files []*File
	poll(t, f, &s)
	appendFile(t, p, "x F a2\n")
	rot := p + ".20240102-150405"
	if err := os.Rename(p, rot); err != nil {
		t.Fatal(err)
	}
	appendFile(t, rot, "x F a3\n") // the runtime writes until it reopens
	appendFile(t, p, "x F b1\n")
	poll(t, f, &s)
	expectLines(t, s.lines, "2024-01-02T15:04:05.000000000Z stdout F a1", "x F a2", "x F a3", "x F b1")
	// gzip of the rotated file: the .gz is skipped, the original deleted.
	appendFile(t, rot+".gz", "\x1f\x8b garbage\n")
	if err := os.Remove(rot); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p, "x F b2\n")
	if err := f.Poll(func(fl *File, line []byte) {
		s.handle(fl, line)
		files = append(files, fl)
	}); err != nil {
		t.Fatal(err)
	}
	expectLines(t, s.lines[4:], "x F b2")
	if fl := files[0]; fl.Namespace != "ns" || fl.Pod != "pod-a" || fl.Container != "main" || fl.Kind != KindScreen {
		t.Fatalf("file %+v", fl)
	}
	if st := f.Stats(); st.FilesTracked != 1 || st.Replacements != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRootAppearsLater(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "log")
	var buf bytes.Buffer
	f, err := New(Config{Roots: []string{root}, RescanInterval: time.Nanosecond}, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s sink
	poll(t, f, &s)
	poll(t, f, &s)
	if st := f.Stats(); st.RootsMissing != 1 || st.ReadErrors["root_missing"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	dir := plogDir(t, root)
	appendFile(t, filepath.Join(dir, plogName(1, 1)), "hello\n")
	poll(t, f, &s)
	expectLines(t, s.lines, "hello")
	if st := f.Stats(); st.RootsMissing != 0 || st.ReadErrors["root_missing"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if n := strings.Count(buf.String(), "does not exist"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, buf.String())
	}
}

func TestUnreadableDirectory(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(1, 1))
	appendFile(t, p1, "a\n")
	// A file where a directory is expected.
	if err := os.WriteFile(filepath.Join(root, "debug"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	f, err := New(Config{Roots: []string{root}, RescanInterval: time.Nanosecond}, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s sink
	poll(t, f, &s)
	if st := f.Stats(); st.DirsUnreadable != 1 || st.ReadErrors["dir_unreadable"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	// An injected permission error on run/plog (tests run as root, where
	// chmod 000 does not deny anything): files already followed stay
	// followed and are not read again when the directory comes back.
	fail := true
	f.listDir = func(d string, fd, max int) ([]string, bool, error) {
		if fail && d == dir {
			return nil, false, &fs.PathError{Op: "open", Path: d, Err: syscall.EACCES}
		}
		return listDir(d, fd, max)
	}
	appendFile(t, p1, "b\n")
	poll(t, f, &s)
	poll(t, f, &s)
	if st := f.Stats(); st.DirsUnreadable != 2 || st.ReadErrors["dir_unreadable"] != 2 || st.FilesTracked != 1 {
		t.Fatalf("stats %+v", st)
	}
	fail = false
	appendFile(t, p1, "c\n")
	poll(t, f, &s)
	expectLines(t, s.lines, "a", "b", "c")
	if st := f.Stats(); st.DirsUnreadable != 1 {
		t.Fatalf("stats %+v", st)
	}
	if n := strings.Count(buf.String(), "cannot read log directory"); n != 2 {
		t.Fatalf("logged %d times, want 2:\n%s", n, buf.String())
	}
}

func TestNotifyDrivesPolls(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	p1 := filepath.Join(dir, plogName(1, 1))
	appendFile(t, p1, "a\n")
	// No rescan after the first: only inotify events can find changes.
	f := newTestFollower(t, Config{Roots: []string{root}, RescanInterval: time.Hour})
	var s sink
	poll(t, f, &s)
	if st := f.Stats(); !st.Notify || st.Watches < 2 {
		testtools.NeedsKernel(t, "inotify unavailable here: %+v", st)
	}
	appendFile(t, p1, "b\n")
	p2 := filepath.Join(dir, plogName(1, 2))
	appendFile(t, p2, "c\n")
	dev := filepath.Join(root, "debug", "device-3")
	mkdir(t, dev)
	appendFile(t, filepath.Join(dev, "device-9_20250101000000000.log"), "d\n")
	for range 3 { // the new directory is listed by the rescan its event asks for
		poll(t, f, &s)
	}
	expectLines(t, s.lines, "a", "d", "b", "c") // path order: debug/ before run/
}

func TestStatsDuringPoll(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	for i := range 20 {
		appendFile(t, filepath.Join(dir, plogName(i, 1)), strings.Repeat("line\n", 1000))
	}
	f := newTestFollower(t, Config{Roots: []string{root}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			_ = f.Stats()
		}
	}()
	var s sink
	poll(t, f, &s)
	<-done
	if st := f.Stats(); st.LinesRead != 20000 || st.FilesTracked != 20 {
		t.Fatalf("stats %+v", st)
	}
}
