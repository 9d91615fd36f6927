package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// The multi-node bundles of testdata/incidents are generated here, in the
// line formats of the CANN eras (cann-log-eras.md): 2026 `[HCCL_ENV]` and
// `[Communicator Key Info]`/`[LocalRank Key Info]`, 2025 `SetupAgent …
// serverPort[…]` and `hcclCommInitInfo:`, 2024 untagged settings and
// `Entry-HcclCommInitRootInfo`/`HcclCommInitRootInfo success` (no space
// before `[tid]`), 2023 `[EVENT]` settings and `[TRACE] hcom init by file
// success`. TestIncidentBundlesUpToDate keeps the committed files equal to
// what this code writes; `go test ./diagnose -run TestIncidentBundlesUpToDate
// -update` rewrites them.

// era selects the wording of a bundle's lines.
type era int

const (
	era2023 era = iota
	era2024
	era2025
	era2026
)

// genRank is one training process of a generated job.
type genRank struct {
	node  int // 1-based
	local int // device on its node
	rank  int
	pid   int
}

// genJob writes the files of one bundle.
type genJob struct {
	era       era
	ranks     []genRank
	rankSize  int
	servers   int
	ident     string
	files     map[string]*strings.Builder
	settings  map[string]string // [HCCL_ENV] variable → value printed by environment
	nodeClock map[int]time.Duration
	missing   map[int]bool
	// hosts are the nodes' host addresses (default 10.0.0.N).
	hosts map[int]string
}

// host is node n's host address.
func (j *genJob) host(n int) string {
	if h, ok := j.hosts[n]; ok {
		return h
	}
	return fmt.Sprintf("10.0.0.%d", n)
}

func newJob(e era, servers, perServer int, ident string, firstPID int) *genJob {
	j := &genJob{era: e, rankSize: servers * perServer, servers: servers, ident: ident,
		files: map[string]*strings.Builder{}, settings: map[string]string{}, nodeClock: map[int]time.Duration{}, missing: map[int]bool{}}
	for n := 1; n <= servers; n++ {
		for d := 0; d < perServer; d++ {
			j.ranks = append(j.ranks, genRank{node: n, local: d, rank: (n-1)*perServer + d, pid: firstPID + n*1000 + d})
		}
	}
	return j
}

func (j *genJob) rankAt(rank int) genRank { return j.ranks[rank] }

func (j *genJob) node(n int) string { return fmt.Sprintf("node-%d", n) }

// printed is a true time as node n's clock prints it.
func (j *genJob) printed(n int, t time.Time) time.Time { return t.Add(j.nodeClock[n]) }

func plogTS(t time.Time) string {
	return fmt.Sprintf("%04d-%02d-%02d-%02d:%02d:%02d.%03d.%03d", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(),
		t.Nanosecond()/1e6, t.Nanosecond()/1e3%1000)
}

func fileTS(t time.Time) string {
	return fmt.Sprintf("%04d%02d%02d%02d%02d%02d%03d", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1e6)
}

func (j *genJob) write(path, line string) {
	b := j.files[path]
	if b == nil {
		b = &strings.Builder{}
		j.files[path] = b
	}
	b.WriteString(line)
	b.WriteByte('\n')
}

// plog writes one plog line of r at true time t into run/ or debug/.
func (j *genJob) plog(r genRank, dir, level, src, msg string, t time.Time, start time.Time) {
	if j.missing[r.node] {
		return
	}
	pt := j.printed(r.node, t)
	sep := " "
	if j.era == era2024 || j.era == era2023 {
		sep = ""
	}
	proc := "python3"
	line := fmt.Sprintf("[%s] HCCL(%d,%s):%s [%s]%s[%d]%s", level, r.pid, proc, plogTS(pt), src, sep, r.pid, msg)
	if level == "TRACE" {
		line = fmt.Sprintf("[TRACE] HCCL(%d,%s):%s [status:init] [%s]%s", r.pid, proc, plogTS(pt), src, msg)
	}
	path := fmt.Sprintf("%s/ascend/log/%s/plog/plog-%d_%s.log", j.node(r.node), dir, r.pid, fileTS(j.printed(r.node, start)))
	j.write(path, line)
}

