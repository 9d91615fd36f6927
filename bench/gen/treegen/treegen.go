// Package treegen writes deterministic CANN log trees of a chosen size for
// the ingest benchmarks: many processes, each writing host plogs
// (run/plog/plog-<pid>_<time>.log) and some device logs
// (run/device-<id>/device-<pid>_<time>.log), cut into a new file every
// 20 MB as CANN does. Lines are mostly INFO of several modules, with DEBUG,
// WARNING and EVENT lines, an [HCCL_ENV] block and the communicator key-info
// lines at each communicator initialisation, and bursts of ERROR lines
// (HCCL stage keywords, EI0011 and EI0006 fingerprints, HCCP and RUNTIME
// errors, ErrToWarn retries).
//
// Process sizes follow a Zipf-like law (the first process writes the most),
// so the big processes span several 20 MB files while most write one small
// file. Write returns the exact counts of what it wrote, so that every
// tool reading the tree can be checked against them.
package treegen

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Version changes whenever the same Spec would write other bytes, so that
// cached trees are written again.
const Version = 3

// Spec says what tree to write. Zero fields take the defaults of Default.
type Spec struct {
	Bytes   int64  // total size of the tree (approximate: whole lines)
	PIDs    int    // processes
	FileCap int64  // size at which CANN starts a new file of a process
	Seed    uint64 // same spec and seed, same bytes
	// DeviceShare is the share of bytes written as device logs.
	DeviceShare float64
}

// Default is a 100 MB tree of 64 processes with CANN's 20 MB file cut.
func Default() Spec {
	return Spec{Bytes: 100 << 20, PIDs: 64, FileCap: 20 << 20, Seed: 1, DeviceShare: 0.1}
}

func (s Spec) withDefaults() Spec {
	d := Default()
	if s.Bytes <= 0 {
		s.Bytes = d.Bytes
	}
	if s.PIDs <= 0 {
		s.PIDs = d.PIDs
	}
	if s.FileCap <= 0 {
		s.FileCap = d.FileCap
	}
	if s.DeviceShare <= 0 {
		s.DeviceShare = d.DeviceShare
	}
	return s
}

