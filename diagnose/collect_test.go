package diagnose

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
)

// The bundles of the collection tools (collect.go) are built from the
// silent-peer bundle's files, moved where each tool puts them, plus the
// tools' own files that hold no HCCL log.

// silentFiles returns the silent-peer bundle's files, node → path below
// node-N/ → content.
func silentFiles(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	all := incidentBundles()["silent-peer-utc8"]
	for p, c := range all {
		node, rest, _ := strings.Cut(p, "/")
		if out[node] == nil {
			out[node] = map[string]string{}
		}
		out[node][rest] = c
	}
	return out
}

// mindClusterBundle lays the nodes out as MindCluster's collection
// directories, one per node named by its address: rank-<n>.txt screen
// logs, process_log/ with the CANN log root, and the tool's other folders.
func mindClusterBundle(t *testing.T) string {
	files := map[string]string{}
	ips := map[string]string{"node-1": "10.20.1.11", "node-2": "10.20.1.12"}
	for node, fs := range silentFiles(t) {
		ip := ips[node]
		for rest, c := range fs {
			switch {
			case strings.HasPrefix(rest, "ascend/log/"):
				files[ip+"/process_log/"+strings.TrimPrefix(rest, "ascend/log/")] = c
			case rest == "screen/train.log":
				files[ip+"/rank-3.txt"] = c
			default:
				t.Fatalf("unexpected file %s/%s", node, rest)
			}
		}
		files[ip+"/messages"] = "Mar 18 10:29:00 host kernel: [ 1.0] something\n"
		files[ip+"/dmesg"] = "[ 1.000000] Linux version\n"
		files[ip+"/sysmonitor.log"] = "2026-03-18T10:29:00 sysmonitor started\n"
		files[ip+"/environment_check/npu_info_before.txt"] = "npu-smi info\n| 910B3 | OK |\n"
		files[ip+"/environment_check/npu_0_details.csv"] = "time,rx,tx\n"
		files[ip+"/device_log/slog/dev-os-3/debug/device-os/device-os_20260318102900.log"] = "[ERROR] KERNEL(1,sklogd):2026-03-18-10:29:00.000.000 [x.c:1] device side line\n"
		files[ip+"/dl_log/devicePlugin/devicePlugin.log"] = "[INFO] 2026/03/18 10:29:00 device plugin started\n"
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	return dir
}

// TestMindClusterLayout: a MindCluster collection of two nodes gives the
// same incident as the plain bundle, with the nodes named by their
// collection directories; the tool's other files are skipped with their
// reason, never read as screen logs.
func TestMindClusterLayout(t *testing.T) {
	dir := mindClusterBundle(t)
	r, err := Run([]string{dir}, Options{Location: time.UTC, InferZones: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	in := r.Inputs[0]
	if !slices.Equal(in.Nodes, []string{"10.20.1.11", "10.20.1.12"}) || !slices.Equal(in.Layouts, []string{bundle.ToolMindCluster}) {
		t.Fatalf("nodes %v, layouts %v", in.Nodes, in.Layouts)
	}
	for _, rd := range in.Read {
		if strings.Contains(rd.Dir, "device_log") || strings.Contains(rd.Dir, "dl_log") || strings.Contains(rd.Dir, "environment_check") {
			t.Errorf("read %+v", rd)
		}
	}
	reasons := map[string]int{}
	for _, g := range in.Skipped {
		reasons[g.Reason] += g.Files
	}
	for _, want := range []string{"host OS log", "host kernel log", "NPU and NIC state (npu-smi, hccn_tool)", "device-side logs (msnpureport)", "MindCluster component logs"} {
		if reasons[want] == 0 {
			t.Errorf("no file skipped as %q: %v", want, reasons)
		}
	}
	if len(r.Incidents) != 1 || r.Incidents[0].FailingPair == nil || len(r.Incidents[0].SilentRanks) != 1 ||
		r.Incidents[0].SilentRanks[0].Node != "10.20.1.12" || r.Incidents[0].FailingPair.Dst.Rank != 11 {
		t.Fatalf("incidents %+v", r.Incidents)
	}

	// One node's collection directory alone: its folders are not nodes.
	one, err := Run([]string{filepath.Join(dir, "10.20.1.12")}, Options{Location: time.UTC, InferZones: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.Inputs[0].Nodes, []string{"10.20.1.12"}) {
		t.Errorf("one collection directory: nodes %v", one.Inputs[0].Nodes)
	}
}

// TestMsnpureportLayout: msnpureport's export holds device-side logs only;
// alone it is an input without logs whose report says what to add, and
// inside a node's tree it is skipped without splitting the node.
func TestMsnpureportLayout(t *testing.T) {
	export := map[string]string{
		"2026-03-18-10-40-00/slog/dev-os-3/debug/device-os/device-os_20260318102900001.log": "[ERROR] KERNEL(1,sklogd):2026-03-18-10:29:00.000.000 [x.c:1] device side\n",
		"2026-03-18-10-40-00/slog/dev-os-3/run/event/event_20260318102900001.log":           "event\n",
		"2026-03-18-10-40-00/message/dev-os-3/syslog.txt":                                   "kernel\n",
		"2026-03-18-10-40-00/hisi_logs/device-3/20260318102900-0000000001/log/kbox.txt":     "kbox\n",
		"2026-03-18-10-40-00/stackcore/dev-os-3/core.txt":                                   "core\n",
		"2026-03-18-10-40-00/event_sched/dev-os-3/event_sched.log":                          "sched\n",
	}
	dir := t.TempDir()
	writeTree(t, dir, export)
	r, err := Run([]string{dir}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := r.Inputs[0]
	if len(in.Read) != 0 || in.SkippedFiles != len(export) || !slices.Equal(in.Layouts, []string{bundle.ToolMsnpureport}) || r.ExitCode != 2 {
		t.Fatalf("input %+v, exit %d", in, r.ExitCode)
	}
	if len(in.Advice) != 1 || !strings.Contains(in.Advice[0], "~/ascend/log") {
		t.Errorf("advice %v", in.Advice)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"layout: msnpureport export", "read: nothing", "skipped: 2 file(s), msnpureport export: device-side system logs", "advice: msnpureport export collects"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}

	// Beside a node's CANN logs.
	nodes := t.TempDir()
	files := map[string]string{}
	for node, fs := range silentFiles(t) {
		for rest, c := range fs {
			files[node+"/"+rest] = c
		}
		for p, c := range export {
			files[node+"/"+p] = c
		}
	}
	writeTree(t, nodes, files)
	r, err = Run([]string{nodes}, Options{Location: time.UTC, InferZones: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if in := r.Inputs[0]; !slices.Equal(in.Nodes, []string{"node-1", "node-2"}) || in.SkippedFiles != 2*len(export) || len(in.Advice) != 0 {
		t.Errorf("input %+v", in)
	}
	if len(r.Incidents) != 1 || len(r.Incidents[0].SilentRanks) != 1 {
		t.Errorf("incidents %+v", r.Incidents)
	}
}

// TestNPULogCollectLayout: npu_log_collect.sh's archive (driver, npu-smi
// and MCU logs) is not read as screen logs; with a node's CANN logs added
// to it, those are read and the archive is that node.
func TestNPULogCollectLayout(t *testing.T) {
	tool := map[string]string{
		"npu_log_collect/collect_scripts_running_log":                          "start\n",
		"npu_log_collect/driver_info.log":                                      "driver 25.0\n",
		"npu_log_collect/version_info.log":                                     "Version=25.0.rc1\n",
		"npu_log_collect/OS_info.log":                                          "Linux\n",
		"npu_log_collect/npu_card_info.log":                                    "npu-smi info\n",
		"npu_log_collect/nputools_log/root/nputools_LOG_ERR.log":               "[ERROR] x\n",
		"npu_log_collect/npu_info_log/card_info.log":                           "card\n",
		"npu_log_collect/mcu_log/card_0_mcu_log/error_log_0_1.log":             "mcu\n",
		"npu_log_collect/ascend_log_20260318104000/ascend_bug_report_info.log": "bug report\n",
	}
	dir := t.TempDir()
	writeTree(t, dir, tool)
	arch := filepath.Join(t.TempDir(), "npu_log_collect_20260318104000.tar.gz")
	if err := os.WriteFile(arch, tarGz(t, dir, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Run([]string{arch}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := r.Inputs[0]
	if len(in.Read) != 0 || in.SkippedFiles != len(tool) || !slices.Equal(in.Layouts, []string{bundle.ToolNPULogCollect}) || len(in.Advice) != 1 {
		t.Fatalf("input %+v", in)
	}

	// The node's CANN logs added under npu_log_collect/.
	for rest, c := range silentFiles(t)["node-2"] {
		tool["npu_log_collect/"+rest] = c
	}
	dir = t.TempDir()
	writeTree(t, dir, tool)
	if err := os.WriteFile(arch, tarGz(t, dir, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = Run([]string{arch}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in = r.Inputs[0]
	if len(in.Nodes) != 1 || in.Nodes[0] != "npu_log_collect_20260318104000" || len(in.Advice) != 0 || len(r.Nodes[0].Processes) != 8 {
		t.Errorf("input %+v, %d processes", in, len(r.Nodes[0].Processes))
	}
}

// TestUnknownLayout: a tree no tool explains says which files it read (by
// directory) and which it skipped, and why.
func TestUnknownLayout(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"job/out/train_0.log":  "[rank0]: hello\n",
		"job/out/train_1.log":  "[rank1]: hello\n",
		"job/metrics.csv":      "a,b\n",
		"job/notes.md":         "# notes\n",
		"job/cfg/settings.yml": "x: 1\n",
	})
	r, err := Run([]string{dir}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := r.Inputs[0]
	if len(in.Layouts) != 0 || len(in.Read) != 1 || in.Read[0].Dir != "job/out" || in.Read[0].Files != 2 || in.Read[0].Kind != "screen" {
		t.Fatalf("read %+v, layouts %v", in.Read, in.Layouts)
	}
	if len(in.Skipped) != 1 || in.Skipped[0].Files != 3 || in.Skipped[0].Reason != bundle.SkipNotLog || len(in.Skipped[0].Examples) != 3 {
		t.Fatalf("skipped %+v", in.Skipped)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"layout: no collection tool recognised", "read: 2 screen file(s) in job/out", "skipped: 3 file(s), not a log diagnose reads"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q", w)
		}
	}
	if page := htmlOf(t, r); !strings.Contains(page, "no collection tool recognised; files read and skipped") {
		t.Errorf("HTML lacks the files read and skipped")
	}
}