// screen writes a line of the node's training screen log.
func (j *genJob) screen(r genRank, line string) {
	if j.missing[r.node] {
		return
	}
	j.write(j.node(r.node)+"/screen/train.log", line)
}

// start writes every rank's settings and communicator initialisation; the
// initialisation ends for all ranks at initDone (true time), a few ms apart.
func (j *genJob) start(t0, initDone time.Time) {
	for _, r := range j.ranks {
		jit := time.Duration((r.rank*7919)%900) * time.Microsecond
		env := t0.Add(jit)
		done := initDone.Add(time.Duration((r.rank*104729)%40000) * time.Microsecond)
		j.writeSettings(r, env, t0)
		j.writeInit(r, env.Add(50*time.Millisecond), done, t0)
	}
}

func (j *genJob) writeSettings(r genRank, t, start time.Time) {
	vars := sortedKeys(j.settings)
	for i, v := range vars {
		val := j.settings[v]
		at := t.Add(time.Duration(i) * 5 * time.Microsecond)
		unit := map[string]string{"HCCL_CONNECT_TIMEOUT": "s", "HCCL_EXEC_TIMEOUT": "s", "HCCL_BUFFSIZE": "M"}[v]
		switch j.era {
		case era2026:
			msg := fmt.Sprintf("[HCCL_ENV] %s set by environment to [%s]%s", v, val, unit)
			if v == "HCCL_RDMA_QPS_PER_CONNECTION" {
				msg = fmt.Sprintf("[HCCL_ENV] environmental variable %s is set to [%s]", v, val)
			}
			j.plog(r, "run", "INFO", "externalinput.cc:598", msg, at, start)
		case era2024, era2025:
			msg := fmt.Sprintf("%s set by environment to [%s]%s", v, val, unit)
			if v == "HCCL_RDMA_QPS_PER_CONNECTION" {
				msg = fmt.Sprintf("environmental variable %s is set to [%s]", v, val)
			}
			j.plog(r, "run", "INFO", "externalinput.cc:407", msg, at, start)
		case era2023:
			switch v {
			case "HCCL_CONNECT_TIMEOUT":
				j.plog(r, "run", "EVENT", "externalinput.cc:491", "environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut["+val+"]", at, start)
			case "HCCL_EXEC_TIMEOUT":
				j.plog(r, "run", "EVENT", "externalinput.cc:969", "ExecTimeOut is set to timeOut["+val+"]", at, start)
			}
		}
	}
}

