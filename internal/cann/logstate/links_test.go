package logstate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// seriesValue returns the value of the series of name with label=value.
func seriesValue(t *testing.T, c prometheus.Collector, name, label, value string) float64 {
	t.Helper()
	return metrictest.Value(t, c, name, map[string]string{label: value})
}

// TestErasSample reads the 2024-era tree (untagged settings, Entry-/
// SetupAgent/hcclCommInitInfo communicators, ccl buffer and transport
// lines) and checks what the README of the sample says a reader must
// conclude.
func TestErasSample(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2024, 11, 19, 17, 0, 0, 0, time.UTC)}))
	ingestTree(t, st, "testdata/cann-log-eras")
	a, ok := onlyProcess(t, st, 412001)
	if !ok {
		t.Fatal("job A (pid 412001) not read")
	}
	if q := a.Env["HCCL_RDMA_QPS_PER_CONNECTION"]; !q.HasNumber || q.Number != 1 || q.SetBy != "default" {
		t.Errorf("job A QPS = %+v, want 1 by default", q)
	}
	if b := a.Env["HCCL_BUFFSIZE"]; b.Number != 200<<20 {
		t.Errorf("job A HCCL_BUFFSIZE = %+v", b)
	}
	if len(a.Communicators) != 1 {
		t.Fatalf("job A communicators %+v", a.Communicators)
	}
	ca := a.Communicators[0]
	want := comm.Communicator{Name: "10.20.0.11%eth0_60000_0_1732004711518342", RankSize: 16, ServerNum: -1, SuperPodNum: -1, ModuleNum: -1,
		MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: 2, UserRank: -1, DevicePhyID: 0, SuperPodMode: -1, StandardCard: -1,
		CCLBufferBytes: 2 * 209715200, EstablishedQPs: 14, RoCEPeers: 12, OtherPeers: 3, AllRanksOps: true, OpBaseTags: true}
	ca.LinkSets = nil // TestLinkSets
	if !reflect.DeepEqual(ca, want) {
		t.Errorf("job A communicator\n got %+v\nwant %+v", ca, want)
	}
	if a.UnattributedBufferBytes != 0 || a.UnattributedQPs != 0 {
		t.Errorf("job A unattributed buffer %d, QPs %d", a.UnattributedBufferBytes, a.UnattributedQPs)
	}

	b, ok := onlyProcess(t, st, 412002)
	if !ok {
		t.Fatal("job B (pid 412002) not read")
	}
	if q := b.Env["HCCL_RDMA_QPS_PER_CONNECTION"]; !q.HasNumber || q.Number != 4 || q.SetBy != "environment" {
		t.Errorf("job B QPS = %+v, want 4 from the environment (untagged `environmental variable … is set to [4]`)", q)
	}
	if len(b.Communicators) != 1 || b.Communicators[0].RankSize != 16 || b.Communicators[0].CCLBufferBytes != 0 || b.Communicators[0].EstablishedQPs != 0 {
		t.Errorf("job B communicators %+v: want one of 16 ranks, no buffer, no QPs", b.Communicators)
	}

	// Two jobs, two settings sets.
	if a.Settings == "" || b.Settings == "" || a.Settings == b.Settings {
		t.Fatalf("settings sets %q and %q, want two distinct ones", a.Settings, b.Settings)
	}
	exp := `
# HELP hccl_communicator_established_queue_pairs RoCE QPs the node's members of a communicator have created, from their ` + "`create hccl transport:`" + ` run-log lines with ` + "`rdma qpn[`" + ` (one per QP, over every link set they built).
# TYPE hccl_communicator_established_queue_pairs gauge
hccl_communicator_established_queue_pairs{communicator="10.20.0.11%eth0_60000_0_1732004711518342"} 14
hccl_communicator_established_queue_pairs{communicator="10.20.0.12%eth0_60001_0_1732004760931254"} 0
# HELP hccl_env_rdma_qps_per_connection Effective HCCL_RDMA_QPS_PER_CONNECTION of a settings set: RoCE queue pairs per rank pair.
# TYPE hccl_env_rdma_qps_per_connection gauge
hccl_env_rdma_qps_per_connection{settings="` + a.Settings + `"} 1
hccl_env_rdma_qps_per_connection{settings="` + b.Settings + `"} 4
`
	if err := testutil.CollectAndCompare(st, strings.NewReader(exp), "hccl_communicator_established_queue_pairs", "hccl_env_rdma_qps_per_connection"); err != nil {
		t.Error(err)
	}
}

