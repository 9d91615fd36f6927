package follow

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// hccl_process_info comes from the logs: served with joined_by="none" while
// npu-smi has not answered (or without it at all), and joined to the chip
// of the row matched to each process once it has.
func TestProcessInfo(t *testing.T) {
	procfs := t.TempDir()
	rootA := fakeProcess(t, procfs, 4242, 7, "ASCEND_PROCESS_LOG_PATH=/job/logs")
	writePlog(t, filepath.Join(rootA, "job", "logs"), 7, "")
	hostRoot := filepath.Join(t.TempDir(), "host-logs")
	writePlog(t, hostRoot, 9, "") // a process npu-smi does not list
	tab := &fakeTable{}
	c, err := New(Config{Roots: []string{hostRoot}, Timezone: "UTC", ProcessTTL: 10 * 365 * 24 * time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.pollOnce(time.Now())
	const head = `
# HELP hccl_process_info 1 for each process of the CANN logs: its settings set (the settings label of the hccl_env_* and hccl_communicator_info series) and the chip npu-smi shows it on; joined_by says how it was matched: procfs (its host pid, found through --path.procfs), pid (host pid), container_pid (A3's Process id in container), device (the devicePhyId its plogs print), none (npu-smi's process table does not show it: npu and chip are empty).
# TYPE hccl_process_info gauge
`
	settings := c.Processes()[0].Settings
	want := head + `hccl_process_info{chip="",joined_by="none",npu="",pid="9",process="python3",settings="` + settings + `"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hccl_process_info"); err != nil {
		t.Fatalf("before npu-smi answered: %v", err)
	}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "3", Chip: "0"}, PID: 4242})
	c.pollOnce(time.Now())
	want = head + `hccl_process_info{chip="",joined_by="none",npu="",pid="9",process="python3",settings="` + settings + `"} 1
hccl_process_info{chip="0",joined_by="procfs",npu="3",pid="7",process="python3",settings="` + settings + `"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hccl_process_info"); err != nil {
		t.Fatalf("after npu-smi answered: %v", err)
	}
	if problems, err := testutil.CollectAndLint(c, "hccl_process_info"); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
