package npusmi

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

var foreignPIDNamespaceDesc = prometheus.NewDesc("hccl_exporter_npu_smi_foreign_pid_namespace",
	"1 when the pids npu-smi lists are not the host's as --path.procfs shows them: none of them exists there, or every one "+
		"that can be checked is another process (its name, or A3's Process id in container against the last NSpid, differs). "+
		"Log discovery, headroom and NPUMemoryHeldWithoutProcess then go wrong: run the exporter where npu-smi sees host pids (docs/deploy.md). "+
		"Absent while npu-smi lists no process or --path.procfs is empty.",
	nil, nil)

// pidVerdict says whether npu-smi's pids look like the host's.
type pidVerdict int

const (
	pidsUnknown pidVerdict = iota // nothing to check
	pidsHost
	pidsForeign
)

// checkPIDNamespace compares npu-smi's process rows with procfs: each pid
// must exist there and, where npu-smi gives something to compare, be the
// same process (its name is a prefix of comm or the other way round, as
// comm is cut at 15 bytes and npu-smi may cut names too; A3's "Process id in
// container" is the last NSpid entry). why says what was seen, for the log.
func checkPIDNamespace(procfs string, procs []ascend.Process) (v pidVerdict, why string) {
	if procfs == "" {
		return pidsUnknown, ""
	}
	rows, exist, checked, differ := 0, 0, 0, 0
	for _, p := range procs {
		if p.PID <= 0 {
			continue
		}
		rows++
		dir := filepath.Join(procfs, strconv.Itoa(p.PID))
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil {
			continue
		}
		exist++
		same, compared := sameProcess(dir, strings.TrimSpace(string(comm)), p)
		if compared {
			checked++
			if !same {
				differ++
			}
		}
	}
	switch {
	case rows == 0:
		return pidsUnknown, ""
	case exist == 0:
		return pidsForeign, "none of the " + strconv.Itoa(rows) + " pids npu-smi lists exists under " + procfs
	case checked > 0 && differ == checked:
		return pidsForeign, "every pid npu-smi lists that exists under " + procfs + " (" + strconv.Itoa(checked) + ") is another process"
	}
	return pidsHost, ""
}

func sameProcess(dir, comm string, p ascend.Process) (same, compared bool) {
	if c, err := strconv.Atoi(p.ContainerPID); err == nil && c > 0 {
		if status, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
			if ns := nsPIDs(status); len(ns) > 0 {
				return ns[len(ns)-1] == p.ContainerPID, true
			}
		}
	}
	name := strings.TrimSpace(p.Name)
	if name == "" || comm == "" {
		return false, false
	}
	return strings.HasPrefix(name, comm) || strings.HasPrefix(comm, name), true
}

// nsPIDs returns the fields of the NSpid line of /proc/<pid>/status: the
// pid in each pid namespace, outermost first.
func nsPIDs(status []byte) []string {
	for _, line := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			return strings.Fields(string(rest))
		}
	}
	return nil
}

// reportPIDNamespace sends the gauge for snap and logs once when the
// verdict becomes foreign (and once when it stops being). procfs is read
// once per npu-smi run: the scrapes that npu-smi's --npusmi.min-interval
// serves the same run get its verdict, rather than reading two files per
// process again each.
func (c *Collector) reportPIDNamespace(ch chan<- prometheus.Metric, s *npusmi.Snapshot) {
	c.mu.Lock()
	v, checked := c.pidsVerdict, c.pidsChecked == s
	c.mu.Unlock()
	var why string
	if !checked {
		v, why = checkPIDNamespace(c.procfs, s.Processes)
	}
	foreign := v == pidsForeign
	c.mu.Lock()
	c.pidsChecked, c.pidsVerdict = s, v
	changed := v != pidsUnknown && foreign != c.foreignPIDs
	if v != pidsUnknown {
		c.foreignPIDs = foreign
	}
	c.mu.Unlock()
	if v == pidsUnknown {
		return
	}
	switch {
	case changed && foreign:
		c.logger.Warn("npu-smi lists pids of another pid namespace than --path.procfs shows: log discovery, headroom and "+
			"NPUMemoryHeldWithoutProcess cannot trust them; mount the host's /proc as --path.procfs, or run npu-smi where it sees host pids (docs/deploy.md)",
			"seen", why, "procfs", c.procfs)
	case changed:
		c.logger.Info("npu-smi's pids are the host's again", "procfs", c.procfs)
	}
	val := 0.0
	if foreign {
		val = 1
	}
	ch <- prometheus.MustNewConstMetric(foreignPIDNamespaceDesc, prometheus.GaugeValue, val)
}