// Counts are what a tree holds. Levels are counted over every file (plog
// and device logs share the grammar); the fault counts are ERROR lines of
// HCCL or HCCP, not demoted by ErrToWarn, that carry the catalog's EI0011
// ("ra qp create fail" … "out of memory") or EI0006 ("wait socket establish
// timeout") fingerprint.
type Counts struct {
	Files    int   `json:"files"`
	Bytes    int64 `json:"bytes"`
	Lines    int64 `json:"lines"`
	Info     int64 `json:"info"`
	Debug    int64 `json:"debug"`
	Warning  int64 `json:"warning"`
	Error    int64 `json:"error"`
	Event    int64 `json:"event"`
	HCCLEnv  int64 `json:"hccl_env"`
	EI0011   int64 `json:"ei0011"`
	EI0006   int64 `json:"ei0006"`
	ErrToWrn int64 `json:"err_to_warn"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Files += o.Files
	c.Bytes += o.Bytes
	c.Lines += o.Lines
	c.Info += o.Info
	c.Debug += o.Debug
	c.Warning += o.Warning
	c.Error += o.Error
	c.Event += o.Event
	c.HCCLEnv += o.HCCLEnv
	c.EI0011 += o.EI0011
	c.EI0006 += o.EI0006
	c.ErrToWrn += o.ErrToWrn
}

const (
	pidBase    = 400001
	deviceDirs = 8
	// envEvery is how many bytes a process writes between communicator
	// initialisations (each prints the [HCCL_ENV] block again).
	envEvery = 4 << 20
	// burstEvery is the mean number of lines between error bursts.
	burstEvery = 4000
)

var start = time.Date(2026, 1, 6, 15, 38, 29, 0, time.UTC)

// Write writes the tree below dir (which it creates) and returns its counts.
func Write(dir string, spec Spec) (Counts, error) {
	s := spec.withDefaults()
	var total Counts
	// Zipf-like shares: process i gets (i+1)^-1.3 of the sum, so the first
	// process writes about a third of the tree and spans several files.
	var h float64
	for i := 0; i < s.PIDs; i++ {
		h += math.Pow(float64(i+1), -1.3)
	}
	for i := 0; i < s.PIDs; i++ {
		share := math.Pow(float64(i+1), -1.3) / h
		host := int64(float64(s.Bytes) * share * (1 - s.DeviceShare))
		dev := int64(float64(s.Bytes) * share * s.DeviceShare)
		pid := pidBase + i*7
		rng := rand.New(rand.NewPCG(s.Seed, uint64(i)))
		w := &procWriter{spec: s, pid: pid, pidStr: strconv.Itoa(pid), rng: rng,
			t: start.Add(time.Duration(i) * 13 * time.Millisecond)}
		c, err := w.write(filepath.Join(dir, "run", "plog"), "plog-", host, true)
		if err != nil {
			return total, err
		}
		total.Add(c)
		if dev > 0 {
			w.t = start.Add(time.Duration(i) * 17 * time.Millisecond)
			c, err := w.write(filepath.Join(dir, "run", "device-"+strconv.Itoa(i%deviceDirs)), "device-", dev, false)
			if err != nil {
				return total, err
			}
			total.Add(c)
		}
	}
	return total, nil
}

type procWriter struct {
	spec   Spec
	pid    int
	pidStr string
	rng    *rand.Rand
	t      time.Time
	line   []byte
	bursts int
	c      Counts
	ts     [26]byte
}

// write writes size bytes of one process's log into files of at most
// FileCap bytes named prefix<pid>_<creation time>.log.
func (w *procWriter) write(dir, prefix string, size int64, host bool) (Counts, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Counts{}, fmt.Errorf("treegen: %w", err)
	}
	w.c = Counts{}
	var written int64
	var sinceEnv int64 = envEvery // a host plog starts with communicator init
	comm := 0
	for written < size {
		name := prefix + w.pidStr + "_" + w.t.Format("20060102150405") + fmt.Sprintf("%03d", w.t.Nanosecond()/1e6) + ".log"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return w.c, fmt.Errorf("treegen: %w", err)
		}
		bw := bufio.NewWriterSize(f, 256<<10)
		var inFile int64
		for inFile < w.spec.FileCap && written < size {
			var n int64
			switch {
			case host && sinceEnv >= envEvery:
				n = w.commInit(bw, comm)
				comm++
				sinceEnv = 0
			case w.rng.IntN(burstEvery) == 0:
				n = w.burst(bw)
			default:
				n = w.bulk(bw)
			}
			inFile += n
			written += n
			sinceEnv += n
		}
		if err := bw.Flush(); err != nil {
			f.Close()
			return w.c, fmt.Errorf("treegen: %w", err)
		}
		if err := f.Close(); err != nil {
			return w.c, fmt.Errorf("treegen: %w", err)
		}
		w.c.Files++
		w.c.Bytes += inFile
		w.t = w.t.Add(time.Second) // the next file gets a later creation time
	}
	return w.c, nil
}

// plogTime formats the current time as CANN prints it: 2026-01-06-15:38:29.870.111.
func (w *procWriter) stamp() []byte {
	w.t = w.t.Add(time.Duration(50+w.rng.IntN(400)) * time.Microsecond)
	t := w.t
	b := w.ts[:0]
	b = appendInt(b, t.Year(), 4)
	b = append(b, '-')
	b = appendInt(b, int(t.Month()), 2)
	b = append(b, '-')
	b = appendInt(b, t.Day(), 2)
	b = append(b, '-')
	b = appendInt(b, t.Hour(), 2)
	b = append(b, ':')
	b = appendInt(b, t.Minute(), 2)
	b = append(b, ':')
	b = appendInt(b, t.Second(), 2)
	b = append(b, '.')
	us := t.Nanosecond() / 1000
	b = appendInt(b, us/1000, 3)
	b = append(b, '.')
	b = appendInt(b, us%1000, 3)
	return b
}

func appendInt(b []byte, v, width int) []byte {
	var d [8]byte
	i := len(d)
	for v > 0 || i == len(d) {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	for k := len(d) - i; k < width; k++ {
		b = append(b, '0')
	}
	return append(b, d[i:]...)
}

// emit writes one line: [LEVEL] MODULE(pid,python3):time [src] [tid]msg.
func (w *procWriter) emit(bw *bufio.Writer, level, module, src string, hcclTid bool, msg string) int64 {
	l := w.line[:0]
	l = append(l, '[')
	l = append(l, level...)
	l = append(l, "] "...)
	l = append(l, module...)
	l = append(l, '(')
	l = append(l, w.pidStr...)
	l = append(l, ",python3):"...)
	l = append(l, w.stamp()...)
	l = append(l, " ["...)
	l = append(l, src...)
	l = append(l, "] "...)
	if hcclTid {
		l = append(l, '[')
		l = strconv.AppendInt(l, int64(w.pid+3), 10)
		l = append(l, ']')
	} else {
		l = append(l, "tid:"...)
		l = strconv.AppendInt(l, int64(w.pid+3), 10)
		l = append(l, ", "...)
	}
	l = append(l, msg...)
	l = append(l, '\n')
	w.line = l
	_, _ = bw.Write(l)
	w.c.Lines++
	switch level {
	case "INFO":
		w.c.Info++
	case "DEBUG":
		w.c.Debug++
	case "WARNING":
		w.c.Warning++
	case "ERROR":
		w.c.Error++
	case "EVENT":
		w.c.Event++
	}
	return int64(len(l))
}

// bulk lines: what a training process prints most of the time.
var bulk = []struct {
	weight             int
	level, module, src string
	hcclTid            bool
	format             string
}{
	{30, "INFO", "GE", "graph_manager.cc:1432", false, "GraphManager run graph, graph_id:%d, session_id:1, iteration:%d"},
	{25, "INFO", "RUNTIME", "stream.cc:1021", false, "stream synchronize, stream_id=%d, device_id=0, task_id=%d"},
	{15, "INFO", "ASCENDCL", "acl_rt.cpp:212", false, "aclrtSynchronizeStream stream_id=%d success, cost=%dus"},
	{10, "INFO", "HCCL", "hccl_communicator.cc:2304", true, "[HcclCommunicator][AllReduce]tag[AllReduce_%d] count[%d] dataType[float32] op[sum] streamId[3]"},
	{5, "DEBUG", "RUNTIME", "device.cc:812", false, "memcpy async kind=1, size=%d, stream=%d"},
	{5, "WARNING", "GE", "op_desc.cc:771", false, "Attr _op_compile_strategy of op node_%d not found, use default %d"},
	{3, "INFO", "HCCP", "rs.c:1622", false, "rs_get_qp_status qpn=%d status=%d"},
	{2, "EVENT", "RUNTIME", "api_c.cc:380", false, "profiling switch is on, model_id=%d, step=%d"},
}

var bulkTotal = func() int {
	n := 0
	for _, b := range bulk {
		n += b.weight
	}
	return n
}()

func (w *procWriter) bulk(bw *bufio.Writer) int64 {
	r := w.rng.IntN(bulkTotal)
	for _, b := range bulk {
		if r < b.weight {
			return w.emit(bw, b.level, b.module, b.src, b.hcclTid, fmt.Sprintf(b.format, w.rng.IntN(100000), w.rng.IntN(1000000)))
		}
		r -= b.weight
	}
	panic("unreachable")
}

// envBlock is CANN 8.x's [HCCL_ENV] block (27 lines).
var envBlock = [][2]string{
	{"externalinput.cc:598", "[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [120]s"},
	{"externalinput.cc:558", "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s"},
	{"externalinput.cc:663", "[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]"},
	{"externalinput.cc:833", "[HCCL_ENV] HCCL_WHITELIST_DISABLE set by environment to [0]"},
	{"externalinput.cc:880", "[HCCL_ENV] HCCL_IF_IP is not set"},
	{"externalinput.cc:936", "[HCCL_ENV] HCCL_SOCKET_IFNAME set by default to [EmptyString]"},
	{"externalinput.cc:865", "[HCCL_ENV] HCCL_IF_BASE_PORT set by default to [60000]"},
	{"externalinput.cc:1170", "[HCCL_ENV] HCCL_RDMA_TC set by default to [132]"},
	{"externalinput.cc:1205", "[HCCL_ENV] HCCL_RDMA_SL set by default to [4]"},
	{"externalinput.cc:1250", "[HCCL_ENV] HCCL_RDMA_TIMEOUT set by default to [20]"},
	{"externalinput.cc:1284", "[HCCL_ENV] HCCL_RDMA_RETRY_CNT set by default to [7]"},
	{"externalinput.cc:1370", "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [400]M"},
	{"externalinput.cc:621", "[HCCL_ENV] HCCL_DETERMINISTIC set by default to [false]"},
	{"externalinput.cc:1395", "[HCCL_ENV] HCCL_DIAGNOSE_ENABLE set by default to [0]"},
	{"externalinput.cc:1484", "[HCCL_ENV] HCCL_ENTRY_LOG_ENABLE set by default to [0]"},
	{"externalinput.cc:1505", "[HCCL_ENV] HCCL_INTER_HCCS_DISABLE is not set, default value is FALSE."},
	{"externalinput.cc:1569", "[HCCL_ENV] environmental variable HCCL_OP_EXPANSION_MODE is [HOST], aicpuUnfold[0], aivMode[0], enableFfts[1]"},
	{"externalinput.cc:1420", "[HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION is set to [4]"},
	{"externalinput.cc:1454", "[HCCL_ENV] HCCL_MULTI_QP_THRESHOLD is set to default value [512]KB"},
	{"externalinput.cc:1724", "[HCCL_ENV][ParseRetryEnable] HCCL_OP_RETRY_ENABLE set by environment variable to [L0:0,L1:0,L2:0]."},
	{"externalinput.cc:1736", "[HCCL_ENV] HCCL_OP_RETRY_PARAMS is not set, default value MaxCnt is [1], HoldTime is [5000]ms, IntervalTime is [1000]ms"},
	{"externalinput.cc:1778", "[HCCL_ENV] HCCL_LOGIC_SUPERPOD_ID set by environment to [0]"},
	{"externalinput.cc:525", "[HCCL_ENV] HCCL_RDMA_PCIE_DIRECT_POST_NOSTRICT set by default to [EmptyString], rdmaFastPost is [0]"},
	{"externalinput.cc:791", "[HCCL_ENV][Parse][MultiQpSrcPortConfigPath]environmental variable HCCL_RDMA_QP_PORT_CONFIG_PATH is empty"},
	{"externalinput.cc:1800", "[HCCL_ENV] HCCL_DEBUG_CONFIG is not set, debugConfig set by default to 0x0"},
	{"externalinput.cc:742", "[HCCL_ENV] environmental variable PROFILING_MODE and GE profiling option is not set, default: false"},
	{"externalinput.cc:903", "[HCCL_ENV] HCCL_SOCKET_FAMILY is not set and is used by default [AF_INET]"},
}

// commInit prints a communicator initialisation: the entry line, the
// [HCCL_ENV] block and the key-info lines, then its first collective's
// cclBuffer and link set (64 lines).
func (w *procWriter) commInit(bw *bufio.Writer, comm int) int64 {
	id := fmt.Sprintf("10.0.0.11%%enp189s0f0_%d_%d_%d", 60000+comm, comm, 1767685109000000+int64(comm))
	n := w.emit(bw, "INFO", "HCCL", "op_base.cc:1292", true,
		fmt.Sprintf("Entry-HcclCommInitRootInfoInner:ranks[64], rank[%d], rootinfo: host ip[10.0.0.11] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[%d]", w.pid%64, id, w.pid%16))
	for _, e := range envBlock {
		n += w.emit(bw, "INFO", "HCCL", e[0], true, e[1])
		w.c.HCCLEnv++
	}
	n += w.emit(bw, "INFO", "HCCL", "hccl_communicator_attrs.cc:327", true,
		fmt.Sprintf("[Communicator Key Info]identifier[%s] rankSize[64] serverNum[8] moduleNum[8] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", id))
	n += w.emit(bw, "INFO", "HCCL", "hccl_communicator_attrs.cc:330", true,
		fmt.Sprintf("[LocalRank Key Info]userRank[%d] hostIp[10.0.0.11] devicePhyId[%d] server[10.0.0.11] deviceIp[10.1.0.%d] "+
			"superPodId[0] useSuperPodMode[0] isStandardCard[0]", w.pid%64, w.pid%16, w.pid%16))
	// The first collective: the cclBuffer (one block of 2 × 400 MiB + 1 MiB),
	// then its link set: HCCS to the 7 other ranks of the server, one RoCE
	// QP to each of the 56 ranks on the 7 other servers.
	n += w.emit(bw, "INFO", "HCCL", "ccl_buffer_manager.cc:38", true,
		fmt.Sprintf("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c080000000], size[%d]", 2*400<<20+1<<20))
	rank := w.pid % 64
	for r := 0; r < 64; r++ {
		if r == rank {
			continue
		}
		if r/8 == rank/8 {
			n += w.emit(bw, "INFO", "HCCL", "transport_p2p.cc:156", true,
				fmt.Sprintf("create hccl transport:communicator[AllReduce_%s], local rank[%d], remote rank[%d], transporttype[HCCS]", id, rank, r))
			continue
		}
		n += w.emit(bw, "INFO", "HCCL", "transport_ibverbs.cc:247", true,
			fmt.Sprintf("create hccl transport:communicator[AllReduce_%s], local rank[%d], ip[10.1.0.%d], remote rank[%d], "+
				"ip[10.1.%d.%d], transporttype[ROCE], rdma qpn[%d], rdma qp sport[%d], rdma TC[132], rdma SL[4]",
				id, rank, w.pid%16, r, r/8, r%8, 1000+comm*64+r, 49152+r))
	}
	return n
}

// burst prints an error burst: what a failing link setup or execution prints.
func (w *procWriter) burst(bw *bufio.Writer) int64 {
	var n int64
	w.bursts++
	switch (w.bursts + w.pid) % 4 { // every kind in turn, each process starting elsewhere
	case 0: // EI0011: QP creation runs out of device memory
		k := 1 + w.rng.IntN(3)
		for i := 0; i < k; i++ {
			n += w.emit(bw, "ERROR", "HCCP", "ra_hdc.c:1287", false, fmt.Sprintf("[ra_hdc_qp_create]ra qp create fail, ret[-12], phyId[%d], errno: out of memory", w.pid%16))
			w.c.EI0011++
		}
		n += w.emit(bw, "ERROR", "HCCL", "transport_roce.cc:812", true, "[InitChannelStage][CreateQP]create qp failed, ret[-12]")
		n += w.emit(bw, "ERROR", "RUNTIME", "npu_driver.cc:2281", false, "halMemAlloc failed, drvRetCode=6, size=4194304")
	case 1: // EI0006: a peer never reached link setup
		n += w.emit(bw, "ERROR", "HCCL", "transport_manager.cc:1201", true, "[InitChannelStage][Timeout]wait socket establish timeout, role[client] rank[3] timeout[120]")
		w.c.EI0006++
		n += w.emit(bw, "ERROR", "HCCL", "transport_manager.cc:1230", true, "[InitChannelStage][Timeout]Transport init error! createLink para:rank[3]-localUserrank[0]")
	case 2: // retried and demoted
		for i := 0; i < 3; i++ {
			n += w.emit(bw, "ERROR", "HCCL", "hccl_socket.cc:611", true, "ErrToWarn: [ConnectSocket] connect to peer failed, retry "+strconv.Itoa(i))
			w.c.ErrToWrn++
		}
		n += w.emit(bw, "WARNING", "HCCL", "hccl_socket.cc:640", true, "[ConnectSocket] connected after retries")
	default: // other modules' errors: counted by level only
		for i := 0; i < 5; i++ {
			n += w.emit(bw, "ERROR", "GE", "graph_executor.cc:311", false, fmt.Sprintf("Execute graph failed, graph_id:%d, ret:%d", w.rng.IntN(100), 145000+i))
		}
	}
	return n
}
