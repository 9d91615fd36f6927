package main

// Vendor-tool runs per minute: how many npu-smi and hccn_tool processes the
// exporter starts on a node, counted from the budget nodes' tool wrappers
// (every invocation is a line of calls.log with its time). The sweeps run
// at shortened intervals so that two of each finish in seconds; what a
// sweep asks does not depend on its interval, so a steady sweep (the
// second: the first also asks the slow commands and finds the unsupported
// queries) times the sweeps per minute of the default intervals gives the
// runs per minute of a default deployment.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Default intervals (the flags' defaults, README) and the recommended
// scrape interval (docs/scale.md): what a minute of a deployment holds.
const (
	defaultDetailInterval = 60 * time.Second
	defaultHCCNInterval   = 30 * time.Second
	defaultHCCNSlow       = 10 * time.Minute
	scrapeInterval        = 30 * time.Second
)

// call is one line of calls.log.
type call struct {
	at   float64 // seconds
	tool string  // npu-smi or hccn_tool
	args []string
}

// runsResult is one node's tool runs.
type runsResult struct {
	name string
	// Per steady sweep: npu-smi detail calls, the npu-smi table runs the
	// sweep needed, hccn_tool calls; per slow sweep: hccn_tool's slow
	// commands.
	detail, tableInSweep, hccn, hccnSlow int
}

// perMinute is npu-smi and hccn_tool processes a minute at the default
// intervals, one Prometheus scraping every 30 s (each scrape runs the table
// at most once: --npusmi.min-interval).
func (r *runsResult) perMinute() (npuSMI, hccn float64) {
	sweeps := float64(time.Minute) / float64(defaultDetailInterval)
	npuSMI = sweeps*float64(r.detail+r.tableInSweep) + float64(time.Minute)/float64(scrapeInterval)
	hccn = float64(time.Minute)/float64(defaultHCCNInterval)*float64(r.hccn) + float64(time.Minute)/float64(defaultHCCNSlow)*float64(r.hccnSlow)
	return npuSMI, hccn
}

// slowCommands are hccn_tool's commands asked every --hccn.slow-interval.
var slowCommands = map[string]bool{"-optical": true, "-tls": true, "-speed": true}

// measureRuns runs bin on node with sweeps every 10 s (npu-smi detail) and
// 5 s (hccn_tool) and no scrape, until each has swept twice, and counts the
// second sweep's calls.
func measureRuns(bin, dir string, node budgetNode) (*runsResult, error) {
	_, stop, err := startNode(bin, dir, node, "--npuhealth.interval=10s", "--hccn.interval=5s")
	if err != nil {
		return nil, err
	}
	defer stop()
	deadline := time.Now().Add(90 * time.Second)
	for {
		time.Sleep(time.Second)
		calls, err := readCalls(filepath.Join(dir, "calls.log"))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		detail := bursts(calls, func(c call) bool { return c.tool == "npu-smi" && isDetail(c) }, 3)
		hccn := bursts(calls, func(c call) bool { return c.tool == "hccn_tool" }, 2)
		// Done when a third burst has begun: the second is then whole.
		if len(detail) >= 3 && (len(hccn) >= 3 || !node.answers) {
			r := &runsResult{name: node.name, detail: len(detail[1])}
			lo, hi := detail[1][0].at-1, detail[1][len(detail[1])-1].at
			for _, c := range calls {
				if c.tool == "npu-smi" && !isDetail(c) && c.at >= lo && c.at <= hi {
					r.tableInSweep++
				}
			}
			if node.answers {
				r.hccn = len(hccn[1])
				for _, c := range hccn[0] {
					if len(c.args) >= 3 && slowCommands[c.args[2]] {
						r.hccnSlow++
					}
				}
			}
			return r, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: no two whole sweeps within 90s (%d detail, %d hccn_tool bursts)", node.name, len(detail), len(hccn))
		}
	}
}

func isDetail(c call) bool { return len(c.args) >= 2 && c.args[0] == "info" && c.args[1] == "-t" }

// bursts groups the calls keep selects into runs separated by more than
// gap seconds: one sweep each.
func bursts(calls []call, keep func(call) bool, gap float64) [][]call {
	var out [][]call
	last := -1e18
	for _, c := range calls {
		if !keep(c) {
			continue
		}
		if c.at-last > gap {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], c)
		last = c.at
	}
	return out
}

// readCalls parses calls.log: "<unix seconds> <tool> <args…>" per line.
func readCalls(path string) ([]call, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []call
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue // a line being written
		}
		at, err := strconv.ParseFloat(fs[0], 64)
		if err != nil {
			continue
		}
		out = append(out, call{at: at, tool: fs[1], args: fs[2:]})
	}
	return out, sc.Err()
}

// runsTable is docs/scale.md's table of tool runs per node
// (TestToolRunsPerMinute finds it there).
func runsTable(rs []*runsResult) string {
	var b strings.Builder
	b.WriteString("| node | npu-smi detail calls per sweep | npu-smi table runs per sweep | hccn_tool calls per sweep (slow commands per 10 min) | npu-smi runs a minute | hccn_tool runs a minute |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		n, h := r.perMinute()
		fmt.Fprintf(&b, "| %s | %d | %d | %d (%d) | %.0f | %.1f |\n", r.name, r.detail, r.tableInSweep, r.hccn, r.hccnSlow, n, h)
	}
	return b.String()
}

func reportRuns(w io.Writer, rs []*runsResult) { fmt.Fprint(w, runsTable(rs)) }
