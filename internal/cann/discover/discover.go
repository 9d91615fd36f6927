// Package discover owns finding a running process's CANN log root through
// the host's /proc (--path.procfs), so that the cannlog collector reads the
// logs a training container writes inside itself without a host path.
//
// For one host pid it reads two files and nothing else: <procfs>/<pid>/status
// for the pid the process has in its own pid namespace (NSpid: the pid in
// its plog file names and line headers) and its uid, and
// <procfs>/<pid>/environ, of which it keeps ASCEND_PROCESS_LOG_PATH,
// ASCEND_WORK_PATH and HOME only: every other variable is skipped byte by
// byte as it is read and the read buffer is cleared, so no other value is
// ever held, logged or exported. The root is resolved as CANN resolves it
// (ASCEND_PROCESS_LOG_PATH, else ASCEND_WORK_PATH/log, else $HOME/ascend/log)
// and reached through <procfs>/<pid>/root, the process's own view of its
// mount namespace.
package discover

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// errESRCH is what reading the environ of a process that is exiting gives.
var errESRCH error = syscall.ESRCH

// The variables read from a process's environment, in CANN's precedence.
const (
	VarProcessLogPath = "ASCEND_PROCESS_LOG_PATH"
	VarWorkPath       = "ASCEND_WORK_PATH"
	VarHome           = "HOME"
)

// Limits on what is read: a path longer than PATH_MAX is not a path CANN
// could open, and environ is bounded by the kernel's ARG_MAX anyway.
const (
	maxValueLen   = 4096
	maxEnvironLen = 16 << 20
	maxStatusLen  = 64 << 10
	maxNameLen    = len(VarProcessLogPath)
)

// Errors of Resolve, wrapped with the path and the cause.
var (
	// ErrGone: the process exited (its /proc entry is gone).
	ErrGone = errors.New("process exited")
	// ErrPermission: the exporter may not read the process's environ or
	// root (run as root, or with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH).
	ErrPermission = errors.New("permission denied")
	// ErrNoRoot: none of the variables is set and the uid's home is not
	// known (not root).
	ErrNoRoot = errors.New("no CANN log root: ASCEND_PROCESS_LOG_PATH, ASCEND_WORK_PATH and HOME unset")
)

// Env holds the three log variables of one process; a variable that is not
// set (or set empty, which CANN ignores) is "".
type Env struct {
	ProcessLogPath, WorkPath, Home string
}

// ParseEnviron reads a NUL-separated environment (/proc/<pid>/environ) and
// keeps the three log variables only. The first occurrence of a name wins,
// as for getenv. A value longer than PATH_MAX is dropped.
func ParseEnviron(r io.Reader) (Env, error) {
	var env Env
	buf := make([]byte, 4096)
	defer clear(buf)
	var (
		name    [maxNameLen + 1]byte
		nameLen int
		inValue bool
		skip    bool // the rest of this entry is not ours
		dst     *string
		val     []byte
		total   int
	)
	var seen [3]bool
	slot := func() (*string, int) {
		switch string(name[:nameLen]) {
		case VarProcessLogPath:
			return &env.ProcessLogPath, 0
		case VarWorkPath:
			return &env.WorkPath, 1
		case VarHome:
			return &env.Home, 2
		}
		return nil, -1
	}
	endEntry := func() {
		if inValue && dst != nil && val != nil {
			*dst = string(val)
		}
		clear(val)
		val, dst, nameLen, inValue, skip = val[:0], nil, 0, false, false
	}
	for {
		n, err := r.Read(buf)
		total += n
		for _, b := range buf[:n] {
			switch {
			case b == 0:
				endEntry()
			case skip:
			case inValue:
				if len(val) >= maxValueLen {
					clear(val)
					val, dst, skip = val[:0], nil, true
					continue
				}
				val = append(val, b)
			case b == '=':
				d, i := slot()
				if d == nil || seen[i] {
					skip = true
					continue
				}
				seen[i] = true
				dst, inValue, val = d, true, make([]byte, 0, 64)
			default:
				if nameLen == len(name) {
					skip = true
					continue
				}
				name[nameLen] = b
				nameLen++
			}
		}
		if total > maxEnvironLen {
			endEntry()
			return env, fmt.Errorf("environ longer than %d bytes", maxEnvironLen)
		}
		if err == io.EOF {
			endEntry() // an entry the kernel cut without its NUL
			return env, nil
		}
		if err != nil {
			clear(val)
			return env, err
		}
	}
}

