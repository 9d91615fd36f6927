package logstate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// initByFile is the graph-mode world group's creation line
// (hcom_common.cc:1611, "[HCCL_TRACE]hcom init by file success,take time
// [%lld]us, rankTablePath[%s], rankNum[%u], rank[%u],server[%s], device[%d]").
func initByFile(pid int, ts, table string, ranks, rank int, server string) string {
	return fmt.Sprintf("[INFO] HCCL(%d,python):%s [hcom_common.cc:1611] [%d][HCCL_TRACE]hcom init by file success,take time [248118]us, "+
		"rankTablePath[%s], rankNum[%d], rank[%d],server[%s], device[%d]", pid, ts, pid, table, ranks, rank, server, rank%8)
}

// jobsOf returns the hccl_job values of code's non-zero series.
func jobsOf(t *testing.T, st *State, code string) []string {
	t.Helper()
	var out []string
	for _, l := range faultLines(t, st, code) {
		_, rest, _ := strings.Cut(l, `hccl_job="`)
		job, _, _ := strings.Cut(rest, `"`)
		out = append(out, job)
	}
	return out
}

// Two honest graph-mode (rank table) jobs on one node, both
// hccl_world_group: on 0.5.0 the name was contested and each one's EI0011
// lost its job. Now a world group's job is derived from the kernel's word
// (the pod's workload; off Kubernetes the uid) with the rank table and the
// rank count: each keeps its own.
func TestWorldGroupsOfTwoJobsOnOneNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners [2]string
		pods   [2]string // OwnerPod; "" none
		tables [2]string
	}{
		{name: "kubernetes", owners: [2]string{"pod:uid-a", "pod:uid-b"}, pods: [2]string{"llm-a-worker-0", "llm-b-worker-0"},
			tables: [2]string{"/user/serverid/devindex/config/hccl.json", "/user/serverid/devindex/config/hccl.json"}},
		{name: "bare-metal-two-users", owners: [2]string{"uid:1000", "uid:1001"}, tables: [2]string{"/data/rt.json", "/data/rt.json"}},
		{name: "bare-metal-two-tables", owners: [2]string{"uid:0/ctr:/docker/a", "uid:0/ctr:/docker/b"}, tables: [2]string{"/job/a/rank_table_16p.json", "/job/b/rank_table_16p.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState(testOptions(identClock()))
			for i := range 2 {
				pid := 100 + i
				dir := fmt.Sprintf("/proc/%d/root/log", 10+i)
				src := &Source{Path: fmt.Sprintf("%s/run/plog/plog-%d_1.log", dir, pid), Kind: SourcePlog, Dir: dir, PID: pid, Owner: tc.owners[i]}
				if tc.pods[i] != "" {
					src.OwnerNamespace, src.OwnerPod, src.OwnerContainer = "train", tc.pods[i], "ascend"
				}
				ingestAll(st, src, initByFile(pid, identNow, tc.tables[i], 16, i, "10.0.0.1"), qpFail(pid, "2026-01-07-10:00:01.000.000"))
			}
			jobs := jobsOf(t, st, "EI0011")
			if len(jobs) != 2 || jobs[0] == jobs[1] || !strings.HasPrefix(jobs[0], "hccl_world_group@") || !strings.HasPrefix(jobs[1], "hccl_world_group@") {
				t.Fatalf("hccl_job of the two jobs' EI0011: %q, want two distinct world-group identities", jobs)
			}
			if v := metricValue(t, st, "hccl_exporter_communicators_contested"); v != "0" {
				t.Errorf("contested = %s, want 0", v)
			}
		})
	}
}

