package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// realTagsLog is the run/plog of one 910B rank (pid) with two
// communicators, every line a HCOMM format string (docs/headroom.md "Line
// shapes and their sources"), times around now:
//
//   - w, a root-info identifier: 64 ranks on 8 servers, QPS 4 (5 QPs per
//     link). Its AllReduce ran the mesh executor with NHR (`[SelectAlg]`,
//     then 5 peers × 5 QPs, each after its `[ConstructQpAttrs]` with
//     multi-QP depths), then was captured: the capture's multi-QP line and
//     its set, one offload QP to each of the 5 peers.
//   - tp, a comm-config group: 16 ranks on 2 servers, its own
//     opExpansionMode AIV: its AIV op-base buffers (two `Create ccl buffer`
//     lines and `[CreateCommAIVbuffer] OpbaseMode`), then its ring mesh set,
//     1 peer × 5 QPs.
func realTagsLog(pid int, at time.Time) string {
	const (
		w  = "10.20.0.11%eth0_60000_0_1765367607599032"
		tp = "group_name_3"
	)
	var b strings.Builder
	n := 0
	line := func(src, f string, a ...any) {
		n++
		t := at.Add(time.Duration(n) * time.Millisecond).UTC()
		fmt.Fprintf(&b, "[INFO] HCCL(%d,python3):%s.%03d.000 [%s] [%d]", pid, t.Format("2006-01-02-15:04:05"), t.Nanosecond()/1e6, src, pid)
		fmt.Fprintf(&b, f+"\n", a...)
	}
	qp := func(tag string, peer, qpn int) {
		line("transport_ibverbs.cc:247", "create hccl transport:communicator[%s], local rank[0], ip[192.168.1.10], remote rank[%d], ip[192.168.2.%d], "+
			"transporttype[ROCE], rdma qpn[%d], rdma qp sport[%d], rdma TC[132], rdma SL[4]", tag, peer, peer, qpn, 49152+qpn%16)
	}
	line("externalinput.cc:1739", "[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [4]")
	line("externalinput.cc:1569", "[HCCL_ENV] environmental variable HCCL_OP_EXPANSION_MODE is [HOST], aicpuUnfold[0], aivMode[0], enableFfts[1]")
	line("comm_config.cc:122", "[Load] comm config info of [%s]: configSize[136], version[8], opExpansionMode[3]", tp)
	for _, c := range []struct {
		id             string
		ranks, servers int
	}{{w, 64, 8}, {tp, 16, 2}} {
		line("hccl_communicator_attrs.cc:327", "[Communicator Key Info]identifier[%s] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[0] "+
			"multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", c.id, c.ranks, c.servers, c.servers)
		line("hccl_communicator_attrs.cc:330", "[LocalRank Key Info]userRank[0] hostIp[10.0.0.1] devicePhyId[0] server[10.0.0.1] "+
			"deviceIp[192.168.1.10] superPodId[0] useSuperPodMode[0] isStandardCard[0]")
	}
	// w: the mesh executor's NHR set over 8 servers: servers ±1, ±2, 4.
	mesh := "AllReduce_" + w + "NHRAllReduceMeshExecutor_host"
	line("coll_alg_operator.cc:192", "[SelectAlg] newTag[%s] algName[AllReduceMeshExecutor] userRank[0] topoType[2] algType[level0:fullmesh,level1:NHR,level2:ring] "+
		"userRankSize[64] level0Size[8] moduleNum_[8] level2Size[0] ", mesh)
	line("ccl_buffer_manager.cc:38", "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c080000000], size[%d]", 2*200*mib+mib)
	qpn := 1000
	for _, peer := range []int{8, 56, 16, 48, 32} {
		for range 5 {
			line("adapter_hccp.cc:2460", "[ConstructQpAttrs][attr]sendCqDepth[16384], recvCqDepth[64], max_send_wr[16384], max_recv_wr[64]")
			qp(mesh, peer, qpn)
			qpn++
		}
	}
	// Its capture: one offload QP per link.
	line("transport_ibverbs.cc:602", "HCCL_RDMA_QPS_PER_CONNECTION is set to [4] but current devType[2] does not support multi-QP.")
	for _, peer := range []int{8, 56, 16, 48, 32} {
		qp(mesh+"_Capture", peer, qpn)
		qpn++
	}
	// tp: AIV op-base buffers, then its ring set over 2 servers.
	line("ccl_buffer_manager.cc:38", "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c100000000], size[%d]", 2*200*mib+mib)
	line("ccl_buffer_manager.cc:38", "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c200000000], size[%d]", 36*mib)
	line("ccl_buffer_manager.cc:38", "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c300000000], size[%d]", 4*mib)
	line("ccl_buffer_manager.cc:140", "[HCCL_TRACE][CreateCommAIVbuffer] OpbaseMode")
	ring := "AllReduce_" + tp + "ringAllReduceMeshExecutor_host"
	for r := 1; r < 8; r++ {
		line("transport_p2p.cc:174", "create hccl transport:communicator[%s], local rank[0], remote rank[%d], transporttype[HCCS]", ring, r)
	}
	for range 5 {
		qp(ring, 8, qpn)
		qpn++
	}
	return b.String()
}

