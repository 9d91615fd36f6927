package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/exporter"
)

const mib = 1 << 20

// scenarioNode writes a one-chip npu-smi capture (HBM usedMiB/65536 MiB, one
// process 4242) and a CANN log root in which 4242 prints its settings and
// one communicator per entry of comms.
func scenarioNode(t *testing.T, usedMiB, qps int, comms []string, destroyed []string) (npuSMI, root string) {
	t.Helper()
	dir := t.TempDir()
	table := fmt.Sprintf(`+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc3                 Version: 24.1.rc3                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 95.0        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          %-5d/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 4242          | python3                  | %-5d                   |
+===========================+===============+====================================================+
`, usedMiB, usedMiB-3000)
	capture := filepath.Join(dir, "npu-smi.txt")
	npuSMI = filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(capture, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	line := func(f string, a ...any) {
		fmt.Fprintf(&b, "[INFO] HCCL(4242,python3):2026-01-07-10:00:00.%03d.000 [x.cc:1] [4242]", b.Len()%1000)
		fmt.Fprintf(&b, f+"\n", a...)
	}
	line("[HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M")
	line("[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", qps)
	line("[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]")
	for _, c := range comms {
		line("[Communicator Key Info]identifier[%s] rankSize[64] serverNum[8] moduleNum[8] superPodNum[0]", c)
	}
	for _, c := range destroyed {
		line("Entry-HcclCommDestroy: identifier[%s] begin", c)
	}
	root = filepath.Join(dir, "log")
	plogDir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(plogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plogDir, "plog-4242_20260107100000000.log"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return npuSMI, root
}

// wiredRegistry parses args as main does and builds the real collectors.
func wiredRegistry(t *testing.T, args ...string) *exporter.Registry {
	t.Helper()
	app := kingpin.New("t", "")
	w := addCollectorFlags(app)
	if _, err := app.Parse(args); err != nil {
		t.Fatal(err)
	}
	collectors, cleanup, err := w.build(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return exporter.NewRegistry(slog.New(slog.NewTextHandler(io.Discard, nil)), collectors)
}

// gauge returns the value of the one series of name whose labels contain want.
func gauge(t *testing.T, reg prometheus.Collector, name, want string) (float64, bool) {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(reg)
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			if strings.Contains(strings.Join(ls, ","), want) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestHeadroomScenariosThroughRealCollectors runs npusmi, cannlog and
// headroom as main wires them, on a fake npu-smi and a CANN log root.
func TestHeadroomScenariosThroughRealCollectors(t *testing.T) {
	// Per communicator: ranks_per_server = 64/8 = 8, peers_high = 64-8 = 56,
	// QPs = 56 × QPS, bytes_high = QPs × 3 MiB.
	tests := []struct {
		name          string
		qps           int
		comms         []string
		destroyed     []string
		wantQPHighMiB float64
		wantHeadMiB   float64
	}{
		{"QPS 16 in 64 ranks over 8 servers: negative", 16, []string{"c1"}, nil, 56 * 16 * 3, 65536 - 63900 - 56*16*3},
		{"QPS 1: positive", 1, []string{"c1"}, nil, 56 * 3, 65536 - 63900 - 56*3},
		{"two communicators sum", 1, []string{"c1", "c2"}, nil, 2 * 56 * 3, 65536 - 63900 - 2*56*3},
		{"a destroyed communicator leaves the sum", 1, []string{"c1", "c2"}, []string{"c2"}, 56 * 3, 65536 - 63900 - 56*3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			npuSMI, root := scenarioNode(t, 63900, tc.qps, tc.comms, tc.destroyed)
			reg := wiredRegistry(t, "--npu-smi.path="+npuSMI, "--cannlog.root="+root, "--cannlog.poll-interval=50ms")
			deadline := time.Now().Add(10 * time.Second)
			for {
				qp, ok := gauge(t, reg, "hccl_link_setup_qp_memory_bytes", "bound=high")
				if ok && qp == tc.wantQPHighMiB*mib {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("qp memory high = %v MiB (present %v), want %v MiB", qp/mib, ok, tc.wantQPHighMiB)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Several polls later the value holds: the whole log was read.
			time.Sleep(250 * time.Millisecond)
			if qp, _ := gauge(t, reg, "hccl_link_setup_qp_memory_bytes", "bound=high"); qp != tc.wantQPHighMiB*mib {
				t.Fatalf("qp memory high changed to %v MiB, want %v MiB", qp/mib, tc.wantQPHighMiB)
			}
			head, ok := gauge(t, reg, "hccl_link_setup_headroom_bytes", "npu=0")
			if !ok || head != tc.wantHeadMiB*mib {
				t.Fatalf("headroom = %v MiB (present %v), want %v MiB", head/mib, ok, tc.wantHeadMiB)
			}
			if (head < 0) != (tc.wantHeadMiB < 0) {
				t.Fatalf("headroom sign: %v", head)
			}
			known, _ := gauge(t, reg, "hccl_link_setup_processes", "settings=known")
			if known != 1 {
				t.Fatalf("processes with known settings = %v, want 1", known)
			}
		})
	}
}
