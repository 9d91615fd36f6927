package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

const mib = 1 << 20

// npuSMITable is a one-chip npu-smi capture: NPU npu (its physical id),
// HBM usedMiB/65536 MiB and one process pid.
func npuSMITable(npu, usedMiB, pid int) string {
	return testtools.NPUSMITable(
		[]testtools.NPUSMIChip{{NPU: npu, PowerW: 95, TempC: 40, BusID: "0000:C1:00.0", HBMUsedMiB: usedMiB}},
		[]testtools.NPUSMIProcess{{NPU: npu, PID: pid, MemoryMiB: usedMiB - 3000}})
}

// scenarioNode writes a fake npu-smi printing npuSMITable(usedMiB, pid) and
// a CANN log root whose run/plog holds one file per entry of plogs (file
// name → content), or the tree copied from tree when it is not empty.
func scenarioNode(t *testing.T, npu, usedMiB, pid int, plogs map[string]string, tree string) (npuSMI, root string) {
	t.Helper()
	dir := t.TempDir()
	capture := filepath.Join(dir, "npu-smi.txt")
	npuSMI = filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(capture, []byte(npuSMITable(npu, usedMiB, pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(dir, "log")
	plogDir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(plogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if tree != "" {
		if err := os.CopyFS(root, os.DirFS(tree)); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range plogs {
		if err := os.WriteFile(filepath.Join(plogDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return npuSMI, root
}

// jobLog is the run/plog of one rank of a job, in the wording of a CANN era.
type jobLog struct {
	era       string // "2024", "2025" or "2026"
	pid, qps  int
	ranks     int
	servers   int // ranks are spread evenly; this rank is rank 0 on server 0
	superPods int // > 0: an A3 superpod job (2026 wording) with this many superpods
	// linked: the first collective ran: the cclBuffer (one 2 × 200 MiB + 1
	// MiB block) and the links to every other rank: HCCS to the ranks of
	// its server, qps+1 RoCE QPs (1 when qps is 1) to every other rank.
	linked  bool
	comms   []string
	destroy []string
}

func (j jobLog) String() string {
	var b strings.Builder
	n := 0
	line := func(f string, a ...any) {
		n++
		switch j.era {
		case "2024":
			fmt.Fprintf(&b, "[INFO] HCCL(%d,python3):2024-11-19-16:25:%02d.%03d.000 [x.cc:1][%d]", j.pid, n/1000%60, n%1000, j.pid)
		default: // 2025 and 2026 put a space before [tid]
			fmt.Fprintf(&b, "[INFO] HCCL(%d,python3):%s-01-07-10:00:%02d.%03d.000 [x.cc:1] [%d]", j.pid, j.era, n/1000%60, n%1000, j.pid)
		}
		fmt.Fprintf(&b, f+"\n", a...)
	}
	tag := ""
	if j.era == "2026" {
		tag = "[HCCL_ENV] "
	}
	line(tag + "HCCL_BUFFSIZE set by environment to [200]M")
	line(tag+"environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", j.qps)
	line(tag + "HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]")
	perServer := j.ranks / j.servers
	for _, c := range j.comms {
		switch j.era {
		case "2024":
			line("Entry-HcclCommInitRootInfo:ranks[%d], rank[0], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[0]", j.ranks, c)
			line("[HCCL_TRACE]SetupAgent rankNum[%d], rank[0], rootInfo identifier[%s], server[10.0.0.1%%eth0], logicDevId[0], phydevId[0], deviceIp[192.168.1.10]", j.ranks, c)
		case "2025":
			line("Entry-HcclCommInitRootInfoInner:ranks[%d], rank[0], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[0]", j.ranks, c)
			line("[HCCL_TRACE][Flat]SetupAgent rankNum[%d], rank[0], rootInfo identifier[%s], server[10.0.0.1%%eth0], serverPort[60000]deviceType[2], logicDevId[0], phydevId[0], deviceIp[192.168.1.10]", j.ranks, c)
			line("hcclCommInitInfo:commId[hccl-%d-0-1-hccl_world_group], rank[0], totalRanks[%d], serverId[10.0.0.1%%eth0], deviceType[2],logicDevId[0], identifier[%s]", j.pid, j.ranks, c)
		default:
			line("[Communicator Key Info]identifier[%s] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[%d] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", c, j.ranks, j.servers, j.servers, j.superPods)
			line("[LocalRank Key Info]userRank[0] hostIp[10.0.0.1] devicePhyId[0] server[10.0.0.1] deviceIp[192.168.1.10] superPodId[0] useSuperPodMode[%d] isStandardCard[0]", min(j.superPods, 1))
		}
	}
	if j.linked {
		for _, c := range j.comms {
			line("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c080000000], size[%d]", 2*200*mib+mib)
			qpl := j.qps + 1
			if j.qps <= 1 {
				qpl = 1
			}
			qp := func(tag string, r, q int) {
				line("create hccl transport:communicator[%s], local rank[0], ip[192.168.1.10], remote rank[%d], ip[192.168.2.%d], transporttype[ROCE], rdma qpn[%d], rdma qp sport[%d], rdma TC[132], rdma SL[4]",
					tag, r, r, q, 49152+q%16)
			}
			// The link sets of HCOMM's AllReduce executors (newTag, all_reduce_operator.cc:141-169): the
			// mesh executor (here to every remote rank), then the small-count (H-D over the servers)
			// and pipeline (a ring over them) executors' own sets.
			mesh := "AllReduce_" + c + "NHRAllReduceMeshExecutor_host"
			for r := 1; r < j.ranks; r++ {
				if r < perServer {
					line("create hccl transport:communicator[%s], local rank[0], remote rank[%d], transporttype[HCCS]", mesh, r)
					continue
				}
				for q := 0; q < qpl; q++ {
					qp(mesh, r, 1000+r*qpl+q)
				}
			}
			if j.servers > 1 {
				small := "AllReduce_" + c + "H-DAllReduceMeshOpbaseSmallCountDeterministicExecutor_host"
				pipe := "AllReduce_" + c + "pipelineAllReduceMeshOpbasePipelineExecutor_host"
				for d := 1; d < j.servers; d <<= 1 {
					for q := 0; q < qpl; q++ {
						qp(small, d*perServer, 5000+d*qpl+q)
					}
				}
				for _, sv := range []int{1, j.servers - 1} {
					for q := 0; q < qpl; q++ {
						qp(pipe, sv*perServer, 6000+sv*qpl+q)
					}
				}
			}
		}
	}
	for _, c := range j.destroy {
		line("Entry-HcclCommDestroy op_base comm destroy complete, take time [5210]us, group[%s], deviceLogicId[0].", c)
	}
	return b.String()
}

// wiredRegistry parses args as main does and builds the real collectors.
func wiredRegistry(t *testing.T, args ...string) *exporter.Scraper {
	t.Helper()
	return wiredRegistryTo(t, slog.New(slog.NewTextHandler(io.Discard, nil)), args...)
}

// wiredRegistryTo is wiredRegistry logging to logger.
func wiredRegistryTo(t *testing.T, logger *slog.Logger, args ...string) *exporter.Scraper {
	t.Helper()
	app := kingpin.New("t", "")
	w := addCollectorFlags(app, nil)
	if _, err := app.Parse(args); err != nil {
		t.Fatal(err)
	}
	collectors, started, err := w.build(context.Background(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = started.Close() })
	return exporter.NewScraper(logger, collectors)
}

// gauge returns the value of the series of name whose labels include want
// ("k=v,k=v").
func gauge(t *testing.T, reg prometheus.Collector, name, want string) (float64, bool) {
	t.Helper()
	return metrictest.Find(metrictest.Gather(t, reg), name, metrictest.Labels(want))
}

// waitGauge polls the registry until the series of name with labels want
// has value v and keeps it over several more polls (the whole log was read).
func waitGauge(t *testing.T, reg prometheus.Collector, name, want string, v float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := gauge(t, reg, name, want)
		if ok && got == v {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s} = %v (present %v), want %v", name, want, got, ok, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(250 * time.Millisecond)
	if got, _ := gauge(t, reg, name, want); got != v {
		t.Fatalf("%s{%s} changed to %v, want %v", name, want, got, v)
	}
}

// TestHeadroomScenariosThroughRealCollectors runs npusmi, cannlog and
// headroom as main wires them, on a fake npu-smi and a CANN log root. The
// chip has 65536 MiB of HBM with 63900 MiB used: 1636 MiB free.
// Each case states its arithmetic; docs/headroom.md explains the rules.
func TestHeadroomScenariosThroughRealCollectors(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the wired collectors, a fake npu-smi and followed logs: skipped under -short")
	}
	job := func(era string, qps int, linked bool) jobLog {
		return jobLog{era: era, pid: 4242, qps: qps, ranks: 64, servers: 8, linked: linked, comms: []string{"c1"}}
	}
	const free = 1636 * mib
	const buffer = 2*200*mib + mib // one communicator's cclBuffer at HCCL_BUFFSIZE 200
	tests := []struct {
		name     string
		log      jobLog
		pending  float64 // hccl_link_setup_pending_queue_pairs{bound="high"}
		est      float64 // hccl_link_setup_established_queue_pairs
		bufPend  float64 // hccl_ccl_buffer_pending_bytes
		headroom float64 // hccl_link_setup_headroom_bytes, exact bytes
	}{
		// (a) 64 ranks on 8 servers, QPS 16, every link set up: 56 remote peers × 17 QPs of the
		// mesh executor, 3 H-D peers of the small-count executor and 2 ring peers of the pipeline
		// executor, (56 + 3 + 2) × 17 = 1037 QPs, are in HBM used already; nothing is ahead.
		// Headroom = free = 1715470336 bytes: no alert.
		{"(a) QPS 16, links set up", job("2026", 16, true), 0, 1037, 0, free},
		// (b) the same job right after communicator creation. (e) QPS 16 → 17 QPs per
		// connection: 56 peers × 17 = 952 QPs, plus the cclBuffer 401 MiB.
		// The headroom takes what HCCL will create: the first link set of the default level-1
		// algorithm over 8 servers, NHR's 5 peers (op-base auto-selection; H-D's 3 in graph mode,
		// the larger while the mode is not printed) × 17 = 85 QPs, mode not printed yet: 17 QPs
		// per link are multi-QP QPs, 1.5 MiB each: 1636 − 127.5 − 401 = 1107.5 MiB, no alert.
		{"(b,e) QPS 16, links ahead", job("2026", 16, false), 952, 0, buffer, free - 85*1.5*mib - buffer},
		// QPS 1: 5 QPs × 3 MiB = 15 MiB (NHR's first set); 1636 − 15 − 401 = 1220 MiB.
		{"QPS 1, links ahead", job("2026", 1, false), 56, 0, buffer, free - 5*3*mib - buffer},
		// (c) 2025 wording (Entry-…Inner, [Flat]SetupAgent, hcclCommInitInfo; untagged settings):
		// no server count printed. Set up: the 7 HCCS peers share the server, the 56 RoCE peers
		// are linked: nothing ahead.
		{"(c) 2025 wording, links set up", job("2025", 16, true), 0, 1037, 0, free},
		// Ahead, without a server count: every other rank may need RoCE, 63 × 17 = 1071 QPs ×
		// 1.5 MiB (multi-QP, mode not printed) = 1606.5 MiB; 1636 − 1606.5 − 401 = −371.5 MiB.
		{"(c) 2025 wording, links ahead", job("2025", 16, false), 1071, 0, buffer, free - 1071*1.5*mib - buffer},
		// (c) 2024 wording (Entry-HcclCommInitRootInfo, SetupAgent without deviceType).
		{"(c) 2024 wording, links set up", job("2024", 16, true), 0, 1037, 0, free},
		{"(c) 2024 wording, links ahead", job("2024", 16, false), 1071, 0, buffer, free - 1071*1.5*mib - buffer},
		// (d) an A3 superpod job (superPodNum 1, useSuperPodMode 1): the 8 servers talk over
		// HCCS, no RoCE demand at all; the cclBuffer is ahead: 1636 − 401 = 1235 MiB.
		{"(d) A3 superpod", jobLog{era: "2026", pid: 4242, qps: 16, ranks: 64, servers: 8, superPods: 1, comms: []string{"c1"}}, 0, 0, buffer, free - buffer},
		// Two communicators sum; a destroyed one leaves the sum (QPS 1: 56 QPs and 401 MiB each).
		{"two communicators", jobLog{era: "2026", pid: 4242, qps: 1, ranks: 64, servers: 8, comms: []string{"c1", "c2"}}, 112, 0, 2 * buffer, free - 10*3*mib - 2*buffer}, // expected 5 each
		{"a destroyed communicator leaves the sum", jobLog{era: "2026", pid: 4242, qps: 1, ranks: 64, servers: 8, comms: []string{"c1", "c2"}, destroy: []string{"c2"}}, 56, 0, buffer, free - 5*3*mib - buffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			npuSMI, root := scenarioNode(t, 0, 63900, tc.log.pid, map[string]string{
				fmt.Sprintf("plog-%d_20260107100000000.log", tc.log.pid): tc.log.String()}, "")
			reg := wiredRegistry(t, "--npusmi.path="+npuSMI, "--cannlog.root="+root, "--cannlog.poll-interval=50ms", "--no-collector.hccn")
			waitGauge(t, reg, "hccl_link_setup_headroom_bytes", "npu=0", tc.headroom)
			for _, g := range []struct {
				name, labels string
				want         float64
			}{
				{"hccl_link_setup_pending_queue_pairs", "bound=high", tc.pending},
				{"hccl_link_setup_queue_pair_memory_bytes", "bound=high", tc.pending * map[bool]float64{true: 1.5, false: 3}[tc.log.qps > 1] * mib},
				{"hccl_link_setup_established_queue_pairs", "npu=0", tc.est},
				{"hccl_ccl_buffer_pending_bytes", "npu=0", tc.bufPend},
				{"hccl_ccl_buffer_bytes", "npu=0", map[bool]float64{true: buffer, false: 0}[tc.log.linked]},
				{"hccl_link_setup_processes", "settings_source=known", 1},
			} {
				if got, ok := gauge(t, reg, g.name, g.labels); !ok || got != g.want {
					t.Errorf("%s{%s} = %v (present %v), want %v", g.name, g.labels, got, ok, g.want)
				}
			}
		})
	}
}

// TestHeadroomOn2024SampleTree runs the wired collectors on the 2024-era
// sample tree (internal/cann/logstate/testdata/cann-log-eras, see its README):
// job A (pid 412001) has run two collectives, job B (pid 412002, QPS 4) none.
// The chip has 65536 MiB with 65200 MiB used: 336 MiB free.
func TestHeadroomOn2024SampleTree(t *testing.T) {
	const free = 336 * mib
	tests := []struct {
		name              string
		pid, npu          int // job B runs on device 4 (its SetupAgent prints phydevId[4])
		pending, est, buf float64
		bufPend, headroom float64
	}{
		// Job A: 16 ranks, no server count printed; HCCS to ranks 1–3 (its server), RoCE QPs to
		// the 12 others (14 QPs over two link sets): nothing ahead. Headroom = free.
		{"job A, links set up", 412001, 0, 0, 14, 2 * 200 * mib, 0, free},
		// Job B: QPS 4 → 5 per connection; 15 other ranks × 5 = 75 QPs, mode not printed: multi-QP
		// QPs of 1.5 MiB = 112.5 MiB, and its cclBuffer 401 MiB: 336 − 112.5 − 401 = −177.5 MiB.
		{"job B, links ahead", 412002, 4, 75, 0, 0, 401 * mib, free - 75*1.5*mib - 401*mib},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			npuSMI, root := scenarioNode(t, tc.npu, 65200, tc.pid, nil, "../../internal/cann/logstate/testdata/cann-log-eras")
			npu := fmt.Sprintf("npu=%d", tc.npu)
			reg := wiredRegistry(t, "--npusmi.path="+npuSMI, "--cannlog.root="+root, "--cannlog.poll-interval=50ms", "--no-collector.hccn")
			waitGauge(t, reg, "hccl_link_setup_headroom_bytes", npu, tc.headroom)
			for _, g := range []struct {
				name, labels string
				want         float64
			}{
				{"hccl_link_setup_pending_queue_pairs", "bound=high", tc.pending},
				{"hccl_link_setup_established_queue_pairs", npu, tc.est},
				{"hccl_ccl_buffer_bytes", npu, tc.buf},
				{"hccl_ccl_buffer_pending_bytes", npu, tc.bufPend},
				{"hccl_link_setup_processes", "settings_source=known", 1},
			} {
				if got, ok := gauge(t, reg, g.name, g.labels); !ok || got != g.want {
					t.Errorf("%s{%s} = %v (present %v), want %v", g.name, g.labels, got, ok, g.want)
				}
			}
		})
	}
}
