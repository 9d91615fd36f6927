package nodegen

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const (
	sepDash = "+---------------------------+---------------+----------------------------------------------------+"
	sepEq   = "+===========================+===============+====================================================+"
)

// WriteNPUSMI writes the node's `npu-smi info` table in the Atlas A3 layout
// (Chip and Phy-ID columns; Memory-Usage and Hugepages printed as 0 / 0; the
// second die's power as `-`).
func (n *Node) WriteNPUSMI(w io.Writer) error {
	bw := bufio.NewWriter(w)
	line := func(s string) { bw.WriteString(s); bw.WriteByte('\n') }
	line("+------------------------------------------------------------------------------------------------+")
	line(fmt.Sprintf("| npu-smi %-25sVersion: %-53s|", npuSMIVersion, npuSMIVersion))
	line(sepDash)
	line("| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|")
	line("| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |")
	line(sepEq)
	for i, c := range n.Chips {
		power := "-"
		if c.PowerWatts > 0 {
			power = strconv.FormatFloat(c.PowerWatts, 'f', 1, 64)
		}
		line(fmt.Sprintf("| %-5d %-19s | %-13s | %-11s %-17d %-22s|", c.NPU, "Ascend910", "OK", power, c.TempC, "0     / 0"))
		line(fmt.Sprintf("| %-5d %-19d | %-13s | %-11d %-17s %-22s|", c.Chip, c.PhyID, c.BusID, c.AICorePercent, "0    / 0",
			fmt.Sprintf("%-5d / %d", c.HBMUsedMB, c.HBMTotalMB)))
		if i+1 < len(n.Chips) && n.Chips[i+1].NPU == c.NPU {
			line(sepDash)
		} else {
			line(sepEq)
		}
	}
	line(sepDash)
	line("| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |")
	line(sepEq)
	byNPU := map[int]bool{}
	for _, c := range n.Chips {
		for _, pi := range c.Processes {
			p := n.Processes[pi]
			byNPU[p.NPU] = true
			line(fmt.Sprintf("| %-7d %-17d | %-13d | %-24s | %-24d|", p.NPU, p.Chip, p.PID, p.Name, p.MemoryMB))
			line(sepEq)
		}
		if c.Chip == n.Spec.ChipsPerNPU-1 && !byNPU[c.NPU] {
			line(fmt.Sprintf("| %-94s |", fmt.Sprintf("No running processes found in NPU %d", c.NPU)))
			line(sepEq)
		}
	}
	return bw.Flush()
}

// envLines is the [HCCL_ENV] block CANN 8.x prints at communicator init, as
// (source location, message) pairs; %BUFF% and %QPS% are filled per node.
var envLines = [][2]string{
	{"externalinput.cc:598", "HCCL_CONNECT_TIMEOUT set by default to [120]s"},
	{"externalinput.cc:558", "HCCL_EXEC_TIMEOUT set by default to [1836]s"},
	{"externalinput.cc:663", "HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]"},
	{"externalinput.cc:742", "environmental variable PROFILING_MODE and GE profiling option is not set, default: false"},
	{"externalinput.cc:833", "HCCL_WHITELIST_DISABLE set by environment to [0]"},
	{"externalinput.cc:880", "HCCL_IF_IP is not set"},
	{"externalinput.cc:936", "HCCL_SOCKET_IFNAME set by default to [EmptyString]"},
	{"externalinput.cc:903", "HCCL_SOCKET_FAMILY is not set and is used by default [AF_INET]"},
	{"externalinput.cc:865", "HCCL_IF_BASE_PORT set by default to [60000]"},
	{"externalinput.cc:1170", "HCCL_RDMA_TC set by default to [132]"},
	{"externalinput.cc:1205", "HCCL_RDMA_SL set by default to [4]"},
	{"externalinput.cc:1250", "HCCL_RDMA_TIMEOUT set by default to [20]"},
	{"externalinput.cc:1284", "HCCL_RDMA_RETRY_CNT set by default to [7]"},
	{"externalinput.cc:1370", "%BUFF%"},
	{"externalinput.cc:621", "HCCL_DETERMINISTIC set by default to [false]"},
	{"externalinput.cc:1395", "HCCL_DIAGNOSE_ENABLE set by default to [0]"},
	{"externalinput.cc:1484", "HCCL_ENTRY_LOG_ENABLE set by default to [0]"},
	{"externalinput.cc:1505", "HCCL_INTER_HCCS_DISABLE is not set, default value is FALSE."},
	{"externalinput.cc:1569", "environmental variable HCCL_OP_EXPANSION_MODE is [HOST], aicpuUnfold[0], aivMode[0], enableFfts[1]"},
	{"externalinput.cc:1420", "%QPS%"},
	{"externalinput.cc:1454", "HCCL_MULTI_QP_THRESHOLD is set to default value [512]KB"},
	{"externalinput.cc:1724", "[ParseRetryEnable] HCCL_OP_RETRY_ENABLE set by environment variable to [L0:0,L1:0,L2:0]."},
	{"externalinput.cc:1736", "HCCL_OP_RETRY_PARAMS is not set, default value MaxCnt is [1], HoldTime is [5000]ms, IntervalTime is [1000]ms"},
	{"externalinput.cc:1778", "HCCL_LOGIC_SUPERPOD_ID set by environment to [0]"},
	{"externalinput.cc:525", "HCCL_RDMA_PCIE_DIRECT_POST_NOSTRICT set by default to [EmptyString], rdmaFastPost is [0]"},
	{"externalinput.cc:791", "[Parse][MultiQpSrcPortConfigPath]environmental variable HCCL_RDMA_QP_PORT_CONFIG_PATH is empty"},
	{"externalinput.cc:1800", "HCCL_DEBUG_CONFIG is not set, debugConfig set by default to 0x0"},
}

