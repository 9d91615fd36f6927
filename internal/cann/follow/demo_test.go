package follow

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// demoDir is the demo (examples/demo), whose fake npu-smi lists pids
// 210001..210008, one python3 per NPU 0..7.
const demoDir = "../../../examples/demo"

// TestDemoFollowed reads the demo through the follower, as the exporter does.
func TestDemoFollowed(t *testing.T) {
	r := &testRig{
		cfg: Config{
			Roots:       []string{filepath.Join(demoDir, "log")},
			ScreenGlobs: []string{filepath.Join(demoDir, "screen", "*.log")},
			ProcessTTL:  time.Hour,
		},
		clock: &fakeClock{t: time.Date(2026, 1, 6, 16, 0, 0, 0, time.UTC)},
	}
	c := r.collector(t, allAlive)
	defer c.Close()
	c.pollOnce(r.clock.Now())
	if got := len(c.Processes()); got != 8 {
		t.Errorf("%d processes through the follower", got)
	}
	if n := testutil.CollectAndCount(c, "hccl_exporter_log_files_tracked"); n != 1 {
		t.Errorf("files tracked series: %d", n)
	}
}
