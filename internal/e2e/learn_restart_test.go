package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestLearningSurvivesRestart runs the real binary on a node whose chip
// sets up an AlltoAll of 64 QPs of 4 MiB each (HBM read by npu-smi before
// and after, nothing else allocated), then fails with EI0011; the exporter
// learns the QP size and remembers the workload. After a SIGTERM and a
// restart on the same state file, a new process of the same bare-metal
// workload (same settings, same communicator shape) is expected to link
// every remote rank from its start, the learned size is still used for the
// processes of the owner that learned it, and the failure is still told.
func TestLearningSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the exporter twice and waits for scrapes; skipped under -short")
	}
	bin := buildExporter(t)
	dir := t.TempDir()
	tableFile := filepath.Join(dir, "npu-smi-info.txt")
	fake := filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n[ \"$1\" = info ] || exit 1\nexec cat '"+tableFile+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "log")
	plogDir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(plogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	table := func(pid, usedMiB int) {
		writeAtomic(t, tableFile, testtools.NPUSMITable([]testtools.NPUSMIChip{{NPU: 0, Name: "910B3", PowerW: 190, TempC: 46,
			BusID: "0000:C1:00.0", AICorePct: 40, HBMUsedMiB: usedMiB, HBMTotalMiB: 65536}},
			[]testtools.NPUSMIProcess{{NPU: 0, PID: pid, MemoryMiB: 1024}}))
	}
	qpn := 0
	plog := func(pid int, lines ...string) {
		f, err := os.OpenFile(filepath.Join(plogDir, fmt.Sprintf("plog-%d_20260101000000000.log", pid)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, l := range lines {
			level := "INFO"
			if strings.Contains(l, "fail") {
				level = "ERROR"
			}
			fmt.Fprintf(f, "[%s] HCCL(%d,python3):%s [x.cc:1] [%d]%s\n", level, pid, cannTime(time.Now()), pid, l)
		}
	}
	start := func(pid int) {
		plog(pid, "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M",
			"[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [1]",
			"[Communicator Key Info]identifier[ep] rankSize[128] serverNum[16] moduleNum[16] superPodNum[0]")
	}
	links := func(pid int, tag string, peers int) {
		var ls []string
		for r := range peers {
			qpn++
			ls = append(ls, fmt.Sprintf("create hccl transport:communicator[%s], local rank[0], ip[192.168.1.10], remote rank[%d], ip[192.168.2.10], transporttype[ROCE], rdma qpn[%d], rdma qp sport[49152], rdma TC[132], rdma SL[4]",
				tag, 8+r, qpn))
		}
		plog(pid, ls...)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	url := "http://" + addr + "/metrics"
	args := []string{
		"--web.listen-address=" + addr, "--npusmi.path=" + fake, "--npusmi.min-interval=0s", "--web.scrape-cache-ttl=0s",
		"--cannlog.root=" + root, "--cannlog.screen-log-path=" + filepath.Join(dir, "none.log"),
		"--cannlog.state-file=" + filepath.Join(dir, "state.json"), "--cannlog.poll-interval=50ms",
		"--cannlog.checkpoint-interval=1h", // only the final checkpoint saves
		"--headroom.learn-min-observations=1", "--no-collector.hccn", "--no-collector.npuhealth", "--no-collector.pods",
	}
	scrape := func(p *testtools.Process) string {
		t.Helper()
		body, err := scrapeBody(t, url)
		if err != nil {
			t.Fatalf("scrape: %v\n%s", err, p.Output(4096))
		}
		return body
	}
	value := func(body, series string) (string, bool) {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return "", false
		}
		return m[1], true
	}
	// settle waits until the logs are read, then scrapes n times: each
	// scrape is one sample of the chip.
	settle := func(p *testtools.Process, n int, ready string) string {
		t.Helper()
		waitFor(t, 30*time.Second, func() bool {
			if done, _ := p.Exited(); done {
				t.Fatalf("exporter exited:\n%s", p.Output(4096))
			}
			body, err := scrapeBody(t, url)
			return err == nil && strings.Contains(body, ready)
		}, func() string { return "the exporter serving " + ready })
		var body string
		for range n {
			time.Sleep(60 * time.Millisecond)
			body = scrape(p)
		}
		return body
	}

	table(5001, 20000)
	start(5001)
	plog(5001, "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c000000000], size[420478976]")
	links(5001, "AllReduce_epNHRAllReduceMeshExecutor_host", 15) // its first collective, buffer and all: not learned from
	table(5001, 20000+401+15*3)
	p := testtools.StartProcess(t, dir, bin, args...)
	settle(p, 3, `hccl_link_setup_established_queue_pairs{chip="0",npu="0"} 15`)
	// 64 QPs of 4 MiB, nothing else allocated. Only scrapes sample the
	// chip: the log is read before npu-smi shows the memory, and no scrape
	// falls in between (one that did would see QPs without their memory,
	// and the estimator would refuse the burst as not settled).
	links(5001, "ALLTOALL_epRunAlltoAllVStagedBCopy_host", 64)
	time.Sleep(2 * time.Second)
	table(5001, 20000+401+15*3+64*4)
	body := settle(p, 3, `hccl_link_setup_established_queue_pairs{chip="0",npu="0"} 79`)
	learned := `hccl_link_setup_queue_pair_observed_bytes{driver="24.1.rc3",mode="910b_op_base",product="910B3"}`
	if v, ok := value(body, learned); !ok || v != "4.194304e+06" {
		t.Fatalf("learned %q (%v), want 4 MiB; the exporter serves:\n%s", v, ok, grepLines(body, "hccl_link_setup_queue_pair"))
	}
	plog(5001, "[Create][RaQp]errNo[0x000000000500000b] ra qp create fail, reason: out of memory")
	waitFor(t, 30*time.Second, func() bool {
		return strings.Contains(scrape(p), `hccl_workload_link_setup_failure_timestamp_seconds{chip="0",code="EI0011"`)
	}, func() string { return "the workload's failure" })
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, ok := p.Wait(10 * time.Second); !ok || code != 0 {
		t.Fatalf("exit %d, %v after SIGTERM:\n%s", code, ok, p.Output(4096))
	}

	// The workload restarts while the exporter is down; then the exporter.
	table(5002, 20000+401)
	start(5002)
	p2 := testtools.StartProcess(t, dir, bin, args...)
	body = settle(p2, 2, `hccl_link_setup_processes{chip="0",npu="0",settings_source="known"} 1`)
	if v, ok := value(body, learned); !ok || v != "4.194304e+06" {
		t.Errorf("after the restart the learned size is %q (%v), want 4 MiB", v, ok)
	}
	// One owner (the configured root) learned it: its own processes use
	// it, the node's size table does not (that takes two owners agreeing).
	if v, ok := value(body, `hccl_link_setup_queue_pair_size_bytes{mode="910b_op_base",product="910B3",source="modelled"}`); !ok || v != "3.145728e+06" {
		t.Errorf("the node's size for 910b_op_base: %q (%v), want the modelled 3 MiB (one owner):\n%s", v, ok, grepLines(body, "size_bytes"))
	}
	if v, ok := value(body, `hccl_link_setup_queue_pair_learned_owners{driver="24.1.rc3",mode="910b_op_base",product="910B3"}`); !ok || v != "1" {
		t.Errorf("owners with a learned size after the restart: %q (%v), want the one that learned it:\n%s", v, ok, grepLines(body, "learned_owners"))
	}
	// Every remote rank (128 − 8 on the server), none linked yet: 120 QPs
	// expected, most of them only because the workload ran an AlltoAll
	// (the rest are the first link set HCCL's algorithm would link anyway).
	if v, ok := value(body, `hccl_link_setup_pending_queue_pairs{bound="expected",chip="0",npu="0"}`); !ok || v != "120" {
		t.Errorf("expected QPs %q (%v), want 120: every remote rank", v, ok)
	}
	v, _ := value(body, `hccl_link_setup_remembered_queue_pairs{chip="0",npu="0"}`)
	if remembered, err := strconv.Atoi(v); err != nil || remembered < 100 || remembered >= 120 {
		t.Errorf("remembered QPs %q, want most of the 120:\n%s", v, grepLines(body, "queue_pairs{"))
	}
	if !strings.Contains(body, `hccl_workload_link_setup_failure_timestamp_seconds{chip="0",code="EI0011"`) {
		t.Errorf("the failure before the restart is not told:\n%s", grepLines(body, "hccl_workload"))
	}
}