// One graph-mode job on two nodes and another on two more: on 0.5.0 all
// four nodes' EI0009 carried hccl_job="hccl_world_group", so
// HCCLJobFailuresAcrossCluster (count of distinct hccl_job) saw one job
// where two failed. Now each node of one job derives the same identity,
// and the two jobs differ.
func TestWorldGroupIdentityAcrossNodes(t *testing.T) {
	node := func(owner, pod, table, server string) string {
		st := NewState(testOptions(identClock()))
		src := &Source{Path: "/proc/9/root/log/run/plog/plog-50_1.log", Kind: SourcePlog, Dir: "/proc/9/root/log", PID: 50, Owner: owner}
		if pod != "" {
			src.OwnerNamespace, src.OwnerPod, src.OwnerContainer = "train", pod, "ascend"
		}
		ingestAll(st, src, initByFile(50, identNow, table, 32, 3, server),
			"[ERROR] HCCL(50,python):2026-01-07-10:00:01.000.000 [adapter_hccp.cc:975] [50][InitGroupStage][Resource]rdma init failed because RoCE link status is down, please check the network adapter configuration.")
		jobs := jobsOf(t, st, "EI0009")
		if len(jobs) != 1 {
			t.Fatalf("EI0009 series: %v", faultLines(t, st, "EI0009"))
		}
		return jobs[0]
	}
	for _, tc := range []struct {
		name               string
		a1, a2, b1, b2     [3]string // owner, pod, table
		sameA, differentAB bool
	}{
		{name: "kubernetes",
			a1: [3]string{"pod:u1", "mindx-a-default-0", "/user/serverid/devindex/config/hccl.json"},
			a2: [3]string{"pod:u2", "mindx-a-default-1", "/user/serverid/devindex/config/hccl.json"},
			b1: [3]string{"pod:u3", "mindx-b-default-0", "/user/serverid/devindex/config/hccl.json"},
			b2: [3]string{"pod:u4", "mindx-b-default-1", "/user/serverid/devindex/config/hccl.json"}},
		{name: "bare-metal",
			a1: [3]string{"uid:1000/ctr:/docker/1", "", "/home/a/rank_table_32p.json"},
			a2: [3]string{"uid:1000/ctr:/docker/2", "", "/home/a/rank_table_32p.json"},
			b1: [3]string{"uid:1001", "", "/home/b/rank_table_32p.json"},
			b2: [3]string{"uid:1001", "", "/home/b/rank_table_32p.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a1 := node(tc.a1[0], tc.a1[1], tc.a1[2], "10.0.0.1")
			a2 := node(tc.a2[0], tc.a2[1], tc.a2[2], "10.0.0.2")
			b1 := node(tc.b1[0], tc.b1[1], tc.b1[2], "10.0.0.3")
			b2 := node(tc.b2[0], tc.b2[1], tc.b2[2], "10.0.0.4")
			if a1 != a2 || b1 != b2 {
				t.Errorf("one job's nodes disagree: %q %q / %q %q", a1, a2, b1, b2)
			}
			if a1 == b1 {
				t.Errorf("two jobs share hccl_job %q", a1)
			}
		})
	}
}

// The first claimant keeps its communicator across an exporter restart:
// the state file keeps who claimed first, so a restart does not hand the
// victim's identity to whichever process the file lists first.
func TestFirstClaimSurvivesRestart(t *testing.T) {
	clock := identClock()
	st := NewState(testOptions(clock))
	victim := &Source{Path: "/proc/10/root/log/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: "/proc/10/root/log", PID: 100, Owner: "uid:0/ctr:/docker/victim"}
	attacker := &Source{Path: "/proc/20/root/log/run/plog/plog-200_1.log", Kind: SourcePlog, Dir: "/proc/20/root/log", PID: 200, Owner: "uid:0/ctr:/docker/attacker"}
	ingestAll(st, victim, commLine(100, identNow, victimComm))
	ingestAll(st, attacker, commLine(200, identNow, victimComm))
	for range 5 {
		blob, err := st.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		st = NewState(testOptions(clock))
		if err := st.UnmarshalBinary(blob); err != nil {
			t.Fatal(err)
		}
	}
	ingestAll(st, attacker, qpFail(200, "2026-01-07-10:00:01.000.000"))
	ingestAll(st, victim, qpFail(100, "2026-01-07-10:00:02.000.000"))
	got := faultLines(t, st, "EI0011")
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), `hccl_job="`+victimComm+`"`) {
		t.Fatalf("after restarts: %v, want the victim's EI0011 under its communicator and the attacker's without", got)
	}
	for _, l := range got {
		if strings.Contains(l, victimComm) && !strings.HasSuffix(l, " 1") {
			t.Errorf("the victim's series counts the attacker's fault: %s", l)
		}
	}
}