func (j *genJob) writeInit(r genRank, entry, done, start time.Time) {
	host := j.host(r.node)
	switch j.era {
	case era2026:
		j.plog(r, "run", "INFO", "op_base.cc:1292", fmt.Sprintf("Entry-HcclCommInitRootInfoInner:ranks[%d], rank[%d], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[%d]",
			j.rankSize, r.rank, j.ident, r.local), entry, start)
		j.plog(r, "run", "INFO", "hccl_communicator_attrs.cc:327", fmt.Sprintf("[Communicator Key Info]identifier[%s] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]",
			j.ident, j.rankSize, j.servers, j.servers), done, start)
		j.plog(r, "run", "INFO", "hccl_communicator_attrs.cc:330", fmt.Sprintf("[LocalRank Key Info]userRank[%d] hostIp[%s] devicePhyId[%d] server[%s] deviceIp[192.168.%d.%d] superPodId[0] useSuperPodMode[0] isStandardCard[0]",
			r.rank, host, r.local, host, r.node, r.local), done.Add(7*time.Microsecond), start)
	case era2025:
		j.plog(r, "run", "INFO", "topoinfo_detect.cc:506", fmt.Sprintf("[HCCL_TRACE][Flat]SetupAgent rankNum[%d], rank[%d], rootInfo identifier[%s], server[%s%%enp189s0f0], serverPort[60000]deviceType[2], logicDevId[%d], phydevId[%d], deviceIp[192.168.%d.%d]",
			j.rankSize, r.rank, j.ident, host, r.local, r.local, r.node, r.local), entry, start)
		j.plog(r, "run", "INFO", "hccl_comm.cc:129", fmt.Sprintf("hcclCommInitInfo:commId[hccl-%d-0-1754394529-hccl_world_group], rank[%d], totalRanks[%d], serverId[%s%%enp189s0f0], deviceType[2],logicDevId[%d], identifier[%s]",
			r.pid, r.rank, j.rankSize, host, r.local, j.ident), done, start)
	case era2024:
		j.plog(r, "run", "INFO", "op_base.cc:413", fmt.Sprintf("Entry-HcclCommInitRootInfo:ranks[%d], rank[%d], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[%d]",
			j.rankSize, r.rank, j.ident, r.local), entry, start)
		j.plog(r, "run", "INFO", "topoinfo_detect.cc:208", fmt.Sprintf("[HCCL_TRACE]SetupAgent rankNum[%d], rank[%d], rootInfo identifier[%s], server[%s%%eth0], logicDevId[%d], phydevId[%d], deviceIp[192.168.%d.%d]",
			j.rankSize, r.rank, j.ident, host, r.local, r.local, r.node, r.local), entry.Add(2*time.Millisecond), start)
		j.plog(r, "run", "INFO", "op_base.cc:489", fmt.Sprintf("[HCCL_TRACE]HcclCommInitRootInfo success,take time [2042701]us, rankNum[%d], rank[%d],rootInfo identifier[%s], server[%s%%eth0], logicDevId[%d]",
			j.rankSize, r.rank, j.ident, host, r.local), done, start)
	case era2023:
		j.plog(r, "debug", "TRACE", "hcom.cc:194", fmt.Sprintf("[hccl-%d-0-1688478416-hccl_world_group][%d]hcom init by file success,take time [248118]us, rankTablePath[/home/ma-user/rank_table/jobstart_hccl.json], rankNum[%d], rank[%d],server[%s], device[%d]",
			r.pid, r.rank, j.rankSize, r.rank, host, r.local), done, start)
	}
}

// Fault lines.

func (j *genJob) ei0011(r genRank, t, start time.Time) {
	j.plog(r, "debug", "ERROR", "adapter_hccp.cc:1136", fmt.Sprintf("[Create][RaQp] ra qp create fail, reason: out of memory. qpInfo:[qpMode[2] localRank[%d]], return: ret[328100]", r.rank), t, start)
	pt := j.printed(r.node, t.Add(3*time.Millisecond))
	j.screen(r, fmt.Sprintf("[rank%d]:[PID: %d] %s Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.", r.rank, r.pid, plogTS(pt)))
	j.screen(r, fmt.Sprintf("[rank%d]:        Possible Cause: Allocation failure due to insufficient NPU memory.", r.rank))
	j.screen(r, fmt.Sprintf("[rank%d]:        Solution: Stop unnecessary processes and ensure the required memory is available.", r.rank))
}

func (j *genJob) ei0006(r genRank, peer genRank, timeout string, t, start time.Time) {
	j.plog(r, "debug", "ERROR", "hccl_socket_manager.cc:797", fmt.Sprintf("[Wait][LinkEstablish]wait socket establish timeout, role[1] rank[%d] timeout[%s s]", r.rank, timeout), t, start)
	// HEAD prints the addresses as serverId/devicePhyId.
	j.plog(r, "debug", "ERROR", "transport_manager.cc:1325", fmt.Sprintf("[InitChannelStage][Timeout]Transport init error! createLink para:rank[%d]-localUserrank[%d]-localIpAddr[%s/%d], remoteRank[%d]-remoteUserrank[%d]-remoteIpAddr[%s/%d], machineType[1], linkMode[1], isUsedRdma[1], tag[AllReduce_%s]",
		r.rank, r.rank, j.host(r.node), r.local, peer.rank, peer.rank, j.host(peer.node), peer.local, j.ident), t.Add(40*time.Millisecond), start)
}