// Root is the CANN log root these variables give, by CANN's precedence:
// ASCEND_PROCESS_LOG_PATH, else ASCEND_WORK_PATH/log, else
// $HOME/ascend/log; without HOME, root's home /root for uid 0. via names
// the variable that decided ("" for the uid default).
func (e Env) Root(uid int) (root, via string, err error) {
	switch {
	case e.ProcessLogPath != "":
		return e.ProcessLogPath, VarProcessLogPath, nil
	case e.WorkPath != "":
		return path.Join(e.WorkPath, "log"), VarWorkPath, nil
	case e.Home != "":
		return path.Join(e.Home, "ascend", "log"), VarHome, nil
	case uid == 0:
		return "/root/ascend/log", "", nil
	}
	return "", "", ErrNoRoot
}

// Status is what is read of /proc/<pid>/status.
type Status struct {
	// NSpid is the pid in the process's innermost pid namespace (the last
	// field of NSpid:), 0 when the kernel prints no NSpid line (before
	// 4.1: the caller uses the host pid).
	NSpid int
	// UID is the real uid, -1 unknown.
	UID int
}

// ParseStatus reads the NSpid and Uid lines of /proc/<pid>/status.
func ParseStatus(r io.Reader) (Status, error) {
	st := Status{UID: -1}
	sc := bufio.NewScanner(io.LimitReader(r, maxStatusLen))
	sc.Buffer(make([]byte, 0, 4096), maxStatusLen)
	for sc.Scan() {
		line := sc.Text()
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "NSpid":
			n, err := strconv.Atoi(fields[len(fields)-1])
			if err != nil || n <= 0 {
				return st, fmt.Errorf("bad NSpid line %q", line)
			}
			st.NSpid = n
		case "Uid":
			n, err := strconv.Atoi(fields[0])
			if err != nil || n < 0 {
				return st, fmt.Errorf("bad Uid line %q", line)
			}
			st.UID = n
		}
	}
	return st, sc.Err()
}

// ParseStartTime reads the start time of a process from /proc/<pid>/stat:
// field 22, in clock ticks after boot. A pid and its start time name one
// process for as long as the node runs: a pid reused by a new process has
// another start time. The command name (field 2) may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func ParseStartTime(r io.Reader) (uint64, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxStatusLen))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("stat without a command name: %.64q", b)
	}
	// After ") " come field 3 (state) onwards: field 22 is the 20th.
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("stat with %d fields after the command name, want at least 20", len(fields))
	}
	n, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat start time %q: %w", fields[19], err)
	}
	return n, nil
}

// StartTime reads the start time of host pid pid below procfs (see
// ParseStartTime).
func StartTime(procfs string, pid int) (uint64, error) {
	return readWith(path.Join(procfs, strconv.Itoa(pid), "stat"), ParseStartTime)
}

// Process is a process's CANN log root as discovery found it.
type Process struct {
	HostPID int
	// Start is its start time (ParseStartTime); 0 where procfs has no
	// stat file.
	Start uint64
	// NSpid is its pid in its own pid namespace: the pid of its plog
	// names (HostPID where the kernel does not say).
	NSpid int
	// Root is the log root as the process sees it; Via the variable that
	// chose it.
	Root, Via string
	// Path reaches Root from the exporter: <procfs>/<pid>/root<Root> (or
	// <procfs>/<pid>/cwd/<Root> for a relative one).
	Path string
	// UID is its real uid (status), -1 unknown: who the kernel says
	// writes its logs where no pod's cgroup does.
	UID int
	// Cgroup is the cgroup of the container it runs in
	// (ParseContainerCgroup), "" outside a container or where procfs has
	// no cgroup file: with UID, who writes its logs off Kubernetes.
	Cgroup string
	// Anchor is the directory Path is resolved inside:
	// <procfs>/<pid>/root (or <procfs>/<pid>/cwd). The follower opens the
	// rest of Path from it with RESOLVE_IN_ROOT, so that a link in the
	// process's tree cannot lead into the exporter's file system.
	Anchor string
}

