package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// podLogs writes the CANN log root of one pod whose training process is pid
// 156 in its own pid namespace: its QPS and buffer size, one 64-rank
// communicator over 8 servers, and the device it drives.
func podLogs(t *testing.T, root string, qps, buffMiB, phy int) {
	t.Helper()
	var b strings.Builder
	line := func(f string, a ...any) {
		fmt.Fprintf(&b, "[INFO] HCCL(156,python3):2026-01-07-10:00:00.%03d.000 [x.cc:1] [156]", b.Len()%1000)
		fmt.Fprintf(&b, f+"\n", a...)
	}
	line("[HCCL_ENV] HCCL_BUFFSIZE set by environment to [%d]M", buffMiB)
	line("[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", qps)
	line("[Communicator Key Info]identifier[job_%d] rankSize[64] serverNum[8] moduleNum[8] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", phy)
	line("[LocalRank Key Info]userRank[%d] hostIp[10.0.0.1] devicePhyId[%d] server[10.0.0.1] deviceIp[10.1.0.%d] superPodId[] useSuperPodMode[0] isStandardCard[0]", phy, phy, phy)
	dir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plog-156_20260107100000000.log"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeNPUSMIScript writes an npu-smi that prints a capture.
func fakeNPUSMIScript(t *testing.T, capture string) string {
	t.Helper()
	abs, err := filepath.Abs(capture)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "npu-smi")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat '"+abs+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

type sample struct {
	labels map[string]string
	value  float64
}

// samples gathers every series of name.
func samples(t *testing.T, reg prometheus.Collector, name string) []sample {
	t.Helper()
	var out []sample
	for _, s := range metrictest.Samples(metrictest.Gather(t, reg), name) {
		out = append(out, sample{s.Labels, s.Value})
	}
	return out
}

// TestTwoPodsWithPID156 runs two pods on one node whose training processes
// are both pid 156 inside their own pid namespaces, each writing its CANN
// logs to its own directory, on different chips with different HCCL
// settings: pod A QPS 16 and 400 MiB buffers, pod B QPS 1 and 100 MiB. On an
// A2 table (npu-smi shows host pids only) and an A3 table (both rows print
// container pid 156), each chip's headroom must use its own pod's process,
// each process keeps its own settings, and both are attributed to the pod
// the kubelet assigned the chip to.
func TestTwoPodsWithPID156(t *testing.T) {
	for _, tc := range []struct {
		name         string
		capture      string
		phyA, phyB   int
		chipA, chipB [2]string // npu, chip of phyA and phyB
	}{
		{"A2 910B4", "testdata/info-a2-910b4.txt", 6, 7, [2]string{"6", "0"}, [2]string{"7", "0"}},
		{"A3 910_93", "testdata/info-a3-two-pods.txt", 9, 8, [2]string{"4", "1"}, [2]string{"4", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rootA, rootB := filepath.Join(dir, "pod-a"), filepath.Join(dir, "pod-b")
			podLogs(t, rootA, 16, 400, tc.phyA)
			podLogs(t, rootB, 1, 100, tc.phyB)
			kubelet := testtools.StartFakeKubelet(t,
				testtools.PodDevice{Namespace: "train", Pod: "job-a-0", Container: "pytorch", Resource: "huawei.com/Ascend910", DeviceIDs: []string{fmt.Sprintf("Ascend910-%d", tc.phyA)}},
				testtools.PodDevice{Namespace: "train", Pod: "job-b-0", Container: "pytorch", Resource: "huawei.com/Ascend910", DeviceIDs: []string{fmt.Sprintf("Ascend910-%d", tc.phyB)}},
			)
			reg := wiredRegistry(t, "--npusmi.path="+fakeNPUSMIScript(t, tc.capture),
				"--cannlog.root="+rootA, "--cannlog.root="+rootB, "--cannlog.poll-interval=50ms",
				"--pods.kubelet-socket="+kubelet.Socket, "--pods.kubelet-interval=50ms",
				"--no-collector.hccn")

			// Per communicator, no link set up yet: 64 ranks over 8 servers,
			// 8 per server, 56 remote peers (the high bound) × QPs per
			// connection (QPS 16 → 17, QPS 1 → 1).
			want := map[[2]string]float64{tc.chipA: 56 * 17, tc.chipB: 56 * 1}
			deadline := time.Now().Add(15 * time.Second)
			for {
				got := map[[2]string]float64{}
				for _, s := range samples(t, reg, "hccl_link_setup_pending_queue_pairs") {
					if s.labels["bound"] == "high" {
						got[[2]string{s.labels["npu"], s.labels["chip"]}] = s.value
					}
				}
				pods := samples(t, reg, "ascend_npu_pod_info")
				if got[tc.chipA] == want[tc.chipA] && got[tc.chipB] == want[tc.chipB] && len(pods) == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("QPs high per chip = %v, want %v; pod info %v", got, want, pods)
				}
				time.Sleep(50 * time.Millisecond)
			}
			for _, s := range samples(t, reg, "hccl_link_setup_processes") {
				chip := [2]string{s.labels["npu"], s.labels["chip"]}
				if _, ours := want[chip]; !ours {
					continue
				}
				wantN := map[string]float64{"known": 1, "defaulted": 0}[s.labels["settings_source"]]
				if s.value != wantN {
					t.Errorf("chip %v: %s processes = %v, want %v", chip, s.labels["settings_source"], s.value, wantN)
				}
			}
			// Settings, one series per settings set …
			qps := map[string]float64{}
			for _, s := range samples(t, reg, "hccl_env_rdma_qps_per_connection") {
				qps[s.labels["settings"]] = s.value
			}
			buff := map[string]float64{}
			for _, s := range samples(t, reg, "hccl_env_buffsize_bytes") {
				buff[s.labels["settings"]] = s.value
			}
			if len(qps) != 2 {
				t.Fatalf("QPS series %v, want one per pod's settings set", qps)
			}
			// … joined to their processes and chips, and the chip to its
			// pod: what the PromQL `* on(settings) group_right hccl_process_info
			// * on(npu,chip) group_left(namespace,pod) ascend_npu_pod_info` does.
			byPod := map[string][2]float64{}
			podOf := map[[2]string]string{}
			for _, s := range samples(t, reg, "ascend_npu_pod_info") {
				podOf[[2]string{s.labels["npu"], s.labels["chip"]}] = s.labels["namespace"] + "/" + s.labels["pod"]
			}
			procs := samples(t, reg, "hccl_process_info")
			if len(procs) != 2 {
				t.Fatalf("hccl_process_info %v, want one per process", procs)
			}
			for _, s := range procs {
				set := s.labels["settings"]
				q, ok := qps[set]
				if !ok || s.labels["joined_by"] == "none" {
					t.Fatalf("process %v: settings set %q has no QPS series or no chip (%v)", s.labels, set, qps)
				}
				byPod[podOf[[2]string{s.labels["npu"], s.labels["chip"]}]] = [2]float64{q, buff[set]}
			}
			wantPods := map[string][2]float64{"train/job-a-0": {16, 400 * mib}, "train/job-b-0": {1, 100 * mib}}
			if fmt.Sprint(byPod) != fmt.Sprint(wantPods) {
				t.Errorf("settings by pod = %v, want %v", byPod, wantPods)
			}

			// Pod B's process fails its QP creation: the plog fault is
			// labelled with pod B, whose device it drives.
			f, err := os.OpenFile(filepath.Join(rootB, "run", "plog", "plog-156_20260107100000000.log"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("[ERROR] HCCP(156,python3):2026-01-07-10:00:05.000.000 [ra_hdc.c:1] [156]ra qp create fail, out of memory\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			deadline = time.Now().Add(10 * time.Second)
			for {
				var pods []string
				for _, s := range samples(t, reg, "hccl_fault_last_event_timestamp_seconds") {
					if s.labels["code"] == "EI0011" && s.labels["source"] == "plog" {
						pods = append(pods, s.labels["namespace"]+"/"+s.labels["pod"])
					}
				}
				if len(pods) == 1 && pods[0] == "train/job-b-0" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("plog EI0011 attributed to %v, want train/job-b-0", pods)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestPodsWithoutNPUSMI: on a node without npu-smi (the logs-only mode) the
// pods collector still names pods from the kubelet and does not fail: the
// adapters main wires mark npu-smi's not-found error as pods.ErrNoNPUSMI.
func TestPodsWithoutNPUSMI(t *testing.T) {
	kubelet := testtools.StartFakeKubelet(t,
		testtools.PodDevice{Namespace: "train", Pod: "job-a-0", Container: "main", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-0"}})
	logs := t.TempDir()
	reg := wiredRegistry(t, "--npusmi.path=hccl-exporter-test-no-such-npu-smi", "--pods.kubelet-socket="+kubelet.Socket,
		"--pods.kubelet-logs="+logs, "--path.procfs=/proc", "--no-collector.cannlog", "--no-collector.hccn", "--no-collector.npuhealth",
		"--no-collector.headroom", "--no-collector.npusmi")
	if v, ok := gauge(t, reg, "hccl_exporter_collector_success", "collector=pods"); !ok || v != 1 {
		t.Errorf("pods collector success = %v (found %v), want 1 without npu-smi", v, ok)
	}
	if v, ok := gauge(t, reg, "hccl_exporter_pod_resources_up", ""); !ok || v != 1 {
		t.Errorf("hccl_exporter_pod_resources_up = %v (found %v), want 1", v, ok)
	}
}