// TestRealTagsThroughTheBinary: the exporter, on a fake npu-smi and the
// log above, ties every QP to its communicator and expects exactly the
// link sets HCOMM's selector and capture path create:
//
//   - w: its mesh set is linked (25 QPs); ahead the small-count executor's
//     set (AllReduceMeshOpbaseSmallCountDeterministicExecutor, H-D over 8
//     servers, a power of two: 3 links × 5 QPs = 15) and, capturing, the next
//     capture's 5 offload QPs: 20. The capture's multi-QP line sizes the
//     capture only: the small-count set keeps 5 QPs per link.
//   - tp: its ring set is linked (5 QPs); ahead the small-count set (H-D
//     over 2: 1 link × 5 = 5). Its AIV op-base buffers are allocated: none
//     ahead, and they are not a cclBuffer.
//
// Expected 25 QPs; memory 20 × 1.5 MiB (the printed multi-QP depths:
// 16384 × 64 + 16384 × 32) + 5 × 264 KiB (offload depths 128 / 8192);
// high: w's full mesh 56 − 5 = 51 links × 5 + 5, tp's 8 − 1 = 7 × 5.
func TestRealTagsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the wired collectors, a fake npu-smi and followed logs: skipped under -short")
	}
	const pid = 5151
	now := time.Now().UTC().Add(-time.Minute)
	npuSMI, root := scenarioNode(t, 0, 63900, pid, map[string]string{
		fmt.Sprintf("plog-%d_%s.log", pid, now.Format("20060102150405")+"000"): realTagsLog(pid, now)}, "")
	reg := wiredRegistry(t, "--npusmi.path="+npuSMI, "--cannlog.root="+root, "--cannlog.poll-interval=50ms", "--no-collector.hccn",
		"--no-headroom.learn-qp-size", "--pods.kubelet-socket=")
	const kib = 1 << 10
	expMem := 20*1.5*mib + 5*264*kib
	waitGauge(t, reg, "hccl_link_setup_queue_pair_memory_bytes", "bound=expected", expMem)
	for _, g := range []struct {
		name, labels string
		want         float64
	}{
		{"hccl_link_setup_pending_queue_pairs", "bound=expected", 25},
		{"hccl_link_setup_pending_queue_pairs", "bound=high", 51*5 + 5 + 7*5},
		{"hccl_link_setup_established_queue_pairs", "npu=0", 35},
		{"hccl_link_setup_unknown_mode_queue_pairs", "npu=0", 0},
		{"hccl_ccl_buffer_pending_bytes", "npu=0", 0},
		{"hccl_link_setup_headroom_bytes", "npu=0", 1636*mib - expMem},
	} {
		if got, ok := gauge(t, reg, g.name, g.labels); !ok || got != g.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", g.name, g.labels, got, ok, g.want)
		}
	}
}
