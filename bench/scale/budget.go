package main

// The default-set budget: what one node costs with every default collector
// on and no flag but the paths, measured on the real binary. Three nodes:
//
//   - the demo's 8-NPU Atlas 800T A2 (examples/demo: its npu-smi with the
//     detail answers of 24.1 on 910B, its hccn_tool for 8 RoCE NICs, its
//     CANN logs and screen log);
//   - bench/gen's 16-chip node as written (16 processes × 8 communicators,
//     npu-smi's table only, no hccn_tool);
//   - the chart's A3 product: bench/gen's 8 NPUs × 2 dies (16 processes, 8
//     communicators) whose every die answers every detail query (the demo's
//     answers, 7 HCCS links, PCIe and SIO: an A+X board) and whose 16 RoCE
//     NICs answer as the demo's.
//
// `go run ./bench/scale -budget` prints them; TestDefaultBudget holds them
// to their ceilings.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/nodegen"
	"github.com/hccl-exporter/hccl_exporter/bench/internal/probe"
)

// budgetNode is one node of the budget.
type budgetNode struct {
	name string
	// args are the exporter's flags for the node's tools and logs
	// (written under dir). The tools they name append a line to
	// dir/calls.log per invocation (callLog).
	args func(dir string) ([]string, error)
	// answers: every chip answers the detail queries and hccn_tool (the
	// measurement waits for those series).
	answers bool
	// ceiling is the node's budget: series besides the runtime.
	ceiling int
}

