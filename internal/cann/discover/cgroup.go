package discover

import (
	"bufio"
	"io"
	"path"
	"strconv"
	"strings"
)

// maxCgroupLen bounds what is read of /proc/<pid>/cgroup.
const maxCgroupLen = 64 << 10

// ParseContainerCgroup reads /proc/<pid>/cgroup and returns the cgroup of
// the container the process runs in, "" when it runs in none the kernel's
// paths name (a process of the host: a login session, a systemd unit).
//
// Off Kubernetes a uid is no tenant: two containers run as root are two
// owners. Their cgroups tell them apart, and a process in a container
// cannot move itself out of its container's cgroup (nor into another's:
// that takes write access to the common ancestor's cgroup.procs). The
// container's own level is kept and whatever the process created below it
// is cut, so that sub-cgroups a process makes for itself do not make it
// several owners. A process outside a container gets "": its uid alone is
// its owner, because a user can make scopes of its own at will (systemd
// run --user --scope) and would otherwise mint owners to widen its share
// of the caps.
//
// The cgroup v2 line (0::) is used where the kernel prints one, else the
// first v1 hierarchy of pids, memory, cpu or name=systemd that names a
// container. A container level is a path segment that holds a runtime's
// container id: 64 hex digits, alone (cgroupfs driver, /docker/<id>) or
// in a systemd scope (docker-<id>.scope, cri-containerd-<id>.scope,
// crio-<id>.scope, libpod-<id>.scope), or an LXC payload (lxc.payload.<name>).
func ParseContainerCgroup(r io.Reader) (string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxCgroupLen))
	sc.Buffer(make([]byte, 0, 4096), maxCgroupLen)
	var v2, v1 string
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path; the path may hold ':'.
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctr := containerLevel(parts[2])
		if ctr == "" {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = ctr
			continue
		}
		if v1 == "" && hasController(parts[1]) {
			v1 = ctr
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if v2 != "" {
		return v2, nil
	}
	return v1, nil
}

func hasController(list string) bool {
	for _, c := range strings.Split(list, ",") {
		switch c {
		case "pids", "memory", "cpu", "name=systemd":
			return true
		}
	}
	return false
}

// containerLevel is p up to and including its first segment that is a
// container's, "" when none is.
func containerLevel(p string) string {
	p = path.Clean("/" + p)
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		if isContainerSegment(s) {
			return "/" + strings.Join(segs[:i+1], "/")
		}
	}
	return ""
}

func isContainerSegment(s string) bool {
	if strings.HasPrefix(s, "lxc.payload.") && len(s) > len("lxc.payload.") {
		return true
	}
	id := strings.TrimSuffix(s, ".scope")
	if i := strings.LastIndexAny(id, "-:"); i >= 0 {
		id = id[i+1:]
	}
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ContainerCgroup reads the container cgroup of host pid pid below procfs
// (ParseContainerCgroup).
func ContainerCgroup(procfs string, pid int) (string, error) {
	return readWith(path.Join(procfs, strconv.Itoa(pid), "cgroup"), ParseContainerCgroup)
}
