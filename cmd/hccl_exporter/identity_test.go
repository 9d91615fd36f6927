package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

// TestWiredIdentity: the npuhealth sweep's `npu-smi info -t board` answers
// reach the npusmi collector's ascend_npu_info through Deps.Identities (the
// chip's VDie ID, its card's serial number and product name), with neither
// collector holding the other.
func TestWiredIdentity(t *testing.T) {
	dir := t.TempDir()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// `npu-smi info` prints the table; `info -t board -i N -c C` a chip's
	// board, `info -t board -i N` its card's; every other query is not
	// supported by this fake.
	script := "#!/bin/sh\n" +
		"if [ \"$#\" -eq 1 ]; then cat '" + abs("testdata/info-a2-910b4.txt") + "'; exit 0; fi\n" +
		"if [ \"$3\" = board ] && [ \"$#\" -eq 7 ]; then cat '" + abs("testdata/board/chip.txt") + "'; exit 0; fi\n" +
		"if [ \"$3\" = board ] && [ \"$#\" -eq 5 ]; then cat '" + abs("testdata/board/card.txt") + "'; exit 0; fi\n" +
		"echo 'Error parameter of -t'; exit 215\n"
	npuSMI := filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(npuSMI, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := wiredRegistry(t, "--npusmi.path="+npuSMI, "--npusmi.min-interval=0s", "--path.devfs="+dir,
		"--no-collector.cannlog", "--no-collector.pods", "--no-collector.hccn", "--no-collector.headroom")
	want := map[string]string{"npu": "0", "chip": "0", "vdie_id": "185011D4-21104518-A0C4ED94-14CC040A-56102003",
		"serial_number": "102386371810N3000136", "product_name": "IT21PDDA01"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mfs := metrictest.Gather(t, reg)
		if _, ok := metrictest.Find(mfs, "ascend_npu_info", want); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ascend_npu_info with %v: %v", want, metrictest.Samples(mfs, "ascend_npu_info"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWiredLearning: the headroom collector is built with the QP-size
// estimator (its refusal counters are served) unless
// --no-headroom.learn-qp-size, and with the CANN log state's workload
// memory (hccl_workload_memory_workloads).
func TestWiredLearning(t *testing.T) {
	dir := t.TempDir()
	npuSMI := filepath.Join(dir, "npu-smi")
	table, err := filepath.Abs("testdata/info-a2-910b4.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+table+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--npusmi.path=" + npuSMI, "--cannlog.root=" + dir, "--path.procfs=", "--no-collector.pods", "--no-collector.hccn",
		"--no-collector.npuhealth"}
	for _, tc := range []struct {
		flag    string
		learned bool
	}{{"--headroom.learn-qp-size", true}, {"--no-headroom.learn-qp-size", false}} {
		reg := wiredRegistry(t, append(args, tc.flag, "--cannlog.state-file="+filepath.Join(t.TempDir(), "state"))...)
		mfs := metrictest.Gather(t, reg)
		if got := len(metrictest.Samples(mfs, "hccl_link_setup_queue_pair_bursts_refused_total")) > 0; got != tc.learned {
			t.Errorf("%s: refusal counters served %v, want %v", tc.flag, got, tc.learned)
		}
		if len(metrictest.Samples(mfs, "hccl_workload_memory_workloads")) == 0 {
			t.Errorf("%s: no hccl_workload_memory_workloads: the workload memory is not wired", tc.flag)
		}
	}
}
