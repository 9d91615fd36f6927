package headroom

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"

	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

type fakeNPU struct {
	chips []model.ChipMemory
	procs []model.ChipProcess
	err   error
}

func (f fakeNPU) Chips(context.Context) ([]model.ChipMemory, []model.ChipProcess, error) {
	return f.chips, f.procs, f.err
}

type fakeSettings map[int]model.ProcessSettings

func (f fakeSettings) Settings(p model.ChipProcess) (model.ProcessSettings, bool) {
	pid := p.PID
	s, ok := f[pid]
	return s, ok
}

// promCollector adapts a Collector to prometheus.Collector (unchecked), the
// way the exporter registry calls it, and keeps the error of the last run.
type promCollector struct {
	c   *Collector
	mu  sync.Mutex
	err error
}

func (p *promCollector) Describe(chan<- *prometheus.Desc) {}
func (p *promCollector) Collect(ch chan<- prometheus.Metric) {
	err := p.c.Update(context.Background(), ch)
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// goldenNPU: chip 0/0 at 63900/65536 MiB running a QPS 16 rank of a 64-rank,
// 8-server job; chip 0/1 idle; chip 1/0 with one known QPS 1 rank and one pid
// no CANN log mentions.
var goldenNPU = fakeNPU{
	chips: []model.ChipMemory{
		{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 63900 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}},
		{ChipID: ascend.ChipID{NPU: "0", Chip: "1"}, HBMUsedBytes: ascend.Value{V: 1000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}},
		{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 30000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}},
	},
	procs: []model.ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}, {ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 300}, {ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 301}},
}

var goldenSettings = fakeSettings{
	100: known(16, 200, world64),
	301: known(1, 200, world64),
}

// TestCollectorGolden compares the collector's output on goldenNPU with
// testdata/golden.prom (`go test -update` rewrites it; review the diff).
func TestCollectorGolden(t *testing.T) {
	pc := &promCollector{c: mustNew(t, Deps{NPU: goldenNPU, Settings: goldenSettings})}
	metrictest.Golden(t, "testdata/golden.prom", pc)
	if pc.err != nil {
		t.Errorf("Update() = %v", pc.err)
	}
}

func TestCollectorNPUFailureExportsNothing(t *testing.T) {
	npu := fakeNPU{chips: goldenNPU.chips, procs: goldenNPU.procs, err: errors.New("npu-smi: signal: killed")}
	pc := &promCollector{c: mustNew(t, Deps{NPU: npu, Settings: goldenSettings})}
	if n := testutil.CollectAndCount(pc); n != 0 {
		t.Errorf("exported %d metrics after npu-smi failed, want 0", n)
	}
	if pc.err == nil || !strings.Contains(pc.err.Error(), "killed") {
		t.Errorf("Update() = %v, want the npu-smi error", pc.err)
	}
}

func TestCollectorNoChips(t *testing.T) {
	pc := &promCollector{c: mustNew(t, Deps{NPU: fakeNPU{}, Settings: goldenSettings})}
	if n := testutil.CollectAndCount(pc); n != 0 {
		t.Errorf("exported %d metrics without chips, want 0", n)
	}
	if !errors.Is(pc.err, collector.ErrNoData) {
		t.Errorf("Update() = %v, want ErrNoData", pc.err)
	}
}

