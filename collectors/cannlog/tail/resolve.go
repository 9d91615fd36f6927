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
