package logstate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The attacks of a tenant that writes its own CANN logs on the identity
// and the budgets of the state (docs/security.md, "What a tenant can and
// cannot make the exporter do"). Each failed on 0.4.0.

const (
	victimComm = "10.0.0.1%eth0_60000_0_1767780000"
	identNow   = "2026-01-07-10:00:00.000.000"
	// fiveYears is a time printed 5 years ahead of the tests' clock.
	fiveYears = "2031-01-07-10:00:00.000.000"
)

func identClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 7, 10, 5, 0, 0, time.UTC)} }

func commLine(pid int, ts, comm string) string {
	return fmt.Sprintf("[INFO] HCCL(%d,python3):%s [x.cc:1] [%d][Communicator Key Info]identifier[%s] rankSize[16] serverNum[2] moduleNum[2] superPodNum[0]", pid, ts, pid, comm)
}

// qpFail is the HCCP error the catalog counts as EI0011 (plog).
func qpFail(pid int, ts string) string {
	return fmt.Sprintf("[ERROR] HCCP(%d,python3):%s [ra_hdc.c:1] [%d]ra qp create fail, out of memory", pid, ts, pid)
}

func ingestAll(st *State, src *Source, lines ...string) {
	for _, l := range lines {
		st.Ingest(src, []byte(l))
	}
}

// faultLines returns the hccl_fault_events_total lines of code with a
// non-zero count.
func faultLines(t *testing.T, st *State, code string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(string(exposition(t, st)), "\n") {
		if strings.HasPrefix(l, `hccl_fault_events_total{code="`+code+`"`) && !strings.HasSuffix(l, " 0") {
			out = append(out, l)
		}
	}
	return out
}

