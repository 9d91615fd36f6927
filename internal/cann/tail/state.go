package tail

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// State file layout (all integers unsigned varints unless said otherwise):
//
//	"HCCLTAIL" version(1 byte)
//	len(blob) blob
//	count, then count entries:
//	  len(path) path dev ino offset fpLen fpHash(8 bytes LE) flags(1 byte)
//	CRC-32C of everything before (4 bytes LE)
//
// One file holds both the offsets and the caller's blob, written with
// tmp + fsync + rename + fsync(dir), so whatever instant the process dies
// the file on disk is a consistent (offsets, blob) pair.
const (
	stateMagic   = "HCCLTAIL"
	stateVersion = 1
	maxPathLen   = 4096
	flagSkipping = 1
	flagMidLine  = 2
	minEntrySize = 1 + 1 + 1 + 1 + 1 + 1 + 8 + 1 // empty-ish varints, hash, flags
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// MaxStateFileBytes bounds --cannlog.state-file. Restore reads it whole
// before decoding, so without a bound a 2 GiB (sparse) file cost 2 GiB of
// memory and 13 s before the exporter served. An entry is its path and
// about 30 bytes: 64 MiB holds the offsets of over 500,000 followed files
// with paths of 100 bytes besides the parsed state at its caps (a few MiB),
// far beyond what the per-root caps let one node follow. A larger file is
// not read (counted in hccl_exporter_log_read_errors_total{reason=
// "state_file"} and logged; following starts from the beginning), and a
// checkpoint that would exceed it is not written (counted as a failed
// checkpoint), so the exporter never writes what it would refuse to read.
const MaxStateFileBytes = 64 << 20

type savedEntry struct {
	path     string
	dev, ino uint64
	offset   int64
	fpLen    int
	fpHash   uint64
	skipping bool
	midLine  bool
	used     bool
}

type savedState struct {
	blob    []byte
	entries []savedEntry
	byPath  map[string]*savedEntry
	byID    map[fileID]*savedEntry
}

func appendEntry(b []byte, e *savedEntry) []byte {
	b = binary.AppendUvarint(b, uint64(len(e.path)))
	b = append(b, e.path...)
	b = binary.AppendUvarint(b, e.dev)
	b = binary.AppendUvarint(b, e.ino)
	b = binary.AppendUvarint(b, uint64(e.offset))
	b = binary.AppendUvarint(b, uint64(e.fpLen))
	b = binary.LittleEndian.AppendUint64(b, e.fpHash)
	var flags byte
	if e.skipping {
		flags |= flagSkipping
	}
	if e.midLine {
		flags |= flagMidLine
	}
	return append(b, flags)
}

// encodeState serialises entries and blob into b[:0].
func encodeState(b []byte, blob []byte, entries func(yield func(*savedEntry))) []byte {
	b = append(b[:0], stateMagic...)
	b = append(b, stateVersion)
	b = binary.AppendUvarint(b, uint64(len(blob)))
	b = append(b, blob...)
	countAt := len(b)
	b = append(b, make([]byte, binary.MaxVarintLen64)...) // patched below
	n := 0
	entries(func(e *savedEntry) {
		b = appendEntry(b, e)
		n++
	})
	// Patch the count in place: encode it, then move the entries to close
	// the gap left by the reserved varint space.
	var cnt [binary.MaxVarintLen64]byte
	cl := binary.PutUvarint(cnt[:], uint64(n))
	copy(b[countAt:], cnt[:cl])
	gap := binary.MaxVarintLen64 - cl
	copy(b[countAt+cl:], b[countAt+binary.MaxVarintLen64:])
	b = b[:len(b)-gap]
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

var errCorrupt = errors.New("corrupt state file")

type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad varint", errCorrupt)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: length %d beyond end", errCorrupt, n)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// decodeState parses a state file. It never panics on any input.
func decodeState(data []byte) (*savedState, error) {
	hdr := len(stateMagic) + 1
	if len(data) < hdr+4 {
		return nil, fmt.Errorf("%w: %d bytes is too short", errCorrupt, len(data))
	}
	if string(data[:len(stateMagic)]) != stateMagic {
		return nil, fmt.Errorf("%w: bad magic", errCorrupt)
	}
	if data[len(stateMagic)] != stateVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", errCorrupt, data[len(stateMagic)])
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	r := &stateReader{b: body[hdr:]}
	st := &savedState{}
	st.blob = bytes.Clone(r.bytes(r.uvarint()))
	count := r.uvarint()
	if r.err == nil && count > uint64(len(r.b)/minEntrySize) {
		return nil, fmt.Errorf("%w: %d entries cannot fit in %d bytes", errCorrupt, count, len(r.b))
	}
	st.entries = make([]savedEntry, 0, count)
	for i := uint64(0); i < count && r.err == nil; i++ {
		var e savedEntry
		pl := r.uvarint()
		if pl == 0 || pl > maxPathLen {
			if r.err == nil {
				r.err = fmt.Errorf("%w: entry %d: path length %d", errCorrupt, i, pl)
			}
			break
		}
		e.path = string(r.bytes(pl))
		e.dev = r.uvarint()
		e.ino = r.uvarint()
		off := r.uvarint()
		fl := r.uvarint()
		h := r.bytes(8)
		fb := r.bytes(1)
		if r.err != nil {
			break
		}
		if off > 1<<62 || fl > fpSize || fb[0]&^(flagSkipping|flagMidLine) != 0 {
			r.err = fmt.Errorf("%w: entry %d (%q) out of range", errCorrupt, i, e.path)
			break
		}
		e.offset, e.fpLen = int64(off), int(fl)
		e.fpHash = binary.LittleEndian.Uint64(h)
		e.skipping = fb[0]&flagSkipping != 0
		e.midLine = fb[0]&flagMidLine != 0
		st.entries = append(st.entries, e)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	st.index()
	return st, nil
}

func (st *savedState) index() {
	st.byPath = make(map[string]*savedEntry, len(st.entries))
	st.byID = make(map[fileID]*savedEntry, len(st.entries))
	for i := range st.entries {
		e := &st.entries[i]
		st.byPath[e.path] = e
		st.byID[fileID{e.dev, e.ino}] = e
	}
}

// Checkpoint atomically writes the offsets of every followed file together
// with the caller's opaque blob (its counters and parsed state) to the
// state file. Call it between Polls with a blob that reflects exactly the
// lines delivered so far: after a crash, Restore returns that blob and
// reading resumes at those offsets, so no line is counted twice or missed.
// Without a state file it does nothing. An unchanged state is not
// rewritten.
func (f *Follower) Checkpoint(blob []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.cfg.StateFile == "" {
		return nil
	}
	if !f.dirty && f.hasBlob && bytes.Equal(blob, f.lastBlob) {
		return nil
	}
	f.enc = encodeState(f.enc, blob, func(yield func(*savedEntry)) {
		var e savedEntry
		emit := func(t *tracked) {
			if t.pos.unplaced() && f.pending != nil {
				// Not opened yet (waiting for the budget): its saved
				// offset still stands.
				if p := f.pending.byID[t.id]; p != nil && !p.used {
					yield(p)
					return
				}
			}
			skipping, midLine := t.pos.saved()
			e = savedEntry{path: t.Path, dev: t.id.dev, ino: t.id.ino, offset: t.pos.offset,
				fpLen: t.fpLen, fpHash: t.fpHash, skipping: skipping, midLine: midLine}
			yield(&e)
		}
		for _, t := range f.order {
			if f.byID[t.id] == t {
				emit(t)
			}
		}
		for _, t := range f.orphans {
			emit(t)
		}
		if f.pending != nil {
			// Saved files not found yet (an unreadable directory, a root
			// not mounted yet) keep their offsets.
			for i := range f.pending.entries {
				// Keyed by inode, not path: the path may be stale (a
				// rename not seen yet) and now hold another file.
				if p := &f.pending.entries[i]; !p.used && !f.following(fileID{p.dev, p.ino}) {
					yield(p)
				}
			}
		}
	})
	var err error
	if len(f.enc) > MaxStateFileBytes {
		err = fmt.Errorf("%d bytes, more than the %d a state file may hold (MaxStateFileBytes): not written, a restart would refuse it", len(f.enc), MaxStateFileBytes)
	} else {
		err = writeFileAtomic(f.cfg.StateFile, f.enc)
	}
	if err != nil {
		f.statsMu.Lock()
		f.stats.StateWriteErrors++
		f.statsMu.Unlock()
		return fmt.Errorf("checkpoint tail state: %w", err)
	}
	f.dirty = false
	f.lastBlob = append(f.lastBlob[:0], blob...)
	f.hasBlob = true
	return nil
}

// Restore loads the state file, if any, before the first Poll: the saved
// offsets apply to the files they belong to (same inode, or same path,
// and the same leading bytes), and the caller's blob is returned. A
// missing file gives (nil, nil); a corrupt one is logged, counted and
// reported as an error, and following starts clean.
func (f *Follower) Restore() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if f.polled {
		return nil, errors.New("tail: Restore must be called before the first Poll")
	}
	if f.cfg.StateFile == "" {
		return nil, nil
	}
	data, err := readStateFile(f.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		var st *savedState
		st, err = decodeState(data)
		if err == nil {
			f.pending = st
			f.log.Info("restored log read offsets", "state_file", f.cfg.StateFile, "files", len(st.entries))
			return st.blob, nil
		}
	}
	f.countErr("state_file")
	f.log.Error("cannot restore log read offsets; reading all logs from the start", "state_file", f.cfg.StateFile, "err", err)
	return nil, fmt.Errorf("restore tail state from %s: %w", f.cfg.StateFile, err)
}

// applyPending resumes a newly found file at its saved offset when the
// saved entry is this file: same (device, inode), or same path with the
// same inode or a full-length fingerprint; and in every case the same
// leading bytes and at least the saved size.
func (f *Follower) applyPending(t *tracked, size int64) {
	p := f.pending
	for _, e := range [2]*savedEntry{p.byID[t.id], p.byPath[t.Path]} {
		if e == nil || e.used {
			continue
		}
		sameID := e.dev == t.id.dev && e.ino == t.id.ino
		samePath := e.path == t.Path
		if !sameID && !(samePath && (e.ino == t.id.ino || e.fpLen == fpSize)) {
			f.log.Debug("saved offset not applied: other file", "path", t.Path, "ino", t.id.ino, "saved_ino", e.ino)
			continue
		}
		if size < e.offset {
			f.log.Info("log file shrank while the exporter was down; reading it from the start", "path", t.Path)
			continue
		}
		var head []byte
		if e.fpLen > 0 {
			head = make([]byte, e.fpLen)
			n, err := pread(t.h.sysfd(), head, 0)
			if err != nil || n != e.fpLen || fingerprint(head) != e.fpHash {
				f.log.Debug("saved offset not applied: different leading bytes", "path", t.Path, "saved_path", e.path)
				continue
			}
		}
		t.pos.resume(e.offset, e.skipping, e.midLine)
		t.fpLen, t.fpHash = e.fpLen, e.fpHash
		if e.fpLen < fpSize {
			t.prefix = head
			if t.prefix == nil {
				t.prefix = []byte{}
			}
		}
		e.used = true
		f.log.Debug("resuming log file at saved offset", "path", t.Path, "offset", e.offset, "ino", t.id.ino)
		return
	}
}

func (f *Follower) countErr(reason string) {
	f.statsMu.Lock()
	f.stats.ReadErrors[reason]++
	f.statsMu.Unlock()
}

// readStateFile reads the state file, refusing one that is not a regular
// file (a FIFO there would block the start for good: it is opened
// non-blocking and checked with fstat before any read) or larger than
// MaxStateFileBytes, without reading it.
func readStateFile(path string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): not read", fi.Mode().Type())
	}
	if fi.Size() > MaxStateFileBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d a state file may hold (MaxStateFileBytes): not read", fi.Size(), MaxStateFileBytes)
	}
	// It may grow between fstat and read: read one byte past the bound.
	data, err := io.ReadAll(io.LimitReader(fh, MaxStateFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxStateFileBytes {
		return nil, fmt.Errorf("more than the %d bytes a state file may hold (MaxStateFileBytes): not read", MaxStateFileBytes)
	}
	return data, nil
}

// writeFileAtomic replaces path with data so that a crash at any instant
// leaves either the old or the new content.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	// Make the rename itself durable.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
			_ = d.Close()
			return err
		}
		_ = d.Close()
	}
	return nil
}

