package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
	"github.com/hccl-exporter/hccl_exporter/internal/join"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// Coverage, attribution and liveness: what npu-smi's process table
// (Deps.Processes) and the table of roots say about the processes of the
// logs. An exporter that cannot see a process's CANN logs says so, per
// chip, instead of reporting itself healthy with nothing to read; every
// process of the logs is listed with the chip it runs on where npu-smi
// answers; and a process is alive while npu-smi or /proc says so. None of
// it runs npu-smi or reads a log: it is called on the scrape path.

// Values of the cann_logs label.
const (
	CANNLogsFound   = "found"
	CANNLogsMissing = "missing"
)

// JoinedByNone is the joined_by of a process of the logs that npu-smi's
// process table does not show (it exited and is kept for
// --cannlog.process-ttl, npu-smi lists another pid for it that no rule
// matches, or npu-smi has not answered).
const JoinedByNone = "none"

var (
	npuProcessesDesc = prometheus.NewDesc("ascend_npu_processes",
		"Processes npu-smi lists on the chip, by whether the exporter reads their CANN logs: cann_logs=found (through "+
			"--path.procfs or a --cannlog.root), cann_logs=missing (their settings, link setups and plog faults are not seen; "+
			"see the HCCLLogsNotVisible runbook; served only where above 0).",
		[]string{"npu", "chip", "cann_logs"}, nil)
	processInfoDesc = prometheus.NewDesc("hccl_process_info",
		"1 for each process of the CANN logs: its settings set (the settings label of the hccl_env_* and hccl_communicator_info series) and the chip npu-smi shows it on; "+
			"joined_by says how it was matched: procfs (its host pid, found through --path.procfs), pid (host pid), container_pid (A3's Process id in container), device (the devicePhyId its plogs print), "+
			"none (npu-smi's process table does not show it: npu and chip are empty).",
		[]string{"pid", "process", "settings", "npu", "chip", "joined_by"}, nil)
)

// coverage sends ascend_npu_processes (found for every chip with a
// process, so that a chip whose logs all went missing shows found=0;
// missing where it is above 0) and hccl_process_info.
func (c *Service) coverage(ch chan<- prometheus.Metric) {
	devs := c.Devices()
	var rows []join.Matched
	ok := false
	if c.deps.Processes != nil {
		rows, ok = c.deps.Processes.Match(devs)
	}
	c.processInfo(ch, devs, rows)
	if !ok {
		return
	}
	var found map[int]bool
	if c.disc != nil {
		found = c.roots.found()
	}
	var order []ascend.ChipID
	counts := map[ascend.ChipID]*[2]int{}
	for _, r := range rows {
		k := r.Row.ChipID
		n := counts[k]
		if n == nil {
			n = &[2]int{}
			counts[k] = n
			order = append(order, k)
		}
		if found[r.Row.PID] || r.By != "" {
			n[0]++
		} else {
			n[1]++
		}
	}
	for _, k := range order {
		n := counts[k]
		ch <- prometheus.MustNewConstMetric(npuProcessesDesc, prometheus.GaugeValue, float64(n[0]), k.NPU, k.Chip, CANNLogsFound)
		if n[1] > 0 {
			// Only where some are missing: a zero per chip was a series per
			// chip on every node whose logs are all read.
			ch <- prometheus.MustNewConstMetric(npuProcessesDesc, prometheus.GaugeValue, float64(n[1]), k.NPU, k.Chip, CANNLogsMissing)
		}
	}
}

