// Command scale measures what one hccl_exporter costs Prometheus and the
// node: it generates node fixtures with bench/gen/nodegen, runs the real
// binary on loopback against each, and prints series per metric family and in
// total (next to the formula of docs/scale.md), the response size (plain and
// gzip), scrape latency (sequential and concurrent scrapers), the exporter's
// CPU per scrape and its RSS.
//
//	go run ./bench/scale             # builds the exporter, measures every point
//	go run ./bench/scale -bin ./hccl_exporter -scrapes 50
//
// It only talks to 127.0.0.1 and stops every exporter it starts.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/nodegen"
	"github.com/hccl-exporter/hccl_exporter/bench/internal/probe"
)

// point is one measured configuration.
type point struct {
	name string
	spec nodegen.Spec
	args []string // extra exporter flags
}

func points() []point {
	a3 := func(npus, procs, comms, codes int) nodegen.Spec {
		return nodegen.Spec{NPUs: npus, ChipsPerNPU: 2, Processes: procs, Communicators: comms, FaultCodes: codes, NoiseLines: 20, Seed: 1}
	}
	return []point{
		{name: "8x1/8p/1c/0k", spec: nodegen.Spec{NPUs: 8, ChipsPerNPU: 1, Processes: 8, Communicators: 1, NoiseLines: 20, Seed: 1}},
		{name: "16x2/64p/8c/0k", spec: a3(16, 64, 8, 0)},
		{name: "16x2/64p/8c/26k", spec: a3(16, 64, 8, 26)},
		{name: "16x2/128p/16c/26k", spec: a3(16, 128, 16, 26)},
		// Past the code cap: 26 catalog + 128 others (--cannlog.max-codes) kept, the rest dropped.
		{name: "16x2/64p/8c/200k", spec: a3(16, 64, 8, 200)},
		// Every scrape runs npu-smi (no reuse).
		{name: "16x2/64p/8c/0k min-int=0", spec: a3(16, 64, 8, 0), args: []string{"--npusmi.min-interval=0s"}},
	}
}

// envExported is the number of hccl_env_info series one settings set of
// nodegen's [HCCL_ENV] block (28 variables, CANN 8.x) yields: the 8
// variables of the set it prints and 3 more it prints set by environment
// (the others print HCCL's default: no series).
const envExported = 11

// maxCodes is --cannlog.max-codes (default): codes outside the catalog kept.
const maxCodes = 128

