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
//	         process out of descriptors) when it was needed. Poll opens it
//	         as soon as one is free; rescans wait for no waiting file
//	         before they give up saved offsets.
//	open     fd is the descriptor, counted against the budget.
//
// The transitions are Follower methods, since the budget counts open and
// waiting files:
//
//	closed, waiting ─open─▶ open      a descriptor within the budget (setOpen)
//	closed ─────────open─▶ waiting    the budget is spent (wait)
//	waiting ────────open─▶ closed     the open failed: gone, replaced, refused (unwait)
//	open, waiting ─closeFD─▶ closed   given back to the budget, or no longer wanted
//
// An open on a root that does not answer leaves the state as it was.
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

func (h handle) isOpen() bool    { return h.state == handleOpen }
func (h handle) isWaiting() bool { return h.state == handleWaiting }

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
