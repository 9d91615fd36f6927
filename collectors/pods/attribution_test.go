package pods

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

const (
	uidA = "0b6a5e8e-6f0e-4f7c-9a51-2f4c1d3e5a01"
	uidB = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
	ctrA = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa99887766554433221100"
	ctrB = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
)

func TestParseCgroup(t *testing.T) {
	us := strings.ReplaceAll(uidA, "-", "_")
	for _, tc := range []struct {
		name, in string
		want     ContainerRef
		ok       bool
	}{
		{"systemd v2 burstable containerd",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/cri-containerd-" + ctrA + ".scope\n",
			ContainerRef{uidA, ctrA}, true},
		{"systemd v2 guaranteed (no QoS level) docker",
			"0::/kubepods.slice/kubepods-pod" + us + ".slice/docker-" + ctrA + ".scope\n",
			ContainerRef{uidA, ctrA}, true},
		{"systemd v1 besteffort cri-o, controllers first",
			"12:pids:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/crio-" + ctrA + ".scope\n" +
				"11:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/crio-" + ctrA + ".scope\n",
			ContainerRef{uidA, ctrA}, true},
		{"cgroupfs v1",
			"12:memory:/kubepods/burstable/pod" + uidA + "/" + ctrA + "\n1:name=systemd:/kubepods/burstable/pod" + uidA + "/" + ctrA + "\n",
			ContainerRef{uidA, ctrA}, true},
		{"cgroupfs v2 guaranteed", "0::/kubepods/pod" + uidA + "/" + ctrA + "\n", ContainerRef{uidA, ctrA}, true},
		{"v1 with an unnamespaced first line", "13:rdma:/\n12:memory:/kubepods/besteffort/pod" + uidA + "/" + ctrA + "\n", ContainerRef{uidA, ctrA}, true},
		{"host daemon", "0::/system.slice/containerd.service\n", ContainerRef{}, false},
		{"cgroup namespace hides the path", "0::/\n", ContainerRef{}, false},
		{"pod level only", "0::/kubepods/burstable/pod" + uidA + "\n", ContainerRef{}, false},
		{"not a uid", "0::/kubepods/burstable/podxyz/" + ctrA + "\n", ContainerRef{}, false},
		{"not a container id", "0::/kubepods/burstable/pod" + uidA + "/not-hex!\n", ContainerRef{}, false},
		{"empty", "", ContainerRef{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseCgroup([]byte(tc.in))
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseCgroup = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseCgroup(f *testing.F) {
	f.Add([]byte("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uidA, "-", "_") + ".slice/cri-containerd-" + ctrA + ".scope\n"))
	f.Add([]byte("12:memory:/kubepods/burstable/pod" + uidA + "/" + ctrA + "\n"))
	f.Add([]byte("0::/\n"))
	f.Add([]byte(":::\n::\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ref, ok := ParseCgroup(data)
		if ok && (!isUID(ref.PodUID) || ref.ContainerID == "" || !strings.Contains(string(data), ref.ContainerID)) {
			t.Errorf("ParseCgroup(%q) = %+v: not a pod uid and container id of the input", data, ref)
		}
	})
}

// kubeletNode is a fake node: a procfs tree with the cgroup files of NPU
// processes, and the kubelet's log layout. It covers shapes a test cannot
// make with real cgroups on one host (both drivers, v1 and v2, exited
// processes); TestProcessInRealKubeletCgroups moves real processes into
// real kubelet-named cgroups.
type kubeletNode struct{ procfs, logs string }

func newKubeletNode(t *testing.T) *kubeletNode {
	d := t.TempDir()
	n := &kubeletNode{procfs: filepath.Join(d, "proc"), logs: filepath.Join(d, "var-log")}
	for _, p := range []string{n.procfs, filepath.Join(n.logs, "pods"), filepath.Join(n.logs, "containers")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func (n *kubeletNode) process(t *testing.T, pid int, cgroup string) {
	d := filepath.Join(n.procfs, strconv.Itoa(pid))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "cgroup"), []byte(cgroup), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (n *kubeletNode) pod(t *testing.T, ns, pod, uid, container, id string) {
	if err := os.MkdirAll(filepath.Join(n.logs, "pods", ns+"_"+pod+"_"+uid, container), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(n.logs, "containers", pod+"_"+ns+"_"+container+"-"+id+".log")
	if err := os.Symlink(filepath.Join(n.logs, "pods", ns+"_"+pod+"_"+uid, container, "0.log"), link); err != nil {
		t.Fatal(err)
	}
}

type procTable []ascend.Process

func (p procTable) NPUProcesses(context.Context) ([]ascend.Process, error) { return p, nil }

// TestProcessWinsOverKubelet: the kubelet says job-a-0 holds chip 4/0 and
// job-b-0 chip 4/1, but the process npu-smi shows on chip 4/0 runs in
// job-b-0's container (its own cgroup says so). Chip 4/0 is job-b-0's, the
// idle chip 4/1 keeps the kubelet's answer, and one conflict is counted.
func TestProcessWinsOverKubelet(t *testing.T) {
	k := testtools.StartFakeKubelet(t,
		testtools.PodDevice{Namespace: "train", Pod: "job-a-0", Container: "main", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-8"}},
		testtools.PodDevice{Namespace: "train", Pod: "job-b-0", Container: "main", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-9"}},
		testtools.PodDevice{Namespace: "infer", Pod: "svc-0", Container: "model", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-10"}},
	)
	w := NewWatcher(Config{Socket: k.Socket}, nil)
	defer w.Close()
	w.Refresh(context.Background())

	n := newKubeletNode(t)
	n.pod(t, "train", "job-b-0", uidB, "main", ctrB)
	n.pod(t, "infer", "svc-0", uidA, "model", ctrA)
	// job-b-0's process, systemd driver, cgroup v2.
	n.process(t, 4242, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+strings.ReplaceAll(uidB, "-", "_")+".slice/cri-containerd-"+ctrB+".scope\n")
	// svc-0's process, cgroupfs driver, cgroup v1: agrees with the kubelet.
	n.process(t, 5151, "11:memory:/kubepods/burstable/pod"+uidA+"/"+ctrA+"\n10:cpu:/kubepods/burstable/pod"+uidA+"/"+ctrA+"\n")
	// A host process on chip 5/0 too (a tool run as root on the node).
	n.process(t, 6000, "0::/user.slice/user-0.slice/session-3.scope\n")
	procs := procTable{{ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: 4242}, {ChipID: ascend.ChipID{NPU: "5", Chip: "0"}, PID: 5151}, {ChipID: ascend.ChipID{NPU: "5", Chip: "0"}, PID: 6000}, {ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: 99999}}

	c := newCollector(Config{KubeletLogs: n.logs}, Deps{Watcher: w, Chips: a3Chips, Processes: procs, Procfs: n.procfs})
	want := `
# HELP ascend_npu_pod_info 1 for each container the kubelet assigned the chip to (PodResources API; a chip split into vNPUs can have several).
# TYPE ascend_npu_pod_info gauge
ascend_npu_pod_info{chip="0",container="main",namespace="train",npu="4",pod="job-b-0"} 1
ascend_npu_pod_info{chip="1",container="main",namespace="train",npu="4",pod="job-b-0"} 1
ascend_npu_pod_info{chip="0",container="model",namespace="infer",npu="5",pod="svc-0"} 1
# HELP hccl_exporter_pod_attribution_conflicts Chips whose NPU processes run in a pod (from each process's own cgroup and the kubelet's log layout) that the kubelet's PodResources answer does not assign the chip to. ascend_npu_pod_info follows the processes. Absent unless both sources are available.
# TYPE hccl_exporter_pod_attribution_conflicts gauge
hccl_exporter_pod_attribution_conflicts 1
# HELP hccl_exporter_pod_attribution_processes NPU processes of the last npu-smi run by how their pod was found: cgroup (their own cgroup and the kubelet's log layout), none (not in a kubelet pod, or its pod has no directory under <kubelet-logs>/pods), unreadable (its /proc entry could not be read: it exited, or the exporter lacks CAP_SYS_PTRACE).
# TYPE hccl_exporter_pod_attribution_processes gauge
hccl_exporter_pod_attribution_processes{source="cgroup"} 2
hccl_exporter_pod_attribution_processes{source="none"} 1
hccl_exporter_pod_attribution_processes{source="unreadable"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ascend_npu_pod_info", "hccl_exporter_pod_attribution_conflicts", "hccl_exporter_pod_attribution_processes"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}

	// Without a kubelet (bare socket path missing), the processes alone
	// name their pods and no conflict is claimed.
	w2 := NewWatcher(Config{Socket: filepath.Join(t.TempDir(), "kubelet.sock")}, nil)
	defer w2.Close()
	w2.Refresh(context.Background())
	c2 := newCollector(Config{KubeletLogs: n.logs}, Deps{Watcher: w2, Chips: a3Chips, Processes: procs, Procfs: n.procfs})
	if got := testutil.CollectAndCount(c2, "hccl_exporter_pod_attribution_conflicts"); got != 0 {
		t.Errorf("%d conflict series without a kubelet answer, want none", got)
	}
	if got := testutil.CollectAndCount(c2, "ascend_npu_pod_info"); got != 2 {
		t.Errorf("%d pod series from processes alone, want 2", got)
	}
	var _ prometheus.Collector = c2
}
