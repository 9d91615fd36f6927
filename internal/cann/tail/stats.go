package tail

import "maps"

// Stats is a snapshot of the follower's counters, cheap to take at scrape
// time (it never waits for file I/O).
type Stats struct {
	// FilesTracked is the number of followed files (those being drained
	// after deletion or rename not included).
	FilesTracked int
	// FilesOpen is the number of descriptors held; a file unchanged for a
	// while is closed and reopened when it changes.
	FilesOpen int
	// OpenFilesLimit is the descriptor budget (Config.MaxOpenFiles), and
	// OpenFilesLimitReached counts the opens that found it spent (a file
	// was closed to make room, or had to wait for one).
	OpenFilesLimit        int
	OpenFilesLimitReached uint64
	// LinesRead and BytesRead count what was delivered and read.
	LinesRead, BytesRead uint64
	// TruncatedLines counts lines longer than MaxLineBytes, delivered cut.
	TruncatedLines uint64
	// Truncations counts files that shrank and were read again from 0.
	Truncations uint64
	// Replacements counts followed names that came to hold another file.
	Replacements uint64
	// FilesLost counts files of the state file not found again after a
	// restart, with their directory gone: written by a process that exited
	// while the exporter was down (see countLost).
	FilesLost uint64
	// StateWriteErrors counts checkpoints that could not be written: until
	// one succeeds, a restart reads again what was read since the last.
	StateWriteErrors uint64
	// ReadErrors counts errors by reason (see ReadErrorReasons);
	// root_missing and dir_unreadable count each time a path enters that
	// state, the others each failed operation.
	ReadErrors map[string]uint64
	// DirsUnreadable and RootsMissing are the current number of such paths.
	DirsUnreadable, RootsMissing int
	// Notify says whether inotify drives the follower (else pure polling);
	// Watches is the number of watched directories.
	Notify  bool
	Watches int
	// LimitsReached counts, by limit (LimitReasons), the rescans a root
	// reached a per-root cap in and the reads a file was cut at the
	// per-Poll byte cap in.
	LimitsReached map[string]uint64
	// Refused counts, by reason (RefusedReasons), the directories of a
	// root that were not entered: a symlink, a mount point, a discovered
	// root on a FUSE or network file system. Each rescan counts again.
	Refused map[string]uint64
	// HoleBytesSkipped counts bytes of sparse files' holes not read.
	HoleBytesSkipped uint64
	// HungCalls counts calls on a discovered root abandoned at
	// Config.IODeadline (its root then waits until the call returns).
	HungCalls uint64
}

// Stats returns a snapshot of the counters.
func (f *Follower) Stats() Stats {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	s := f.stats
	s.ReadErrors = maps.Clone(f.stats.ReadErrors)
	s.LimitsReached = maps.Clone(f.stats.LimitsReached)
	s.Refused = maps.Clone(f.stats.Refused)
	return s
}
