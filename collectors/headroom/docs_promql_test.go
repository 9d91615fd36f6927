package headroom

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestDocsPromQL evaluates every ```promql block of docs/headroom.md with
// `promtool test rules` over series shaped like this collector's output, so
// the queries the documentation gives operators keep returning the chips
// they claim to.
func TestDocsPromQL(t *testing.T) {
	doc, err := os.ReadFile("../../docs/headroom.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	// Expected samples per query, in the order the doc lists them. Chips:
	// 0/0 the worked example right after communicator creation (−120 MiB:
	// 85 QPs expected, 952 at most, and a 401 MiB cclBuffer ahead); 0/1 idle; 1/0 the same job with
	// every link set up on a chip npu-smi shows 1 MiB over full (nothing
	// ahead), plus an unknown pid; 2/0 free 4 MiB with 64 QPs ahead, QP
	// memory low 16 MiB, high 192 MiB (−188 MiB).
	want := []string{
		// Would fail now: negative headroom with link setup ahead (the alert's condition).
		`- labels: 'hccl_link_setup_headroom_bytes{instance="n1",job="hccl",npu="0",chip="0"}'
              value: -125829120
            - labels: 'hccl_link_setup_headroom_bytes{instance="n1",job="hccl",npu="2",chip="0"}'
              value: -197132288`,
		// Fails even at the low bound: free minus pending buffer 4 MiB < 16 MiB.
		`- labels: '{instance="n1",job="hccl",npu="2",chip="0"}'
              value: 4194304`,
		// Processes on chips that would fail now.
		`- labels: 'ascend_npu_process_memory_bytes{instance="n1",job="hccl",npu="0",chip="0",pid="100",process="python"}'
              value: 1e9
            - labels: 'ascend_npu_process_memory_bytes{instance="n1",job="hccl",npu="2",chip="0",pid="400",process="python"}'
              value: 3e9`,
		// MiB missing per chip where link setup is ahead.
		`- labels: '{instance="n1",job="hccl",npu="0",chip="0"}'
              value: 120
            - labels: '{instance="n1",job="hccl",npu="2",chip="0"}'
              value: 188`,
		// Chips with defaulted processes or processes whose logs are not read.
		`- labels: 'ascend_npu_processes{instance="n1",job="hccl",npu="1",chip="0",cann_logs="missing"}'
              value: 1`,
	}
	if len(blocks) != len(want) {
		t.Fatalf("docs/headroom.md has %d promql blocks, the test expects %d: update both together", len(blocks), len(want))
	}

	var tests strings.Builder
	for i, b := range blocks {
		expr := strings.Join(strings.Fields(b[1]), " ")
		tests.WriteString("      - expr: '" + expr + "'\n        eval_time: 1m\n        exp_samples:\n            " + want[i] + "\n")
	}
	series := func(name, labels, value string) string {
		return "      - series: '" + name + `{instance="n1",job="hccl",` + labels + "}'\n        values: '" + value + "x2'\n"
	}
	var input strings.Builder
	for _, s := range [][3]string{
		{"hccl_link_setup_headroom_bytes", `npu="0",chip="0"`, "-125829120"},
		{"hccl_link_setup_headroom_bytes", `npu="0",chip="1"`, "67670900736"},
		{"hccl_link_setup_headroom_bytes", `npu="1",chip="0"`, "-1048576"},
		{"hccl_link_setup_headroom_bytes", `npu="2",chip="0"`, "-197132288"},
		{"hccl_link_setup_pending_queue_pairs", `npu="0",chip="0",bound="high"`, "952"},
		{"hccl_link_setup_pending_queue_pairs", `npu="0",chip="0",bound="expected"`, "85"},
		{"hccl_link_setup_pending_queue_pairs", `npu="0",chip="1",bound="expected"`, "0"},
		{"hccl_link_setup_pending_queue_pairs", `npu="1",chip="0",bound="expected"`, "0"},
		{"hccl_link_setup_pending_queue_pairs", `npu="2",chip="0",bound="expected"`, "64"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="0",chip="0",bound="expected"`, "267386880"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="0",chip="1",bound="expected"`, "0"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="1",chip="0",bound="expected"`, "0"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="2",chip="0",bound="expected"`, "201326592"},
		{"hccl_link_setup_pending_queue_pairs", `npu="0",chip="0",bound="low"`, "34"},
		{"hccl_link_setup_pending_queue_pairs", `npu="0",chip="1",bound="high"`, "0"},
		{"hccl_link_setup_pending_queue_pairs", `npu="0",chip="1",bound="low"`, "0"},
		{"hccl_link_setup_pending_queue_pairs", `npu="1",chip="0",bound="high"`, "0"},
		{"hccl_link_setup_pending_queue_pairs", `npu="1",chip="0",bound="low"`, "0"},
		{"hccl_link_setup_pending_queue_pairs", `npu="2",chip="0",bound="high"`, "64"},
		{"hccl_link_setup_pending_queue_pairs", `npu="2",chip="0",bound="low"`, "64"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="0",chip="0",bound="high"`, "2994733056"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="0",chip="0",bound="low"`, "8912896"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="0",chip="1",bound="high"`, "0"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="0",chip="1",bound="low"`, "0"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="1",chip="0",bound="high"`, "0"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="1",chip="0",bound="low"`, "0"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="2",chip="0",bound="high"`, "201326592"},
		{"hccl_link_setup_queue_pair_memory_bytes", `npu="2",chip="0",bound="low"`, "16777216"},
		{"hccl_ccl_buffer_pending_bytes", `npu="0",chip="0"`, "420478976"},
		{"hccl_ccl_buffer_pending_bytes", `npu="0",chip="1"`, "0"},
		{"hccl_ccl_buffer_pending_bytes", `npu="1",chip="0"`, "0"},
		{"hccl_ccl_buffer_pending_bytes", `npu="2",chip="0"`, "0"},
		{"hccl_link_setup_established_queue_pairs", `npu="1",chip="0"`, "952"},
		{"hccl_link_setup_processes", `npu="0",chip="0",settings_source="known"`, "1"},
		{"hccl_link_setup_processes", `npu="0",chip="0",settings_source="defaulted"`, "0"},
		{"hccl_link_setup_processes", `npu="0",chip="1",settings_source="known"`, "0"},
		{"hccl_link_setup_processes", `npu="0",chip="1",settings_source="defaulted"`, "0"},
		{"hccl_link_setup_processes", `npu="1",chip="0",settings_source="known"`, "1"},
		{"hccl_link_setup_processes", `npu="1",chip="0",settings_source="defaulted"`, "0"},
		{"ascend_npu_processes", `npu="1",chip="0",cann_logs="missing"`, "1"},
		{"hccl_link_setup_processes", `npu="2",chip="0",settings_source="known"`, "1"},
		{"hccl_link_setup_processes", `npu="2",chip="0",settings_source="defaulted"`, "0"},
		{"ascend_npu_process_memory_bytes", `npu="0",chip="0",pid="100",process="python"`, "1e9"},
		{"ascend_npu_process_memory_bytes", `npu="1",chip="0",pid="301",process="python"`, "2e9"},
		{"ascend_npu_process_memory_bytes", `npu="2",chip="0",pid="400",process="python"`, "3e9"},
	} {
		input.WriteString(series(s[0], s[1], s[2]))
	}

	unit := "tests:\n  - interval: 1m\n    input_series:\n" + input.String() + "    promql_expr_test:\n" + tests.String()
	dir := t.TempDir()
	path := filepath.Join(dir, "docs_promql_test.yml")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules: %v\n%s\n--- unit file ---\n%s", err, out, unit)
	}
}