// processInfo sends hccl_process_info: every process of the logs once,
// with the chip of the first row matched to it, sorted by pid label.
func (c *Service) processInfo(ch chan<- prometheus.Metric, devs []logstate.ProcessDevice, rows []join.Matched) {
	chipOf := make(map[logstate.ProcessKey]join.Matched, len(rows))
	for _, r := range rows {
		if r.By == "" {
			continue
		}
		if _, dup := chipOf[r.Log.Key]; !dup {
			chipOf[r.Log.Key] = r
		}
	}
	sorted := make([]logstate.ProcessDevice, len(devs))
	copy(sorted, devs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Label < sorted[j].Label })
	for _, d := range sorted {
		npu, chip, by := "", "", JoinedByNone
		if r, ok := chipOf[d.Key]; ok {
			npu, chip, by = r.Row.NPU, r.Row.Chip, r.By
		}
		// The labels come from logs (or a state file): a value that is
		// still not a valid label leaves its process out rather than
		// failing the scrape.
		if m, err := prometheus.NewConstMetric(processInfoDesc, prometheus.GaugeValue, 1, d.Label, d.Name, d.Settings, npu, chip, by); err == nil {
			ch <- m
		}
	}
}

// liveness is the collector's one liveness function (logstate.Liveness for
// Expire): a process of the logs is alive while
//   - its discovered row is in the table of roots (npu-smi lists its host
//     pid: rows leave with it);
//   - npu-smi's last table has a row matched to it (by pid, container pid
//     or the device it drives: a pod's process on A2), or a row with its
//     pid (a host path's process prints its host pid);
//   - or, for a log directory outside --path.procfs, <procfs>/<pid> exists
//     (a host process npu-smi does not list, such as one between runs).
type liveness struct{ c *Service }

var (
	_ logstate.LivenessReady   = liveness{}
	_ logstate.ProcessLiveness = liveness{}
)

// Alive reports whether npu-smi's last table lists pid (as host pid or as
// pid in its container), or /proc has it.
func (l liveness) Alive(pid int) bool {
	c := l.c
	if pid <= 0 {
		return false
	}
	if c.deps.Processes != nil {
		if rows, _, ok := c.deps.Processes.NPUProcesses(); ok {
			for _, r := range rows {
				if r.PID == pid {
					return true
				}
			}
		}
	}
	return c.procAlive(pid)
}

// AliveProcess reports whether the process of key is alive (see liveness).
func (l liveness) AliveProcess(key logstate.ProcessKey) bool {
	c := l.c
	if c.roots.HostPID(key) != 0 {
		return true
	}
	if c.deps.Processes != nil {
		if rows, ok := c.deps.Processes.Match(c.Devices()); ok {
			cpid := strconv.Itoa(key.PID)
			for _, r := range rows {
				if (r.By != "" && r.Log.Key == key) || r.Row.ContainerPID == cpid || (r.Row.PID == key.PID && !c.underProcfs(key.Dir)) {
					return true
				}
			}
		}
	}
	return !c.underProcfs(key.Dir) && c.procAlive(key.PID)
}

// Ready reports whether npu-smi has answered at least once: until then its
// silence about a pid says nothing, and expiry waits (at most
// logstate.ReadyGrace).
func (l liveness) Ready() bool {
	if l.c.deps.Processes == nil {
		return true
	}
	_, _, ok := l.c.deps.Processes.NPUProcesses()
	return ok
}

// procAlive reports whether <procfs>/<pid> exists; false without
// --path.procfs.
func (c *Service) procAlive(pid int) bool {
	if c.deps.Procfs == "" || pid <= 0 {
		return false
	}
	_, err := os.Stat(filepath.Join(c.deps.Procfs, strconv.Itoa(pid)))
	return err == nil
}

// underProcfs reports whether a log directory was reached through
// --path.procfs: the pid its logs print is a pid of another namespace, and
// only its row in the table of roots says whether it runs.
func (c *Service) underProcfs(dir string) bool {
	return c.deps.Procfs != "" && strings.HasPrefix(dir, strings.TrimSuffix(c.deps.Procfs, "/")+"/")
}

// unreadableErr fails the collector while a configured log directory exists
// but cannot be read: the exporter is then blind to its logs and must not
// report success (a missing root is not an error: CANN creates it with the
// first log).
func unreadableErr(st tail.Stats) error {
	if st.DirsUnreadable == 0 {
		return nil
	}
	return fmt.Errorf("cannlog: %d CANN log director(ies) below --cannlog.root exist but cannot be read "+
		"(see the exporter's log for which and why; run it as a user that may read them)", st.DirsUnreadable)
}