// Resolve finds the CANN log root of host pid pid below procfs. It does
// not check that the root exists: Logs does.
func Resolve(procfs string, pid int) (Process, error) {
	p := Process{HostPID: pid, NSpid: pid, UID: -1}
	base := path.Join(procfs, strconv.Itoa(pid))
	start, err := readWith(path.Join(base, "stat"), ParseStartTime)
	switch {
	case err == nil:
		p.Start = start
	case !errors.Is(err, fs.ErrNotExist):
		return p, err
	}
	st, err := readWith(path.Join(base, "status"), ParseStatus)
	if err != nil {
		return p, err
	}
	if st.NSpid > 0 {
		p.NSpid = st.NSpid
	}
	p.UID = st.UID
	if cg, err := readWith(path.Join(base, "cgroup"), ParseContainerCgroup); err == nil {
		// Unreadable: the uid alone names the owner, as before.
		p.Cgroup = cg
	}
	env, err := readWith(path.Join(base, "environ"), ParseEnviron)
	if err != nil {
		return p, err
	}
	if p.Root, p.Via, err = env.Root(st.UID); err != nil {
		return p, fmt.Errorf("pid %d: %w", pid, err)
	}
	// The value is the process's to choose: cleaned as an absolute path
	// first, a "../" cannot climb out of its root (or working directory)
	// into the exporter's own file system.
	inside := path.Clean("/" + p.Root)
	p.Anchor = path.Join(base, "root")
	if !path.IsAbs(p.Root) {
		// CANN opens a relative path from its working directory.
		p.Anchor = path.Join(base, "cwd")
	}
	p.Path = path.Join(p.Anchor, inside)
	return p, nil
}

func readWith[T any](name string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(name)
	if err != nil {
		return zero, classify(err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, fmt.Errorf("read %s: %w", name, classify(err))
	}
	return v, nil
}

// classify wraps the errors a caller acts on in ErrGone and ErrPermission.
func classify(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errESRCH):
		return fmt.Errorf("%w: %w", ErrGone, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", ErrPermission, err)
	}
	return err
}

// Logs reports whether the root holds a CANN log of process nspid
// (plog-<nspid>_*.log or device-<nspid>_*.log under run/ or debug/): a
// readable root where the process has not written yet is not its logs.
// root is opened as given; below it the walk is LogsInRoot's.
func Logs(root string, nspid int) (bool, error) {
	return LogsInRoot(root, "/", nspid)
}

// MaxNamesListed caps the names LogsInRoot reads per call (and per
// process): the follower's DefaultMaxEntriesPerRoot. CANN keeps 10 files per
// process and directory, so a tree past it was not made by CANN; a job that
// fills a directory with a million names costs a bounded read every look,
// not a million-entry slice.
const MaxNamesListed = 100_000

// maxNames is MaxNamesListed; tests lower it.
var maxNames = MaxNamesListed

// namesChunk is how many names are read per getdents batch: only the
// batch is held, never the whole directory.
const namesChunk = 1024

// openat2 is unix.Openat2; tests replace it to stand for a kernel without
// it (or a seccomp filter that refuses it).
var openat2 = unix.Openat2

