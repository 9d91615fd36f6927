package bundle

import (
	"path"
	"sort"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// Users collect a failed job's logs with Huawei's tools, whose trees hold
// much more than the CANN app logs (plogs) and training screen logs that
// diagnose reads. The layouts, from the tools' documentation and scripts:
//
//   - MindCluster Ascend FaultDiag's collection directory (one per node,
//     "日志采集目录结构", MindCluster 6.0–7.3): `rank-<n>.txt` training screen
//     logs, `process_log/` (the CANN app logs, ~/ascend/log copied whole:
//     run/ and debug/ plog), `device_log/` (device-side logs exported with
//     msnpureport), `environment_check/` (npu-smi and hccn_tool state,
//     npu_*_details.csv, npu_info_before/after.txt, host_metrics_*.json),
//     `dl_log/` (MindCluster component logs: devicePlugin, noded,
//     volcano-*, npu-exporter), `mindie/`, `amct_log/`, and the host's
//     `messages`, `dmesg`, `crash/<host>-<time>/vmcore_dmesg.txt` and
//     `sysmonitor.log`. The node is the collection directory.
//   - msnpureport (Driver/tools/msnpureport): a directory named by the
//     export time holding device-side system logs in `slog/`, `message/`,
//     `hisi_logs/`, `stackcore/`, `event_sched/` (or `system_info/`) and
//     `module_info/`. It holds no HCCL plog.
//   - npu_log_collect.sh (Driver/tools): `npu_log_collect_<time>.tar.gz`
//     of `npu_log_collect/`: driver_info.log, version_info.log,
//     OS_info.log, pcie_info.log, npu_card_info.log, nputools_log/,
//     npu_info_log/, mcu_log/, lingqu/, ascend_log_* (ascend_bug_report)
//     and, with -f, msnpureport's tree and the host's logs. It holds no
//     HCCL plog either, and names no node: the archive is one node.
//
// Their .log and .txt files would otherwise be read as screen logs; they
// are skipped with the reason, and the report names the layout it
// recognised and what each input lacks.

// Collection tools.
const (
	ToolMindCluster   = "MindCluster fault-diagnosis collection"
	ToolMsnpureport   = "msnpureport export"
	ToolNPULogCollect = "npu_log_collect.sh"
)

// skipRule is a part of a collection tree that holds no log diagnose reads.
type skipRule struct {
	tool, what string
}

// toolDirs are directories (any level) whose files are skipped.
var toolDirs = map[string]skipRule{
	"device_log":        {ToolMindCluster, "device-side logs (msnpureport)"},
	"environment_check": {ToolMindCluster, "NPU and NIC state (npu-smi, hccn_tool)"},
	"dl_log":            {ToolMindCluster, "MindCluster component logs"},
	"mindie":            {ToolMindCluster, "MindIE component logs"},
	"amct_log":          {ToolMindCluster, "AMCT logs"},
	"crash":             {ToolMindCluster, "host crash dumps"},
	"slog":              {ToolMsnpureport, "device-side system logs"},
	"message":           {ToolMsnpureport, "device-side kernel logs"},
	"hisi_logs":         {ToolMsnpureport, "device black box"},
	"stackcore":         {ToolMsnpureport, "device core dumps"},
	"event_sched":       {ToolMsnpureport, "device event scheduler state"},
	"system_info":       {ToolMsnpureport, "device event scheduler state"},
	"module_info":       {ToolMsnpureport, "device module logs"},
	"nputools_log":      {ToolNPULogCollect, "npu-smi's own logs"},
	"npu_info_log":      {ToolNPULogCollect, "npu-smi card state"},
	"mcu_log":           {ToolNPULogCollect, "MCU logs"},
	"lingqu":            {ToolNPULogCollect, "interconnect tool logs"},
}

// toolFiles are file names (any level) that are skipped.
var toolFiles = map[string]skipRule{
	"messages":                    {ToolMindCluster, "host OS log"},
	"dmesg":                       {ToolMindCluster, "host kernel log"},
	"sysmonitor.log":              {ToolMindCluster, "host OS log"},
	"vmcore_dmesg.txt":            {ToolMindCluster, "host crash dump"},
	"driver_info.log":             {ToolNPULogCollect, "driver state"},
	"version_info.log":            {ToolNPULogCollect, "driver and firmware versions"},
	"OS_info.log":                 {ToolNPULogCollect, "host OS state"},
	"pcie_info.log":               {ToolNPULogCollect, "PCIe state"},
	"npu_card_info.log":           {ToolNPULogCollect, "npu-smi card state"},
	"collect_scripts_running_log": {ToolNPULogCollect, "the script's own log"},
}

// knownSkip returns the rule that skips rel, if a collection tool put it
// there.
func knownSkip(rel string) (skipRule, bool) {
	dir, name := path.Split(rel)
	if r, ok := toolFiles[name]; ok {
		return r, true
	}
	if strings.HasPrefix(name, "ascend_log_") {
		return skipRule{ToolNPULogCollect, "ascend_bug_report output"}, true
	}
	for _, d := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if r, ok := toolDirs[d]; ok {
			return r, true
		}
		if strings.HasPrefix(d, "ascend_log_") {
			return skipRule{ToolNPULogCollect, "ascend_bug_report output"}, true
		}
	}
	return skipRule{}, false
}

