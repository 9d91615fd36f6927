package bundle

import (
	"path"
	"strings"
)

// Kind is the kind of log a file holds.
type Kind int

// Kinds of files read.
const (
	// KindPlog is a CANN host log (plog-<pid>_<time>.log).
	KindPlog Kind = iota
	// KindDevicePlog is a CANN device log (device-<pid>_<time>.log).
	KindDevicePlog
	// KindScreen is a training screen log (any other *.log, *.txt, a
	// kubelet rotation).
	KindScreen
)

// fileClass is what diagnose does with a file of a bundle.
type fileClass struct {
	kind Kind
	// group is the rotation group: the files that one writer produced, read
	// in name order into one sink. For CANN logs it is the
	// directory plus "plog-<pid>" or "device-<pid>" (a new file per 20 MB,
	// named by its creation time, so name order is write order); a screen
	// log is its own group.
	group string
	// gzipped is set for kubelet's compressed rotations (0.log.<time>.gz):
	// they are decompressed while read.
	gzipped bool
}

// cannTimeDigits is the length of the YYYYMMDDhhmmssmmm part of CANN log
// names (plog-<pid>_<17 digits>.log).
const cannTimeDigits = 17

// classify says how to read the file at rel (a slash-separated path inside
// the bundle), or false to skip it. CANN logs are recognised by name exactly
// as the collector does: plog-<pid>_<17 digits>.log and
// device-<pid>_<17 digits>.log. Every other *.log and *.txt file, kubelet's
// rotations (0.log.20250101-120000) and their .gz forms are screen logs;
// whether a screen line is plain text, CRI or Docker json is decided per
// line by the state.
func classify(rel string) (fileClass, bool) {
	if _, ok := knownSkip(rel); ok {
		return fileClass{}, false
	}
	dir, name := path.Split(rel)
	if prefix, ok := cannLogPrefix(name); ok {
		kind := KindPlog
		if prefix == "device-" {
			kind = KindDevicePlog
		}
		return fileClass{kind: kind, group: dir + name[:strings.IndexByte(name, '_')]}, true
	}
	gz := false
	base := name
	if strings.HasSuffix(base, ".gz") {
		gz, base = true, strings.TrimSuffix(base, ".gz")
	}
	if strings.HasSuffix(base, ".log") || strings.HasSuffix(base, ".txt") || isKubeletRotation(base) {
		return fileClass{kind: KindScreen, group: rel, gzipped: gz}, true
	}
	return fileClass{}, false
}

// cannLogPrefix recognises plog-<pid>_<17 digits>.log and
// device-<pid>_<17 digits>.log and returns the prefix.
func cannLogPrefix(name string) (string, bool) {
	var prefix string
	switch {
	case strings.HasPrefix(name, "plog-"):
		prefix = "plog-"
	case strings.HasPrefix(name, "device-"):
		prefix = "device-"
	default:
		return "", false
	}
	rest := name[len(prefix):]
	us := strings.IndexByte(rest, '_')
	if us < 1 || us > 10 || !allDigits(rest[:us]) {
		return "", false
	}
	ts := rest[us+1:]
	if len(ts) != cannTimeDigits+len(".log") || !strings.HasSuffix(ts, ".log") || !allDigits(ts[:cannTimeDigits]) {
		return "", false
	}
	return prefix, true
}

// isKubeletRotation recognises <n>.log.<YYYYMMDD-hhmmss> (kubelet renames
// the container log it rotates).
func isKubeletRotation(name string) bool {
	i := strings.Index(name, ".log.")
	if i < 0 {
		return false
	}
	suffix := name[i+len(".log."):]
	if len(suffix) < 8 {
		return false
	}
	for j := 0; j < len(suffix); j++ {
		c := suffix[j]
		if (c < '0' || c > '9') && c != '-' && c != '_' && c != 'T' && c != 'Z' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// cannDirNames are directory names that belong to a CANN log root or to the
// usual places one is collected from; a bundle level holding one of them is
// a node's own tree, not a list of nodes.
var cannDirNames = map[string]bool{
	"run": true, "debug": true, "security": true, "plog": true,
	"log": true, "ascend": true,
	// A MindCluster collection's CANN logs (collect.go).
	"process_log": true,
}

// kindName names a source kind as the report counts files.
func kindName(k Kind) string {
	switch k {
	case KindPlog:
		return "plog"
	case KindDevicePlog:
		return "device"
	}
	return "screen"
}

// isCANNDir reports whether a directory name is part of a node's CANN tree.
func isCANNDir(name string) bool {
	if cannDirNames[name] {
		return true
	}
	// device-<id> and device-app-<pid> directories.
	return strings.HasPrefix(name, "device-") && len(name) > len("device-")
}
