package pods

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/follow"
)

// ContainerRef is what a process's own cgroup says of its container: the
// pod's UID (with dashes, as the API and /var/log/pods print it) and the
// runtime's container id.
type ContainerRef struct{ PodUID, ContainerID string }

// ParseCgroup reads the content of /proc/<pid>/cgroup and returns the pod
// and container of a kubelet-managed container. Both cgroup drivers and
// both cgroup versions are understood:
//
//	systemd   0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope
//	cgroupfs  4:memory:/kubepods/burstable/pod<uid>/<id>
//
// (docker-<id>.scope and crio-<id>.scope too; guaranteed pods have no QoS
// level). The first line naming a pod and a container wins: under cgroup
// v1 every hierarchy names the same container. ok is false for a process
// outside any pod (host daemons, a cgroup namespace that hides the path).
func ParseCgroup(data []byte) (ref ContainerRef, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path; the path may hold ':'.
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if ref, ok := refFromPath(parts[2]); ok {
			return ref, true
		}
	}
	return ContainerRef{}, false
}

func refFromPath(path string) (ContainerRef, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		uid, ok := podUID(segs[i])
		if !ok {
			continue
		}
		id, ok := containerID(segs[i+1])
		if !ok {
			return ContainerRef{}, false // the pod's own cgroup (pause, or a leaf we do not know)
		}
		return ContainerRef{PodUID: uid, ContainerID: id}, true
	}
	return ContainerRef{}, false
}

// podUID recognises the pod level of both drivers: "pod<uid>" (cgroupfs)
// and "kubepods[-<qos>]-pod<uid with _>.slice" (systemd).
func podUID(seg string) (string, bool) {
	var raw string
	switch {
	case strings.HasPrefix(seg, "pod"):
		raw = seg[len("pod"):]
	case strings.HasPrefix(seg, "kubepods") && strings.HasSuffix(seg, ".slice"):
		i := strings.LastIndex(seg, "-pod")
		if i < 0 {
			return "", false
		}
		raw = strings.ReplaceAll(strings.TrimSuffix(seg[i+len("-pod"):], ".slice"), "_", "-")
	default:
		return "", false
	}
	if !isUID(raw) {
		return "", false
	}
	return raw, true
}

// isUID accepts the 8-4-4-4-12 hex form the API server assigns (static
// pods use a hash of the same form).
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if r != '-' {
				return false
			}
			continue
		}
		if !isHex(r) {
			return false
		}
	}
	return true
}

// containerID recognises the container level: "<runtime>-<id>.scope"
// (systemd) or the bare id (cgroupfs; CRI-O writes "crio-<id>").
func containerID(seg string) (string, bool) {
	id := strings.TrimSuffix(seg, ".scope")
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		id = id[i+1:]
	}
	if len(id) < 12 || len(id) > 128 {
		return "", false
	}
	for _, r := range id {
		if !isHex(r) {
			return "", false
		}
	}
	return id, true
}

func isHex(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' }

// Owner names the container a chip's process runs in.
type Owner struct{ Namespace, Pod, Container string }

// KubeletLayout resolves pod UIDs and container ids through the kubelet's
// log layout under Root (normally /var/log), which every node has and which
// needs no socket nor API server:
//
//	<Root>/pods/<namespace>_<pod>_<uid>/<container>/
//	<Root>/containers/<pod>_<namespace>_<container>-<container id>.log
//
// A layout is read once (Load) and used for every process of one scrape.
type KubeletLayout struct {
	pods       map[string][2]string // uid -> namespace, pod
	containers map[string]string    // container id -> container name
	podDirs    map[string][]string  // uid -> container directories
}

// LoadKubeletLayout lists <root>/pods and <root>/containers. A missing
// containers directory is not an error (older kubelets, or not mounted):
// a pod with one container still names it through its pods/ directory.
func LoadKubeletLayout(root string) (*KubeletLayout, error) {
	l := &KubeletLayout{pods: map[string][2]string{}, containers: map[string]string{}, podDirs: map[string][]string{}}
	pods, err := os.ReadDir(filepath.Join(root, "pods"))
	if err != nil {
		return nil, fmt.Errorf("list the kubelet's pod log directories (--pods.kubelet-logs=%s): %w", root, err)
	}
	for _, e := range pods {
		// Namespaces and pod names are DNS labels/subdomains: no '_'.
		parts := strings.Split(e.Name(), "_")
		if len(parts) != 3 || !isUID(parts[2]) {
			continue
		}
		l.pods[parts[2]] = [2]string{parts[0], parts[1]}
	}
	ctrs, err := os.ReadDir(filepath.Join(root, "containers"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list the kubelet's container log links: %w", err)
	}
	for _, e := range ctrs {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		dash := strings.LastIndexByte(name, '-')
		if dash < 0 {
			continue
		}
		id := name[dash+1:]
		// <pod>_<namespace>_<container>
		parts := strings.SplitN(name[:dash], "_", 3)
		if len(parts) != 3 {
			continue
		}
		l.containers[id] = parts[2]
	}
	return l, nil
}

// Owner returns the namespace, pod and container of ref. ok is false when
// the pod has no directory under pods/ (not a kubelet pod, or its logs
// already removed). The container is empty when neither a containers/ link
// nor a single container directory names it.
func (l *KubeletLayout) Owner(root string, ref ContainerRef) (Owner, bool) {
	np, ok := l.pods[ref.PodUID]
	if !ok {
		return Owner{}, false
	}
	o := Owner{Namespace: np[0], Pod: np[1], Container: l.containers[ref.ContainerID]}
	if o.Container == "" {
		dirs, seen := l.podDirs[ref.PodUID]
		if !seen {
			entries, _ := os.ReadDir(filepath.Join(root, "pods", np[0]+"_"+np[1]+"_"+ref.PodUID))
			for _, e := range entries {
				if e.IsDir() {
					dirs = append(dirs, e.Name())
				}
			}
			l.podDirs[ref.PodUID] = dirs
		}
		if len(dirs) == 1 {
			o.Container = dirs[0]
		}
	}
	return o, true
}

// ReadProcessCgroup reads <procfs>/<pid>/cgroup.
func ReadProcessCgroup(procfs string, pid int) (ContainerRef, bool, error) {
	data, err := os.ReadFile(filepath.Join(procfs, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return ContainerRef{}, false, err
	}
	ref, ok := ParseCgroup(data)
	return ref, ok, nil
}

// PodOfProcess returns what names the pod a host pid's own cgroup puts it
// in, for the log follower (follow.Deps.PodOfProcess): its pod UID, and its
// namespace, pod and container where the kubelet's log layout under
// kubeletLogs names them. Identity a tenant cannot write
// (docs/security.md).
func PodOfProcess(procfs, kubeletLogs string) func(pid int) (follow.ProcessPod, bool) {
	return func(pid int) (follow.ProcessPod, bool) {
		ref, ok, err := ReadProcessCgroup(procfs, pid)
		if err != nil || !ok {
			return follow.ProcessPod{}, false
		}
		pod := follow.ProcessPod{UID: ref.PodUID}
		if kubeletLogs != "" {
			// The names of the pod, from the kubelet's log layout
			// (/var/log/pods/<ns>_<pod>_<uid>).
			if layout, err := LoadKubeletLayout(kubeletLogs); err == nil {
				if o, ok := layout.Owner(kubeletLogs, ref); ok {
					pod.Namespace, pod.Pod, pod.Container = o.Namespace, o.Pod, o.Container
				}
			}
		}
		return pod, true
	}
}