// following reports whether a file with this identity is followed (live
// or being drained): its own entry supersedes any saved one.
func (f *Follower) following(id fileID) bool {
	if _, ok := f.byID[id]; ok {
		return true
	}
	for _, o := range f.orphans {
		if o.id == id {
			return true
		}
	}
	return false
}

// countLost counts the saved files that were not found again and whose
// directory is gone too: a process that exited while the exporter was down
// took its /proc root, and with it the only path to what it wrote after the
// last checkpoint (its last lines, often the EI0011 that killed it). A file
// deleted from a directory that still exists (CANN removing its oldest
// plog) is not counted: that is rotation, read before it happened.
func (f *Follower) countLost(p *savedState, c *pollCounters) {
	for i := range p.entries {
		e := &p.entries[i]
		if e.used || f.following(fileID{e.dev, e.ino}) {
			continue
		}
		// The directory lies in a root a job can write: looked at on its
		// root's worker (or one of its own), with the deadline, no link
		// followed. One that does not answer is not counted as gone.
		var st syscall.Stat_t
		var err error
		rio := f.rootIOOf(e.path)
		if rio == nil {
			rio = &rootIO{}
		}
		dir := filepath.Dir(e.path)
		if !f.call(rio, c, func() { err = syscall.Lstat(dir, &st) }, nil) || err == nil {
			continue
		}
		c.lost++
		f.log.Warn("a log file read before the restart is gone with its directory (its process exited while the exporter was down): "+
			"what it wrote after the last checkpoint, if anything, is lost", "path", e.path, "offset", e.offset)
	}
}
