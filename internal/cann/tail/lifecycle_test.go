package tail

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The state file keeps where a position stands as two flags; every placed
// state survives saving and resuming, and a file never placed saves none.
func TestReadPosStateFileFlags(t *testing.T) {
	for _, at := range []posState{posLineStart, posInLongLine, posAfterFinal} {
		p := readPos{offset: 7, scanned: 9, at: at}
		skipping, midLine := p.saved()
		var q readPos
		q.resume(p.offset, skipping, midLine)
		if q.at != at || q.offset != 7 || q.scanned != 7 {
			t.Errorf("state %d saved as (%v, %v) resumes as %+v", at, skipping, midLine, q)
		}
	}
	if s, m := (&readPos{}).saved(); s || m {
		t.Errorf("an unplaced position saves flags (%v, %v)", s, m)
	}
	// Both flags (never written by the follower): the line is skipped,
	// as the old flags read it.
	var q readPos
	q.resume(3, true, true)
	if !q.inLongLine() {
		t.Errorf("both flags resume as %+v, want inside a long line", q)
	}
}

// A restart reads a placed file again from 0 at a line start; a file that
// read nothing stays unplaced, so a saved offset may still apply to it.
func TestReadPosRestart(t *testing.T) {
	p := readPos{offset: 10, scanned: 20, size: 30, at: posAfterFinal, capped: true}
	p.restart()
	if p.offset != 0 || p.scanned != 0 || p.at != posLineStart || !p.capped || p.size != 30 {
		t.Errorf("restart gives %+v", p)
	}
	var u readPos
	u.restart()
	if !u.unplaced() {
		t.Errorf("restart placed an unplaced position: %+v", u)
	}
}

func TestReadPosMeanings(t *testing.T) {
	for _, c := range []struct {
		p                         readPos
		size                      int64
		caughtUp, behind, partial bool
		fullyRead, readPast       bool
	}{
		{readPos{offset: 10, scanned: 10, size: 10}, 10, true, false, false, true, false},
		{readPos{offset: 8, scanned: 10, size: 10}, 10, true, false, true, false, false},
		{readPos{offset: 10, scanned: 10, size: 12}, 12, false, true, false, false, false},
		{readPos{offset: 10, scanned: 12, size: 11}, 13, false, false, true, false, false}, // grew after the look
		{readPos{offset: 10, scanned: 12, size: 12}, 9, true, false, true, false, true},
	} {
		p := c.p
		if p.caughtUp() != c.caughtUp || p.behind() != c.behind || p.partial() != c.partial ||
			p.fullyRead(c.size) != c.fullyRead || p.readPast(c.size) != c.readPast {
			t.Errorf("%+v at size %d: caughtUp %v behind %v partial %v fullyRead %v readPast %v", p, c.size,
				p.caughtUp(), p.behind(), p.partial(), p.fullyRead(c.size), p.readPast(c.size))
		}
	}
}

// Each transition of a handle keeps the budget's counts: open descriptors
// and waiting files.
func TestHandleTransitionsKeepTheBudget(t *testing.T) {
	f := newTestFollower(t, Config{DisableNotify: true})
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A raw descriptor: closeFD closes it, which an *os.File would do
	// again from its finalizer.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracked{}
	if tr.h.isOpen() || tr.h.sysfd() != -1 {
		t.Fatalf("a new file's handle: %+v", tr.h)
	}
	count := func(step string, open, waiting int, state handleState) {
		t.Helper()
		if f.openFDs != open || f.waiting != waiting || tr.h.state != state {
			t.Fatalf("%s: %d open, %d waiting, state %d; want %d, %d, %d", step, f.openFDs, f.waiting, tr.h.state, open, waiting, state)
		}
	}
	f.wait(tr)
	f.wait(tr)
	count("wait twice", 0, 1, handleWaiting)
	if tr.h.sysfd() != -1 {
		t.Fatal("a waiting handle has a descriptor")
	}
	f.setOpen(tr, fd)
	count("open while waiting", 1, 0, handleOpen)
	if tr.h.sysfd() != fd {
		t.Fatalf("sysfd %d, want %d", tr.h.sysfd(), fd)
	}
	f.wait(tr)
	count("wait while open", 1, 0, handleOpen)
	f.closeFD(tr)
	count("close", 0, 0, handleClosed)
	if tr.h.sysfd() != -1 {
		t.Fatal("a closed handle has a descriptor")
	}
	f.wait(tr)
	f.unwait(tr)
	count("open failed while waiting", 0, 0, handleClosed)
	f.wait(tr)
	f.closeFD(tr)
	count("dropped while waiting", 0, 0, handleClosed)
	f.closeFD(tr)
	count("closed twice", 0, 0, handleClosed)
}