func TestOutOfRangeSettingsAreNotNumbers(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)}))
	src := &Source{Path: "p", Kind: SourcePlog}
	for _, msg := range []string{
		"[HCCL_ENV] HCCL_BUFFSIZE set by environment to [NaN]M",
		"[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [-5]",
		"[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by environment to [1e26]s",
		"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [600]s",
		"[HCCL_ENV] HCCL_WEIRD_KNOB set by environment to [Inf]",
	} {
		st.Ingest(src, []byte("[INFO] HCCL(7,python):2026-01-07-10:00:00.000.000 [x.cc:1] [7]"+msg))
	}
	p, _ := onlyProcess(t, st, 7)
	for _, v := range []string{"HCCL_BUFFSIZE", "HCCL_RDMA_QPS_PER_CONNECTION", "HCCL_CONNECT_TIMEOUT"} {
		if e := p.Env[v]; e.HasNumber || e.Value == "" {
			t.Errorf("%s = %+v: an out-of-range value must keep its text and lose its number", v, e)
		}
	}
	exp := `
# HELP hccl_env_exec_timeout_seconds Effective HCCL_EXEC_TIMEOUT of a settings set (capped at 1091 s where HCCL_OP_EXPANSION_MODE is AIV).
# TYPE hccl_env_exec_timeout_seconds gauge
hccl_env_exec_timeout_seconds{settings="` + p.Settings + `"} 600
`
	if err := testutil.CollectAndCompare(st, strings.NewReader(exp), "hccl_env_exec_timeout_seconds", "hccl_env_buffsize_bytes",
		"hccl_env_rdma_qps_per_connection", "hccl_env_connect_timeout_seconds"); err != nil {
		t.Error(err)
	}
	for v, want := range map[string]float64{"HCCL_BUFFSIZE": 1, "HCCL_RDMA_QPS_PER_CONNECTION": 1, "HCCL_CONNECT_TIMEOUT": 1, "HCCL_EXEC_TIMEOUT": 0, "other": 1} {
		if got := seriesValue(t, st, "hccl_env_values_rejected_total", "variable", v); got != want {
			t.Errorf("rejected{%s} = %v, want %v", v, got, want)
		}
	}
	if probs, err := testutil.CollectAndLint(st); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}