// toolOfRead names the tool whose layout a read file's path shows: the
// CANN logs in process_log/ and the rank-<n>.txt screen logs of a
// MindCluster collection.
func toolOfRead(rel string) string {
	dir, name := path.Split(rel)
	if strings.Contains("/"+dir, "/process_log/") {
		return ToolMindCluster
	}
	if strings.HasPrefix(name, "rank-") && strings.HasSuffix(name, ".txt") {
		return ToolMindCluster
	}
	if strings.Contains("/"+dir, "/npu_log_collect/") {
		return ToolNPULogCollect
	}
	return ""
}

// Skip reasons of files no tool explains.
const (
	SkipNotLog     = "not a log diagnose reads (neither plog-<pid>_<time>.log, device-<pid>_<time>.log, *.log, *.txt nor a kubelet rotation)"
	SkipNotRegular = "not a regular file (symlink, device, …)"
)

// maxReadDirs caps the directories an input lists; maxExamples the paths
// a skipped group names.
const (
	maxReadDirs = 64
	maxExamples = 3
)

// files records what an input read and skipped, and the tools whose
// layout it showed.
type fileLedger struct {
	skipped map[string]*model.SkippedGroup
	read    map[string]*model.ReadDir
	tools   map[string]bool
}

// entry returns (*m)[k], making the map and, with mk, the entry when absent.
func entry[T any](m *map[string]*T, k string, mk func() *T) *T {
	if *m == nil {
		*m = map[string]*T{}
	}
	e := (*m)[k]
	if e == nil {
		e = mk()
		(*m)[k] = e
	}
	return e
}

func (l *fileLedger) skip(rel, reason, tool string) {
	g := entry(&l.skipped, tool+"\x00"+reason, func() *model.SkippedGroup { return &model.SkippedGroup{Tool: tool, Reason: reason} })
	g.Files++
	if len(g.Examples) < maxExamples {
		g.Examples = append(g.Examples, rel)
	}
	if tool != "" {
		l.noteTool(tool)
	}
}

func (l *fileLedger) noteTool(tool string) {
	if l.tools == nil {
		l.tools = map[string]bool{}
	}
	l.tools[tool] = true
}

func (l *fileLedger) readFile(rel, kind string) {
	dir := path.Dir(rel)
	d := entry(&l.read, dir+"\x00"+kind, func() *model.ReadDir { return &model.ReadDir{Dir: dir, Kind: kind} })
	d.Files++
	if t := toolOfRead(rel); t != "" {
		l.noteTool(t)
	}
}

// skippedGroups returns the skipped files by reason, most first.
func (l *fileLedger) skippedGroups() []model.SkippedGroup {
	out := []model.SkippedGroup{}
	for _, g := range l.skipped {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Files != out[j].Files {
			return out[i].Files > out[j].Files
		}
		return out[i].Tool+out[i].Reason < out[j].Tool+out[j].Reason
	})
	return out
}

// readDirs returns the directories read, in path order, at most
// maxReadDirs (and how many more there were).
func (l *fileLedger) readDirs() ([]model.ReadDir, int) {
	out := []model.ReadDir{}
	for _, d := range l.read {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dir != out[j].Dir {
			return out[i].Dir < out[j].Dir
		}
		return out[i].Kind < out[j].Kind
	})
	if len(out) > maxReadDirs {
		return out[:maxReadDirs], len(out) - maxReadDirs
	}
	return out, 0
}

// LayoutAdvice says what an input of a recognised tool lacks.
func LayoutAdvice(tools []string, plogs, screens int) []string {
	var out []string
	for _, t := range tools {
		switch t {
		case ToolMsnpureport, ToolNPULogCollect:
			if plogs == 0 {
				out = append(out, t+" collects the driver's and the devices' own logs, not HCCL's: add each node's CANN app logs "+
					"(~/ascend/log/run and debug, or $ASCEND_PROCESS_LOG_PATH) and its training screen logs.")
			}
		case ToolMindCluster:
			if plogs == 0 {
				out = append(out, "The MindCluster collection has no CANN app log: copy ~/ascend/log (run/ and debug/) of every rank into its process_log/.")
			}
			if screens == 0 {
				out = append(out, "The MindCluster collection has no training screen log (rank-<n>.txt).")
			}
		}
	}
	return out
}

// Layouts are the collection tools whose layout the input showed, sorted.
func (in *Input) Layouts() []string {
	out := make([]string, 0, len(in.ledger.tools))
	for t := range in.ledger.tools {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// SkippedGroups returns the input's skipped files by reason, most first.
func (in *Input) SkippedGroups() []model.SkippedGroup { return in.ledger.skippedGroups() }

// ReadDirs returns the directories the input's files were read in, in path
// order, at most 64 (and how many more there were).
func (in *Input) ReadDirs() ([]model.ReadDir, int) { return in.ledger.readDirs() }
