package tail

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// lockState takes an exclusive flock on <state file>.lock and writes our
// pid into it, so that a second exporter started on the same state file
// (both would overwrite each other's offsets, and count lines twice or lose
// them) fails at once with a message naming the file and the holder. The
// lock is on a file of its own because the state file itself is replaced
// by a rename at every checkpoint. The kernel drops the lock when the
// process dies, however it dies: no stale lock survives a crash.
//
// A lock file that cannot be created (missing or read-only directory) is
// not an error here: nil, nil.
func lockState(stateFile string) (*os.File, error) {
	path := stateFile + ".lock"
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		// Where the lock cannot even be created the state file cannot
		// be written either: that is counted at every checkpoint
		// (hccl_exporter_log_state_file_write_errors_total), not fatal.
		return nil, nil
	}
	for {
		err = syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); perr == nil && pid > 0 {
				holder = "pid " + strconv.Itoa(pid)
			}
		}
		_ = fh.Close()
		return nil, fmt.Errorf("state file %s is in use by another exporter (%s holds %s): run one exporter per --cannlog.state-file",
			stateFile, holder, path)
	}
	if err != nil {
		_ = fh.Close()
		return nil, fmt.Errorf("lock state file %s: %w", stateFile, err)
	}
	if err := fh.Truncate(0); err == nil {
		_, _ = fh.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return fh, nil
}

// unlockState releases the lock lockState took and closes its file. The
// flock belongs to the open file description, which a process forked
// meanwhile shares until it execs (or, holding it on purpose, longer):
// closing our descriptor alone would leave the lock held after Close
// returned, and the next follower of this very process would find the
// state file "in use". LOCK_UN on any descriptor of the description
// releases it at once.
func unlockState(fh *os.File) {
	for {
		if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_UN); err != syscall.EINTR {
			break
		}
	}
	_ = fh.Close()
}