// TestCommConfigBuffersAndLinks follows one process through the newest
// era: a per-communicator buffer size, two communicators, the cclBuffer
// allocated at the first collective of one of them, its QPs, a graph-mode
// tag, and a checkpoint round trip.
func TestCommConfigBuffersAndLinks(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)}))
	src := &Source{Path: "p", Kind: SourcePlog}
	in := func(msg string) {
		st.Ingest(src, []byte("[INFO] HCCL(8,python):2026-01-07-10:00:00.000.000 [x.cc:1] [8]"+msg))
	}
	in("[Load] comm config of [g2]: bufferSize[104857600], deterministic[0], trafficClass[132], serviceLevel[4]")
	in("[Communicator Key Info]identifier[w] rankSize[16] serverNum[2] moduleNum[2] superPodNum[0]")
	in("[Communicator Key Info]identifier[g2] rankSize[4] serverNum[2] moduleNum[2] superPodNum[0]")
	in("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x1], size[420478976]")
	in("create hccl transport:communicator[AllReduce_w], local rank[0], remote rank[1], transporttype[HCCS]")
	for q := 0; q < 3; q++ {
		in("create hccl transport:communicator[AllReduce_w], local rank[0], ip[a], remote rank[8], ip[b], transporttype[ROCE], rdma qpn[1], rdma qp sport[2], rdma TC[132], rdma SL[4]")
	}
	in("create hccl transport:communicator[HcomAllReduce_66_0], local rank[0], ip[a], remote rank[9], ip[b], transporttype[ROCE], rdma qpn[1], rdma qp sport[2], rdma TC[132], rdma SL[4]")
	check := func(st *State) {
		t.Helper()
		p, _ := onlyProcess(t, st, 8)
		if len(p.Communicators) != 2 {
			t.Fatalf("communicators %+v", p.Communicators)
		}
		w, g2 := p.Communicators[0], p.Communicators[1]
		if w.CCLBufferBytes != 420478976 || w.EstablishedQPs != 3 || w.RoCEPeers != 1 || w.OtherPeers != 1 || w.BufferSizeBytes != 0 {
			t.Errorf("w = %+v", w)
		}
		if g2.BufferSizeBytes != 104857600 || g2.CCLBufferBytes != 0 || g2.EstablishedQPs != 0 {
			t.Errorf("g2 = %+v", g2)
		}
		if p.UnattributedQPs != 1 {
			t.Errorf("graph-mode QP with two communicators: unattributed %d, want 1", p.UnattributedQPs)
		}
	}
	check(st)
	blob, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	again := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)}))
	if err := again.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	check(again)
	// The same peer again (a second link set) adds QPs, not peers.
	again.Ingest(src, []byte("[INFO] HCCL(8,python):2026-01-07-10:00:01.000.000 [x.cc:1] [8]create hccl transport:communicator[ALLTOALL_w], local rank[0], ip[a], remote rank[8], ip[b], transporttype[ROCE], rdma qpn[7], rdma qp sport[2], rdma TC[132], rdma SL[4]"))
	p, _ := onlyProcess(t, again, 8)
	if w := p.Communicators[0]; w.EstablishedQPs != 4 || w.RoCEPeers != 1 {
		t.Errorf("after a second link set: %+v", w)
	}
}

// linkBenchLines are the HCCL lines headroom v2 reads, each against the
// common INFO line (benchInfo) as the baseline of the same run.
func linkBenchLines() []struct {
	name string
	line []byte
} {
	h := "[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 [x.cc:1][3017221]"
	return []struct {
		name string
		line []byte
	}{
		{"baseline=info", benchInfo},
		{"transport=roce", []byte(h + "create hccl transport:communicator[AllReduce_w64], local rank[0], ip[10.1.0.1], remote rank[9], ip[10.1.1.1], transporttype[ROCE], rdma qpn[1290], rdma qp sport[50213], rdma TC[132], rdma SL[4]")},
		{"transport=hccs", []byte(h + "create hccl transport:communicator[AllReduce_w64], local rank[0], remote rank[1], transporttype[HCCS]")},
		{"ccl_buffer", []byte(h + "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c080000000], size[420478976]")},
		{"settings=untagged", []byte(h + "environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [16]")},
		{"communicator=2024", []byte(h + "Entry-HcclCommInitRootInfo:ranks[64], rank[0], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[w64], deviceLogicId[0]")},
	}
}

func benchIngestLine(b *testing.B, line []byte) {
	st := NewState(DefaultOptions())
	src := &Source{Path: "p", Kind: SourcePlog}
	st.Ingest(src, []byte("[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 [x.cc:1][3017221][Communicator Key Info]identifier[w64] rankSize[64] serverNum[8] moduleNum[8] superPodNum[0]"))
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		st.Ingest(src, line)
	}
}

// BenchmarkIngestLinkLines measures each new line kind; TestLinkLinesCost
// prints them as ratios to the baseline.
func BenchmarkIngestLinkLines(b *testing.B) {
	for _, l := range linkBenchLines() {
		b.Run(l.name, func(b *testing.B) { benchIngestLine(b, l.line) })
	}
}

