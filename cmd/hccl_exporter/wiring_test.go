package main

import (
	"maps"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/npuhealth"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// parsedFlags registers every collector's flags and parses args.
func parsedFlags(t *testing.T, args ...string) *collectorFlags {
	t.Helper()
	app := kingpin.New("t", "")
	f := addCollectorFlags(app, nil)
	if _, err := app.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCollectorDepsFromSharedFlags: what the collectors share comes from
// the flags of the package that owns them: one npu-smi tool
// (--npusmi.path, --npusmi.timeout) for the shared run and the npuhealth
// sweep, the host paths, and the workload memory's bounds
// (--headroom.workload-memory-*) for the log state that keeps it.
func TestCollectorDepsFromSharedFlags(t *testing.T) {
	f := parsedFlags(t, "--npusmi.path=/opt/npu-smi", "--npusmi.timeout=3s", "--path.procfs=/host/proc", "--path.devfs=/host/dev",
		"--headroom.workload-memory-ttl=48h", "--headroom.workload-memory-max=10", "--pods.kubelet-logs=/host/log", "--npuhealth.voltage")
	tool := vendorcli.Tool{Path: "/opt/npu-smi", Timeout: 3 * time.Second}
	if f.npusmi.Run.Tool != tool {
		t.Errorf("npu-smi tool = %+v, want %+v", f.npusmi.Run.Tool, tool)
	}
	if *f.paths != (paths{procfs: "/host/proc", devFS: "/host/dev"}) || f.pods.KubeletLogs != "/host/log" {
		t.Errorf("paths = %+v, kubelet logs %q", *f.paths, f.pods.KubeletLogs)
	}
	// --npuhealth.voltage asks volt; the frequency and ECC-enable
	// families stay off by default, so their queries are not asked.
	if want := map[string]bool{"common": true, "ecc-enable": true}; !maps.Equal(npuhealth.QueriesOff(f.familiesOff()), want) {
		t.Errorf("npuhealth skips %v, want %v", npuhealth.QueriesOff(f.familiesOff()), want)
	}
	fd := f.followDeps(nil, nil, nil)
	if fd.Procfs != "/host/proc" || fd.WorkloadTTL != 48*time.Hour || fd.MaxWorkloads != 10 {
		t.Errorf("follower deps: procfs %q, workload memory %s × %d", fd.Procfs, fd.WorkloadTTL, fd.MaxWorkloads)
	}
	if fd.PodOfProcess == nil || fd.PodOfDevice != nil || fd.Processes != nil || fd.Extensions != nil {
		t.Errorf("follower deps without npu-smi, kubelet or learning: pod of process %v, pod of device %v, processes %v, extensions %v",
			fd.PodOfProcess != nil, fd.PodOfDevice != nil, fd.Processes != nil, fd.Extensions)
	}
	// With the npu-smi runner, its table feeds the follower; the estimator
	// is given to it at construction, to keep in its state file.
	est := model.NewEstimator(model.EstimatorConfig{})
	fd = f.followDeps(npusmi.NewRunner(f.npusmi.Run, nil), nil, est)
	if fd.Processes == nil || fd.Extensions["headroom_qp_sizes"] != est {
		t.Error("npu-smi's table or the estimator is not wired into the follower")
	}
}

// TestCollectorDepsDefaults: without flags, npuhealth runs the same
// npu-smi as the shared run, with its default timeout, and the log state
// keeps the workload memory's default bounds.
func TestCollectorDepsDefaults(t *testing.T) {
	f := parsedFlags(t)
	if want := (vendorcli.Tool{Path: "npu-smi", Timeout: 10 * time.Second}); f.npusmi.Run.Tool != want {
		t.Errorf("npu-smi tool %+v, want %+v", f.npusmi.Run.Tool, want)
	}
	if want := map[string]bool{"volt": true, "common": true, "ecc-enable": true}; !maps.Equal(npuhealth.QueriesOff(f.familiesOff()), want) {
		t.Errorf("npuhealth skips %v by default, want %v", npuhealth.QueriesOff(f.familiesOff()), want)
	}
	fd := f.followDeps(nil, nil, nil)
	if fd.WorkloadTTL != logstate.DefaultWorkloadTTL || fd.MaxWorkloads != logstate.DefaultMaxWorkloads {
		t.Errorf("workload memory %s × %d by default, want %s × %d", fd.WorkloadTTL, fd.MaxWorkloads,
			logstate.DefaultWorkloadTTL, logstate.DefaultMaxWorkloads)
	}
}
