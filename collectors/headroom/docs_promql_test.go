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
	// 0/0 the worked example (−1052 MiB); 0/1 idle; 1/0 QPS 1 plus an unknown
	// pid; 2/0 free 4 MiB with QP memory low 16 MiB, high 100 MiB (−96 MiB).
	want := []string{
		// Would fail now: negative headroom with QPs to set up.
		`- labels: 'hccl_link_setup_headroom_bytes{instance="n1",job="hccl",npu="0",chip="0"}'
              value: -1103101952
            - labels: 'hccl_link_setup_headroom_bytes{instance="n1",job="hccl",npu="2",chip="0"}'
              value: -100663296`,
		// Fails even at the low bound: free 4 MiB < 16 MiB; the value is the free HBM.
		`- labels: '{instance="n1",job="hccl",npu="2",chip="0"}'
              value: 4194304`,
		// Processes on chips with negative headroom.
		`- labels: 'ascend_npu_process_memory_bytes{instance="n1",job="hccl",npu="0",chip="0",pid="100",process="python"}'
              value: 1e9
            - labels: 'ascend_npu_process_memory_bytes{instance="n1",job="hccl",npu="2",chip="0",pid="400",process="python"}'
              value: 3e9`,
		// MiB missing per chip.
		`- labels: '{instance="n1",job="hccl",npu="0",chip="0"}'
              value: 1052
            - labels: '{instance="n1",job="hccl",npu="0",chip="1"}'
              value: 0
            - labels: '{instance="n1",job="hccl",npu="1",chip="0"}'
              value: 0
            - labels: '{instance="n1",job="hccl",npu="2",chip="0"}'
              value: 96`,
		// Chips with defaulted processes.
		`- labels: 'hccl_link_setup_processes{instance="n1",job="hccl",npu="1",chip="0",settings="defaulted"}'
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
		{"hccl_link_setup_headroom_bytes", `npu="0",chip="0"`, "-1103101952"},
		{"hccl_link_setup_headroom_bytes", `npu="0",chip="1"`, "67670900736"},
		{"hccl_link_setup_headroom_bytes", `npu="1",chip="0"`, "37086035968"},
		{"hccl_link_setup_headroom_bytes", `npu="2",chip="0"`, "-100663296"},
		{"hccl_link_setup_qp_memory_bytes", `npu="0",chip="0",bound="high"`, "2818572288"},
		{"hccl_link_setup_qp_memory_bytes", `npu="0",chip="0",bound="low"`, "8388608"},
		{"hccl_link_setup_qp_memory_bytes", `npu="0",chip="1",bound="high"`, "0"},
		{"hccl_link_setup_qp_memory_bytes", `npu="0",chip="1",bound="low"`, "0"},
		{"hccl_link_setup_qp_memory_bytes", `npu="1",chip="0",bound="high"`, "176160768"},
		{"hccl_link_setup_qp_memory_bytes", `npu="1",chip="0",bound="low"`, "524288"},
		{"hccl_link_setup_qp_memory_bytes", `npu="2",chip="0",bound="high"`, "104857600"},
		{"hccl_link_setup_qp_memory_bytes", `npu="2",chip="0",bound="low"`, "16777216"},
		{"hccl_link_setup_processes", `npu="0",chip="0",settings="known"`, "1"},
		{"hccl_link_setup_processes", `npu="0",chip="0",settings="defaulted"`, "0"},
		{"hccl_link_setup_processes", `npu="0",chip="1",settings="known"`, "0"},
		{"hccl_link_setup_processes", `npu="0",chip="1",settings="defaulted"`, "0"},
		{"hccl_link_setup_processes", `npu="1",chip="0",settings="known"`, "1"},
		{"hccl_link_setup_processes", `npu="1",chip="0",settings="defaulted"`, "1"},
		{"hccl_link_setup_processes", `npu="2",chip="0",settings="known"`, "1"},
		{"hccl_link_setup_processes", `npu="2",chip="0",settings="defaulted"`, "0"},
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