// TestLinkLinesCost runs the benchmarks above in one process and prints
// ns/line and the ratio to the common INFO line. The lines are rare (one
// per QP at link setup, one per allocation), so a ratio of a few is fine;
// it fails only when a kind costs more than 20 × the baseline.
func TestLinkLinesCost(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark")
	}
	var base float64
	for _, l := range linkBenchLines() {
		r := testing.Benchmark(func(b *testing.B) { benchIngestLine(b, l.line) })
		ns := float64(r.T.Nanoseconds()) / float64(r.N)
		if base == 0 {
			base = ns
		}
		t.Logf("%-18s %7.0f ns/line %5.1f × baseline, %d allocs/line", l.name, ns, ns/base, r.AllocsPerOp())
		if ns > 20*base {
			t.Errorf("%s costs %.1f × the common INFO line", l.name, ns/base)
		}
	}
}

// A state file written before headroom v2 stored the views themselves; it
// still loads, and the fields it lacks are unknown (-1), not 0.
func TestStateFileBeforeHeadroomV2(t *testing.T) {
	old := `{"version":1,"processes":[{"pid":5,"name":"p","last_write":"2026-01-07T10:00:00Z",
	"env":{"HCCL_BUFFSIZE":{"Value":"200","SetBy":"default","Number":209715200,"HasNumber":true}},
	"communicators":[{"Name":"w","RankSize":64,"ServerNum":8,"UserRank":3,"DevicePhyID":3}]}],
	"summaries":[{"Code":"EI0011","Stage":"link_setup","Title":"t","Remedy":"r","Count":2,"BySource":{"screen":2},"First":"2026-01-07T10:00:00Z","Last":"2026-01-07T10:00:01Z","PIDs":[5]}]}`
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)}))
	if err := st.UnmarshalBinary([]byte(old)); err != nil {
		t.Fatal(err)
	}
	p, ok := onlyProcess(t, st, 5)
	if !ok || len(p.Communicators) != 1 {
		t.Fatalf("process %+v", p)
	}
	want := comm.Communicator{Name: "w", RankSize: 64, ServerNum: 8, SuperPodNum: -1, ModuleNum: -1, MultiModuleDiffDeviceNum: -1, MultiSuperPodDiffServerNum: -1, DeviceType: -1, UserRank: 3, DevicePhyID: 3, SuperPodMode: -1, StandardCard: -1}
	if c := p.Communicators[0]; !reflect.DeepEqual(c, want) {
		t.Errorf("communicator\n got %+v\nwant %+v", c, want)
	}
	if e := p.Env["HCCL_BUFFSIZE"]; e.Number != 209715200 || !e.HasNumber || e.SetBy != "default" {
		t.Errorf("env %+v", e)
	}
	if f := st.Faults(); len(f) != 1 || f[0].Count != 2 || f[0].BySource["screen"] != 2 {
		t.Errorf("summaries %+v", f)
	}
}

// Identifiers as HCCL prints them: a root-info identifier (sample plog's
// `[Communicator Key Info]`) and comm-config group names.
const (
	idW  = "10.20.0.11%eth0_60000_0_1765367607599032"
	idEP = "group_name_3"
	idG  = "group_name_31" // extends idEP: the longest identifier wins
)

// transportQP is transport_ibverbs.cc:247's line (HCOMM GetQpAttr).
func transportQP(tag string, peer, qpn int) string {
	return fmt.Sprintf("create hccl transport:communicator[%s], local rank[0], ip[192.168.10.10], remote rank[%d], ip[192.168.11.10], "+
		"transporttype[ROCE], rdma qpn[%d], rdma qp sport[50213], rdma TC[132], rdma SL[4]", tag, peer, qpn)
}

// keyInfo is hccl_communicator_attrs.cc:327's line.
func keyInfo(id string, ranks, servers int) string {
	return fmt.Sprintf("[Communicator Key Info]identifier[%s] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[0] "+
		"multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", id, ranks, servers, servers)
}

