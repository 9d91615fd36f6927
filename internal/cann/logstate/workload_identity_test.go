package logstate

import (
	"fmt"
	"testing"
	"time"
)

// tenant writes one owner's processes' plog lines into a state.
type tenant struct {
	st    *State
	clock *fakeClock
	owner string
	dir   string
	qpn   int
}

func (tn *tenant) line(pid int, level, msg string) {
	ts := tn.clock.Now().Format("2006-01-02-15:04:05") + ".000.000"
	src := &Source{Path: fmt.Sprintf("%s/run/plog/plog-%d_1.log", tn.dir, pid), Kind: SourcePlog, Dir: tn.dir, PID: pid, Owner: tn.owner}
	tn.st.Ingest(src, []byte(fmt.Sprintf("[%s] HCCL(%d,python3):%s [x.cc:1] [%d]%s", level, pid, ts, pid, msg)))
}

// start is a process of ranks x servers with the default settings but one.
func (tn *tenant) start(pid, ranks, servers int) {
	tn.line(pid, "INFO", "[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [1]")
	tn.line(pid, "INFO", fmt.Sprintf("[Communicator Key Info]identifier[10.0.0.1%%eth0_60000_0_%d] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[0]", pid, ranks, servers, servers))
}

// bind binds the process as the headroom join does off Kubernetes.
func (tn *tenant) bind(t *testing.T, pid int) WorkloadView {
	t.Helper()
	p, ok := tn.st.Process(ProcessKey{tn.dir, pid})
	if !ok || len(p.Communicators) == 0 {
		t.Fatalf("process %d unknown", pid)
	}
	v, ok := tn.st.BindWorkload(ProcessKey{tn.dir, pid}, WorkloadOfShape(p.Settings, p.Communicators[0]))
	if !ok {
		t.Fatalf("process %d not bound", pid)
	}
	return v
}

// A tenant copies a victim's settings and shape (both printed), runs an
// AlltoAll and prints EI0011. On 0.5.0 both were one workload
// ("host/<settings>/<ranks>x<servers>"): the victim's next process was
// told it had run out of memory here before and expected the tenant's
// AlltoAll links. Now the identity is kept under each process's owner
// (its uid and container, which the kernel names).
func TestAttackWorkloadMemoryCopiedShape(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	victim := &tenant{st: st, clock: clock, owner: "uid:0/ctr:/docker/victim", dir: "/proc/10/root/log"}
	attacker := &tenant{st: st, clock: clock, owner: "uid:0/ctr:/docker/attacker", dir: "/proc/20/root/log"}
	victim.start(100, 16, 2)
	victim.bind(t, 100)
	attacker.start(200, 16, 2)
	attacker.bind(t, 200)
	for r := range 15 {
		attacker.qpn++
		attacker.line(200, "INFO", fmt.Sprintf("create hccl transport:communicator[AlltoAll_10.0.0.1%%eth0_60000_0_200], local rank[0], ip[a], remote rank[%d], ip[b], transporttype[ROCE], rdma qpn[%d], rdma qp sport[2], rdma TC[132], rdma SL[4]", r+1, attacker.qpn))
	}
	attacker.line(200, "ERROR", "[Create][RaQp]errNo[0x000000000500000b] ra qp create fail, reason: out of memory")
	if v := attacker.bind(t, 200); len(v.Failures) != 1 || len(v.Links) != 1 {
		t.Fatalf("the attacker's own workload: %+v, want its AlltoAll and EI0011", v)
	}
	clock.Advance(time.Minute)
	victim.start(101, 16, 2) // the victim's job restarts
	if v := victim.bind(t, 101); len(v.Failures) != 0 || len(v.Links) != 0 {
		t.Errorf("the victim's restart remembers %+v: the attacker's AlltoAll and EI0011", v)
	}
}

// 320 processes of one tenant with shapes of their own fill the workload
// memory (256). On 0.5.0 the workload seen longest ago went, whoever's:
// the victim's record was evicted. Now the cap is shared per owner: the
// flood evicts its own.
func TestAttackWorkloadMemoryCapPerOwner(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	victim := &tenant{st: st, clock: clock, owner: "uid:1000", dir: "/proc/10/root/log"}
	attacker := &tenant{st: st, clock: clock, owner: "uid:1001", dir: "/proc/20/root/log"}
	victim.start(100, 16, 2)
	id := victim.bind(t, 100).ID
	for i := range 320 {
		clock.Advance(time.Second)
		attacker.start(1000+i, 2+i, 1)
		attacker.bind(t, 1000+i)
	}
	if _, ok := st.Workload(id); !ok {
		t.Fatal("the victim's workload was evicted by another owner's flood")
	}
	stats := st.WorkloadStats()
	if stats.Workloads != DefaultMaxWorkloads || stats.Dropped[WorkloadDroppedCapacity] != 320+1-DefaultMaxWorkloads {
		t.Errorf("stats %+v, want the cap full and the flood's overflow counted", stats)
	}
	// A third owner's new workload still finds room: the largest holder
	// gives it.
	third := &tenant{st: st, clock: clock, owner: "uid:1002", dir: "/proc/30/root/log"}
	third.start(5000, 8, 1)
	id3 := third.bind(t, 5000).ID
	if _, ok := st.Workload(id3); !ok {
		t.Error("a third owner's workload was not kept")
	}
	if _, ok := st.Workload(id); !ok {
		t.Error("the victim's workload went for the third owner's")
	}
}