// ei0006Screen is the screen report of EI0006, old layout before Dec 2025.
func (j *genJob) ei0006Screen(r genRank, t time.Time) {
	j.screen(r, fmt.Sprintf("EI0006: [PID: %d] %s Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck", r.pid, plogTS(j.printed(r.node, t))))
}

func (j *genJob) contents() map[string]string {
	out := map[string]string{}
	for p, b := range j.files {
		out[p] = b.String()
	}
	return out
}

var day = func(h, m, s, ms int) time.Time { return time.Date(2026, 3, 18, h, m, s, ms*1e6, time.UTC) }

// incidentBundles are the generated bundles by name.
func incidentBundles() map[string]map[string]string {
	out := map[string]map[string]string{}

	// 1. EI0011 on one rank at link setup; its peers on the other nodes
	// time out (EI0006) after their HCCL_CONNECT_TIMEOUT (1180 s) + 20 s.
	{
		j := newJob(era2026, 8, 8, "10.0.0.1%enp_60000_0_1773836162000123", 2100000)
		j.settings = map[string]string{"HCCL_CONNECT_TIMEOUT": "1180", "HCCL_EXEC_TIMEOUT": "1836", "HCCL_BUFFSIZE": "200", "HCCL_RDMA_QPS_PER_CONNECTION": "16"}
		t0 := day(20, 16, 2, 0)
		j.start(t0, day(20, 16, 5, 120))
		root := j.rankAt(20) // node-3, device 4
		fail := day(20, 18, 46, 447)
		j.ei0011(root, fail, t0)
		n := 0
		for _, r := range j.ranks {
			if r.node == root.node || r.rank == 63 { // rank 63 exited without a word
				continue
			}
			at := fail.Add(1200*time.Second + time.Duration(r.rank*37)*time.Millisecond)
			j.ei0006(r, root, "1180", at, t0)
			n++
		}
		out["ei0011"] = j.contents()
	}

	// 2. A RoCE port goes down at link setup (EJ0002) on node-2 device 5;
	// the peers time out after HCCL's default 120 s + 20 s. 2024 wording.
	{
		j := newJob(era2024, 4, 8, "10.0.0.1%eth0_60000_0_1721821172092650", 300000)
		j.settings = map[string]string{"HCCL_BUFFSIZE": "200"}
		t0 := day(9, 12, 0, 0)
		j.start(t0, day(9, 12, 3, 500))
		root := j.rankAt(13) // node-2, device 5
		fail := day(9, 13, 10, 250)
		j.screen(root, fmt.Sprintf("EJ0002: [PID: %d] %s The network port is down.Suggest: Check the port of device 5 with hccn_tool -i 5 -link -g.", root.pid, plogTS(fail)))
		for _, r := range j.ranks {
			if r.node == root.node {
				continue
			}
			at := fail.Add(140*time.Second + time.Duration(r.rank*11)*time.Millisecond)
			j.ei0006(r, root, "120", at, t0)
			if r.local == 0 {
				j.ei0006Screen(r, at.Add(200*time.Millisecond))
			}
		}
		out["portdown"] = j.contents()
	}

	// 3. Two independent incidents: the host port of node-1 is taken at
	// 09:00 (EI0019, its peer's root-info negotiation times out: EI0015);
	// the job restarts and at 11:30 node-2 runs out of memory (EI0011,
	// peers EI0006). 2025 wording.
	{
		j := newJob(era2025, 2, 8, "10.0.0.1%enp189s0f0_60000_0_1750325244673428", 400000)
		j.settings = map[string]string{"HCCL_CONNECT_TIMEOUT": "300", "HCCL_BUFFSIZE": "400"}
		t0 := day(8, 59, 40, 0)
		j.start(t0, day(8, 59, 43, 0))
		first := j.rankAt(0)
		bind := day(9, 0, 0, 100)
		j.screen(first, fmt.Sprintf("[PID: %d] %s Communication_Error_Bind_IP_Port(EI0019): Failed to enable listening for the host network adapter socket.Reason: The IP address 10.0.0.1 and port 60000 have already been bound.", first.pid, plogTS(bind)))
		for _, r := range j.ranks {
			if r.node == 2 {
				j.plog(r, "debug", "ERROR", "topoinfo_exchange_agent.cc:190", "[InitGroupStage][RanktableDetect]topo exchange agent get socket timeout! timeout[300]", bind.Add(300*time.Second+time.Duration(r.local)*time.Millisecond), t0)
			}
		}
		// The restart: new pids, a new communicator.
		k := newJob(era2025, 2, 8, "10.0.0.1%enp189s0f0_60000_0_1750333000000001", 500000)
		k.settings = j.settings
		k.files = j.files
		t1 := day(11, 29, 0, 0)
		k.start(t1, day(11, 29, 4, 0))
		root := k.rankAt(10) // node-2, device 2
		fail := day(11, 30, 0, 0)
		k.ei0011(root, fail, t1)
		for _, r := range k.ranks {
			if r.node == 1 {
				k.ei0006(r, root, "300", fail.Add(320*time.Second+time.Duration(r.local)*time.Millisecond), t1)
			}
		}
		out["two-incidents"] = k.contents()
	}

	// 4. Skewed clocks: node-2's clock is 200 s ahead. Its EI0011 prints
	// later than the peers' EI0006 that it caused; the communicator's
	// initialisation, printed by all ranks together, shows the offset.
	{
		j := newJob(era2026, 4, 8, "10.0.0.1%enp_60000_0_1773820000000001", 600000)
		j.nodeClock[2] = 200 * time.Second
		j.settings = map[string]string{"HCCL_BUFFSIZE": "200"}
		t0 := day(14, 0, 0, 0)
		j.start(t0, day(14, 0, 2, 800))
		root := j.rankAt(9) // node-2, device 1
		fail := day(14, 5, 0, 0)
		j.ei0011(root, fail, t0)
		for _, r := range j.ranks {
			if r.node == root.node {
				continue
			}
			j.ei0006(r, root, "120", fail.Add(140*time.Second+time.Duration(r.rank*13)*time.Millisecond), t0)
		}
		out["skew"] = j.contents()
	}

	// 5. Only consequences: node-4 (ranks 24-31) failed and its logs were
	// not collected; the others report the notify wait timeout (EI0002)
	// naming the rank they waited for. 2023 wording in the plogs.
	{
		j := newJob(era2023, 4, 8, "", 700000)
		j.missing[4] = true
		j.settings = map[string]string{"HCCL_CONNECT_TIMEOUT": "600", "HCCL_EXEC_TIMEOUT": "600"}
		t0 := day(16, 0, 0, 0)
		j.start(t0, day(16, 0, 1, 0))
		fail := day(16, 40, 0, 0) // node-4's failure, never logged here
		for _, r := range j.ranks {
			if r.node == 4 {
				continue
			}
			peer := 24 + r.local
			at := fail.Add(600*time.Second + time.Duration(r.rank*17)*time.Millisecond)
			j.screen(r, fmt.Sprintf("[rank%d]:[PID: %d] %s Communication_Error_Timeout(EI0002): A timeout occurs when the Notify register waits for execution. Waiting peer rank: %d; task information: streamID:[90], taskID[686], taskType[Notify Wait], tag[AllReduce_hccl_world_group]; communication operator information: AllReduce; communicator: hccl_world_group.",
				r.rank, r.pid, plogTS(at), peer))
		}
		out["only-consequences"] = j.contents()
	}

	// 6. A silent peer, in UTC+8: two nodes (10.20.1.11, 10.20.1.12)
	// printed their times in China Standard Time (the identifier's
	// creation time is UTC). Rank 3 (node-1, device 3) cannot set up its
	// RoCE link to rank 11 (node-2, device 3) and times out after its
	// HCCL_CONNECT_TIMEOUT of 120 s + 20 s; HCCL's detector then names the
	// pair, and the transport manager its createLink parameters. Rank
	// 11 (node-2 pid 670003) initialised its communicator at 10:30:04 and
	// printed nothing after: it was suspended or exited early.
	{
		const cst = 8 * time.Hour
		created := day(10, 30, 3, 0).Add(-cst) // the identifier is a true UTC instant
		j := newJob(era2026, 2, 8, fmt.Sprintf("10.20.1.11%%enp_60000_0_%d", created.UnixMicro()+123), 668000)
		j.hosts = map[int]string{1: "10.20.1.11", 2: "10.20.1.12"}
		j.settings = map[string]string{"HCCL_CONNECT_TIMEOUT": "120", "HCCL_BUFFSIZE": "200"}
		t0 := day(10, 30, 3, 0) // printed times: UTC+8 wall clock
		j.start(t0, day(10, 30, 4, 200))
		src, dst := j.rankAt(3), j.rankAt(11)
		fail := day(10, 32, 24, 300)
		j.plog(src, "debug", "ERROR", "hccl_socket_manager.cc:797", fmt.Sprintf("[Wait][LinkEstablish]wait socket establish timeout, role[0] rank[%d] timeout[120 s]", src.rank), fail, t0)
		j.screen(src, fmt.Sprintf("[rank%d]:[PID: %d] %s Communication_Error_Timeout(EI0006): Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck",
			src.rank, src.pid, plogTS(fail.Add(5*time.Millisecond))))
		detect := fail.Add(51 * time.Second)
		j.plog(src, "debug", "ERROR", "detect_connect_anomalies.cc:127", "-------------------CONNECT TIMEOUT DETECT RESULT-----------------------", detect, t0)
		j.plog(src, "debug", "ERROR", "detect_connect_anomalies.cc:132", fmt.Sprintf("This node (server %s, device ID %d) detects that srcRank (server %s, device ID %d) fails to connect to dstRank (server %s, device ID %d). Continue to analyze the fault based on the logs of srcRank and dstRank.",
			j.host(src.node), src.local, j.host(src.node), src.local, j.host(dst.node), dst.local), detect.Add(17*time.Microsecond), t0)
		j.plog(src, "debug", "ERROR", "transport_manager.cc:1325", fmt.Sprintf("[InitChannelStage][Timeout]Transport init error! createLink para:rank[%d]-localUserrank[%d]-localIpAddr[%s/%d], remoteRank[%d]-remoteUserrank[%d]-remoteIpAddr[%s/%d], machineType[1], linkMode[1], isUsedRdma[1], tag[AllReduce_%s]",
			src.rank, src.rank, j.host(src.node), src.local, dst.rank, dst.rank, j.host(dst.node), dst.local, j.ident), detect.Add(64*time.Microsecond), t0)
		out["silent-peer-utc8"] = j.contents()
	}
	return out
}

