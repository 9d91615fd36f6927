package pods

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// kubeletCgroup creates a cgroup named as the kubelet names a container's
// (under root, a mounted hierarchy), moves a new `sleep` process into it and
// returns the process's pid. Cleanup kills the process and removes the
// cgroups it created, innermost first.
func kubeletCgroup(t *testing.T, root string, parts ...string) int {
	t.Helper()
	dir := root
	var made []string
	for _, p := range parts {
		dir = filepath.Join(dir, p)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(dir, 0o755); err != nil {
				testtools.Unavailable(t, "create cgroup %s (needs root and a writable cgroup hierarchy): %v", dir, err)
			}
			made = append(made, dir)
		}
	}
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for i := len(made) - 1; i >= 0; i-- {
			if err := os.Remove(made[i]); err != nil {
				t.Errorf("remove test cgroup %s: %v", made[i], err)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		testtools.Unavailable(t, "move a process into cgroup %s: %v", dir, err)
	}
	return cmd.Process.Pid
}

// TestProcessInRealKubeletCgroups: processes moved into real cgroups named
// as the kubelet names them — the cgroupfs driver's
// kubepods/burstable/pod<uid>/<container id> in a cgroup v1 hierarchy and the
// systemd driver's kubepods.slice/…-pod<uid>.slice/cri-containerd-<id>.scope
// in the cgroup v2 one — are attributed, through the host's own /proc, to
// their own pods, although the fake kubelet says another pod holds their
// chips; both conflicts are counted.
func TestProcessInRealKubeletCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		testtools.Unavailable(t, "needs root to create cgroups")
	}
	v1, v2 := "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(v1, "cgroup.procs")); err != nil {
		testtools.Unavailable(t, "no cgroup v1 pids hierarchy at %s: %v", v1, err)
	}
	if _, err := os.Stat(filepath.Join(v2, "cgroup.procs")); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.procs"); err2 == nil {
			v2 = "/sys/fs/cgroup" // a pure cgroup v2 host
		} else {
			testtools.Unavailable(t, "no cgroup v2 hierarchy: %v", err)
		}
	}
	// Unique names, so that a crashed earlier run or a real kubelet's
	// cgroups are never touched.
	uidFS := "5e1f0c2a-9b7d-4e3f-8a21-" + strconv.FormatInt(int64(os.Getpid())%1e12+1e11, 10)
	uidSD := "6f2a1d3b-0c8e-4f40-9b32-" + strconv.FormatInt(int64(os.Getpid())%1e12+2e11, 10)
	pidFS := kubeletCgroup(t, v1, "kubepods", "burstable", "pod"+uidFS, ctrA)
	us := strings.ReplaceAll(uidSD, "-", "_")
	pidSD := kubeletCgroup(t, v2, "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-pod"+us+".slice", "cri-containerd-"+ctrB+".scope")

	k := testtools.StartFakeKubelet(t,
		testtools.PodDevice{Namespace: "other", Pod: "wrong-0", Container: "main", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-8", "Ascend910-10"}},
	)
	w := NewWatcher(Config{Socket: k.Socket}, nil)
	defer w.Close()
	w.Refresh(context.Background())

	n := newKubeletNode(t) // its procfs is unused: the host's /proc is read
	n.pod(t, "train", "job-fs-0", uidFS, "trainer", ctrA)
	n.pod(t, "infer", "svc-sd-0", uidSD, "model", ctrB)
	c := newCollector(Config{KubeletLogs: n.logs}, Deps{
		Watcher:   w,
		Chips:     a3Chips,
		Processes: procTable{{ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: pidFS}, {ChipID: ascend.ChipID{NPU: "5", Chip: "0"}, PID: pidSD}},
		Procfs:    "/proc",
	})
	want := `
# HELP hccl_exporter_pod_attribution_conflicts Chips whose NPU processes run in a pod (from each process's own cgroup and the kubelet's log layout) that the kubelet's PodResources answer does not assign the chip to. ascend_npu_pod_info follows the processes. Absent unless both sources are available.
# TYPE hccl_exporter_pod_attribution_conflicts gauge
hccl_exporter_pod_attribution_conflicts 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hccl_exporter_pod_attribution_conflicts"); err != nil {
		t.Error(err)
	}
	got := map[string]string{}
	for _, s := range metrictest.Samples(metrictest.Gather(t, c), "ascend_npu_pod_info") {
		l := s.Labels
		got[l["npu"]+"/"+l["chip"]] = l["namespace"] + "/" + l["pod"] + "/" + l["container"]
	}
	if got["4/0"] != "train/job-fs-0/trainer" || got["5/0"] != "infer/svc-sd-0/model" {
		t.Errorf("pods by chip = %v, want 4/0 train/job-fs-0/trainer (cgroupfs, v1) and 5/0 infer/svc-sd-0/model (systemd, v2)", got)
	}
}