// LogsInRoot is Logs for a discovered process: rel (an absolute path as the
// process sees it, cleaned) is resolved inside anchor (<procfs>/<pid>/root)
// with openat2's RESOLVE_IN_ROOT, and below it only CANN's layout is
// entered (run/ and debug/, then plog/ and device-<id>/), each a directory
// of the same file system (no symlink, no mount point): a link in the
// job's tree (`run -> /`, `run -> /proc/<other pid>/root/…`) lists nothing
// of the exporter's file system or another job's. At most MaxNamesListed
// names are read. Where the kernel has no openat2 (or seccomp refuses it)
// every component is opened with O_NOFOLLOW from the anchor's descriptor
// instead, and a mount point is recognised by its device: never a path
// string the kernel would resolve in the exporter's own file system.
func LogsInRoot(anchor, rel string, nspid int) (bool, error) {
	afd, err := unix.Open(anchor, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, classify(err)
	}
	defer unix.Close(afd)
	rel = strings.TrimLeft(path.Clean("/"+rel), "/")
	var rfd int
	fallback := false
	rfd, err = openat2(afd, rel+"/.", &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		fallback = true
		rfd, err = openNoFollow(afd, rel)
	}
	if err != nil {
		return false, classify(err)
	}
	defer unix.Close(rfd)
	plog := "plog-" + strconv.Itoa(nspid) + "_"
	device := "device-" + strconv.Itoa(nspid) + "_"
	budget := maxNames
	var firstErr error
	for _, sd := range []string{"run", "debug"} {
		sfd, err := openBelow(rfd, sd, fallback)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && firstErr == nil {
				firstErr = err
			}
			continue
		}
		var subs []string
		err = eachName(sfd, &budget, func(name string) bool {
			if layoutDir(name) && len(subs) < maxLayoutDirs {
				subs = append(subs, name)
			}
			return false
		})
		if err != nil && firstErr == nil {
			firstErr = err
		}
		for _, sub := range subs {
			dfd, err := openBelow2(rfd, sd, sub, fallback)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) && firstErr == nil {
					firstErr = err
				}
				continue
			}
			found := false
			err = eachName(dfd, &budget, func(name string) bool {
				found = strings.HasSuffix(name, ".log") && (strings.HasPrefix(name, plog) || strings.HasPrefix(name, device))
				return found
			})
			if found {
				return true, nil
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return false, firstErr
}

// maxLayoutDirs bounds the device-<id>/ directories entered per sort
// directory (the follower's DefaultMaxDirsPerRoot).
const maxLayoutDirs = 128

// layoutDir reports whether name is one of CANN's directories below a sort
// directory: plog, or device-<id> (RT log_file_info.h).
func layoutDir(name string) bool {
	if name == "plog" {
		return true
	}
	id, ok := strings.CutPrefix(name, "device-")
	if !ok || id == "" || len(id) > 4 {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// errNamesCapped says a listing stopped at MaxNamesListed.
var errNamesCapped = errors.New("too many names below the log root (more than CANN's layout holds): the rest not listed")

// eachName reads the names of the directory fd in batches, calling fn for
// each until it returns true, within *budget names. It closes fd.
func eachName(fd int, budget *int, fn func(string) bool) error {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	for {
		if *budget <= 0 {
			return errNamesCapped
		}
		names, err := f.Readdirnames(min(namesChunk, *budget))
		*budget -= len(names)
		for _, n := range names {
			if fn(n) {
				return nil
			}
		}
		if err == io.EOF || (err == nil && len(names) == 0) {
			return nil
		}
		if err != nil {
			return classify(err)
		}
	}
}

// openBelow opens the directory name below dirfd: no symlink, no other file
// system (openat2; with fallback, O_NOFOLLOW and a device check). A link or
// a mount point where a directory is expected reads as absent.
func openBelow(dirfd int, name string, fallback bool) (int, error) {
	if !fallback {
		fd, err := openat2(dirfd, name, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV,
		})
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			return -1, fs.ErrNotExist
		}
		if err != nil {
			return -1, classify(err)
		}
		return fd, nil
	}
	var pst unix.Stat_t
	if err := unix.Fstat(dirfd, &pst); err != nil {
		return -1, classify(err)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fs.ErrNotExist
	}
	if err != nil {
		return -1, classify(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != pst.Dev {
		_ = unix.Close(fd)
		return -1, fs.ErrNotExist
	}
	return fd, nil
}

// openBelow2 opens <a>/<b> below dirfd, each component as openBelow does.
func openBelow2(dirfd int, a, b string, fallback bool) (int, error) {
	fd, err := openBelow(dirfd, a, fallback)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	return openBelow(fd, b, fallback)
}

// openNoFollow opens the directory rel below dirfd one component at a time
// with O_NOFOLLOW (openat2 unavailable): a link anywhere in a discovered
// root's path is not followed, so the root is not read (mount points are
// crossed: the log root is often a volume).
func openNoFollow(dirfd int, rel string) (int, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "" || rel == "." {
		return fd, err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			_ = unix.Close(fd)
			return -1, fs.ErrNotExist
		}
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}
