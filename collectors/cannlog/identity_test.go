package cannlog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two pods' processes found through --path.procfs, both the 7th process of
// their container. The attacker's plog names the victim's communicator,
// raises an EI0011 and prints lines of 50 made-up pids. On 0.4.0 the
// EI0011 carried the victim's job and the made-up pids became processes.
// Now the collector hands each line the pid of its file's name and the pod
// of its process's cgroup: the made-up lines are refused and counted, the
// victim's communicator is contested and names no fault.
func TestAttackTenantIdentityThroughProcfs(t *testing.T) {
	procfs := t.TempDir()
	victimRoot := fakeProcess(t, procfs, 4242, 7, "ASCEND_PROCESS_LOG_PATH=/job/logs")
	writePlog(t, filepath.Join(victimRoot, "job", "logs"), 7, "")
	attackerRoot := fakeProcess(t, procfs, 4300, 7, "ASCEND_PROCESS_LOG_PATH=/job/logs")
	var extra strings.Builder
	extra.WriteString("[ERROR] HCCP(7,python3):2026-01-06-15:39:00.000.000 [ra_hdc.c:1] [7]ra qp create fail, out of memory\n")
	for i := range 50 {
		fmt.Fprintf(&extra, "[INFO] HCCL(%d,python3):2031-01-06-15:39:00.000.000 [externalinput.cc:1] [%d][HCCL_ENV] HCCL_BUFFSIZE set by environment to [1]M\n", 9000+i, 9000+i)
	}
	writePlog(t, filepath.Join(attackerRoot, "job", "logs"), 7, extra.String())
	tab := &fakeTable{}
	tab.set(NPUProcess{NPU: "0", Chip: "0", PID: 4242}, NPUProcess{NPU: "1", Chip: "0", PID: 4300})
	pods := map[int]string{4242: "0a2b-victim", 4300: "6f1c-attacker"}
	c, err := New(Config{Procfs: procfs, Processes: tab, Timezone: "UTC", ProcessTTL: time.Hour,
		PodOfProcess: func(pid int) (string, bool) { p, ok := pods[pid]; return p, ok }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.pollOnce(time.Now())
	c.pollOnce(time.Now())

	if n := len(c.Processes()); n != 2 {
		t.Errorf("%d processes, want the two ranks only: %+v", n, c.Processes())
	}
	page := string(exposition(t, c))
	var faults []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, `hccl_fault_events_total{code="EI0011"`) && !strings.HasSuffix(l, " 0") {
			faults = append(faults, l)
		}
	}
	if len(faults) != 1 || strings.Contains(faults[0], "1767685109881000") {
		t.Errorf("the attacker's EI0011: %v; want one series without the victim's communicator", faults)
	}
	for _, want := range []string{
		`hccl_exporter_log_lines_refused_total{reason="foreign_pid"} 50`,
		`hccl_exporter_communicators_contested 1`,
	} {
		if !strings.Contains(page, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
}
