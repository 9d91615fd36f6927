package tail

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Kind says which family of log a followed file belongs to.
type Kind int

const (
	// KindPlog is a host-side CANN process log, plog-<pid>_<17 digits>.log.
	KindPlog Kind = iota
	// KindDevicePlog is a device-side application log sent back to the
	// host, device-<pid>_<17 digits>.log (under device-<id>/ directories).
	KindDevicePlog
	// KindScreen is a training screen log matched by a --cannlog.screen-log-path glob
	// (plain stdout capture or a Kubernetes CRI log).
	KindScreen
)

func (k Kind) String() string {
	switch k {
	case KindPlog:
		return "plog"
	case KindDevicePlog:
		return "device"
	case KindScreen:
		return "screen"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// File describes one followed file. The pointer handed to Poll's handler is
// stable for as long as the file is followed, so callers may use it as a map
// key; Path is updated in place when a followed file is renamed and still
// matches (kubelet rotation under a glob that covers the rotated name).
type File struct {
	Path string
	Kind Kind
	// PID comes from the plog/device file name; 0 for screen logs.
	PID int
	// ProcRoot is the Path of the ProcRoot the file was reached through
	// (also when a configured root reaches it too and Path is under that);
	// "" otherwise. It names the caller's row of that process: which host
	// process owns the file is the caller's to know, not the follower's.
	ProcRoot string
	// Namespace, Pod and Container come from Kubernetes log paths
	// (/var/log/pods/<ns>_<pod>_<uid>/<container>/N.log or
	// /var/log/containers/<pod>_<ns>_<container>-<id>.log); empty otherwise.
	Namespace, Pod, Container string
}

// cannTimeDigits is the length of the YYYYMMDDhhmmssmmm part of CANN log
// names (plog_file_mgr.c formats it with "%04d%02d%02d%02d%02d%02d%03ld").
const cannTimeDigits = 17

// parseCANNName recognises plog-<pid>_<17 digits>.log and
// device-<pid>_<17 digits>.log. Anything else (device-0 directories,
// slogdlog, editor backups) is not followed.
func parseCANNName(name string) (kind Kind, pid int, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, "plog-"):
		kind, rest = KindPlog, name[len("plog-"):]
	case strings.HasPrefix(name, "device-"):
		kind, rest = KindDevicePlog, name[len("device-"):]
	default:
		return 0, 0, false
	}
	us := strings.IndexByte(rest, '_')
	if us < 1 || us > 10 || !allDigits(rest[:us]) {
		return 0, 0, false
	}
	ts := rest[us+1:]
	if len(ts) != cannTimeDigits+len(".log") || !strings.HasSuffix(ts, ".log") || !allDigits(ts[:cannTimeDigits]) {
		return 0, 0, false
	}
	if rest[0] == '0' && us > 1 {
		// Only the canonical spelling of a pid: CANN prints %d, and a
		// zero-padded name would let one process's tree claim the files
		// of another pid's spelling (plog-07_ for pid 7).
		return 0, 0, false
	}
	p, err := strconv.Atoi(rest[:us])
	if err != nil {
		return 0, 0, false
	}
	return kind, p, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// cannGroup is the rotation group of a CANN log: one writer (pid) in one
// directory. Within a group only the newest file is written to; the others
// are closed (CANN chmods them 0440) and can be sealed once read.
func cannGroup(path string) string {
	dir, name := filepath.Split(path)
	us := strings.IndexByte(name, '_')
	if us < 0 {
		return path
	}
	return dir + name[:us]
}

// podLabels extracts namespace, pod and container from the paths the
// kubelet uses for container logs. Kubernetes names cannot contain '_', so
// splitting on it is unambiguous.
func podLabels(path string) (ns, pod, container string) {
	dir, file := filepath.Split(filepath.Clean(path))
	dir = strings.TrimSuffix(dir, string(filepath.Separator))
	parent, cont := filepath.Split(dir)
	parent = strings.TrimSuffix(parent, string(filepath.Separator))
	grand, podDir := filepath.Split(parent)
	if filepath.Base(grand) == "pods" {
		if parts := strings.Split(podDir, "_"); len(parts) == 3 && parts[0] != "" && parts[1] != "" && cont != "" {
			return parts[0], parts[1], cont
		}
	}
	// /var/log/containers/<pod>_<ns>_<container>-<container id>.log
	if filepath.Base(dir) == "containers" && strings.HasSuffix(file, ".log") {
		parts := strings.Split(strings.TrimSuffix(file, ".log"), "_")
		if len(parts) == 3 {
			if dash := strings.LastIndexByte(parts[2], '-'); dash > 0 && parts[0] != "" && parts[1] != "" {
				return parts[1], parts[0], parts[2][:dash]
			}
		}
	}
	return "", "", ""
}
