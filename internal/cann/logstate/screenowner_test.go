package logstate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// screenEI0011 is the Dec 2025 report layout (HCCL param_link_stage.md,
// testdata/screen-log/train-ei0011.log) with pid.
func screenEI0011(pid int) []byte {
	return []byte(fmt.Sprintf("[PID: %d] 2026-01-07-10:00:01.500.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.", pid))
}

// failuresOf is what the workload memory remembers of id's failures.
func failuresOf(st *State, id string) int {
	v, ok := st.Workload(id)
	if !ok {
		return -1
	}
	return len(v.Failures)
}

// A screen file speaks for pids it does not own (issue 46.3, bare metal):
// on 0.5.0 a tenant's screen log printing `EI0011: [PID: <victim pid>]`
// was counted under the victim's hccl_job (paging the victim's owner) and
// written into the victim's workload memory. Now a screen report ties to
// a process only where the kernel names the file's writer as that
// process's owner; otherwise it is the file's own, counted as untied.
func TestAttackScreenSpeaksForAnotherOwnersPID(t *testing.T) {
	const victimPID = 4242
	// The workload the victim is bound to (BindWorkload keeps a host/
	// identity under its owner: the returned view's ID).
	var wl string
	victim := func(t *testing.T) *State {
		t.Helper()
		st := NewState(testOptions(identClock()))
		plog := &Source{Path: "/proc/4242/root/home/v/ascend/log/run/plog/plog-4242_1.log", Kind: SourcePlog,
			Dir: "/proc/4242/root/home/v/ascend/log", PID: victimPID, Owner: "uid:1001"}
		ingestAll(st, plog, commLine(victimPID, identNow, victimComm))
		v, ok := st.BindWorkload(ProcessKey{plog.Dir, victimPID}, "host/abc/16x2")
		if !ok {
			t.Fatal("victim not bound")
		}
		wl = v.ID
		return st
	}
	for _, tc := range []struct {
		name, writer string
		tied         bool
	}{
		// A glob's file no discovered process holds: the kernel names no
		// writer, so it cannot speak for a process the kernel names.
		{"writer-unknown", "", false},
		// The tenant's own process holds it: another uid.
		{"writer-another-uid", "uid:2002", false},
		// The victim's own screen log: its writer is the victim's owner.
		{"writer-the-victim", "uid:1001", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := victim(t)
			st.Ingest(&Source{Path: "/data/tenant/train.log", Kind: SourceScreen, Owner: tc.writer}, screenEI0011(victimPID))
			got := faultLines(t, st, "EI0011")
			if len(got) != 1 {
				t.Fatalf("EI0011 series %v, want one", got)
			}
			hasJob := strings.Contains(got[0], `hccl_job="`+victimComm+`"`)
			remembered := failuresOf(st, wl)
			untied := metricValue(t, st, `hccl_exporter_screen_reports_untied_total{reason="other_owner"}`)
			if tc.tied {
				if !hasJob || remembered != 1 || untied != "0" {
					t.Errorf("the victim's own report: %v, remembered %d, untied %s; want its job, remembered, not untied", got, remembered, untied)
				}
				return
			}
			if hasJob {
				t.Errorf("a tenant's screen report carries the victim's hccl_job: %v", got)
			}
			if remembered != 0 {
				t.Errorf("a tenant's screen report is in the victim's workload memory (%d failures)", remembered)
			}
			if untied != "1" {
				t.Errorf("untied other_owner = %s, want 1", untied)
			}
		})
	}
}

// On Kubernetes the fault stayed in the attacker's pod, but 0.5.0's
// rememberFailure wrote it into the workload of every process with that
// pid (the one written to last): another pod's workload. Now it is
// remembered only under the screen log's own pod's process.
func TestAttackScreenRemembersAnotherPodsWorkload(t *testing.T) {
	st := NewState(testOptions(identClock()))
	for i, uid := range []string{"uid-a", "uid-b"} {
		dir := fmt.Sprintf("/proc/%d/root/log", 10+i)
		src := &Source{Path: dir + "/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: dir, PID: 100, Owner: "pod:" + uid}
		// The other pod (b) writes last: 0.5.0 picked it.
		ingestAll(st, src, commLine(100, fmt.Sprintf("2026-01-07-10:00:0%d.000.000", i), fmt.Sprintf("job_%d", i)))
		if _, ok := st.BindWorkload(ProcessKey{dir, 100}, "k8s/train/"+uid); !ok {
			t.Fatal("not bound")
		}
	}
	screen := &Source{Path: "/var/log/pods/train_a-0_uid-a/pytorch/0.log", Kind: SourceScreen, Namespace: "train", Pod: "a-0", Container: "pytorch", PodUID: "uid-a"}
	st.Ingest(screen, screenEI0011(100))
	if n := failuresOf(st, "k8s/train/uid-b"); n != 0 {
		t.Errorf("pod a's screen report remembered under pod b's workload (%d failures)", n)
	}
	if n := failuresOf(st, "k8s/train/uid-a"); n != 1 {
		t.Errorf("pod a's own workload remembers %d failures, want 1", n)
	}
	if got := faultLines(t, st, "EI0011"); len(got) != 1 || !strings.Contains(got[0], `hccl_job="job_0"`) {
		t.Errorf("pod a's screen EI0011: %v, want its own process's job", got)
	}
}

// A plain screen log prints no zone: its report's time is read in the zone
// of the process its [PID: n] names (that process's plogs' zone), so that
// the exporter dates it as diagnose does (0.5.0 read it in the exporter's
// zone: the demo's EI0011 was 8 h apart). A report that ties to no process
// (another owner's pid) gets no zone of that process.
func TestScreenReportInItsProcesssZone(t *testing.T) {
	plus8 := ZoneForOffset(8 * time.Hour)
	for _, tc := range []struct {
		name, writer string
		want         time.Time
	}{
		{"its-process", "uid:1001", time.Date(2026, 1, 7, 2, 0, 1, 500e6, time.UTC)},
		{"another-owners-pid", "uid:2002", time.Date(2026, 1, 7, 10, 0, 1, 500e6, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(&fakeClock{t: time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)})
			o.Location = time.UTC
			var got []time.Time
			o.OnFault = func(ev FaultEvent) {
				if ev.Source == FaultSourceScreen {
					got = append(got, ev.Time)
				}
			}
			st := NewState(o)
			plog := &Source{Path: "/log/run/plog/plog-77_1.log", Kind: SourcePlog, Dir: "/log", PID: 77, Owner: "uid:1001", Location: plus8}
			ingestAll(st, plog, commLine(77, identNow, victimComm))
			st.Ingest(&Source{Path: "/data/train.log", Kind: SourceScreen, Owner: tc.writer}, screenEI0011(77))
			if len(got) != 1 || !got[0].Equal(tc.want) {
				t.Errorf("screen EI0011 at %v, want %v", got, tc.want)
			}
		})
	}
}