// counted writes dir/<name>, a shell wrapper that logs the time and its
// arguments to dir/calls.log and runs body: the runs per minute of each tool are counted
// from that log.
func counted(dir, name, body string) (string, error) {
	path := filepath.Join(dir, name)
	script := fmt.Sprintf("#!/bin/sh\necho \"$(date +%%s.%%N) %s $*\" >> %q\n%s", name, filepath.Join(dir, "calls.log"), body)
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// demoDir is examples/demo from the module root (the tool and its test run
// from there or from bench/scale).
func demoDir() string {
	for _, d := range []string{filepath.Join("examples", "demo"), filepath.Join("..", "..", "examples", "demo")} {
		if _, err := os.Stat(filepath.Join(d, "npu-smi")); err == nil {
			abs, _ := filepath.Abs(d)
			return abs
		}
	}
	return filepath.Join("examples", "demo")
}

// The budgets (series besides the runtime, DESIGN.md): below what
// npu-exporter serves on the same hardware while exporting the HCCL layer.
const (
	demoCeiling = 700
	genCeiling  = 800
	a3Ceiling   = 1300
)

func budgetNodes() []budgetNode {
	return []budgetNode{
		{name: "demo A2 (8 NPU)", answers: true, ceiling: demoCeiling, args: func(dir string) ([]string, error) {
			demo := demoDir()
			npuSMI, err := counted(dir, "npu-smi", fmt.Sprintf("exec %q \"$@\"\n", filepath.Join(demo, "npu-smi")))
			if err != nil {
				return nil, err
			}
			hccn, err := counted(dir, "hccn_tool", fmt.Sprintf("exec %q \"$@\"\n", filepath.Join(demo, "hccn_tool")))
			if err != nil {
				return nil, err
			}
			return []string{
				"--npusmi.path=" + npuSMI,
				"--hccn.path=" + hccn,
				"--cannlog.root=" + filepath.Join(demo, "log"),
				"--cannlog.screen-log-path=" + filepath.Join(demo, "screen", "*.log"),
			}, nil
		}},
		// bench/gen's node as it writes it (go run ./bench/gen -npus 16
		// -chips 1 -procs 16 -comms 8): 16 processes in 8 communicators
		// each, 128 (process, communicator) pairs; its npu-smi prints the
		// table only and it has no hccn_tool.
		{name: "16 chips, 128 communicators (bench/gen)", ceiling: genCeiling, args: func(dir string) ([]string, error) {
			n, err := nodegen.New(nodegen.Spec{NPUs: 16, ChipsPerNPU: 1, Processes: 16, Communicators: 8, NoiseLines: 20, Seed: 1})
			if err != nil {
				return nil, err
			}
			tr, err := n.WriteTree(filepath.Join(dir, "node"))
			if err != nil {
				return nil, err
			}
			npuSMI, err := counted(dir, "npu-smi", fmt.Sprintf("exec %q \"$@\"\n", tr.NPUSMI))
			if err != nil {
				return nil, err
			}
			return []string{"--npusmi.path=" + npuSMI, "--hccn.path=" + filepath.Join(dir, "no-hccn_tool"), "--cannlog.root=" + tr.LogRoot}, nil
		}},
		generatedNode("A3 (8 NPU × 2)", a3Ceiling, nodegen.Spec{NPUs: 8, ChipsPerNPU: 2, Processes: 16, Communicators: 8, Seed: 1}),
	}
}

// generatedNode is bench/gen's node of spec whose every chip answers the
// detail queries and hccn_tool as the demo's chip of its device id mod 8
// does (A3 dies answer sio-info too: an A+X board). The chart's A3 product
// is 8 NPUs × 2 dies, devices 0–15, one process per die.
func generatedNode(name string, ceiling int, spec nodegen.Spec) budgetNode {
	return budgetNode{name: name, answers: true, ceiling: ceiling, args: func(dir string) ([]string, error) {
		n, err := nodegen.New(spec)
		if err != nil {
			return nil, err
		}
		tr, err := n.WriteTree(filepath.Join(dir, "node"))
		if err != nil {
			return nil, err
		}
		demo := demoDir()
		sio := ""
		if spec.ChipsPerNPU > 1 {
			sio = `if [ "$typ" = "sio-info" ]; then printf '\tTX Error Count : 0\n\tRX Error Count : 0\n'; exit 0; fi`
		}
		// A card of several dies answers the card form of ecc, pcie-err,
		// memory and usages (-i N, no -c) with every die's block inside
		// npu-smi's card wrapper (card_info.c:589-615, 661-702).
		card := ""
		if spec.ChipsPerNPU > 1 {
			card = fmt.Sprintf(`if [ "$#" -eq 0 ]; then case "$typ" in ecc|pcie-err|memory|usages)
		w=30; [ "$typ" = ecc ] && w=40
		printf "\t%%-${w}s : %%s\n\t%%-${w}s : %%s\n\n" "NPU ID" "$npu" "Chip Count" %d
		c=0; while [ "$c" -lt %d ]; do
			%q info -t "$typ" -i $((npu %% 8)) -c "$c"
			printf "\t%%-${w}s : %%s\n\n" "Chip ID" "$c"; c=$((c + 1))
		done
		exit 0 ;;
	esac; fi`, spec.ChipsPerNPU, spec.ChipsPerNPU, filepath.Join(demo, "npu-smi"))
		}
		npuSMI, err := counted(dir, "npu-smi", fmt.Sprintf(`if [ "$#" -ge 5 ] && [ "$2" = "-t" ]; then
	typ=$3 npu=$5
	shift 5
	%s
	%s
	exec %q info -t "$typ" -i $((npu %% 8)) "$@"
fi
exec %q "$@"
`, sio, card, filepath.Join(demo, "npu-smi"), tr.NPUSMI))
		if err != nil {
			return nil, err
		}
		hccn, err := counted(dir, "hccn_tool", fmt.Sprintf("exec %q -i $(($2 %% 8)) \"$3\" \"$4\"\n", filepath.Join(demo, "hccn_tool")))
		if err != nil {
			return nil, err
		}
		args := []string{"--npusmi.path=" + npuSMI, "--hccn.path=" + hccn, "--cannlog.root=" + tr.LogRoot}
		if tr.ScreenLog != "" {
			args = append(args, "--cannlog.screen-log-path="+tr.ScreenLog)
		}
		return args, nil
	}}
}

// startNode starts bin on node (its tools, logs and state under dir) with
// the default flags and extra; addr is where it listens, stop kills it.
func startNode(bin, dir string, node budgetNode, extra ...string) (addr string, stop func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	nodeArgs, err := node.args(dir)
	if err != nil {
		return "", nil, err
	}
	if addr, err = probe.FreeAddr(); err != nil {
		return "", nil, err
	}
	args := append([]string{
		"--web.listen-address=" + addr,
		"--log.level=error",
		"--cannlog.state-file=" + filepath.Join(dir, "state.json"),
		"--pods.kubelet-socket=" + filepath.Join(dir, "no-kubelet.sock"),
		"--path.devfs=" + dir,
	}, extra...)
	cmd := exec.Command(bin, append(args, nodeArgs...)...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "DEMO_NPU_SMI_OUTPUT=")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	return addr, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }, nil
}

// budgetResult is one node's series with every default collector on.
type budgetResult struct {
	name     string
	total    int
	families map[string]int
	byGroup  map[string]int // by collector (family prefix), for the report
}