// exampleBundles are the bundles the README walks through, copied to
// examples/bundles/ under these names: one incident with its root cause in
// the bundle, one with only its consequences.
var exampleBundles = map[string]string{
	"ei0011":            "ei0011-root-cause",
	"only-consequences": "consequences-only",
	"silent-peer-utc8":  "silent-peer",
}

// TestIncidentBundlesUpToDate checks (or, with -update, writes) the
// committed bundles of testdata/incidents and their copies in examples/.
func TestIncidentBundlesUpToDate(t *testing.T) {
	type bundle struct {
		dir   string
		files map[string]string
	}
	var bundles []bundle
	for name, files := range incidentBundles() {
		bundles = append(bundles, bundle{filepath.Join("testdata", "incidents", name), files})
		if ex, ok := exampleBundles[name]; ok {
			bundles = append(bundles, bundle{filepath.Join("..", "examples", "bundles", ex), files})
		}
	}
	for _, bd := range bundles {
		dir, files := bd.dir, bd.files
		if golden.Updating() {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			writeTree(t, dir, files)
			continue
		}
		var have []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				have = append(have, filepath.ToSlash(rel))
			}
			return nil
		})
		want := sortedKeys(files)
		sort.Strings(have)
		if strings.Join(have, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: files differ from the generator's (run with -update)", dir)
			continue
		}
		for _, rel := range want {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil || string(b) != files[rel] {
				t.Errorf("%s/%s differs from the generator's (run with -update)", dir, rel)
			}
		}
	}
}