// formula is the expected number of series of every family, from the node's
// counts: X chips (Xp of them print power, Xb hold a process), P processes
// (in npu-smi's table and in the logs), S settings sets and Cn distinct
// communicators among them, K_h fault codes the exporter counts as HCCL's
// and K_o codes of other CANN components (faultCounts), M plog modules seen
// (each at INFO). The settings and communicator series are shaped per job,
// not per process: a generated node's processes are the ranks of one job,
// print one [HCCL_ENV] block (S = 1) and share their C communicators
// (Cn = C), as real ranks of one job do.
func formula(n *nodegen.Node) map[string]int {
	s := n.Spec
	X := len(n.Chips)
	Xp := 0
	for _, c := range n.Chips {
		if c.PowerWatts > 0 {
			Xp++
		}
	}
	P := s.Processes
	S, Cn := settingsSets(n), distinctCommunicators(n)
	Kh, Ko := faultCounts(n)
	M := 2 // HCCL and HCCP
	if s.NoiseLines > 0 {
		M += min(s.NoiseLines, 3) // GE, RUNTIME, ASCENDCL
	}
	return map[string]int{
		// npusmi: per chip, per process, fixed
		"ascend_npu_info":                     X,
		"ascend_npu_health_status":            X, // the current status only
		"ascend_npu_hbm_used_bytes":           X,
		"ascend_npu_hbm_total_bytes":          X,
		"ascend_npu_aicore_utilization_ratio": X,
		"ascend_npu_temperature_celsius":      X,
		"ascend_npu_power_watts":              Xp,
		// Memory-Usage and Hugepages print 0 / 0 on A2/A3: no series.
		"ascend_npu_process_memory_bytes":                      P,
		"hccl_exporter_npu_smi_up":                             1,
		"hccl_exporter_npu_smi_last_success_timestamp_seconds": 1,
		"hccl_exporter_npu_smi_last_run_duration_seconds":      1,
		"hccl_exporter_npu_smi_parse_warnings_total":           1,
		"hccl_exporter_npu_smi_runs_total":                     4,
		// The generated pids do not run on this host: the check says so.
		"hccl_exporter_npu_smi_foreign_pid_namespace": 1,
		// headroom: per chip, by bound (low, expected, high; the slots
		// free: expected, high) and by QP kind (multi_qp false, true)
		"hccl_link_setup_queue_pair_memory_bytes":       3 * X,
		"hccl_link_setup_pending_queue_pairs":           3 * X,
		"hccl_link_setup_queue_pair_slots_free":         2 * X,
		"hccl_link_setup_pending_link_queue_pair_bytes": 2 * X,
		"hccl_link_setup_processes":                     X, // known; defaulted only where above 0
		"hccl_link_setup_established_queue_pairs":       X,
		"hccl_link_setup_remembered_queue_pairs":        X,
		"hccl_link_setup_unknown_mode_queue_pairs":      X,
		"hccl_link_setup_pending_links":                 X,
		"hccl_link_setup_fixed_pending_bytes":           X,
		"hccl_ccl_buffer_bytes":                         X,
		"hccl_ccl_buffer_pending_bytes":                 X,
		"hccl_ccl_buffer_pending_communicators":         X,
		"hccl_link_setup_headroom_bytes":                X,
		// headroom: fixed (7 modes' QP sizes; the learner's 13 refusal reasons)
		"hccl_link_setup_queue_pair_modelled_bytes":       7,
		"hccl_link_setup_queue_pair_size_bytes":           7,
		"hccl_link_setup_queue_pair_bursts_refused_total": 13,
		"hccl_workload_memory_workloads":                  1,
		"hccl_workload_memory_dropped_total":              2,
		// cannlog: per settings set, per communicator, per code, fixed
		"hccl_env_info":                             S * envExported,
		"hccl_env_buffsize_bytes":                   S,
		"hccl_env_rdma_qps_per_connection":          S,
		"hccl_env_connect_timeout_seconds":          S,
		"hccl_env_exec_timeout_seconds":             S,
		"hccl_communicator_info":                    Cn * S,
		"hccl_communicator_ranks":                   Cn,
		"hccl_communicator_servers":                 Cn,
		"hccl_communicator_processes":               Cn,
		"hccl_communicator_established_queue_pairs": Cn,
		"hccl_communicator_ccl_buffer_bytes":        Cn,
		"hccl_fault_events_total":                   Kh, // born at the first event
		"hccl_fault_last_event_timestamp_seconds":   Kh,
		"ascend_cann_fault_events_total":            Ko,
		"hccl_exporter_fault_series_expired_total":  1,
		"hccl_exporter_communicators_contested":     1,
		"hccl_exporter_screen_reports_untied_total": 3,
		// the log reader's own health
		"hccl_exporter_log_lines_total":                    M,
		"hccl_exporter_log_unparsable_lines_total":         3,
		"hccl_exporter_label_values_dropped_total":         6,
		"hccl_exporter_log_files_tracked":                  1,
		"hccl_exporter_log_files_open":                     1,
		"hccl_exporter_log_files_lost_total":               1,
		"hccl_exporter_log_open_files_limit_reached_total": 1,
		"hccl_exporter_log_limit_reached_total":            5,
		"hccl_exporter_log_paths_refused_total":            3,
		"hccl_exporter_log_lines_refused_total":            1,
		"hccl_exporter_log_hole_bytes_skipped_total":       1,
		"hccl_exporter_log_hung_calls_total":               1,
		"hccl_exporter_log_read_errors_total":              1,
		"hccl_exporter_log_truncated_lines_total":          1,
		"hccl_exporter_log_truncations_total":              1,
		"hccl_exporter_log_replacements_total":             1,
		"hccl_exporter_log_state_file_write_errors_total":  1,
		// one log root: its zone applied and inferred
		"hccl_exporter_log_timezone_applied_offset_seconds": 1,
		"hccl_exporter_log_timezone_offset_seconds":         1,
		// found per chip with a process (spread round-robin); missing
		// only where above 0, and the generated logs are all read
		"ascend_npu_processes": min(X, P),
		// join: each process with its settings set and chip
		"hccl_process_info": P,
		// hccn: no hccn_tool on a generated node
		"hccl_exporter_hccn_tool_up": 1,
		// pods: no kubelet socket on a generated node (connect, list); no
		// cgroup of the generated pids to read (cgroup, none, unreadable)
		"hccl_exporter_pod_resources_errors_total": 2,
		"hccl_exporter_pod_attribution_processes":  3,
		// exporter
		"hccl_exporter_build_info":                     1,
		"hccl_exporter_collector_success":              5,
		"hccl_exporter_collector_duration_seconds":     5,
		"hccl_exporter_http_connections_refused_total": 1,
	}
}

