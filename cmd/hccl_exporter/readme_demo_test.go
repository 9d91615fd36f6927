package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

// TestREADMEDemoExampleMatchesDemo pins README's worked example of the
// demo node (between <!-- demo-example … --> and <!-- /demo-example -->)
// to what the exporter serves on examples/demo with scripts/demo.sh's
// flags: every number of the paragraph is computed here from the served
// metrics, and the paragraph may hold no other number. When the model or
// the demo data change, the paragraph must change with them.
func TestREADMEDemoExampleMatchesDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the wired collectors on examples/demo: skipped under -short")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, "<!-- demo-example")
	j := strings.Index(text, "<!-- /demo-example -->")
	if i < 0 || j < i {
		t.Fatal("README.md has no <!-- demo-example --> … <!-- /demo-example --> section")
	}
	section := text[i:j]
	section = section[strings.Index(section, "-->")+3:]
	para := strings.Join(strings.Fields(section), " ")

	demo := filepath.Join("..", "..", "examples", "demo")
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	t.Setenv("DEMO_HCCN_TOOL_DIR", "")
	// scripts/demo.sh's flags (its web and state-file flags aside).
	reg := wiredRegistry(t,
		"--npusmi.path="+filepath.Join(demo, "npu-smi"),
		"--hccn.path="+filepath.Join(demo, "hccn_tool"),
		"--cannlog.root="+filepath.Join(demo, "log"),
		"--cannlog.screen-log-path="+filepath.Join(demo, "screen", "*.log"),
		"--cannlog.poll-interval=50ms",
		"--pods.kubelet-socket=",
	)
	get := func(name, labels string) float64 {
		t.Helper()
		v, ok := metrictest.Find(metrictest.Gather(t, reg), name, metrictest.Labels(labels))
		if !ok {
			t.Fatalf("demo serves no %s{%s}", name, labels)
		}
		return v
	}
	// Wait until the logs are read and the hccn sweep is in.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mfs := metrictest.Gather(t, reg)
		_, a := metrictest.Find(mfs, "hccl_link_setup_headroom_bytes", metrictest.Labels("npu=0"))
		live, b := metrictest.Find(mfs, "ascend_roce_active_queue_pairs", metrictest.Labels("npu=1"))
		exp, c := metrictest.Find(mfs, "hccl_link_setup_pending_queue_pairs", metrictest.Labels("npu=0,bound=expected"))
		if a && b && c && live > 0 && exp > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo's headroom and hccn series did not appear")
		}
		time.Sleep(100 * time.Millisecond)
	}
	const mib = 1 << 20
	settingsOf := func(pid int) string {
		for _, s := range metrictest.Samples(metrictest.Gather(t, reg), "hccl_process_info") {
			if s.Labels["pid"] == strconv.Itoa(pid) {
				return s.Labels["settings"]
			}
		}
		t.Fatalf("no hccl_process_info for pid %d", pid)
		return ""
	}
	whole := func(name string, v float64) int {
		t.Helper()
		if v != float64(int(v)) {
			t.Fatalf("%s = %v is not a whole number: the README cannot state it exactly", name, v)
		}
		return int(v)
	}
	qps := whole("QPS", get("hccl_env_rdma_qps_per_connection", "settings="+settingsOf(210001)))
	qpsOthers := whole("QPS of the others", get("hccl_env_rdma_qps_per_connection", "settings="+settingsOf(210002)))
	free := whole("free MiB", (get("ascend_npu_hbm_total_bytes", "npu=0")-get("ascend_npu_hbm_used_bytes", "npu=0"))/mib)
	ranks := whole("ranks", get("hccl_communicator_ranks", ""))
	servers := whole("servers", get("hccl_communicator_servers", ""))
	live0 := whole("live QPs NPU 0", get("ascend_roce_active_queue_pairs", "npu=0"))
	exp := whole("expected QPs", get("hccl_link_setup_pending_queue_pairs", "npu=0,bound=expected"))
	perLink := qps + 1 // N + 1 for N > 1
	peers := whole("peers", float64(exp)/float64(perLink))
	qpMem := get("hccl_link_setup_queue_pair_memory_bytes", "npu=0,bound=expected")
	// Sizes are stated to the half MiB (a multi-QP QP is 1.5 MiB).
	half := func(name string, v float64) string {
		t.Helper()
		if v*2 != float64(int(v*2)) {
			t.Fatalf("%s = %v is not a whole number of half MiB: the README cannot state it exactly", name, v)
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	perQP := half("MiB per QP", qpMem/float64(exp)/mib)
	qpMiB := half("QP MiB", qpMem/mib)
	buf := whole("pending cclBuffer MiB", get("hccl_ccl_buffer_pending_bytes", "npu=0")/mib)
	headroom := get("hccl_link_setup_headroom_bytes", "npu=0") / mib
	liveOthers := whole("live QPs NPU 1", get("ascend_roce_active_queue_pairs", "npu=1"))
	roomy := 0
	for n := 1; n < 8; n++ {
		npu := "npu=" + strconv.Itoa(n)
		if get("hccl_link_setup_pending_queue_pairs", npu+",bound=expected") == 0 && get("hccl_link_setup_headroom_bytes", npu) > 0 &&
			get("ascend_roce_active_queue_pairs", npu) == float64(liveOthers) {
			roomy++
		}
	}
	if roomy != 7 {
		t.Errorf("%d of NPUs 1-7 have room, nothing expected ahead and %d live QPs; the README says all seven", roomy, liveOthers)
	}
	if float64(free)-qpMem/mib-float64(buf) != headroom {
		t.Errorf("headroom %v MiB is not free %d − QP memory %s − cclBuffer %d", headroom, free, qpMiB, buf)
	}
	phrases := []string{
		fmt.Sprintf("Process %d on NPU 0 runs with `HCCL_RDMA_QPS_PER_CONNECTION=%d`", 210001, qps),
		fmt.Sprintf("on a chip with %d MiB of HBM free", free),
		fmt.Sprintf("Its %d-rank communicator (%d servers)", ranks, servers),
		fmt.Sprintf("hccn_tool counts %d live QPs", live0),
		fmt.Sprintf("HCCL's default over %d servers, to %d peers × %d QPs = %d QPs", servers, peers, perLink, exp),
		fmt.Sprintf("at %s MiB while its mode is not yet printed: %s MiB", perQP, qpMiB),
		fmt.Sprintf("the rest of its cclBuffer (%d MiB)", buf),
		fmt.Sprintf("`hccl_link_setup_headroom_bytes{npu=\"0\"}` is −%s MiB", half("-headroom", -headroom)),
		"The other seven NPUs have room",
		fmt.Sprintf("(%d QP per link)", qpsOthers),
		fmt.Sprintf("%d live QPs in hccn_tool, which the model takes as %d whole links", liveOthers, liveOthers/qpsOthers),
	}
	for _, p := range phrases {
		if !strings.Contains(para, p) {
			t.Errorf("README's demo example lacks %q (computed from the demo's metrics); it reads:\n%s", p, para)
		}
	}
	// No number the demo does not produce.
	allowed := map[string]bool{"210001": true, "0": true, perQP: true, qpMiB: true, half("-headroom", -headroom): true}
	for _, v := range []int{qps, qpsOthers, free, ranks, servers, live0, exp, perLink, peers, buf, liveOthers, liveOthers / qpsOthers} {
		allowed[strconv.Itoa(v)] = true
	}
	for _, m := range regexp.MustCompile(`\d+(\.\d+)?`).FindAllString(para, -1) {
		if !allowed[m] {
			t.Errorf("README's demo example states %s, which is none of the demo's numbers", m)
		}
	}
}