// measureBudget runs bin on node with the default flags until the detail
// sweep, the hccn sweep and the logs have all shown, then counts its series.
func measureBudget(bin, dir string, node budgetNode) (*budgetResult, error) {
	addr, stop, err := startNode(bin, dir, node)
	if err != nil {
		return nil, err
	}
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	var fams map[string]*dto.MetricFamily
	for {
		fams, err = scrapeFamilies(client, "http://"+addr+"/metrics")
		// Ready: a detail sweep has finished and the logs' headroom shows;
		// on a node that answers, an hccn sweep too, and every chip
		// answered its hccs and link queries.
		ready := err == nil && fams["hccl_exporter_npu_smi_detail_last_sweep_timestamp_seconds"] != nil &&
			fams["hccl_link_setup_headroom_bytes"] != nil
		if ready && node.answers {
			ready = fams["hccl_exporter_hccn_tool_last_sweep_timestamp_seconds"] != nil && fams["ascend_npu_hccs_healthy"] != nil &&
				series(fams["ascend_npu_hccs_healthy"]) == series(fams["ascend_npu_hbm_used_bytes"]) &&
				series(fams["ascend_roce_link_up"]) == series(fams["ascend_npu_hbm_used_bytes"])
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: the node did not show in full within 90s (last error %v)", node.name, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	r := &budgetResult{name: node.name, families: map[string]int{}, byGroup: map[string]int{}}
	for name, mf := range fams {
		k := series(mf)
		r.total += k
		r.families[name] = k
		r.byGroup[familyOwner(name)] += k
	}
	return r, nil
}

func scrapeFamilies(client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return probe.ParseText(b)
}

// familyOwner names the collector (or runtime) a family comes from, for the
// report's breakdown.
func familyOwner(name string) string {
	switch {
	case runtimeFamily(name):
		return "runtime"
	case strings.HasPrefix(name, "ascend_roce_") || strings.Contains(name, "hccn"):
		return "hccn"
	case strings.Contains(name, "detail") || strings.HasPrefix(name, "ascend_npu_hccs") || strings.Contains(name, "ecc") ||
		strings.Contains(name, "pcie") || strings.Contains(name, "sio") || strings.Contains(name, "error_code") ||
		name == "ascend_npu_chips" || name == "ascend_npu_device_files" || name == "ascend_npu_hbm_temperature_celsius" ||
		name == "ascend_npu_hbm_bandwidth_utilization_ratio" || name == "ascend_npu_utilization_ratio":
		return "npuhealth"
	case strings.HasPrefix(name, "hccl_link_setup") || strings.HasPrefix(name, "hccl_ccl_buffer") || name == "ascend_roce_foreign_queue_pairs":
		return "headroom"
	case strings.HasPrefix(name, "ascend_npu_") || strings.HasPrefix(name, "hccl_exporter_npu_smi"):
		return "npusmi"
	case strings.Contains(name, "pod"):
		return "pods"
	case strings.HasPrefix(name, "hccl_exporter_collector") || name == "hccl_exporter_build_info" || name == "hccl_exporter_http_connections_refused_total":
		return "exporter"
	}
	return "cannlog"
}

// groupTable is docs/scale.md's table of the measured nodes' series by
// collector (TestDefaultBudget finds it there).
func groupTable(rs []*budgetResult) string {
	var b strings.Builder
	b.WriteString("| node | series | npusmi | headroom | cannlog | npuhealth | hccn | pods | exporter | runtime |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s |", r.name, thousands(r.total))
		for _, g := range []string{"npusmi", "headroom", "cannlog", "npuhealth", "hccn", "pods", "exporter", "runtime"} {
			fmt.Fprintf(&b, " %s |", thousands(r.byGroup[g]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func reportBudget(w io.Writer, rs []*budgetResult) {
	fmt.Fprint(w, groupTable(rs))
	for _, r := range rs {
		names := make([]string, 0, len(r.families))
		for n := range r.families {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return r.families[names[i]] > r.families[names[j]] })
		fmt.Fprintf(w, "\n%s, largest families:", r.name)
		for _, n := range names[:min(12, len(names))] {
			fmt.Fprintf(w, " %s %d;", n, r.families[n])
		}
		fmt.Fprintln(w)
	}
}

// Head memory per series: measured 2,046 bytes right after start
// (docs/scale.md, bench/scale-prometheus.sh), 3-4 KiB planned for a
// Prometheus holding 2 h of head chunks.
const (
	headBytesMeasured = 2046
	headBytesPlanned  = 4096
)

// fleetTable is docs/scale.md's fleet table for the measured nodes: series
// per node, for 100 and 500 nodes, and Prometheus head memory at the
// measured and the planned bytes per series.
func fleetTable(rs []*budgetResult) string {
	var b strings.Builder
	b.WriteString("| node (every default collector) | series per node | 100 nodes | head memory | 500 nodes | head memory |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.name, thousands(r.total),
			thousands(100*r.total), headMemory(100*r.total), thousands(500*r.total), headMemory(500*r.total))
	}
	return b.String()
}

// headMemory is the range from the measured to the planned bytes per series.
func headMemory(series int) string {
	lo := float64(series) * headBytesMeasured / (1 << 20)
	hi := float64(series) * headBytesPlanned / (1 << 20)
	if hi >= 1024 {
		return fmt.Sprintf("%.1f–%.1f GiB", lo/1024, hi/1024)
	}
	return fmt.Sprintf("%.0f–%.0f MiB", lo, hi)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