// faultCounts splits the node's fault codes into those the exporter counts
// as HCCL's (hccl_fault_*: 2 series each) and those of other CANN
// components (ascend_cann_fault_events_total: 1 each). Every catalog code
// is HCCL's (bench/gen's EL0004 is the captured report whose traceback
// names HCCL's allocation); bench/gen's made-up EZ1xxx codes are operator
// codes, kept up to --cannlog.max-codes.
func faultCounts(n *nodegen.Node) (hccl, other int) {
	for _, f := range n.Faults {
		switch {
		case f.Catalog:
			hccl++
		case other < maxCodes:
			other++
		}
	}
	return hccl, other
}

// settingsSets is the number of distinct settings sets among the node's
// processes: nodegen writes one [HCCL_ENV] block for the whole node (its
// Spec's QPS and HCCL_BUFFSIZE), so 1 where there are processes.
func settingsSets(n *nodegen.Node) int {
	return min(1, len(n.Processes))
}

// distinctCommunicators is the number of distinct communicator identifiers
// among the node's processes.
func distinctCommunicators(n *nodegen.Node) int {
	ids := map[string]bool{}
	for _, p := range n.Processes {
		for _, c := range p.Communicators {
			ids[c.ID] = true
		}
	}
	return len(ids)
}

// membership is the number of (process, communicator) pairs of the node:
// the sum of hccl_communicator_processes once every plog is read.
func membership(n *nodegen.Node) int {
	k := 0
	for _, p := range n.Processes {
		k += len(p.Communicators)
	}
	return k
}

// runtimeSeries is the number of go_*, process_* and promhttp_* series the
// exporter exports on Go 1.26 (the scale tool measures them at each point).
const runtimeSeries = 50

// runtimeFamily: Go runtime, process and promhttp metrics, constant per node
// (--web.disable-exporter-metrics removes them).
func runtimeFamily(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_")
}

type result struct {
	point
	node                      *nodegen.Node
	families                  map[string]int
	total, runtime, predicted int
	plainBytes, gzipBytes     int
	seq, conc                 []time.Duration
	cpuPerScrape              time.Duration
	rssKiB, hwmKiB            int
	npuSMIRuns                float64
	mismatch                  []string
	droppedCodes              float64
	ready                     time.Duration // from start until the whole node shows
}

func main() {
	bin := flag.String("bin", "", "hccl_exporter binary (empty: go build ./cmd/hccl_exporter into a temporary directory)")
	scrapes := flag.Int("scrapes", 200, "sequential scrapes per point (the concurrent run makes as many, spread over -concurrency scrapers)")
	concurrency := flag.Int("concurrency", 10, "concurrent scrapers")
	only := flag.String("points", "", "comma-separated point names to run (default: all)")
	keep := flag.Bool("keep", false, "keep the generated fixtures")
	budget := flag.Bool("budget", false, "measure the default-set budget instead: the demo A2 node, the 16-chip gen node and the A3 product with every default collector on (budget.go)")
	runs := flag.Bool("runs", false, "count the npu-smi and hccn_tool runs a minute of the demo A2 node and the A3 product instead (runs.go)")
	flag.Parse()

	work, err := os.MkdirTemp("", "hccl-scale-")
	check(err)
	if !*keep {
		defer os.RemoveAll(work)
	}
	if *bin == "" {
		*bin = filepath.Join(work, "hccl_exporter")
		t0 := time.Now()
		cmd := exec.Command("go", "build", "-o", *bin, "./cmd/hccl_exporter")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		check(cmd.Run())
		fmt.Fprintf(os.Stderr, "built %s in %.1fs\n", *bin, time.Since(t0).Seconds())
	}
	if *runs {
		var rs []*runsResult
		for i, n := range budgetNodes() {
			if !n.answers {
				continue
			}
			r, err := measureRuns(*bin, filepath.Join(work, fmt.Sprintf("runs%d", i)), n)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			rs = append(rs, r)
		}
		reportRuns(os.Stdout, rs)
		return
	}
	if *budget {
		var rs []*budgetResult
		for i, n := range budgetNodes() {
			r, err := measureBudget(*bin, filepath.Join(work, fmt.Sprintf("budget%d", i)), n)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			rs = append(rs, r)
		}
		reportBudget(os.Stdout, rs)
		fmt.Println()
		fmt.Print(fleetTable(rs))
		return
	}
	var results []*result
	for i, p := range points() {
		if *only != "" && !contains(strings.Split(*only, ","), p.name) {
			continue
		}
		dir := filepath.Join(work, fmt.Sprintf("node%d", i))
		t0 := time.Now()
		r, err := measure(*bin, dir, p, *scrapes, *concurrency)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p.name, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "%-26s %6d series (ready after %.1fs, measured in %.1fs)\n", p.name, r.total, r.ready.Seconds(), time.Since(t0).Seconds())
		results = append(results, r)
	}
	report(os.Stdout, results, *scrapes, *concurrency)
	for _, r := range results {
		if len(r.mismatch) > 0 {
			os.Exit(1)
		}
	}
}

