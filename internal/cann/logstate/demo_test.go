package logstate

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// demoDir is the demo (examples/demo), whose fake npu-smi lists pids
// 210001..210008, one python3 per NPU 0..7.
const demoDir = "../../../examples/demo"

func TestDemoData(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 6, 16, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	ingestTree(t, st, filepath.Join(demoDir, "log"))
	ingestTree(t, st, filepath.Join(demoDir, "screen"))
	golden(t, "demo.prom", exposition(t, st))
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}

	procs := st.Processes()
	if len(procs) != 8 {
		t.Fatalf("%d demo processes, want 8", len(procs))
	}
	for i, p := range procs {
		wantQPs, wantBy := 1.0, "default"
		if p.PID == 210001 {
			wantQPs, wantBy = 16, "environment"
		}
		qps, bs := p.Env["HCCL_RDMA_QPS_PER_CONNECTION"], p.Env["HCCL_BUFFSIZE"]
		if p.PID != 210001+i || p.Name != "python3" || qps.Number != wantQPs || bs.Number != 200<<20 || bs.SetBy != wantBy {
			t.Errorf("demo process %+v: qps %+v buffsize %+v", p, qps, bs)
		}
		if len(p.Communicators) != 1 || p.Communicators[0].RankSize != 64 || p.Communicators[0].ServerNum != 8 || p.Communicators[0].DevicePhyID != i {
			t.Errorf("demo communicators of %d: %+v", p.PID, p.Communicators)
		}
	}
	if n := countOf(t, st, "EI0011", "screen"); n != 1 {
		t.Errorf("demo EI0011 = %d", n)
	}
}
