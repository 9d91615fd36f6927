package tail

// A followed file's state is three things, each changing on its own
// schedule: where the file is in its life (life), whether it holds a
// descriptor (handle), and where reading it stands (readPos). docs/tailing.md
// ("File states") draws them together.

// life is where a followed file is in its life. A file starts live; a CANN
// file becomes sealed when a newer file of its rotation group appears
// (CANN writes only the newest), and drained once read to its end after
// that (closed for good; opened again only if it turns out to have grown).
// A file no followed name reaches any more (deleted, renamed away) is an
// orphan, read through the descriptor it still has until it is drained or
// retired; renamed back under a followed name, it is live again.
type life uint8

const (
	lifeLive life = iota
	lifeSealed
	lifeDrained
	lifeOrphan
)

// sealed reports whether no more writes are expected (sealed or drained).
func (t *tracked) sealed() bool { return t.life == lifeSealed || t.life == lifeDrained }

// handle is a followed file's descriptor, in one of three states:
//
//	closed   no descriptor: not opened yet, or given back (idle, evicted
//	         for the budget, drained, dropped). It is opened again (by
//	         path, checked to be the same device and inode) when it
//	         changes.
//	waiting  no descriptor, and one is wanted: the budget was spent (or the
//	         process out of descriptors) when it was needed, or a file
//	         closed with bytes unread was sealed. Poll opens it as soon as
//	         one is free; saved offsets are not given up while a file waits.
//	open     fd is the descriptor, counted against the budget.
//
// The transitions are Follower methods, since the budget counts open and
// waiting files:
//
//	closed, waiting ─open─▶ open      a descriptor within the budget (setOpen)
//	closed ─────────open─▶ waiting    the budget is spent (wait; reorder too)
//	waiting ────────open─▶ closed     the open failed: gone, replaced, refused (unwait)
//	open, waiting ─closeFD─▶ closed   given back to the budget, or no longer wanted
//
// An open on a root that does not answer leaves the state as it was. A
// drained file is closed; an orphan is open (no name reaches it to open it
// again).
type handle struct {
	state handleState
	fd    int // the descriptor while open; meaningless otherwise
}

type handleState uint8

const (
	handleClosed handleState = iota
	handleWaiting
	handleOpen
)

func (h handle) isOpen() bool { return h.state == handleOpen }

// sysfd is the descriptor a system call on the file uses: none (-1) unless
// open, so that a call on a file without one fails with EBADF instead of
// reaching whatever holds some number now.
func (h handle) sysfd() int {
	if h.state != handleOpen {
		return -1
	}
	return h.fd
}

// openHandle is the handle of a descriptor held outside the budget (a
// probe of sameFile).
func openHandle(fd int) handle { return handle{state: handleOpen, fd: fd} }

// setOpen makes fd the descriptor of a closed or waiting file and counts
// it against the budget.
func (f *Follower) setOpen(t *tracked, fd int) {
	f.unwait(t)
	t.h = openHandle(fd)
	f.openFDs++
}

// wait marks a closed file as waiting for a descriptor.
func (f *Follower) wait(t *tracked) {
	if t.h.state == handleClosed {
		t.h.state = handleWaiting
		f.waiting++
	}
}

// unwait gives up waiting: the file is closed (and opened again when it
// changes).
func (f *Follower) unwait(t *tracked) {
	if t.h.state == handleWaiting {
		t.h.state = handleClosed
		f.waiting--
	}
}

// closeFD closes a file: an open descriptor is closed and given back to
// the budget, a waiting file waits no more.
func (f *Follower) closeFD(t *tracked) {
	switch t.h.state {
	case handleWaiting:
		f.waiting--
	case handleOpen:
		closeT(t, t.h.fd)
		f.openFDs--
	}
	t.h = handle{}
}

// readPos is where reading a file stands: three offsets, what the first
// of them stands at, and two facts of the last read and the last look.
//
// The offsets, offset <= scanned:
//
//	offset   the first byte not yet delivered, where a restart resumes (the
//	         only one saved)
//	scanned  the first byte not yet read: the bytes from offset to scanned
//	         are a partial last line, read again once its newline arrives
//	size     the file's size at the last look (fstat, a listing, an event)
//
// What offset stands at (at), one of:
//
//	unplaced    nothing read yet, and an offset saved before a restart may
//	            still apply: the file was never opened (a new file starts
//	            here; its first open places it, at the saved offset or at 0)
//	lineStart   the start of a line (or of the file): the byte before it is
//	            the newline that ended the last line delivered
//	inLongLine  inside an over-long line (or a hole) whose head went out
//	            cut: the rest of it, up to its newline, is dropped
//	afterFinal  just past a partial last line delivered as final (its file
//	            deleted, sealed or retired), so the byte before it is no
//	            newline; the next newline consumed puts it at lineStart
//
// A truncation (or a rewrite in place) restarts a placed file at 0,
// lineStart. The state file keeps inLongLine and afterFinal as the flags
// skipping and midLine.
//
// The facts, independent of the above and of each other:
//
//	capped   the last read stopped at the per-Poll byte cap, not at the
//	         end: the next Poll reads on whatever events say
//	changed  the last listing saw a size or change time other than what
//	         was read (or the file is new to the listing): it is looked at
//	         by the Poll of that rescan
type readPos struct {
	offset, scanned, size int64
	at                    posState
	capped, changed       bool
}

type posState uint8

const (
	posUnplaced posState = iota
	posLineStart
	posInLongLine
	posAfterFinal
)

func (p *readPos) unplaced() bool   { return p.at == posUnplaced }
func (p *readPos) inLongLine() bool { return p.at == posInLongLine }

// newlineBefore reports whether the byte before offset (offset > 0) is the
// newline that ended the last line delivered, which a read checks first.
func (p *readPos) newlineBefore() bool { return p.at == posLineStart }

// partial reports whether a partial last line was read and not delivered.
func (p *readPos) partial() bool { return p.scanned > p.offset }

// caughtUp reports whether reading reached exactly the size of the last
// look: nothing waits to be read, nothing was read past it (a partial last
// line may wait for its newline).
func (p *readPos) caughtUp() bool { return p.scanned == p.size }

// fullyRead reports whether every byte of a file of size was read and
// delivered: no partial line waits.
func (p *readPos) fullyRead(size int64) bool { return p.scanned == size && !p.partial() }

// behind reports whether bytes below the size of the last look are unread.
func (p *readPos) behind() bool { return p.scanned < p.size }

// readPast reports whether more was read than a file of size holds now:
// it was truncated.
func (p *readPos) readPast(size int64) bool { return size < p.scanned || size < p.offset }

// place makes an unplaced file's position the start of the file; resume
// may move it to a saved one.
func (p *readPos) place() { p.at = posLineStart }

// resume moves the position to an offset saved before a restart, with the
// flags it was saved with.
func (p *readPos) resume(offset int64, skipping, midLine bool) {
	p.offset, p.scanned = offset, offset
	switch {
	case skipping:
		p.at = posInLongLine
	case midLine:
		p.at = posAfterFinal
	default:
		p.at = posLineStart
	}
}

// saved returns the flags the state file keeps of where offset stands.
func (p *readPos) saved() (skipping, midLine bool) {
	return p.at == posInLongLine, p.at == posAfterFinal
}

// restart reads the file again from its start (truncated, or rewritten in
// place). An unplaced file has read nothing: it stays unplaced.
func (p *readPos) restart() {
	p.offset, p.scanned = 0, 0
	if p.at != posUnplaced {
		p.at = posLineStart
	}
}