// Under load a job's screen report is read before its process's
// communicator line: on 0.5.0 the EI0011 took the fallback hccl_job (the
// rules' node/<instance>), a second later the job's: two series, the owner
// paged twice. Now a fault whose process has no communicator yet is held
// (Options.FaultJobGrace) until it has one, then counted once under the
// job; past the grace it is counted with what is known.
func TestFaultWaitsForItsProcesssJob(t *testing.T) {
	report := func(pid int) []byte {
		return []byte(fmt.Sprintf("[PID: %d] 2026-01-07-10:00:01.500.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 262144~3145728 bytes of NPU memory.", pid))
	}
	plog := &Source{Path: "/root/ascend/log/run/plog/plog-156_1.log", Kind: SourcePlog, Dir: "/root/ascend/log", PID: 156, Owner: "uid:1000"}
	// The screen log's writer is the process's owner (the kernel names it:
	// the training process holds its stdout capture open), so its report
	// speaks for the process.
	screen := &Source{Path: "/data/train/screen.log", Kind: SourceScreen, Owner: "uid:1000"}
	t.Run("screen-before-communicator", func(t *testing.T) {
		clock := identClock()
		opts := testOptions(clock)
		opts.FaultJobGrace = 15 * time.Second
		st := NewState(opts)
		ingestAll(st, plog, envLine(156, identNow, "HCCL_BUFFSIZE set by environment to [200]M"))
		st.Ingest(screen, report(156))
		if got := faultLines(t, st, "EI0011"); len(got) != 0 {
			t.Fatalf("counted before its process named its job: %v", got)
		}
		clock.Advance(time.Second)
		ingestAll(st, plog, commLine(156, identNow, victimComm))
		if got := jobsOf(t, st, "EI0011"); len(got) != 1 || got[0] != victimComm {
			t.Fatalf("hccl_job %q, want one series under %s", got, victimComm)
		}
	})
	t.Run("plog-fault-held-across-a-checkpoint", func(t *testing.T) {
		clock := identClock()
		opts := testOptions(clock)
		opts.FaultJobGrace = 15 * time.Second
		st := NewState(opts)
		ingestAll(st, plog, qpFail(156, "2026-01-07-10:00:01.000.000"))
		blob, err := st.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		st = NewState(opts)
		if err := st.UnmarshalBinary(blob); err != nil {
			t.Fatal(err)
		}
		ingestAll(st, plog, commLine(156, identNow, victimComm))
		if got := jobsOf(t, st, "EI0011"); len(got) != 1 || got[0] != victimComm {
			t.Fatalf("hccl_job %q, want one series under %s", got, victimComm)
		}
	})
	t.Run("no-communicator-within-the-grace", func(t *testing.T) {
		clock := identClock()
		opts := testOptions(clock)
		opts.FaultJobGrace = 15 * time.Second
		st := NewState(opts)
		st.Ingest(screen, report(156))
		clock.Advance(16 * time.Second)
		if got := jobsOf(t, st, "EI0011"); len(got) != 1 || got[0] != "" {
			t.Fatalf("hccl_job %q, want the fault counted without a job once the grace is over", got)
		}
	})
	t.Run("off", func(t *testing.T) {
		st := NewState(testOptions(identClock()))
		st.Ingest(screen, report(156))
		if got := faultLines(t, st, "EI0011"); len(got) != 1 {
			t.Fatalf("without a grace: %v, want counted at once", got)
		}
	})
}