// TestTagsModesAndCaptures: the operator families and modes a process's
// link sets show, and ACL graph captures (hccl_communicator_host.cc:4657,
// :4679: "_Capture", then a counter once the captured tag has links)
// counted per capture of the graph, whatever operators it captures.
func TestTagsModesAndCaptures(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)}))
	src := &Source{Path: "p", Kind: SourcePlog}
	in := func(sec int, msg string) {
		st.Ingest(src, []byte(fmt.Sprintf("[INFO] HCCL(8,python):2026-01-07-10:00:%02d.000.000 [transport_ibverbs.cc:247] [8]%s", sec, msg)))
	}
	qp := func(sec int, tag string, peer int) { in(sec, transportQP(tag, peer, 100+sec*10+peer)) }
	ar := "AllReduce_" + idW + "NHRAllReduceMeshExecutor_host"
	ag := "AllGather_" + idW + "NHRAllGatherMeshExecutor_host"
	in(0, keyInfo(idW, 16, 2))
	in(0, keyInfo(idEP, 16, 2))
	in(0, keyInfo(idG, 16, 2))
	qp(1, ar, 8) // eager warm-up: the first link set
	qp(2, ar+"_Capture", 8)
	qp(2, ag+"_Capture", 9)  // capture 1: two operators, two QPs
	qp(3, ar+"_Capture3", 8) // capture 2: the AllReduce again, one QP so far
	qp(4, ar, 10)            // the op-base tag again: not a capture
	qp(5, "ALLTOALLV_"+idEP+"RunAlltoAllVFullMeshBCopy_host", 12)
	qp(5, "AllReduce_"+idG+"ringAllReduceMeshExecutor_host", 1)
	p, _ := onlyProcess(t, st, 8)
	w, ep, g := p.Communicators[0], p.Communicators[1], p.Communicators[2]
	if w.Captures != 2 || w.LastCaptureQPs != 1 || !w.LastCaptureAt.Equal(time.Date(2026, 1, 7, 10, 0, 3, 0, time.UTC)) {
		t.Errorf("w captures %d, last %d QPs at %v; want 2, 1 at 10:00:03", w.Captures, w.LastCaptureQPs, w.LastCaptureAt)
	}
	if w.EstablishedQPs != 5 || w.RoCEPeers != 3 || w.AllRanksOps || !w.OpBaseTags || w.GraphTags {
		t.Errorf("w = %+v: want 5 QPs to 3 peers, op-base, no all-ranks operator", w)
	}
	if !ep.AllRanksOps || ep.Captures != 0 || ep.EstablishedQPs != 1 {
		t.Errorf("ep = %+v: want an all-ranks operator, no capture", ep)
	}
	if g.EstablishedQPs != 1 || ep.EstablishedQPs != 1 {
		t.Errorf("%s has %d QPs, %s %d: want 1 each (longest identifier)", idG, g.EstablishedQPs, idEP, ep.EstablishedQPs)
	}
	if p.UnattributedQPs != 0 {
		t.Errorf("real tags not tied to their communicator: %d unattributed QPs", p.UnattributedQPs)
	}
	// A graph-mode tag names no identifier: with several communicators
	// it is tied to none.
	in(7, transportQP("HcomAllReduce_6629421139219749105_0", 1, 9))
	p, _ = onlyProcess(t, st, 8)
	if p.Communicators[2].GraphTags || p.UnattributedQPs != 1 {
		t.Errorf("a graph tag with three communicators is tied to none: %+v", p.Communicators)
	}
}

