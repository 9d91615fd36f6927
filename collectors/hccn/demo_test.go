package hccn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
)

// demoScript is the fake hccn_tool the demo and the end-to-end test run.
const demoScript = "../../examples/demo/hccn_tool"

// TestDemoFakeHCCNTool sweeps the demo node through the real runner: every
// chip answers every command in the grammar the parsers accept, and the
// export is the golden demo node.
func TestDemoFakeHCCNTool(t *testing.T) {
	path, err := filepath.Abs(demoScript)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s must be executable: %v", path, err)
	}
	t.Setenv("DEMO_HCCN_TOOL_DIR", "")
	c := newCollector(Config{Path: path, Timeout: 10 * time.Second, Interval: time.Hour}, Deps{Chips: chips910B(8)}, nil)
	at := time.Unix(1700000000, 0)
	c.now = func() time.Time { return at }
	s := c.Sweep(context.Background())
	if !s.Complete || len(s.Devices) != 8 {
		t.Fatalf("demo sweep: complete=%v devices=%d err=%v", s.Complete, len(s.Devices), s.Err)
	}
	for _, r := range s.Devices {
		wantQPs := 5 // NHR's first link set, 1 QP per link
		if r.PhyID == 0 {
			wantQPs = 0 // nothing set up yet
		}
		if !r.HasLink || !r.LinkUp || r.NetHealth != "Success" || len(r.QPs) != wantQPs ||
			r.LinkStat == nil || r.LinkDownEvents != 1 || len(r.Stat) != 46 ||
			r.Optical == nil || !r.Optical.Present || len(r.Optical.RxPowerW) != 4 || !r.HasTLS || r.TLSEnabled || r.SpeedBytesPerSecond != 25e9 {
			t.Errorf("demo chip %d: %+v", r.PhyID, r)
		}
	}
	compareGolden(t, "node-demo", metrictest.Unchecked(c))

	// DEMO_HCCN_TOOL_DIR replaces one chip's answer.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "3", "link.txt"), []byte("link status: DOWN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEMO_HCCN_TOOL_DIR", dir)
	s = c.Sweep(context.Background())
	if !s.Complete || s.Devices[3].LinkUp || !s.Devices[2].LinkUp {
		t.Errorf("override: chip 3 up=%v, chip 2 up=%v, complete=%v", s.Devices[3].LinkUp, s.Devices[2].LinkUp, s.Complete)
	}

	// Unknown devices and commands fail as the real tool does.
	for _, args := range [][]string{{"-i", "8", "-link", "-g"}, {"-i", "0", "-lldp", "-g"}, {"-link", "-g"}} {
		o := runTool(context.Background(), path, args, 10*time.Second)
		if res, err := classify(o); res == sweep.Success || err == nil {
			t.Errorf("demo hccn_tool %s: %s, want a failure", strings.Join(args, " "), res)
		}
	}
}
