package tail

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestStateRestoreNoRecountNoSkip(t *testing.T) {
	root := t.TempDir()
	dir := plogDir(t, root)
	state := filepath.Join(t.TempDir(), "tail.state")
	pa := filepath.Join(dir, plogName(1, 1))
	pb := filepath.Join(dir, plogName(2, 1))
	appendFile(t, pa, "a1\na2\npart")
	appendFile(t, pb, "b1\n")
	cfg := Config{Roots: []string{root}, StateFile: state}

	f1 := newTestFollower(t, cfg)
	if blob, err := f1.Restore(); blob != nil || err != nil {
		t.Fatalf("restore without state file: %q %v", blob, err)
	}
	var s1 sink
	poll(t, f1, &s1)
	if err := f1.Checkpoint([]byte(strconv.Itoa(len(s1.lines)))); err != nil {
		t.Fatal(err)
	}
	appendFile(t, pa, "ial\n")
	appendFile(t, pb, "b2\n")
	poll(t, f1, &s1) // delivered, never checkpointed: as if killed now
	_ = f1.Close()
	expectLines(t, s1.lines, "a1", "a2", "b1", "partial", "b2")

	f2 := newTestFollower(t, cfg)
	blob, err := f2.Restore()
	if err != nil || string(blob) != "3" {
		t.Fatalf("restore: %q %v", blob, err)
	}
	appendFile(t, pa, "a3\n")
	var s2 sink
	poll(t, f2, &s2)
	expectLines(t, s2.lines, "partial", "a3", "b2")
	if err := f2.Checkpoint([]byte("6")); err != nil {
		t.Fatal(err)
	}
	// An unchanged state is not rewritten.
	fi1, _ := os.Stat(state)
	if err := os.Chtimes(state, fi1.ModTime().Add(-3600e9), fi1.ModTime().Add(-3600e9)); err != nil {
		t.Fatal(err)
	}
	poll(t, f2, &s2)
	if err := f2.Checkpoint([]byte("6")); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(state); !fi2.ModTime().Before(fi1.ModTime()) {
		t.Fatal("unchanged state rewritten")
	}
	_ = f2.Close()

	// While down: pa is rewritten in place (same inode, new content: the
	// fingerprint differs), pb renamed under a name still followed.
	if err := os.WriteFile(pa, []byte("A-new-1\nA-new-2\nA-new-3\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	appendFile(t, pb, "b3\n")
	f3 := newTestFollower(t, cfg)
	if blob, err := f3.Restore(); err != nil || string(blob) != "6" {
		t.Fatalf("restore: %q %v", blob, err)
	}
	var s3 sink
	poll(t, f3, &s3)
	expectLines(t, s3.lines, "A-new-1", "A-new-2", "A-new-3", "b3")
}

func TestStateRestoreRenamedWhileDown(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pods", "ns_pod_uid", "c")
	mkdir(t, dir)
	p := filepath.Join(dir, "0.log")
	state := filepath.Join(base, "state")
	cfg := Config{ScreenGlobs: []string{filepath.Join(base, "pods", "*", "*", "*.log")}, StateFile: state}
	appendFile(t, p, "x1\n")
	f1 := newTestFollower(t, cfg)
	var s sink
	poll(t, f1, &s)
	if err := f1.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	_ = f1.Close()
	appendFile(t, p, "x2\n")
	if err := os.Rename(p, p+".20240102-150405"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p, "y1\n")
	f2 := newTestFollower(t, cfg)
	if _, err := f2.Restore(); err != nil {
		t.Fatal(err)
	}
	var s2 sink
	poll(t, f2, &s2)
	expectLines(t, s2.lines, "x2", "y1")
}

func TestStateCorrupt(t *testing.T) {
	root := t.TempDir()
	appendFile(t, filepath.Join(plogDir(t, root), plogName(1, 1)), "a\n")
	state := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, []byte("HCCLTAIL\x01garbage!"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newTestFollower(t, Config{Roots: []string{root}, StateFile: state})
	blob, err := f.Restore()
	if err == nil || blob != nil {
		t.Fatalf("corrupt state accepted: %q %v", blob, err)
	}
	var s sink
	poll(t, f, &s)
	expectLines(t, s.lines, "a")
	if st := f.Stats(); st.ReadErrors["state_file"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := f.Checkpoint([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	_ = f.Close() // the state file is locked while a follower lives
	f2 := newTestFollower(t, Config{Roots: []string{root}, StateFile: state})
	if blob, err := f2.Restore(); err != nil || string(blob) != "ok" {
		t.Fatalf("%q %v", blob, err)
	}
}

func sampleState() []byte {
	entries := []savedEntry{
		{path: "/a/run/plog/plog-1_20250101000000000.log", dev: 2049, ino: 12, offset: 4096, fpLen: fpSize, fpHash: 0xdeadbeef},
		{path: "/var/log/pods/ns_p_u/c/0.log", dev: 1, ino: 1 << 40, offset: 10, fpLen: 10, fpHash: 7, skipping: true},
	}
	return encodeState(nil, []byte("blob"), func(yield func(*savedEntry)) {
		for i := range entries {
			yield(&entries[i])
		}
	})
}

func TestStateRoundTrip(t *testing.T) {
	st, err := decodeState(sampleState())
	if err != nil {
		t.Fatal(err)
	}
	if string(st.blob) != "blob" || len(st.entries) != 2 || st.entries[1].ino != 1<<40 || !st.entries[1].skipping || st.entries[0].offset != 4096 {
		t.Fatalf("%+v", st)
	}
	data := sampleState()
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		if _, err := decodeState(bad); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	for i := range data {
		if _, err := decodeState(data[:i]); err == nil {
			t.Fatalf("truncated to %d accepted", i)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add(sampleState())
	f.Add(encodeState(nil, nil, func(func(*savedEntry)) {}))
	f.Add([]byte("HCCLTAIL\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState(data)
		if err != nil {
			return
		}
		again := encodeState(nil, st.blob, func(yield func(*savedEntry)) {
			for i := range st.entries {
				yield(&st.entries[i])
			}
		})
		st2, err := decodeState(again)
		if err != nil || len(st2.entries) != len(st.entries) || !bytes.Equal(st2.blob, st.blob) {
			t.Fatalf("re-encoding changed the state: %v", err)
		}
	})
}

// TestStateFileLocked is the edge of issue 24: two exporters on one state
// file ran side by side without a word, each overwriting the other's
// offsets. The second one now fails to start, naming the file and the
// process that holds it; once the first is gone the file is free again.
func TestStateFileLocked(t *testing.T) {
	state := filepath.Join(t.TempDir(), "tail.state")
	cfg := Config{Roots: []string{t.TempDir()}, StateFile: state}
	first, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg, testLogger(t))
	if err == nil {
		t.Fatal("a second follower on the same state file started")
	}
	for _, want := range []string{state, fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	_ = again.Close()
}

// TestStateFileLockReleasedByClose: once Close returns, the state file is
// free for the next follower, even while a process forked meanwhile still
// holds a copy of the lock's descriptor (a fork racing the close, between
// its fork and its exec, under load). Before, Close only closed the
// descriptor, the copy kept the flock, and the next follower of the same
// process failed with "in use by another exporter (pid <its own>)"
// (TestRandomizedExactlyOnce under load, seed 1796683771194721241).
func TestStateFileLockReleasedByClose(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	f, err := New(Config{Roots: []string{t.TempDir()}, StateFile: state}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.lock == nil {
		t.Fatal("no lock taken: the check is broken")
	}
	// A child that inherits the lock's open file description and outlives
	// the close, as a fork in flight does.
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{f.lock}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{Roots: []string{t.TempDir()}, StateFile: state}, testLogger(t))
	if err != nil {
		t.Fatalf("after Close returned: %v", err)
	}
	_ = g.Close()
}