// noise are INFO lines of modules other than HCCL, cycled through.
var noise = []struct{ module, src, msg string }{
	{"GE", "graph_manager.cc:1432", "GraphManager run graph, graph_id:%d, session_id:1"},
	{"RUNTIME", "stream.cc:1021", "stream synchronize, stream_id=%d, device_id=0"},
	{"ASCENDCL", "acl_rt.cpp:212", "aclrtSynchronizeStream stream_id=%d success"},
}

// WritePlog writes the plog of process n.Processes[i]: the init entry, the
// [HCCL_ENV] block, the key-info lines of its communicators with their
// buffers, an HCCP line and Spec.NoiseLines INFO lines of other modules.
func (n *Node) WritePlog(w io.Writer, i int) error {
	if i < 0 || i >= len(n.Processes) {
		return fmt.Errorf("nodegen: process %d of %d", i, len(n.Processes))
	}
	p := &n.Processes[i]
	bw := bufio.NewWriterSize(w, 64<<10)
	t := p.Start
	pid := strconv.Itoa(p.PID)
	head := func(level, module string) {
		t = t.Add(time.Millisecond + 111*time.Microsecond)
		bw.WriteString("[" + level + "] " + module + "(" + pid + "," + p.Name + "):" + plogTime(t) + " ")
	}
	hccl := func(src, msg string) {
		head("INFO", "HCCL")
		bw.WriteString("[" + src + "] [" + pid + "]" + msg + "\n")
	}
	world := ""
	if len(p.Communicators) > 0 {
		world = p.Communicators[0].ID
	}
	hccl("op_base.cc:1292", fmt.Sprintf("Entry-HcclCommInitRootInfoInner:ranks[%d], rank[%d], rootinfo: host ip[%s] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[%d]",
		n.worldRanks(p), n.worldRank(p), hostIP, world, p.Chip+p.NPU*n.Spec.ChipsPerNPU))
	for _, l := range envLines {
		msg := l[1]
		switch msg {
		case "%BUFF%":
			msg = "HCCL_BUFFSIZE set by default to [200]M"
			if n.Spec.BuffsizeMB > 0 {
				msg = fmt.Sprintf("HCCL_BUFFSIZE set by environment to [%d]M", n.Spec.BuffsizeMB)
			}
		case "%QPS%":
			msg = "HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]"
			if n.Spec.QPsPerConnection > 0 {
				msg = fmt.Sprintf("HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", n.Spec.QPsPerConnection)
			}
		}
		if !strings.HasPrefix(msg, "[") {
			msg = " " + msg
		}
		hccl(l[0], "[HCCL_ENV]"+msg)
	}
	buff := defaultBuffMB
	if n.Spec.BuffsizeMB > 0 {
		buff = n.Spec.BuffsizeMB
	}
	for _, c := range p.Communicators {
		hccl("hccl_communicator_attrs.cc:327", fmt.Sprintf("[Communicator Key Info]identifier[%s] rankSize[%d] serverNum[%d] "+
			"moduleNum[%d] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]",
			c.ID, c.RankSize, c.ServerNum, c.ServerNum))
		hccl("hccl_communicator_attrs.cc:330", fmt.Sprintf("[LocalRank Key Info]userRank[%d] hostIp[%s] devicePhyId[%d] server[%s] deviceIp[10.1.0.%d] superPodId[0] useSuperPodMode[0] isStandardCard[0]",
			c.UserRank, hostIP, p.Chip+p.NPU*n.Spec.ChipsPerNPU, hostIP, 10+p.Chip+p.NPU*n.Spec.ChipsPerNPU))
		hccl("ccl_buffer_manager.cc:47", fmt.Sprintf("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c0%08x], size[%d]",
			0x3000000+len(c.ID), buff*1048576))
	}
	head("INFO", "HCCP")
	bw.WriteString(fmt.Sprintf("[rs_ssl.c:1529]tid:%d,rs_ssl_init(1529) : TLS SWITCH (0)\n", p.PID+40))
	for k := 0; k < n.Spec.NoiseLines; k++ {
		nz := noise[k%len(noise)]
		head("INFO", nz.module)
		bw.WriteString("[" + nz.src + "]tid:" + strconv.Itoa(p.PID+1) + ", " + fmt.Sprintf(nz.msg, k) + "\n")
	}
	return bw.Flush()
}

