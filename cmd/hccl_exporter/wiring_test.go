package main

import (
	"maps"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// parsedWiring registers every collector's flags and parses args.
func parsedWiring(t *testing.T, args ...string) *collectorWiring {
	t.Helper()
	app := kingpin.New("t", "")
	w := addCollectorFlags(app)
	if _, err := app.Parse(args); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestCollectorDepsFromSharedFlags: each collector's Deps carry the shared
// flags main owns or another collector's flags name: one npu-smi tool
// (--npusmi.path, --npusmi.timeout) for the npusmi table and the npuhealth
// sweep, the host paths, and the workload memory's bounds
// (--headroom.workload-memory-*) for the log state that keeps it.
func TestCollectorDepsFromSharedFlags(t *testing.T) {
	w := parsedWiring(t, "--npusmi.path=/opt/npu-smi", "--npusmi.timeout=3s", "--path.procfs=/host/proc", "--path.devfs=/host/dev",
		"--headroom.workload-memory-ttl=48h", "--headroom.workload-memory-max=10", "--pods.kubelet-logs=/host/log", "--npuhealth.voltage")
	d := w.sharedValues()
	tool := vendorcli.Tool{Path: "/opt/npu-smi", Timeout: 3 * time.Second}
	if d.NPUSMI != tool {
		t.Errorf("Deps.NPUSMI = %+v, want %+v", d.NPUSMI, tool)
	}
	if d.Paths != (Paths{Procfs: "/host/proc", DevFS: "/host/dev", KubeletLogs: "/host/log"}) {
		t.Errorf("Deps.Paths = %+v", d.Paths)
	}

	if nd := npusmiDeps(d); nd.Tool != tool || nd.Procfs != "/host/proc" || nd.Identities != d.Identities || d.Identities == nil {
		t.Errorf("npusmi deps = %+v", nd)
	}
	hd := w.healthDeps(d)
	if hd.Tool != tool || hd.DevFS != "/host/dev" || hd.Identities != d.Identities {
		t.Errorf("npuhealth deps = %+v", hd)
	}
	// --npuhealth.voltage asks volt; the frequency and ECC-enable
	// families stay off by default, so their queries are not asked.
	if want := map[string]bool{"common": true, "ecc-enable": true}; !maps.Equal(hd.Skip, want) {
		t.Errorf("npuhealth skips %v, want %v", hd.Skip, want)
	}
	cd := w.cannlogDeps(d)
	if cd.Procfs != "/host/proc" || cd.WorkloadTTL != 48*time.Hour || cd.MaxWorkloads != 10 {
		t.Errorf("cannlog deps: procfs %q, workload memory %s × %d", cd.Procfs, cd.WorkloadTTL, cd.MaxWorkloads)
	}
	if cd.PodOfProcess == nil || cd.PodOfDevice != nil || cd.Processes != nil {
		t.Errorf("cannlog deps without npu-smi or kubelet: pod of process %v, pod of device %v, processes %v",
			cd.PodOfProcess != nil, cd.PodOfDevice != nil, cd.Processes != nil)
	}
	if hc := hccnDeps(d); hc.DevFS != "/host/dev" || hc.Chips != nil {
		t.Errorf("hccn deps without npu-smi = %+v, want /host/dev and no chip source", hc)
	}
	if pd := w.podsDeps(d); pd.Procfs != "/host/proc" || pd.Processes != nil || pd.Chips == nil {
		t.Errorf("pods deps without npu-smi = %+v", pd)
	}

	// With the npu-smi runner, its table feeds the others.
	d.NPU = npusmi.New(*w.npusmi, npusmiDeps(d), nil)
	if w.cannlogDeps(d).Processes == nil || hccnDeps(d).Chips == nil || w.podsDeps(d).Processes == nil {
		t.Error("npu-smi's table is not wired into cannlog, hccn and pods")
	}
}

// TestCollectorDepsDefaults: without flags, npuhealth runs the same
// npu-smi as the npusmi table, with its default timeout, and the log state
// keeps the workload memory's default bounds.
func TestCollectorDepsDefaults(t *testing.T) {
	w := parsedWiring(t)
	d := w.sharedValues()
	if want := (vendorcli.Tool{Path: "npu-smi", Timeout: 10 * time.Second}); npusmiDeps(d).Tool != want || w.healthDeps(d).Tool != want {
		t.Errorf("npu-smi tool: npusmi %+v, npuhealth %+v, want %+v", npusmiDeps(d).Tool, w.healthDeps(d).Tool, want)
	}
	if want := map[string]bool{"volt": true, "common": true, "ecc-enable": true}; !maps.Equal(w.healthDeps(d).Skip, want) {
		t.Errorf("npuhealth skips %v by default, want %v", w.healthDeps(d).Skip, want)
	}
	cd := w.cannlogDeps(d)
	if cd.WorkloadTTL != logstate.DefaultWorkloadTTL || cd.MaxWorkloads != logstate.DefaultMaxWorkloads {
		t.Errorf("workload memory %s × %d by default, want %s × %d", cd.WorkloadTTL, cd.MaxWorkloads,
			logstate.DefaultWorkloadTTL, logstate.DefaultMaxWorkloads)
	}
}
