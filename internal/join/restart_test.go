package join

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

type restartClock struct{ t time.Time }

func (c *restartClock) Now() time.Time { return c.t }

// restartLines is one 910B process with two communicators: a world group
// whose AllReduce ran its mesh executor and was captured, and a group with
// its own opExpansionMode that ran an AlltoAll. Every line is a HCOMM
// format string (docs/headroom.md "Line shapes and their sources").
func restartLines(pid int) []string {
	const (
		w  = "10.20.0.11%eth0_60000_0_1765367607599032"
		ep = "group_name_3"
	)
	h := func(sec int, src, msg string) string {
		return fmt.Sprintf("[INFO] HCCL(%d,python3):2026-01-07-10:00:%02d.000.000 [%s] [%d]%s", pid, sec, src, pid, msg)
	}
	qp := func(sec int, tag string, peer, qpn int) string {
		return h(sec, "transport_ibverbs.cc:247", fmt.Sprintf("create hccl transport:communicator[%s], local rank[0], ip[192.168.10.10], "+
			"remote rank[%d], ip[192.168.11.10], transporttype[ROCE], rdma qpn[%d], rdma qp sport[50213], rdma TC[132], rdma SL[4]", tag, peer, qpn))
	}
	key := func(id string) string {
		return h(0, "hccl_communicator_attrs.cc:327", "[Communicator Key Info]identifier["+id+"] rankSize[128] serverNum[16] moduleNum[16] "+
			"superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]")
	}
	out := []string{
		h(0, "externalinput.cc:1420", "[HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]"),
		h(0, "comm_config.cc:122", "[Load] comm config info of ["+ep+"]: configSize[136], version[8], opExpansionMode[1]"),
		key(w), key(ep),
	}
	mesh := "AllReduce_" + w + "NHRAllReduceMeshExecutor_host"
	for i, p := range []int{8, 16, 32, 64, 96, 112, 120} { // NHR over 16 servers: 7 peers
		out = append(out, qp(1, mesh, p, 1000+i))
	}
	out = append(out, qp(2, mesh+"_Capture", 8, 1100), qp(2, mesh+"_Capture", 16, 1101))
	out = append(out, qp(3, "ALLTOALL_"+ep+"RunAlltoAllVFullMeshBCopy_host", 8, 1200))
	return out
}

// TestRestartKeepsTheModel: a live process's expected QPs and headroom are
// the same before and after the exporter restarts on its state file
// (SIGTERM saves it, the next start loads it), and the same as never
// restarting once the process goes on (its next capture).
func TestRestartKeepsTheModel(t *testing.T) {
	clock := &restartClock{t: time.Date(2026, 1, 7, 10, 0, 30, 0, time.UTC)}
	opts := logstate.DefaultOptions()
	opts.Location, opts.Now = time.UTC, clock.Now
	src := &logstate.Source{Path: "/log/plog/plog-7_1.log", Kind: logstate.SourcePlog, Dir: "/log"}
	model := func(st *logstate.State) headroom.ChipHeadroom {
		ps := st.Processes()
		if len(ps) != 1 {
			t.Fatalf("%d processes", len(ps))
		}
		cfg := headroom.DefaultConfig()
		cfg.Now = clock.t
		return headroom.Model(cfg, []headroom.ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 60 << 30, OK: true}, HBMTotalBytes: ascend.Value{V: 64 << 30, OK: true}, Name: "910B3"}},
			[]headroom.ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 7, LogDir: "/log"}},
			func(headroom.ChipProcess) (headroom.ProcessSettings, bool) { return Settings(ps[0]), true })[0]
	}
	live := logstate.NewState(opts)
	for _, l := range restartLines(7) {
		live.Ingest(src, []byte(l))
	}
	before := model(live)
	if before.QPsExpected == 0 || before.CaptureQPs == 0 {
		t.Fatalf("the fixture should have QPs and a capture ahead: %+v", before)
	}
	blob, err := live.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restarted := logstate.NewState(opts)
	if err := restarted.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	if after := model(restarted); !reflect.DeepEqual(after, before) {
		t.Errorf("after a restart\n got %+v\nwant %+v", after, before)
	}
	if a, b := restarted.Processes()[0].Communicators, live.Processes()[0].Communicators; !reflect.DeepEqual(a, b) {
		t.Errorf("communicators after a restart\n got %+v\nwant %+v", a, b)
	}
	// The process goes on: its next capture of the same operator.
	w := "10.20.0.11%eth0_60000_0_1765367607599032"
	next := fmt.Sprintf("[INFO] HCCL(7,python3):2026-01-07-10:00:20.000.000 [transport_ibverbs.cc:247] [7]create hccl transport:communicator[%s], "+
		"local rank[0], ip[192.168.10.10], remote rank[8], ip[192.168.11.10], transporttype[ROCE], rdma qpn[1300], rdma qp sport[50213], rdma TC[132], rdma SL[4]",
		"AllReduce_"+w+"NHRAllReduceMeshExecutor_host_Capture1")
	live.Ingest(src, []byte(next))
	restarted.Ingest(src, []byte(next))
	if a, b := model(restarted), model(live); !reflect.DeepEqual(a, b) {
		t.Errorf("after a restart and the next capture\n got %+v\nwant %+v", a, b)
	}
}