func metricValue(t *testing.T, st *State, series string) string {
	t.Helper()
	for _, l := range strings.Split(string(exposition(t, st)), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return "absent"
}

// A job names another job's communicator (anyone who scrapes
// hccl_communicator_info sees it) and raises an EI0011: on 0.4.0 the fault
// carried the victim's hccl_job, paged the victim's owner and inhibited the
// victim's waiting codes; on 0.5.0 the claim made the communicator no
// one's, and the victim's own EI0011 lost its job (its owner was not
// paged). Now the first claimant keeps it, the later one's faults are its
// own, and the communicator is flagged.
func TestAttackFaultUnderAnotherJobsCommunicator(t *testing.T) {
	for _, tc := range []struct {
		name, victimOwner, attackerOwner string
		// victimKeeps: the victim's own fault still carries its
		// communicator (a claim without a kernel identity does not take it).
		victimKeeps bool
	}{
		{name: "another-pod", attackerOwner: "pod:6f1c-attacker", victimKeeps: true},
		// Two root containers on bare metal: one uid, two cgroups.
		{name: "another-root-container", victimOwner: "uid:0/ctr:/system.slice/docker-victim.scope",
			attackerOwner: "uid:0/ctr:/system.slice/docker-attacker.scope", victimKeeps: true},
		{name: "shared-configured-root", attackerOwner: "root:/var/log/npu", victimKeeps: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState(testOptions(identClock()))
			if tc.victimOwner == "" {
				tc.victimOwner = "pod:0a2b-victim"
			}
			victim := &Source{Path: "/proc/10/root/log/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: "/proc/10/root/log", PID: 100, Owner: tc.victimOwner}
			ingestAll(st, victim, envLine(100, identNow, "HCCL_BUFFSIZE set by environment to [200]M"), commLine(100, identNow, victimComm))
			attacker := &Source{Path: "/var/log/npu/run/plog/plog-200_1.log", Kind: SourcePlog, Dir: "/var/log/npu", PID: 200, Owner: tc.attackerOwner}
			ingestAll(st, attacker, commLine(200, identNow, victimComm), qpFail(200, "2026-01-07-10:00:01.000.000"))

			got := faultLines(t, st, "EI0011")
			if len(got) != 1 || strings.Contains(got[0], victimComm) {
				t.Fatalf("the attacker's EI0011 %v: want one series, without the victim's communicator as hccl_job", got)
			}
			if v := metricValue(t, st, "hccl_exporter_communicators_contested"); v != "1" {
				t.Errorf("hccl_exporter_communicators_contested = %s, want 1 (flagged)", v)
			}
			ingestAll(st, victim, qpFail(100, "2026-01-07-10:00:02.000.000"))
			withJob := 0
			for _, l := range faultLines(t, st, "EI0011") {
				if strings.Contains(l, `hccl_job="`+victimComm+`"`) {
					withJob++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.victimKeeps]; withJob != want {
				t.Errorf("%d EI0011 series carry the victim's communicator, want %d: %v", withJob, want, faultLines(t, st, "EI0011"))
			}
		})
	}
}

// One plog file prints lines of 1,100 made-up pids, 5 years ahead: on
// 0.4.0 each became a process, they took all 1,024 pid slots for good and
// the victim's settings were never exported. Now a plog speaks only for
// the process it is named after; the rest is refused and counted.
func TestAttackOneFileSpeaksForManyPIDs(t *testing.T) {
	st := NewState(testOptions(identClock()))
	attacker := &Source{Path: "/proc/20/root/log/run/plog/plog-300_1.log", Kind: SourcePlog, Dir: "/proc/20/root/log", PID: 300, Owner: "pod:attacker"}
	for i := range 1100 {
		pid := 5000 + i
		st.Ingest(attacker, []byte(envLine(pid, fiveYears, "HCCL_BUFFSIZE set by environment to [1]M")))
	}
	victim := &Source{Path: "/proc/10/root/log/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: "/proc/10/root/log", PID: 100, Owner: "pod:victim"}
	st.Ingest(victim, []byte(envLine(100, identNow, "HCCL_BUFFSIZE set by environment to [200]M")))
	p, ok := st.Process(ProcessKey{victim.Dir, 100})
	if !ok || p.Env["HCCL_BUFFSIZE"].Value != "200" {
		t.Fatalf("the victim's settings: %v %+v; want HCCL_BUFFSIZE 200 exported", ok, p.Env)
	}
	if n := len(st.Processes()); n != 1 {
		t.Errorf("%d processes, want the victim's only", n)
	}
	if v := metricValue(t, st, `hccl_exporter_log_lines_refused_total{reason="foreign_pid"}`); v != "1100" {
		t.Errorf("refused lines = %s, want 1100", v)
	}
}

// A device log's lines print the device-side process: the file speaks for
// the host process of its name (its HCCP errors are that process's).
func TestDeviceLogSpeaksForItsNamedProcess(t *testing.T) {
	st := NewState(testOptions(identClock()))
	dev := &Source{Path: "/log/debug/device-0/device-100_1.log", Kind: SourceDevicePlog, Dir: "/log", PID: 100}
	st.Ingest(dev, []byte(commLine(100, identNow, victimComm)))
	st.Ingest(dev, []byte(qpFail(6001, "2026-01-07-10:00:01.000.000")))
	got := faultLines(t, st, "EI0011")
	if len(got) != 1 || !strings.Contains(got[0], `hccl_job="`+victimComm+`"`) {
		t.Errorf("a device log's EI0011: %v, want it on the process of the file's name", got)
	}
	if v := metricValue(t, st, `hccl_exporter_log_lines_refused_total{reason="foreign_pid"}`); v != "0" {
		t.Errorf("refused = %s, want 0", v)
	}
}

// 1,100 processes of a root every job can write (a configured root), each
// with its own file and times 5 years ahead: on 0.4.0 they took every pid
// slot for good. Now the cap is shared per owner (the victim's pod gets
// its place), and printed times ahead do not extend a process's life.
func TestAttackPIDCapSharedAndFutureTimes(t *testing.T) {
	clock := identClock()
	st := NewState(testOptions(clock))
	for i := range 1100 {
		pid := 5000 + i
		src := &Source{Path: fmt.Sprintf("/var/log/npu/run/plog/plog-%d_1.log", pid), Kind: SourcePlog, Dir: "/var/log/npu", PID: pid, Owner: "root:/var/log/npu"}
		ingestAll(st, src, envLine(pid, fiveYears, "HCCL_BUFFSIZE set by environment to [1]M"),
			fmt.Sprintf("[INFO] HCCL(%d,python3):%s [x.cc:1] [%d]still here", pid, fiveYears, pid))
	}
	victim := &Source{Path: "/proc/10/root/log/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: "/proc/10/root/log", PID: 100, Owner: "pod:victim"}
	st.Ingest(victim, []byte(envLine(100, identNow, "HCCL_BUFFSIZE set by environment to [200]M")))
	if p, ok := st.Process(ProcessKey{victim.Dir, 100}); !ok || p.Env["HCCL_BUFFSIZE"].Value != "200" {
		t.Fatalf("the victim's settings: %v %+v; want them exported", ok, p.Env)
	}
	for _, p := range st.Processes() {
		if p.LastWrite.After(clock.Now()) {
			t.Fatalf("process %d last wrote %v, after now %v", p.PID, p.LastWrite, clock.Now())
		}
	}
	clock.Advance(2 * time.Hour)
	if n := st.Expire(LivenessFunc(func(pid int) bool { return pid == 100 })); n < 1000 {
		t.Errorf("expired %d of the made-up processes two hours on, want all of them", n)
	}
	if _, ok := st.Process(ProcessKey{victim.Dir, 100}); !ok {
		t.Error("the live victim expired")
	}
}

// 300 made-up processes each raise an EI0011 under a communicator of
// their own: on 0.4.0 they filled the cap on pod and job label sets
// (--cannlog.max-fault-pods, 256) and the victim's EI0011 lost hccl_job.
// Now the cap is shared per owner.
func TestAttackFaultLabelCapShared(t *testing.T) {
	st := NewState(testOptions(identClock()))
	for i := range 300 {
		pid := 5000 + i
		src := &Source{Path: fmt.Sprintf("/var/log/npu/run/plog/plog-%d_1.log", pid), Kind: SourcePlog, Dir: "/var/log/npu", PID: pid, Owner: "root:/var/log/npu"}
		ingestAll(st, src, commLine(pid, identNow, fmt.Sprintf("fake_%d", i)), qpFail(pid, "2026-01-07-10:00:01.000.000"))
	}
	victim := &Source{Path: "/proc/10/root/log/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: "/proc/10/root/log", PID: 100, Owner: "pod:victim"}
	ingestAll(st, victim, commLine(100, identNow, victimComm), qpFail(100, "2026-01-07-10:00:02.000.000"))
	found := false
	for _, l := range faultLines(t, st, "EI0011") {
		found = found || strings.Contains(l, `hccl_job="`+victimComm+`"`)
	}
	if !found {
		t.Fatalf("the victim's EI0011 lost its hccl_job:\n%s", grepLines(string(exposition(t, st)), `hccl_job="`+victimComm))
	}
	if v := metricValue(t, st, `hccl_exporter_label_values_dropped_total{label="pod"}`); v == "0" || v == "absent" {
		t.Errorf("dropped pod label sets = %s, want the attacker's counted", v)
	}
}

// A screen report is its process's: on bare metal (no pod in the screen
// log's path) 0.4.0 gave every screen fault an empty hccl_job, so one job
// paged once per node (node/<instance>). Now the report's [PID: n] names
// the plog process, and its communicator is the job; a pid two jobs print
// (pid namespaces without pod paths) ties to none.
func TestScreenReportIsItsProcesssJob(t *testing.T) {
	report := func(pid int) []byte {
		return []byte(fmt.Sprintf("[PID: %d] 2026-01-07-10:00:01.500.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 262144~3145728 bytes of NPU memory.", pid))
	}
	t.Run("bare-metal", func(t *testing.T) {
		st := NewState(testOptions(identClock()))
		plog := &Source{Path: "/root/ascend/log/run/plog/plog-156_1.log", Kind: SourcePlog, Dir: "/root/ascend/log", PID: 156, Owner: "root:/root/ascend/log"}
		ingestAll(st, plog, commLine(156, identNow, victimComm))
		st.Ingest(&Source{Path: "/data/train/screen.log", Kind: SourceScreen}, report(156))
		got := faultLines(t, st, "EI0011")
		if len(got) != 1 || !strings.Contains(got[0], `hccl_job="`+victimComm+`"`) || !strings.Contains(got[0], `source="screen"`) {
			t.Errorf("the screen EI0011 of pid 156: %v, want hccl_job %s", got, victimComm)
		}
	})
	t.Run("bare-metal-ambiguous-pid", func(t *testing.T) {
		st := NewState(testOptions(identClock()))
		for i, dir := range []string{"/a", "/b"} {
			src := &Source{Path: dir + "/run/plog/plog-7_1.log", Kind: SourcePlog, Dir: dir, PID: 7, Owner: "root:" + dir}
			ingestAll(st, src, commLine(7, identNow, fmt.Sprintf("job_%d", i)))
		}
		st.Ingest(&Source{Path: "/data/screen.log", Kind: SourceScreen}, report(7))
		if got := faultLines(t, st, "EI0011"); len(got) != 1 || !strings.Contains(got[0], `hccl_job=""`) {
			t.Errorf("a pid two jobs print: %v, want no hccl_job", got)
		}
	})
	t.Run("kubernetes-pod-cgroup", func(t *testing.T) {
		st := NewState(testOptions(identClock()))
		for i, uid := range []string{"uid-0", "uid-1"} {
			dir := fmt.Sprintf("/proc/%d/root/log", 10+i)
			src := &Source{Path: dir + "/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: dir, PID: 100, Owner: "pod:" + uid}
			ingestAll(st, src, commLine(100, identNow, fmt.Sprintf("job_%d", i)))
		}
		screen := &Source{Path: "/var/log/pods/train_llm-1_uid-1/pytorch/0.log", Kind: SourceScreen, Namespace: "train", Pod: "llm-1", Container: "pytorch", PodUID: "uid-1"}
		st.Ingest(screen, report(100))
		if got := faultLines(t, st, "EI0011"); len(got) != 1 || !strings.Contains(got[0], `hccl_job="job_1"`) {
			t.Errorf("the pod's screen EI0011: %v, want the job of its own pod's process", got)
		}
	})
}

// A process whose lines print times 5 years ahead: on 0.4.0 its last
// write was 5 years ahead, so it never expired and held its pid slot for
// good. Now a time ahead of now counts as now, on both ways its times are
// read (the settings line and the raw fast path of every other line).
func TestAttackFutureTimesDoNotExtendLife(t *testing.T) {
	clock := identClock()
	st := NewState(testOptions(clock))
	src := &Source{Path: "/var/log/npu/run/plog/plog-77_1.log", Kind: SourcePlog, Dir: "/var/log/npu", PID: 77}
	ingestAll(st, src, envLine(77, fiveYears, "HCCL_BUFFSIZE set by environment to [1]M"),
		fmt.Sprintf("[INFO] HCCL(77,python3):%s [x.cc:1] [77]still here", fiveYears))
	p, ok := st.Process(ProcessKey{src.Dir, 77})
	if !ok || p.LastWrite.After(clock.Now()) {
		t.Fatalf("last write %v (ok %v), want at most now %v", p.LastWrite, ok, clock.Now())
	}
	clock.Advance(2 * time.Hour)
	if n := st.Expire(LivenessFunc(func(int) bool { return false })); n != 1 {
		t.Errorf("expired %d processes two hours after its last line, want 1", n)
	}
}