// TestLinkSets: each operator tag is its own link set (resMap_[newTag]),
// with its level-1 name and executor, the "_Capture" suffix, MC2's
// "<identifier><opType>_mc2", send/recv's own family, and the
// communicator's own opExpansionMode.
func TestLinkSets(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 8, 15, 10, 0, 0, 0, time.UTC)}))
	src := &Source{Path: "p", Kind: SourcePlog}
	in := func(sec int, msg string) {
		st.Ingest(src, []byte(fmt.Sprintf("[INFO] HCCL(8,python):2026-08-15-10:00:%02d.000.000 [transport_ibverbs.cc:247] [8]%s", sec, msg)))
	}
	qp := func(sec int, tag string, peer int) { in(sec, transportQP(tag, peer, 100+sec*10+peer)) }
	in(0, "[Load] comm config info of ["+idW+"]: configSize[136], version[8], opExpansionMode[1]")
	in(0, keyInfo(idW, 64, 8))
	in(0, keyInfo(idEP, 64, 8))
	mesh := "AllReduce_" + idW + "NHRAllReduceMeshExecutor_host"
	pipe := "AllReduce_" + idW + "pipelineAllReduceMeshOpbasePipelineExecutor_host"
	send := "worldCommSendRecv_0_8_" + idW + "SendExecutor_host"
	for _, p := range []int{8, 16, 32, 56, 48} {
		qp(1, mesh, p)
	}
	qp(2, pipe, 8)
	qp(3, mesh+"_Capture", 8)
	qp(4, idEP+"8_mc2", 9)
	qp(5, send, 8)
	p, _ := onlyProcess(t, st, 8)
	w, ep := p.Communicators[0], p.Communicators[1]
	if w.ExpansionMode != "HOST" || ep.ExpansionMode != "" {
		t.Errorf("expansion modes %q, %q; want HOST, \"\"", w.ExpansionMode, ep.ExpansionMode)
	}
	want := []comm.LinkSet{
		{Tag: mesh, Kind: comm.LinkSetOpBase, Op: "allreduce", Level1: "NHR", Algo: "nhr", Executor: "AllReduceMeshExecutor", RoCEPeers: 5, QPs: 5},
		{Tag: pipe, Kind: comm.LinkSetOpBase, Op: "allreduce", Level1: "pipeline", Algo: "pipeline", Executor: "AllReduceMeshOpbasePipelineExecutor", RoCEPeers: 1, QPs: 1},
		{Tag: mesh + "_Capture", Kind: comm.LinkSetCapture, Op: "allreduce", Level1: "NHR", Algo: "nhr", Executor: "AllReduceMeshExecutor", RoCEPeers: 1, QPs: 1},
		{Tag: send, Kind: comm.LinkSetSendRecv, Op: "send", Executor: "SendExecutor", RoCEPeers: 1, QPs: 1},
	}
	if !reflect.DeepEqual(w.LinkSets, want) {
		t.Errorf("link sets\n got %+v\nwant %+v", w.LinkSets, want)
	}
	if w.Captures != 1 || w.LastCaptureQPs != 1 || w.RoCEPeers != 5 || w.AllRanksOps {
		t.Errorf("w = %+v: want 1 capture of 1 QP, 5 peers, no all-ranks operator (send links only its peer)", w)
	}
	if !ep.MC2 || !ep.AllRanksOps || len(ep.LinkSets) != 1 || ep.LinkSets[0].Kind != comm.LinkSetMC2 || p.UnattributedQPs != 0 {
		t.Errorf("ep = %+v (unattributed %d): want an MC2 link set tied to ep", ep, p.UnattributedQPs)
	}
}