func measure(bin, dir string, p point, scrapes, concurrency int) (*result, error) {
	n, err := nodegen.New(p.spec)
	if err != nil {
		return nil, err
	}
	tr, err := n.WriteTree(dir)
	if err != nil {
		return nil, err
	}
	addr, err := probe.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--web.listen-address=" + addr,
		"--npusmi.path=" + tr.NPUSMI,
		"--cannlog.root=" + tr.LogRoot,
		"--log.level=error",
		// A generated node prints only the `npu-smi info` table: the detail
		// sweep would count failed calls, not the hardware series of a real
		// node. Their count is the separate term H of docs/scale.md
		// (hardwareSeries, checked by TestHardwareTerm).
		"--no-collector.npuhealth",
	}
	if tr.ScreenLog != "" {
		args = append(args, "--cannlog.screen-log-path="+tr.ScreenLog)
	}
	args = append(args, p.args...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	url := "http://" + addr + "/metrics"
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: concurrency}, Timeout: 30 * time.Second}

	// Wait until the logs are read: every communicator, fault code, the
	// processes' logs and the headroom of every chip show.
	want := formula(n)
	r := &result{point: p, node: n, predicted: sum(want)}
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	var fams map[string]*dto.MetricFamily
	for {
		body, _, err := get(client, url, false)
		if err == nil {
			fams, err = probe.ParseText(body)
			if err != nil {
				return nil, fmt.Errorf("parse exposition: %w", err)
			}
			// Every process's communicators counted (the series appear
			// with the first member; their member count completes with
			// the last).
			if series(fams["hccl_communicator_ranks"]) == want["hccl_communicator_ranks"] &&
				int(probe.GaugeSum(fams, "hccl_communicator_processes")) == membership(n) &&
				series(fams["hccl_fault_last_event_timestamp_seconds"]) == want["hccl_fault_last_event_timestamp_seconds"] &&
				series(fams["ascend_cann_fault_events_total"]) == want["ascend_cann_fault_events_total"] &&
				series(fams["ascend_npu_processes"]) == want["ascend_npu_processes"] &&
				series(fams["hccl_env_info"]) == want["hccl_env_info"] &&
				series(fams["hccl_link_setup_headroom_bytes"]) == want["hccl_link_setup_headroom_bytes"] {
				r.ready = time.Since(start)
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("exporter did not show the whole node within 30s (last error %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.families = map[string]int{}
	for name, mf := range fams {
		k := series(mf)
		r.total += k
		if runtimeFamily(name) {
			r.runtime += k
			continue
		}
		r.families[name] = k
	}
	r.predicted += r.runtime
	for name, k := range r.families {
		if want[name] != k {
			r.mismatch = append(r.mismatch, fmt.Sprintf("%s: measured %d, formula %d", name, k, want[name]))
		}
	}
	for name, k := range want {
		if _, ok := r.families[name]; !ok && k != 0 {
			r.mismatch = append(r.mismatch, fmt.Sprintf("%s: missing, formula %d", name, k))
		}
	}
	sort.Strings(r.mismatch)
	if mf := fams["hccl_exporter_label_values_dropped_total"]; mf != nil {
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "label" && l.GetValue() == "code" {
					r.droppedCodes = m.GetCounter().GetValue()
				}
			}
		}
	}

	plain, _, err := get(client, url, false)
	if err != nil {
		return nil, err
	}
	r.plainBytes = len(plain)
	_, wire, err := get(client, url, true)
	if err != nil {
		return nil, err
	}
	r.gzipBytes = wire

	runsBefore := probe.CounterSum(fams, "hccl_exporter_npu_smi_runs_total")
	cpu0 := probe.CPUTime(cmd.Process.Pid)
	for i := 0; i < scrapes; i++ {
		t0 := time.Now()
		if _, _, err := get(client, url, true); err != nil {
			return nil, err
		}
		r.seq = append(r.seq, time.Since(t0))
	}
	r.cpuPerScrape = (probe.CPUTime(cmd.Process.Pid) - cpu0) / time.Duration(scrapes)

	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	per := max(1, scrapes/concurrency)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				t0 := time.Now()
				_, _, err := get(client, url, true)
				d := time.Since(t0)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				r.conc = append(r.conc, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	last, _, err := get(client, url, false)
	if err != nil {
		return nil, err
	}
	if fams, err = probe.ParseText(last); err != nil {
		return nil, err
	}
	r.npuSMIRuns = probe.CounterSum(fams, "hccl_exporter_npu_smi_runs_total") - runsBefore
	r.rssKiB, r.hwmKiB = probe.Memory(cmd.Process.Pid)
	return r, nil
}

// get scrapes url; with gz it asks for gzip, as Prometheus does, and returns
// the bytes on the wire besides the decoded body.
func get(c *http.Client, url string, gz bool) (body []byte, wire int, err error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if resp.Header.Get("Content-Encoding") != "gzip" {
		return raw, len(raw), nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, 0, err
	}
	body, err = io.ReadAll(zr)
	return body, len(raw), err
}

// series counts the samples a family becomes in Prometheus (a summary's
// quantiles plus _sum and _count, a histogram's buckets plus _sum and _count).
func series(mf *dto.MetricFamily) int {
	if mf == nil {
		return 0
	}
	n := 0
	for _, m := range mf.Metric {
		switch mf.GetType() {
		case dto.MetricType_SUMMARY:
			n += len(m.GetSummary().GetQuantile()) + 2
		case dto.MetricType_HISTOGRAM:
			n += len(m.GetHistogram().GetBucket()) + 2
		default:
			n++
		}
	}
	return n
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 1, 64) }

func report(w io.Writer, rs []*result, scrapes, concurrency int) {
	fmt.Fprintf(w, "\n## Per node (X chips, P processes, C communicators per process, K fault codes)\n\n")
	fmt.Fprintf(w, "| point | X | P | C | K | series | formula | of which runtime | text bytes | gzip bytes | seq p50 / p99 ms | "+
		"%d scrapers p50 / p99 ms | CPU ms / scrape | npu-smi runs | RSS / peak MiB |\n", concurrency)
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		c := r.node.Counts()
		k := strconv.Itoa(c.FaultCodes)
		if r.droppedCodes > 0 {
			k += fmt.Sprintf(" (%.0f dropped)", r.droppedCodes)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %d | %d | %d | %d | %d | %s / %s | %s / %s | %s | %.0f / %d | %.1f / %.1f |\n",
			r.name, c.Chips, c.Processes, r.spec.Communicators, k, r.total, r.predicted, r.runtime,
			r.plainBytes, r.gzipBytes, ms(probe.Percentile(r.seq, .5)), ms(probe.Percentile(r.seq, .99)), ms(probe.Percentile(r.conc, .5)), ms(probe.Percentile(r.conc, .99)),
			ms(r.cpuPerScrape), r.npuSMIRuns, len(r.seq)+len(r.conc), float64(r.rssKiB)/1024, float64(r.hwmKiB)/1024)
	}
	fmt.Fprintf(w, "\n(%d sequential scrapes, then %d scrapers × %d; gzip as Prometheus asks; npu-smi runs counted over all of them.)\n",
		scrapes, concurrency, max(1, scrapes/concurrency))

	fmt.Fprintf(w, "\n## Series per family\n\n| family |")
	for _, r := range rs {
		fmt.Fprintf(w, " %s |", r.name)
	}
	fmt.Fprintf(w, "\n|---|")
	for range rs {
		fmt.Fprintf(w, "--:|")
	}
	fmt.Fprintln(w)
	names := map[string]bool{}
	for _, r := range rs {
		for n := range r.families {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range append(sorted, "(go_, process_, promhttp_)", "total") {
		fmt.Fprintf(w, "| %s |", n)
		for _, r := range rs {
			v := r.families[n]
			switch n {
			case "(go_, process_, promhttp_)":
				v = r.runtime
			case "total":
				v = r.total
			}
			fmt.Fprintf(w, " %d |", v)
		}
		fmt.Fprintln(w)
	}
	bad := false
	for _, r := range rs {
		for _, m := range r.mismatch {
			if !bad {
				fmt.Fprintf(w, "\n## Formula mismatches\n\n")
				bad = true
			}
			fmt.Fprintf(w, "- %s: %s\n", r.name, m)
		}
	}
	if !bad {
		fmt.Fprintf(w, "\nEvery family matches the formula of docs/scale.md.\n")
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func check(err error) {
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