func TestCollectorWithoutSettingsSource(t *testing.T) {
	pc := &promCollector{c: mustNew(t, Deps{NPU: goldenNPU})}
	// Every process is unknown and adds no QPs: headroom is the free HBM.
	// Chip 0/0: 65536−63900 = 1636 MiB = 1715470336 bytes.
	want := `
# HELP hccl_link_setup_headroom_bytes HBM total − HBM used − hccl_link_setup_queue_pair_memory_bytes{bound="expected"} − hccl_ccl_buffer_pending_bytes: below zero the link setup HCCL will do on the chip does not fit and fails with EI0011. Links already set up are not subtracted again. Each QP is sized as hccl_link_setup_queue_pair_size_bytes{product,mode} says, whose source label tells which size was used: learned (measured on this node, --headroom.learn-qp-size), modelled (HCCL's QP depths) or flag.
# TYPE hccl_link_setup_headroom_bytes gauge
hccl_link_setup_headroom_bytes{chip="0",npu="0"} 1715470336
hccl_link_setup_headroom_bytes{chip="1",npu="0"} 67670900736
hccl_link_setup_headroom_bytes{chip="0",npu="1"} 37262196736
# HELP hccl_link_setup_processes Processes on the chip whose CANN logs the model reads, by where their HCCL settings came from: settings_source=known (printed), settings_source=defaulted (an HCCL default assumed for a value not printed; served only where above 0). Processes whose logs are not read are ascend_npu_processes{cann_logs="missing"}: their link setups ahead are not counted, so the chip's pending QPs and headroom are then not a verdict.
# TYPE hccl_link_setup_processes gauge
hccl_link_setup_processes{chip="0",npu="0",settings_source="known"} 0
hccl_link_setup_processes{chip="1",npu="0",settings_source="known"} 0
hccl_link_setup_processes{chip="0",npu="1",settings_source="known"} 0
`
	if err := testutil.CollectAndCompare(pc, strings.NewReader(want),
		"hccl_link_setup_headroom_bytes", "hccl_link_setup_processes"); err != nil {
		t.Error(err)
	}
}

func TestCollectorConcurrentScrapes(t *testing.T) {
	c := mustNew(t, Deps{NPU: goldenNPU, Settings: goldenSettings})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			ch := make(chan prometheus.Metric, 256)
			if err := c.Update(context.Background(), ch); err != nil {
				t.Error(err)
			}
			close(ch)
			n := 0
			for range ch {
				n++
			}
			// 3 chips × (3 qp memory + 3 pending qps + 1 unknown-mode + 2 slots + 1 established + 2 buffer
			// + 1 processes (known; defaulted only where above 0) + 1 headroom + 5 capacity inputs
			// + 1 remembered) + 7 modelled QP sizes (the chips name no product).
			if n != 67 {
				t.Errorf("Update sent %d metrics, want 67", n)
			}
		})
	}
	wg.Wait()
}

// TestCollectorForeignQPs: live QPs whose qpn no process on the chip logged
// are exported per chip; chips without a qpn list or logged qpns export
// no series (unknown, not zero).
func TestCollectorForeignQPs(t *testing.T) {
	npu := fakeNPU{
		chips: []model.ChipMemory{
			{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, HBMUsedBytes: ascend.Value{V: 1000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true},
				LiveQPs: ascend.Value{V: 5, OK: true}, LiveQPNs: []uint32{1290, 1291, 7001, 7002, 7003}, LiveQPNsKnown: true},
			{ChipID: ascend.ChipID{NPU: "0", Chip: "1"}, HBMUsedBytes: ascend.Value{V: 1000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}, LiveQPs: ascend.Value{V: 3, OK: true}},
		},
		procs: []model.ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}, {ChipID: ascend.ChipID{NPU: "0", Chip: "1"}, PID: 101}},
	}
	s := known(1, 200, world64)
	s.QPNs = []uint32{1290, 1291, 1292}
	pc := &promCollector{c: mustNew(t, Deps{NPU: npu, Settings: fakeSettings{100: s, 101: s}})}
	want := `
# HELP ascend_roce_foreign_queue_pairs Live RoCE QPs on the chip (hccn_tool -qp_info) whose qpn no process on the chip logged in an HCCL ` + "`create hccl transport:`" + ` line: other RDMA users (Mooncake, HIXL KV transfer, leftovers). Reported, not subtracted from HCCL's link setup ahead. Absent while the logs print no qpns or the sweep is stale.
# TYPE ascend_roce_foreign_queue_pairs gauge
ascend_roce_foreign_queue_pairs{chip="0",npu="0"} 3
`
	if err := testutil.CollectAndCompare(pc, strings.NewReader(want), "ascend_roce_foreign_queue_pairs"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(pc); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}