// TestAIVAndReleaseLines: `[CreateCommAIVbuffer]` marks the two `Create ccl
// buffer` lines before it as AIV buffers of its mode (not a cclBuffer) for
// the communicator of the next link set; a `[ReleaseCCLbuffer]` line of a
// live communicator makes its cclBuffer pending again, while the releases a
// destroy prints (HEAD: before `Entry-HcclCommDestroy … complete … group[g]`)
// touch no other communicator; `[SelectAlg]` makes its newTag a link set and
// sets moduleNum; `[ConstructQpAttrs]` sizes the next QP.
func TestAIVAndReleaseLines(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Date(2026, 8, 15, 10, 5, 0, 0, time.UTC)}))
	src := &Source{Path: "p", Kind: SourcePlog}
	in := func(sec int, src2, msg string) {
		st.Ingest(src, []byte(fmt.Sprintf("[INFO] HCCL(8,python):2026-08-15-10:%02d:%02d.000.000 [%s] [8]%s", sec/60, sec%60, src2, msg)))
	}
	const buf = 2*200<<20 + 1<<20
	in(0, "hccl_communicator_attrs.cc:327", keyInfo(idW, 16, 2))
	in(0, "hccl_communicator_attrs.cc:327", keyInfo(idEP, 16, 2))
	in(1, "ccl_buffer_manager.cc:57", fmt.Sprintf("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c000000000], size[%d]", buf))
	in(1, "ccl_buffer_manager.cc:57", "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c100000000], size[37748736]")
	in(1, "ccl_buffer_manager.cc:57", "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c200000000], size[4194304]")
	in(1, "ccl_buffer_manager.cc:140", "[HCCL_TRACE][CreateCommAIVbuffer] OpbaseMode")
	tag := "AllReduce_" + idW + "ringAllReduceMeshExecutor_host"
	in(2, "coll_alg_operator.cc:192", "[SelectAlg] newTag["+tag+"] algName[AllReduceMeshExecutor] userRank[0] topoType[2] "+
		"algType[level0:fullmesh,level1:ring,level2:ring] userRankSize[16] level0Size[8] moduleNum_[4] level2Size[0] ")
	in(2, "adapter_hccp.cc:2460", "[ConstructQpAttrs][attr]sendCqDepth[16384], recvCqDepth[64], max_send_wr[16384], max_recv_wr[64]")
	in(2, "transport_ibverbs.cc:247", transportQP(tag, 8, 101))
	in(3, "ccl_buffer_manager.cc:57", fmt.Sprintf("[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x12c300000000], size[%d]", buf))
	in(3, "transport_ibverbs.cc:247", transportQP("AllReduce_"+idEP+"ringAllReduceMeshExecutor_host", 8, 102))
	p, _ := onlyProcess(t, st, 8)
	w, ep := p.Communicators[0], p.Communicators[1]
	if w.CCLBufferBytes != buf || !w.AIVOpBase || w.AIVOffload || ep.AIVOpBase || w.ModuleNum != 4 || w.ObservedQPBytes != 1.5*(1<<20) || ep.ObservedQPBytes != 0 {
		t.Errorf("w = %+v, ep = %+v: want w's cclBuffer without the AIV buffers, its op-base AIV set, moduleNum 4, 1.5 MiB QPs", w, ep)
	}
	// ep is destroyed: its release lines come first, then the destroy line; w keeps its buffer.
	in(10, "ccl_buffer_manager.cc:174", fmt.Sprintf("[HCCL_TRACE][ReleaseCCLbuffer]Release cclBuffer. buffer ptr[0x12c300000000], size[%d]", buf))
	in(11, "op_base.cc:3744", "Entry-HcclCommDestroy op_base comm destroy complete, take time [5210]us, group["+idEP+"], deviceLogicId[0].")
	in(40, "externalinput.cc:1420", "[HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]")
	p, _ = onlyProcess(t, st, 8)
	if len(p.Communicators) != 1 || p.Communicators[0].CCLBufferBytes != buf {
		t.Fatalf("after ep's destroy: %+v, want w alone with its cclBuffer", p.Communicators)
	}
	// w frees its cclBuffer while alive (hcclComm::ReleaseCommCCLbuffer): pending again.
	in(60, "ccl_buffer_manager.cc:174", fmt.Sprintf("[HCCL_TRACE][ReleaseCCLbuffer]Release cclBuffer. buffer ptr[0x12c000000000], size[%d]", buf))
	in(90, "externalinput.cc:1420", "[HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]")
	p, _ = onlyProcess(t, st, 8)
	if p.Communicators[0].CCLBufferBytes != 0 {
		t.Errorf("after w's release: cclBuffer %d, want 0 (allocated again at its next collective)", p.Communicators[0].CCLBufferBytes)
	}
}
