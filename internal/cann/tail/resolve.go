package tail

import (
	"errors"
	"log/slog"
	"path"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A job's log tree is untrusted input: the job chooses every name, link and
// mount below its log root. Names below a root are therefore resolved one
// component at a time from a descriptor, never as a path string the kernel
// would resolve in the exporter's own file system:
//
//   - a discovered root (<procfs>/<pid>/root/<its root>) is opened from a
//     descriptor on <procfs>/<pid>/root with RESOLVE_IN_ROOT: an absolute
//     or ".." link in the process's root path stays inside that process's
//     root, and magic links (/proc/<other pid>/root) are refused;
//   - below any root, the sort directories and CANN's own directories are
//     opened with RESOLVE_NO_SYMLINKS and, unless Config.CrossFilesystems,
//     RESOLVE_NO_XDEV: a symlink or a mount point there is not entered
//     (the kernel refuses it before it asks the other file system anything,
//     so a hung FUSE mount is not even touched).
//
// Where the kernel has no openat2 (before 5.6) each component is opened
// with O_NOFOLLOW and its device compared with its parent's; a discovered
// root's own path is then resolved the same way, so a root whose path
// holds a symlink inside the container is not read (logged once).

// Refusal reasons, the keys of Stats.Refused.
const (
	refusedSymlink = "symlink"          // a link where CANN writes a directory
	refusedXDev    = "cross_filesystem" // a mount point below a root
	refusedRemote  = "remote_filesystem"
)

// RefusedReasons lists every key Stats.Refused can hold.
var RefusedReasons = []string{refusedSymlink, refusedXDev, refusedRemote}

var (
	openat2Once    sync.Once
	openat2Missing bool
)

// haveOpenat2 reports whether the kernel has openat2, logging the fallback
// once per process.
func haveOpenat2(log *slog.Logger) bool {
	openat2Once.Do(func() {
		fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
		if err == nil {
			_ = unix.Close(fd)
			return
		}
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			// EPERM: a seccomp filter that does not know the call.
			openat2Missing = true
			log.Warn("openat2 unavailable (kernel before 5.6, or blocked by seccomp): CANN log directories are opened one "+
				"component at a time with O_NOFOLLOW instead, and a discovered log root whose path holds a symlink is not read",
				"err", err)
		}
	})
	return !openat2Missing
}

// errRefused wraps why a name below a root was not entered.
type errRefused struct{ reason string }

func (e *errRefused) Error() string { return "not followed: " + e.reason }

// openInRoot opens the directory rel (an absolute path inside the process's
// root, already cleaned) from anchor (<procfs>/<pid>/root), resolving every
// component inside that root.
func openInRoot(anchor, rel string, log *slog.Logger) (int, error) {
	afd, err := unix.Open(anchor, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(afd)
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	if rel == "" {
		rel = "."
	}
	if haveOpenat2(log) {
		for {
			fd, err := unix.Openat2(afd, rel, &unix.OpenHow{
				Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
			})
			if err == unix.EAGAIN || err == unix.EINTR {
				continue // a rename raced the lookup: try again
			}
			return fd, err
		}
	}
	// Fallback: component by component, no link followed (mount points
	// are: the log root is often a volume).
	fd, err := unix.Openat(afd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	for _, c := range strings.Split(rel, "/") {
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

// openDirBelow opens the directory name (one component) below the directory
// dirfd, whose device is dev: no symlink, and no other file system unless
// cross is set.
func openDirBelow(dirfd int, name string, dev uint64, cross bool, log *slog.Logger) (int, error) {
	if haveOpenat2(log) {
		how := &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		if !cross {
			how.Resolve |= unix.RESOLVE_NO_XDEV
		}
		for {
			fd, err := unix.Openat2(dirfd, name, how)
			switch {
			case err == unix.EAGAIN || err == unix.EINTR:
				continue
			case err == unix.ELOOP:
				return -1, &errRefused{refusedSymlink}
			case err == unix.EXDEV:
				return -1, &errRefused{refusedXDev}
			}
			return fd, err
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		// O_NOFOLLOW|O_DIRECTORY on a link fails with either.
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, &errRefused{refusedSymlink}
		}
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	if !cross && st.Dev != dev {
		_ = unix.Close(fd)
		return -1, &errRefused{refusedXDev}
	}
	return fd, nil
}

// remoteFS names the file systems a discovered root may not be on unless
// Config.CrossFilesystems: their reads can hang for as long as their server
// (a FUSE daemon the job runs, an NFS server) pleases.
var remoteFS = map[int64]string{
	0x65735546: "fuse",
	0x6969:     "nfs",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x517b:     "smb",
	0x00c36400: "ceph",
	0x01021997: "9p",
	0x47504653: "gpfs",
	0x0bd00bd0: "lustre",
}

// remoteKind returns the name of fd's file system if it is a remote or
// user-space one, else "".
func remoteKind(fd int) string {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return ""
	}
	return remoteFS[int64(sfs.Type)]
}

func fdDev(fd int) (uint64, error) {
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return 0, err
	}
	return uint64(st.Dev), nil
}

// The same rules for the other readers of a CANN root (the cannlog
// collector's zone inference): every open is descriptor-relative, follows
// no link and, unless cross, enters no other file system, and a file's
// type is checked with fstat before anything is read. Callers run them on
// a goroutine of their own with a deadline: they block as the file system
// pleases.

// OpenRootDir opens a CANN log root: a configured one (anchor "") by its
// path, the operator's; a discovered one (Path and Anchor of a ProcRoot)
// resolved inside anchor. A discovered root on a FUSE or network file
// system is refused unless cross.
func OpenRootDir(path, anchor string, cross bool) (int, error) {
	if anchor == "" {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	fd, err := openInRoot(anchor, strings.TrimPrefix(path, anchor), slog.New(slog.DiscardHandler))
	if err != nil {
		return -1, err
	}
	if kind := remoteKind(fd); kind != "" && !cross {
		_ = syscall.Close(fd)
		return -1, &errRefused{refusedRemote}
	}
	return fd, nil
}

// OpenDirBelow opens the directory name (one component) below dirfd: no
// symlink, and no mount point unless cross.
func OpenDirBelow(dirfd int, name string, cross bool) (int, error) {
	dev, err := fdDev(dirfd)
	if err != nil {
		return -1, err
	}
	return openDirBelow(dirfd, name, dev, cross, slog.New(slog.DiscardHandler))
}

// StatBelow stats the name below dirfd without following a link.
func StatBelow(dirfd int, name string, st *syscall.Stat_t) error {
	return dirRef{fd: dirfd, name: name}.stat(st)
}

// OpenFileBelow opens the regular file name below dirfd (no link followed,
// non-blocking, no controlling terminal) and checks with fstat that it is
// a regular file before it returns it.
func OpenFileBelow(dirfd int, name string) (int, syscall.Stat_t, error) {
	return openVerifiedAt(dirRef{fd: dirfd, name: name}, "", fileID{})
}

// ListNames returns up to max names of the directory dirfd, and whether
// there were more.
func ListNames(dirfd, max int) ([]string, bool, error) { return listDir("", dirfd, max) }

// LayoutDir reports whether name is one of CANN's directories below a sort
// directory (plog, device-<id>).
func LayoutDir(name string) bool { return layoutDir(name) }

// Pread reads len(p) bytes at off (EINTR retried).
func Pread(fd int, p []byte, off int64) (int, error) { return pread(fd, p, off) }
