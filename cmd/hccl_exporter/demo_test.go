package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoNodeTellsOneStory runs the real collectors on examples/demo as
// `make demo` does: NPU 0's headroom is negative (its process 210001, with
// HCCL_RDMA_QPS_PER_CONNECTION=16, has link setup ahead that does not fit),
// the screen log holds that process's EI0011, and diagnose names the same
// process as the root cause.
func TestDemoNodeTellsOneStory(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo")
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	reg := wiredRegistry(t,
		"--npusmi.path="+filepath.Join(demo, "npu-smi"),
		"--npusmi.min-interval=0s",
		"--hccn.path="+filepath.Join(demo, "hccn_tool"),
		"--hccn.interval=1s",
		"--cannlog.root="+filepath.Join(demo, "log"),
		"--cannlog.screen-log-path="+filepath.Join(demo, "screen", "*.log"),
		"--cannlog.poll-interval=50ms",
		"--pods.kubelet-socket=",
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		v0, ok0 := gauge(t, reg, "hccl_link_setup_headroom_bytes", "npu=0")
		v1, ok1 := gauge(t, reg, "hccl_link_setup_headroom_bytes", "npu=1")
		if ok0 && ok1 && v0 < 0 && v1 > 0 {
			t.Logf("demo headroom: NPU 0 %.0f MiB, NPU 1 %.0f MiB", v0/mib, v1/mib)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo headroom NPU 0 = %v (%v), NPU 1 = %v (%v); want NPU 0 below zero, NPU 1 above", v0, ok0, v1, ok1)
		}
		time.Sleep(100 * time.Millisecond)
	}

	selected, code, stdout, _, err := parseDiagnose(t, "diagnose", "--format", "json", demo)
	if err != nil || !selected || code != 1 {
		t.Fatalf("diagnose examples/demo: selected %v exit %d err %v", selected, code, err)
	}
	for _, want := range []string{`"code": "EI0011"`, `"pid": 210001`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("diagnose examples/demo lacks %s", want)
		}
	}
	_, _, text, _, _ := parseDiagnose(t, "diagnose", demo)
	if !strings.Contains(text, "ROOT CAUSE EI0011 (link_setup) on demo pid 210001") {
		t.Errorf("diagnose examples/demo does not name pid 210001 as the root cause:\n%.1500s", text)
	}
}