func (n *Node) worldRanks(p *Process) int {
	if len(p.Communicators) == 0 {
		return 1
	}
	return p.Communicators[0].RankSize
}

func (n *Node) worldRank(p *Process) int {
	if len(p.Communicators) == 0 {
		return 0
	}
	return p.Communicators[0].UserRank
}

// WriteScreenLog writes a training screen log: a few framework lines, then
// Spec.EventsPerCode error-manager reports of each fault code (reports.go),
// each with its own pid and time so that none is a duplicate of another.
func (n *Node) WriteScreenLog(w io.Writer) error {
	bw := bufio.NewWriter(w)
	t := n.Spec.Start
	fmt.Fprintf(bw, "%s | INFO | rank 0 | initialising process group (backend=hccl, world_size=%d)\n", t.Format("2006-01-02 15:04:05"), n.Spec.Servers*max(1, len(n.Processes)))
	for e := 0; e < n.Spec.EventsPerCode; e++ {
		for i, f := range n.Faults {
			t = t.Add(1013 * time.Microsecond)
			pid := n.Spec.PIDBase
			if len(n.Processes) > 0 {
				pid = n.Processes[(i+e)%len(n.Processes)].PID
			}
			writeReport(bw, f, pid, t)
		}
	}
	fmt.Fprintf(bw, "%s | ERROR | rank 0 | training aborted; see the reports above\n", t.Format("2006-01-02 15:04:05"))
	return bw.Flush()
}

// Tree is what WriteTree wrote.
type Tree struct {
	Dir          string
	NPUSMITable  string // npu-smi info output
	NPUSMI       string // executable printing NPUSMITable (`npu-smi info`)
	LogRoot      string // CANN log root (holds run/plog)
	ScreenLog    string // empty when Spec.FaultCodes is 0
	Files, Bytes int64
}

// npuSMIScript prints the table beside it; NPU_SMI_DELAY (seconds, for
// sleep) emulates a slow npu-smi.
const npuSMIScript = `#!/bin/sh
# Fake npu-smi written by bench/gen: prints npu-smi-info.txt from its own directory.
if [ "$#" -ne 1 ] || [ "$1" != "info" ]; then echo "usage: npu-smi info" >&2; exit 2; fi
if [ -n "${NPU_SMI_DELAY:-}" ]; then sleep "$NPU_SMI_DELAY"; fi
exec cat "$(dirname "$0")/npu-smi-info.txt"
`

// WriteTree writes the node under dir: npu-smi-info.txt, an executable
// npu-smi printing it, log/run/plog/plog-<pid>_<time>.log per process and,
// when the node has fault codes, screen/train.log.
func (n *Node) WriteTree(dir string) (*Tree, error) {
	tr := &Tree{
		Dir:         dir,
		NPUSMITable: filepath.Join(dir, "npu-smi-info.txt"),
		NPUSMI:      filepath.Join(dir, "npu-smi"),
		LogRoot:     filepath.Join(dir, "log"),
	}
	plogDir := filepath.Join(tr.LogRoot, "run", "plog")
	if err := os.MkdirAll(plogDir, 0o755); err != nil {
		return nil, fmt.Errorf("nodegen: %w", err)
	}
	write := func(path string, mode os.FileMode, fill func(io.Writer) error) error {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
		if err != nil {
			return fmt.Errorf("nodegen: %w", err)
		}
		cw := &countWriter{w: f}
		err = fill(cw)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("nodegen: write %s: %w", path, err)
		}
		tr.Files++
		tr.Bytes += cw.n
		return nil
	}
	if err := write(tr.NPUSMITable, 0o644, n.WriteNPUSMI); err != nil {
		return nil, err
	}
	if err := write(tr.NPUSMI, 0o755, func(w io.Writer) error { _, err := io.WriteString(w, npuSMIScript); return err }); err != nil {
		return nil, err
	}
	for i := range n.Processes {
		if err := write(filepath.Join(plogDir, PlogName(&n.Processes[i])), 0o644, func(w io.Writer) error { return n.WritePlog(w, i) }); err != nil {
			return nil, err
		}
	}
	if len(n.Faults) > 0 {
		if err := os.MkdirAll(filepath.Join(dir, "screen"), 0o755); err != nil {
			return nil, fmt.Errorf("nodegen: %w", err)
		}
		tr.ScreenLog = filepath.Join(dir, "screen", "train.log")
		if err := write(tr.ScreenLog, 0o644, n.WriteScreenLog); err != nil {
			return nil, err
		}
	}
	return tr, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n += int64(k)
	return k, err
}
