package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
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
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4300})
	pods := map[int]ProcessPod{4242: {UID: "0a2b-victim", Namespace: "team-v", Pod: "victim-0", Container: "pytorch"},
		4300: {UID: "6f1c-attacker", Namespace: "team-a", Pod: "attacker-0", Container: "pytorch"}}
	c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab,
		PodOfProcess: func(pid int) (ProcessPod, bool) { p, ok := pods[pid]; return p, ok },
		// The attacker's plog prints devicePhyId[0], the victim's chip: the
		// kubelet would put its faults in the victim's pod.
		PodOfDevice: func(int) (string, string, string, bool) { return "team-v", "victim-0", "pytorch", true }}, nil)
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
	if len(faults) != 1 || strings.Contains(faults[0], "1767685109881000") || !strings.Contains(faults[0], `namespace="team-a",pod="attacker-0"`) {
		t.Errorf("the attacker's EI0011: %v; want one series in the attacker's own pod (its cgroup), without the victim's communicator", faults)
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

// Two pods mount one log volume at the same path and both run their
// training process as pid 30 of their container: both plogs are
// plog-30_*.log in one directory. On 0.4.0 both were read through the
// first pod's root, and the victim's settings landed on the attacker's row.
// Now a file whose process is ambiguous goes to the row whose process holds
// it open (/proc/<pid>/fd, what the kernel says about the writer).
func TestSharedVolumeSamePIDRows(t *testing.T) {
	procfs := t.TempDir()
	volume := fakeProcess(t, procfs, 4100, 30, "ASCEND_PROCESS_LOG_PATH=/logs") // the attacker, lower host pid
	fakeProcess(t, procfs, 4200, 30, "ASCEND_PROCESS_LOG_PATH=/logs")
	// The victim's root is the same volume.
	victimRoot := filepath.Join(procfs, "4200", "root")
	if err := os.Remove(victimRoot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(volume, victimRoot); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(volume, "logs", "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, buffsize string) string {
		p := filepath.Join(dir, name)
		line := "[INFO] HCCL(30,python3):2026-01-06-15:38:29.890.000 [externalinput.cc:1370] [30][HCCL_ENV] HCCL_BUFFSIZE set by environment to [" + buffsize + "]M\n"
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		return "/logs/run/plog/" + name
	}
	victimFile := write("plog-30_20260106153829870.log", "200")
	attackerFile := write("plog-30_20260106153900000.log", "1")
	for pid, held := range map[int]string{4100: attackerFile, 4200: victimFile} {
		fd := filepath.Join(procfs, strconv.Itoa(pid), "fd")
		if err := os.MkdirAll(fd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(held, filepath.Join(fd, "7")); err != nil {
			t.Fatal(err)
		}
	}
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4100}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4200})
	c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// Discovery looks at each process off the poll goroutine (its deadline
	// is a second): poll until both rows have settled, at most 5 s.
	rows := map[int]string{}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.pollOnce(time.Now())
		clear(rows)
		for _, d := range c.Devices() {
			pv, _ := c.Process(d.Key)
			rows[d.HostPID] = pv.Env["HCCL_BUFFSIZE"].Value
		}
		if (rows[4200] == "200" && rows[4100] == "1") || time.Now().After(deadline) {
			break
		}
	}
	if rows[4200] != "200" || rows[4100] != "1" {
		t.Fatalf("HCCL_BUFFSIZE by host pid %v, want the victim's 200 on 4200 and the attacker's 1 on 4100; devices %+v; roots %+v", rows, c.Devices(), c.roots.byPID)
	}
}

// Two root containers on bare metal (no pod: both owners were "uid:0"),
// both the 7th process of their container. The attacker's plog names the
// victim's communicator and prints EI0011. On 0.5.0 one uid was one owner:
// the EI0011 carried the victim's hccl_job and paged the victim's owner.
// Now the owner is the uid and the container's cgroup
// (<procfs>/<pid>/cgroup): two containers are two owners, the victim, who
// named the communicator first, keeps it.
func TestAttackRootContainersAreTwoOwners(t *testing.T) {
	const (
		idA = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
		idB = "0f9e8d7c6b5a49382716f5e4d3c2b1a00f9e8d7c6b5a49382716f5e4d3c2b1a0"
	)
	procfs := t.TempDir()
	cgroup := func(pid int, id string) {
		data := "0::/system.slice/docker-" + id + ".scope\n"
		if err := os.WriteFile(filepath.Join(procfs, strconv.Itoa(pid), "cgroup"), []byte(data), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	victimRoot := fakeProcess(t, procfs, 4242, 7, "ASCEND_PROCESS_LOG_PATH=/job/logs")
	cgroup(4242, idA)
	victimPlog := writePlog(t, filepath.Join(victimRoot, "job", "logs"), 7, "")
	attackerRoot := fakeProcess(t, procfs, 4300, 7, "ASCEND_PROCESS_LOG_PATH=/job/logs")
	cgroup(4300, idB)
	writePlog(t, filepath.Join(attackerRoot, "job", "logs"), 7,
		"[ERROR] HCCP(7,python3):2026-01-06-15:39:00.000.000 [ra_hdc.c:1] [7]ra qp create fail, out of memory\n")
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242})
	c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	settle := func(done func() bool) {
		for deadline := time.Now().Add(5 * time.Second); !done() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			c.pollOnce(time.Now())
		}
	}
	settle(func() bool { return len(c.Processes()) == 1 })
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4300})
	faults := func() []string {
		var out []string
		for _, l := range strings.Split(string(exposition(t, c)), "\n") {
			if strings.HasPrefix(l, `hccl_fault_events_total{code="EI0011"`) && !strings.HasSuffix(l, " 0") {
				out = append(out, l)
			}
		}
		return out
	}
	settle(func() bool { return len(faults()) > 0 })
	if got := faults(); len(got) != 1 || strings.Contains(got[0], "1767685109881000") {
		t.Fatalf("the attacker's EI0011: %v; want one series without the victim's communicator as hccl_job", got)
	}
	f, err := os.OpenFile(victimPlog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("[ERROR] HCCP(7,python3):2026-01-06-15:39:05.000.000 [ra_hdc.c:1] [7]ra qp create fail, out of memory\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	settle(func() bool { return len(faults()) > 1 })
	if got := strings.Join(faults(), "\n"); !strings.Contains(got, `hccl_job="10.0.0.11%enp189s0f0_60000_0_1767685109881000"`) {
		t.Errorf("the victim's own EI0011 lost its job:\n%s", got)
	}
}
