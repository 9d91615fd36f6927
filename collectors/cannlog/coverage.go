package cannlog

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/tail"
)

// Coverage: an exporter that cannot see a process's CANN logs says so, per
// chip, instead of reporting itself healthy with nothing to read.

// Values of the cann_logs label.
const (
	CANNLogsFound   = "found"
	CANNLogsMissing = "missing"
)

var npuProcessesDesc = prometheus.NewDesc("ascend_npu_processes",
	"Processes npu-smi lists on the chip, by whether the exporter reads their CANN logs: cann_logs=found (through "+
		"--path.procfs or a --cannlog.root), cann_logs=missing (their settings, link setups and plog faults are not seen; "+
		"see the HCCLLogsNotVisible runbook).",
	[]string{"npu", "chip", "cann_logs"}, nil)

// CoverageRow is one row of npu-smi's process table and whether its logs
// are read.
type CoverageRow struct {
	NPU, Chip string
	Found     bool
}

// coverageSource lists npu-smi's last process table with the verdict for
// each row; ok is false before npu-smi first answered. It must not run
// npu-smi or do file I/O: it is called on the scrape path.
type coverageSource interface {
	Coverage() (rows []CoverageRow, ok bool)
}

// SetCoverage gives the collector the join that tells, for each process
// npu-smi lists, whether its logs are read (main wires internal/join,
// which needs the collector's own state first).
func (c *Collector) SetCoverage(src interface {
	Coverage() ([]CoverageRow, bool)
}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cov = src
}

// coverage sends ascend_npu_processes: both values for every chip with a
// process, so that a chip whose logs all went missing shows found=0.
func (c *Collector) coverage(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.cov
	c.mu.Unlock()
	if src == nil {
		return
	}
	rows, ok := src.Coverage()
	if !ok {
		return
	}
	type chip struct{ npu, chip string }
	var order []chip
	counts := map[chip]*[2]int{}
	for _, r := range rows {
		k := chip{r.NPU, r.Chip}
		n := counts[k]
		if n == nil {
			n = &[2]int{}
			counts[k] = n
			order = append(order, k)
		}
		if r.Found {
			n[0]++
		} else {
			n[1]++
		}
	}
	for _, k := range order {
		n := counts[k]
		ch <- prometheus.MustNewConstMetric(npuProcessesDesc, prometheus.GaugeValue, float64(n[0]), k.npu, k.chip, CANNLogsFound)
		ch <- prometheus.MustNewConstMetric(npuProcessesDesc, prometheus.GaugeValue, float64(n[1]), k.npu, k.chip, CANNLogsMissing)
	}
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
