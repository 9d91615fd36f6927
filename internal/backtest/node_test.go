package backtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// node is one simulated node: a chip whose npu-smi table the fake npu-smi
// prints, the CANN log root and screen log its training processes write,
// and the exporter reading them. Timelines act on it through its methods;
// every write is stamped with the real time (the exporter and the rules
// see real time, which the compression maps to simulated time).
type node struct {
	t    *testing.T
	dir  string
	root string // CANN log root
	// screen is the training job's screen log (torch_npu's stdout).
	screen string
	table  string // what the fake npu-smi prints
	// procfs holds <pid>/comm for every process npu-smi lists, so the
	// exporter finds npu-smi's pids where its --path.procfs looks (a real
	// node's host /proc): the simulated processes are not foreign ones.
	procfs string

	mu       sync.Mutex
	chipName string
	hbmUsed  int // MiB
	procs    map[int]int
	qpn      uint32
	// failures are the real times of the job failures the timeline
	// scripted (EI0011, EI0007), in order.
	failures []time.Time
}

// hbmTotalMiB is the chip's HBM: an Atlas 800T A2 910B3, 64 GiB.
const hbmTotalMiB = 65536

func newNode(t *testing.T, dir string) *node {
	t.Helper()
	n := &node{t: t, dir: dir, root: filepath.Join(dir, "log"), screen: filepath.Join(dir, "screen", "job.log"),
		table: filepath.Join(dir, "npu-smi.txt"), procfs: filepath.Join(dir, "proc"), chipName: "910B3", procs: map[int]int{}}
	for _, d := range []string{filepath.Join(n.root, "run", "plog"), filepath.Dir(n.screen), n.procfs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(n.screen, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\n# fake npu-smi of the backtest: only `info`\n[ \"$1\" = info ] || exit 1\nexec cat %q\n", n.table)
	if err := os.WriteFile(filepath.Join(dir, "npu-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	n.writeTable()
	return n
}

// SetHBM sets the chip's HBM in use, in MiB.
func (n *node) SetHBM(usedMiB int) {
	n.mu.Lock()
	n.hbmUsed = usedMiB
	n.mu.Unlock()
	n.writeTable()
}

// Start makes pid a training process on the chip: its plog opens with its
// HCCL settings, then npu-smi lists it.
func (n *node) Start(pid, qps, buffMiB int) {
	n.Plog(pid, "INFO", fmt.Sprintf("[HCCL_ENV] HCCL_BUFFSIZE set by environment to [%d]M", buffMiB),
		"[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]",
		fmt.Sprintf("[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", qps))
	// The process exists before npu-smi lists it, as on a node.
	pdir := filepath.Join(n.procfs, fmt.Sprint(pid))
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		n.t.Error(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "comm"), []byte("python3\n"), 0o644); err != nil {
		n.t.Error(err)
	}
	n.mu.Lock()
	n.procs[pid] = 1024
	n.mu.Unlock()
	n.writeTable()
}

// Stop: the process exits; npu-smi no longer lists it.
func (n *node) Stop(pid int) {
	n.mu.Lock()
	delete(n.procs, pid)
	n.mu.Unlock()
	n.writeTable()
	if err := os.RemoveAll(filepath.Join(n.procfs, fmt.Sprint(pid))); err != nil {
		n.t.Error(err)
	}
}

// Comm prints the creation of communicator id (HCOMM's [Communicator Key
// Info] line).
func (n *node) Comm(pid int, id string, ranks, servers int) {
	n.Plog(pid, "INFO", fmt.Sprintf("[Communicator Key Info]identifier[%s] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]",
		id, ranks, servers, servers))
}

// CCLBuffer prints the cclBuffer allocation of a first collective.
func (n *node) CCLBuffer(pid, buffMiB int) {
	n.Plog(pid, "INFO", fmt.Sprintf("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c000000000], size[%d]", (2*buffMiB+1)<<20))
}

// Links prints a link set under tag: HCCS links to local ranks 1..local
// and qpsPerLink QPs to each of the remote ranks.
func (n *node) Links(pid int, tag string, local int, remote []int, qpsPerLink int) {
	var lines []string
	for r := 1; r <= local; r++ {
		lines = append(lines, fmt.Sprintf("create hccl transport:communicator[%s], local rank[0], remote rank[%d], transporttype[HCCS]", tag, r))
	}
	n.mu.Lock()
	for _, r := range remote {
		for range qpsPerLink {
			n.qpn++
			lines = append(lines, fmt.Sprintf("create hccl transport:communicator[%s], local rank[0], ip[10.1.0.1], remote rank[%d], ip[10.1.0.2], transporttype[ROCE], rdma qpn[%d], rdma qp sport[49152], rdma TC[132], rdma SL[4]",
				tag, r, n.qpn))
		}
	}
	n.mu.Unlock()
	n.Plog(pid, "INFO", lines...)
}

// EI0011 is the job's failure at link setup for want of HBM: the HCCL
// adapter's plog line and torch_npu's screen-log report.
func (n *node) EI0011(pid int) {
	n.failed()
	n.Plog(pid, "ERROR", "[Create][RaQp]errNo[0x000000000500000b] ra qp create fail, reason: out of memory")
	n.screenLine(fmt.Sprintf("[PID: %d] %s Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory. Possible Cause: Allocation failure due to insufficient NPU memory. Solution: Stop unnecessary processes and ensure the required memory is available.",
		pid, cannTime(time.Now())))
}

// EI0007QP is the job's failure at link setup for want of QP slots: HCCP
// refuses the device's 8193rd QP, the adapter's create fails.
func (n *node) EI0007QP(pid int) {
	n.failed()
	n.PlogModule(pid, "HCCP", "ERROR", "rs_qp_create(812) : Exceeded the maximum QP limit(8192)")
	n.Plog(pid, "ERROR", "[Create][RaQp]errNo[0x0000000005000007] ra qp create fail")
	n.screenLine(fmt.Sprintf("[PID: %d] %s Resource_Error(EI0007): Failed to allocate resource[qp] with info [].",
		pid, cannTime(time.Now())))
}

func (n *node) failed() {
	n.mu.Lock()
	n.failures = append(n.failures, time.Now())
	n.mu.Unlock()
}

// Plog appends HCCL lines to pid's plog.
func (n *node) Plog(pid int, level string, msgs ...string) { n.PlogModule(pid, "HCCL", level, msgs...) }

// PlogModule appends lines of module to pid's plog.
func (n *node) PlogModule(pid int, module, level string, msgs ...string) {
	n.t.Helper()
	now := time.Now()
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "[%s] %s(%d,python3):%s [backtest.cc:1] [%d]%s\n", level, module, pid, cannTime(now), pid, m)
	}
	path := filepath.Join(n.root, "run", "plog", fmt.Sprintf("plog-%d_20260101000000000.log", pid))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		n.t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		n.t.Error(err)
	}
}

// Screen appends one line to the job's screen log, as printed.
func (n *node) Screen(line string) { n.screenLine(line) }

func (n *node) screenLine(line string) {
	f, err := os.OpenFile(n.screen, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		n.t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		n.t.Error(err)
	}
}

// cannTime formats t as CANN prints it: local time, no zone.
func cannTime(t time.Time) string {
	us := t.Nanosecond() / 1e3
	return fmt.Sprintf("%s.%03d.%03d", t.Format("2006-01-02-15:04:05"), us/1000, us%1000)
}

// writeTable writes what `npu-smi info` prints: one NPU with one chip and
// the node's processes (the layout of examples/demo/npu-smi, npu-smi 24.1).
func (n *node) writeTable() {
	n.mu.Lock()
	used, name := n.hbmUsed, n.chipName
	pids := make([]int, 0, len(n.procs))
	for p := range n.procs {
		pids = append(pids, p)
	}
	n.mu.Unlock()
	sort.Ints(pids)
	procs := make([]testtools.NPUSMIProcess, 0, len(pids))
	for _, p := range pids {
		procs = append(procs, testtools.NPUSMIProcess{NPU: 0, PID: p, MemoryMiB: 1024})
	}
	table := testtools.NPUSMITable([]testtools.NPUSMIChip{{NPU: 0, Name: name, PowerW: 190, TempC: 46, BusID: "0000:C1:00.0",
		AICorePct: 40, HBMUsedMiB: used, HBMTotalMiB: hbmTotalMiB}}, procs)
	tmp := n.table + ".tmp"
	if err := os.WriteFile(tmp, []byte(table), 0o644); err != nil {
		n.t.Error(err)
		return
	}
	if err := os.Rename(tmp, n.table); err != nil {
		n.t.Error(err)
	}
}

// peers returns the ranks from..to (inclusive) that are remote.
func peers(from, to, step int) []int {
	var out []int
	for r := from; r <= to; r += step {
		out = append(out, r)
	}
	return out
}
