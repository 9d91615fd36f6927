// Command node measures the real hccl_exporter binary on a worst-case node
// with many tracked log files: its CPU at rest and while lines are appended
// (steady state), and /metrics latency with sequential and concurrent
// scrapers, checking that npu-smi runs at most once per
// --npusmi.min-interval whatever the scrape load.
//
//	go run ./bench/node -exporter ./hccl_exporter [-files 10000] [-idle 30s] [-busy 30s]
//	go run ./bench/node -exporter ./hccl_exporter -baseline ./old_exporter -rounds 3 -steady=false
//
// With -baseline the two binaries run alternately (the host's load moves
// both) and the tables give each run's latencies with the CPU the host
// stole meanwhile, and the medians' ratio.
//
// The node is bench/gen/nodegen's worst case (16 NPUs × 2 dies, 64 training
// processes with 8 communicators each) plus old plogs of finished processes
// up to -files followed files. It only talks to 127.0.0.1 and stops the
// exporter it starts.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/nodegen"
	"github.com/hccl-exporter/hccl_exporter/bench/internal/probe"
)

// acceptPrometheus is the Accept header of Prometheus 2.x scrapes.
const acceptPrometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

type config struct {
	exporter    string
	work        string
	files       int
	idle, busy  time.Duration
	rate        int
	scrapers    int
	perScraper  int
	sequential  int
	pace        time.Duration
	steady      bool
	minInterval time.Duration
	label       string
	targetP99   time.Duration
	targetFor   string
	// Targets of the sequential scrapes (0: none): their p99 and the
	// exporter's CPU per scrape.
	targetSeqP99, targetCPU time.Duration
	extra                   []string
	jsonOut                 string
}

type result struct {
	Label          string      `json:"label"`
	Files          int         `json:"files"`
	Series         int         `json:"series"`
	IdleCPU        float64     `json:"idle_cpu_percent"`
	BusyCPU        float64     `json:"busy_cpu_percent"`
	Appended       int         `json:"lines_appended"`
	Counted        int         `json:"lines_counted"`
	SeqP50, SeqP99 float64     `json:"-"`
	Seq            []float64   `json:"sequential_ms_p50_p99_max"`
	CPUPerScrape   float64     `json:"cpu_ms_per_scrape_sequential"`
	SeqSteal       float64     `json:"steal_percent_sequential"`
	Concurrent     []concStats `json:"concurrent"`
	NPUSMIRuns     int         `json:"npu_smi_runs"`
	NPUSMIAllowed  int         `json:"npu_smi_runs_allowed"`
	RSSKiB         int         `json:"rss_kib"`
}

func main() {
	var c config
	var extra string
	flag.StringVar(&c.exporter, "exporter", "", "hccl_exporter binary (required)")
	flag.StringVar(&c.work, "work", "bench/out/node-fixture", "directory of the generated node (rewritten)")
	flag.IntVar(&c.files, "files", 10000, "followed log files in total")
	flag.DurationVar(&c.idle, "idle", 30*time.Second, "CPU measurement without appends")
	flag.DurationVar(&c.busy, "busy", 30*time.Second, "CPU measurement with appends")
	flag.IntVar(&c.rate, "rate", 100, "lines appended per second across all files")
	flag.IntVar(&c.scrapers, "scrapers", 10, "concurrent scrapers")
	flag.IntVar(&c.perScraper, "per-scraper", 100, "scrapes per concurrent scraper")
	flag.IntVar(&c.sequential, "sequential", 100, "sequential scrapes")
	flag.DurationVar(&c.pace, "pace", 100*time.Millisecond, "interval of each scraper in the paced concurrent run")
	flag.BoolVar(&c.steady, "steady", true, "measure steady-state CPU (off: scrapes only)")
	flag.DurationVar(&c.minInterval, "npu-smi-min-interval", 5*time.Second, "--npusmi.min-interval passed to the exporter")
	flag.StringVar(&c.label, "label", "default flags", "label of this run in the tables")
	flag.DurationVar(&c.targetP99, "target-p99", 10*time.Millisecond, "p99 target of the concurrent scrapes (10ms with the default "+
		"scrape cache); 0 for none, as for uncached scrapes (docs/benchmarks.md says why)")
	flag.DurationVar(&c.targetSeqP99, "target-seq-p99", 0, "p99 target of the sequential scrapes (25ms uncached); 0 for none")
	flag.DurationVar(&c.targetCPU, "target-cpu", 0, "target of the exporter's CPU per sequential scrape (8ms uncached); 0 for none")
	flag.StringVar(&c.targetFor, "target-for", "cached scrapes", "what the targets are the targets of, printed next to them")
	flag.StringVar(&extra, "extra", "", "extra exporter flags, space separated")
	flag.StringVar(&c.jsonOut, "json", "", "also write the result as JSON to this file")
	baseline := flag.String("baseline", "", "another hccl_exporter binary to run alternately with -exporter: prints both and their ratio")
	rounds := flag.Int("rounds", 3, "with -baseline: runs of each binary, alternated")
	flag.Parse()
	if c.exporter == "" {
		flag.Usage()
		os.Exit(2)
	}
	c.extra = strings.Fields(extra)
	if *baseline != "" {
		if err := compare(c, *baseline, max(1, *rounds)); err != nil {
			fmt.Fprintln(os.Stderr, "node:", err)
			os.Exit(1)
		}
		return
	}
	r, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
	report(c, r)
	if c.jsonOut != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(c.jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "node:", err)
			os.Exit(1)
		}
	}
	if r.Counted != r.Appended {
		fmt.Fprintf(os.Stderr, "node: %d lines appended but the exporter counted %d\n", r.Appended, r.Counted)
		os.Exit(1)
	}
	if r.NPUSMIRuns > r.NPUSMIAllowed {
		fmt.Fprintf(os.Stderr, "node: npu-smi ran %d times, at most %d allowed\n", r.NPUSMIRuns, r.NPUSMIAllowed)
		os.Exit(1)
	}
}

// writeNode writes the worst-case node and old plogs up to files in total;
// it returns the npu-smi wrapper, the log root and the followed plogs.
func writeNode(dir string, files int) (npuSMI, root string, plogs []string, err error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", "", nil, err
	}
	n, err := nodegen.New(nodegen.DefaultSpec())
	if err != nil {
		return "", "", nil, err
	}
	n.Spec.NoiseLines = 20
	tr, err := n.WriteTree(dir)
	if err != nil {
		return "", "", nil, err
	}
	plogDir := filepath.Join(tr.LogRoot, "run", "plog")
	ents, err := os.ReadDir(plogDir)
	if err != nil {
		return "", "", nil, err
	}
	for _, e := range ents {
		plogs = append(plogs, filepath.Join(plogDir, e.Name()))
	}
	// Old plogs of finished processes: INFO lines only, no settings.
	t := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	for i := 0; len(plogs) < files; i++ {
		pid := 100001 + i
		t = t.Add(3 * time.Second)
		name := fmt.Sprintf("plog-%d_%s%03d.log", pid, t.Format("20060102150405"), i%1000)
		p := filepath.Join(plogDir, name)
		var b bytes.Buffer
		for k := 0; k < 10; k++ {
			fmt.Fprintf(&b, "[INFO] GE(%d,python3):%s.%03d.%03d [graph_manager.cc:1432]tid:%d, GraphManager run graph, graph_id:%d, session_id:1\n",
				pid, t.Format("2006-01-02-15:04:05"), k, 100+k, pid+1, k)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return "", "", nil, err
		}
		plogs = append(plogs, p)
	}
	// Count npu-smi runs independently of the exporter's own counter.
	npuSMI = filepath.Join(dir, "npu-smi-counted")
	script := "#!/bin/sh\necho run >> " + filepath.Join(dir, "npu-smi.runs") + "\nexec " + tr.NPUSMI + " \"$@\"\n"
	if err := os.WriteFile(npuSMI, []byte(script), 0o755); err != nil {
		return "", "", nil, err
	}
	return npuSMI, tr.LogRoot, plogs, nil
}

func npuSMIRunsFile(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "npu-smi.runs"))
	return bytes.Count(b, []byte("\n"))
}

func run(c config) (*result, error) {
	npuSMI, root, plogs, err := writeNode(c.work, c.files)
	if err != nil {
		return nil, fmt.Errorf("write node: %w", err)
	}
	addr, err := probe.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--web.listen-address=" + addr,
		"--npusmi.path=" + npuSMI,
		"--npusmi.min-interval=" + c.minInterval.String(),
		"--cannlog.root=" + root,
		// As the shipped DaemonSet and systemd unit run it: offsets and
		// counters checkpointed while lines arrive.
		"--cannlog.state-file=" + filepath.Join(c.work, "state.json"),
		"--log.level=error",
	}, c.extra...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, c.exporter, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	url := "http://" + addr + "/metrics"
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: c.scrapers + 1}, Timeout: 30 * time.Second}
	r := &result{Label: c.label}

	// Ready: every file followed and every line read.
	deadline := time.Now().Add(60 * time.Second)
	var base int
	for {
		body, err := get(client, url, false)
		if err == nil {
			fams, err := probe.ParseText(body)
			if err != nil {
				return nil, err
			}
			if probe.GaugeSum(fams, "hccl_exporter_log_files_tracked") == float64(len(plogs)) && probe.GaugeSum(fams, "hccl_link_setup_headroom_bytes") > 0 {
				base = int(probe.CounterSum(fams, "hccl_exporter_log_lines_total"))
				r.Files = len(plogs)
				for _, mf := range fams {
					r.Series += len(mf.GetMetric())
				}
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("exporter did not follow %d files within 60s (last error %v)", len(plogs), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Settle: the first rescan after start and the GC after the initial read.
	time.Sleep(3 * time.Second)

	if !c.steady {
		return r, scrapes(c, r, client, url, pid)
	}
	// Steady state at rest.
	cpu0 := probe.CPUTime(pid)
	time.Sleep(c.idle)
	r.IdleCPU = 100 * (probe.CPUTime(pid) - cpu0).Seconds() / c.idle.Seconds()

	// Steady state with appends spread over every file.
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(time.Second / time.Duration(c.rate))
	cpu0 = probe.CPUTime(pid)
	begin := time.Now()
	for time.Since(begin) < c.busy {
		<-tick.C
		p := plogs[rng.IntN(len(plogs))]
		fpid := strings.TrimPrefix(strings.SplitN(filepath.Base(p), "_", 2)[0], "plog-")
		line := fmt.Sprintf("[INFO] GE(%s,python3):2026-01-07-09:00:00.%03d.000 [graph_manager.cc:1432]tid:1, appended line %d\n", fpid, r.Appended%1000, r.Appended)
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(line)
		f.Close()
		if err != nil {
			return nil, err
		}
		r.Appended++
	}
	tick.Stop()
	r.BusyCPU = 100 * (probe.CPUTime(pid) - cpu0).Seconds() / time.Since(begin).Seconds()
	// Every appended line counted (within a rescan interval).
	deadline = time.Now().Add(15 * time.Second)
	for {
		body, err := get(client, url, false)
		if err == nil {
			fams, err := probe.ParseText(body)
			if err != nil {
				return nil, err
			}
			r.Counted = int(probe.CounterSum(fams, "hccl_exporter_log_lines_total")) - base
			if r.Counted >= r.Appended {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}

	return r, scrapes(c, r, client, url, pid)
}

func scrapes(c config, r *result, client *http.Client, url string, pid int) error {
	runs0 := npuSMIRunsFile(c.work)
	scrapeBegin := time.Now()
	var seq []time.Duration
	cpu0, steal0 := probe.CPUTime(pid), probe.ReadSteal()
	for i := 0; i < c.sequential; i++ {
		t0 := time.Now()
		if _, _, err := fetch(client, url, true); err != nil {
			return err
		}
		seq = append(seq, time.Since(t0))
	}
	r.CPUPerScrape = ms((probe.CPUTime(pid) - cpu0) / time.Duration(max(1, c.sequential)))
	r.SeqSteal = probe.StealPercent(steal0, probe.ReadSteal())
	r.Seq = []float64{ms(probe.Percentile(seq, 0.5)), ms(probe.Percentile(seq, 0.99)), ms(probe.Percentile(seq, 1))}

	for _, pace := range []time.Duration{0, c.pace} {
		cs, err := concurrent(client, url, pid, c.scrapers, c.perScraper, pace)
		if err != nil {
			return err
		}
		r.Concurrent = append(r.Concurrent, cs)
	}
	elapsed := time.Since(scrapeBegin)
	r.NPUSMIRuns = npuSMIRunsFile(c.work) - runs0
	// A run may have started just before the window, so one more is allowed.
	r.NPUSMIAllowed = int(elapsed/c.minInterval) + 1
	r.RSSKiB, _ = probe.Memory(pid)
	return nil
}

type concStats struct {
	PaceMS  float64   `json:"pace_ms"`
	MS      []float64 `json:"ms_p50_p99_max"`
	CPU     float64   `json:"cpu_ms_per_scrape"`
	Scrapes int       `json:"scrapes"`
	Steal   float64   `json:"steal_percent"`
	Seconds float64   `json:"seconds"`
}

// concurrent runs scrapers goroutines of n scrapes each; with pace > 0 each
// scraper starts at a random offset and then scrapes every pace, like
// independent Prometheus servers, else back to back.
func concurrent(client *http.Client, url string, pid, scrapers, n int, pace time.Duration) (concStats, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var lat []time.Duration
	var firstErr error
	cpu0, steal0 := probe.CPUTime(pid), probe.ReadSteal()
	t0 := time.Now()
	for w := 0; w < scrapers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now()
			if pace > 0 {
				next = next.Add(time.Duration(rand.Int64N(int64(pace))))
			}
			for i := 0; i < n; i++ {
				if pace > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(pace)
				}
				s := time.Now()
				_, _, err := fetch(client, url, true)
				d := time.Since(s)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return concStats{}, firstErr
	}
	return concStats{
		PaceMS:  ms(pace),
		MS:      []float64{ms(probe.Percentile(lat, 0.5)), ms(probe.Percentile(lat, 0.99)), ms(probe.Percentile(lat, 1))},
		CPU:     ms((probe.CPUTime(pid) - cpu0) / time.Duration(max(1, len(lat)))),
		Scrapes: len(lat),
		Seconds: time.Since(t0).Seconds(),
		Steal:   probe.StealPercent(steal0, probe.ReadSteal()),
	}, nil
}

func report(c config, r *result) {
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	fmt.Printf("\n## Node: %d followed files, %d series (%s)\n\n", r.Files, r.Series, r.Label)
	fmt.Println("| measurement | value | target | verdict |")
	fmt.Println("|---|--:|--:|---|")
	if c.steady {
		fmt.Printf("| CPU at rest (%.0f s), %% of a core | %.2f | ≤ 0.5 | %s |\n", c.idle.Seconds(), r.IdleCPU, verdict(r.IdleCPU <= 0.5))
		fmt.Printf("| CPU with %d lines/s appended over all files (%.0f s), %% of a core | %.2f | ≤ 2 | %s |\n", c.rate, c.busy.Seconds(), r.BusyCPU, verdict(r.BusyCPU <= 2))
		fmt.Printf("| lines appended / counted by hccl_exporter_log_lines_total | %d / %d | equal | %s |\n", r.Appended, r.Counted, verdict(r.Appended == r.Counted))
	}
	// target returns the target column and verdict of a value against
	// limit (none when limit is 0).
	target := func(what string, v float64, limit time.Duration) (string, string) {
		if limit <= 0 {
			return "", ""
		}
		return fmt.Sprintf("%s ≤ %g ms (%s)", what, ms(limit), c.targetFor), verdict(v <= ms(limit))
	}
	seqTarget, seqVerdict := target("p99", r.Seq[1], c.targetSeqP99)
	fmt.Printf("| sequential scrapes (%d, gzip): p50 / p99 / max ms | %.1f / %.1f / %.1f | %s | %s |\n",
		c.sequential, r.Seq[0], r.Seq[1], r.Seq[2], seqTarget, seqVerdict)
	cpuTarget, cpuVerdict := target("", r.CPUPerScrape, c.targetCPU)
	fmt.Printf("| exporter CPU per sequential scrape, ms | %.2f | %s | %s |\n", r.CPUPerScrape, cpuTarget, cpuVerdict)
	fmt.Printf("| CPU stolen by the host's other guests during those scrapes, %% | %.1f | | %s |\n", r.SeqSteal, stealNote(r.SeqSteal))
	for _, cs := range r.Concurrent {
		mode := "back to back"
		if cs.PaceMS > 0 {
			mode = fmt.Sprintf("each every %.0f ms", cs.PaceMS)
		}
		concTarget, concVerdict := target("p99", cs.MS[1], c.targetP99)
		fmt.Printf("| %d concurrent scrapers × %d, %s (gzip): p50 / p99 / max ms | %.1f / %.1f / %.1f | %s | %s |\n",
			c.scrapers, c.perScraper, mode, cs.MS[0], cs.MS[1], cs.MS[2], concTarget, concVerdict)
		fmt.Printf("| exporter CPU per scrape of that run, ms (%d scrapes in %.1f s) | %.2f | | |\n", cs.Scrapes, cs.Seconds, cs.CPU)
		fmt.Printf("| CPU stolen by the host's other guests during that run, %% | %.1f | | %s |\n", cs.Steal, stealNote(cs.Steal))
	}
	fmt.Printf("| npu-smi runs during the scrapes (min-interval %s) | %d | ≤ %d | %s |\n", c.minInterval, r.NPUSMIRuns, r.NPUSMIAllowed, verdict(r.NPUSMIRuns <= r.NPUSMIAllowed))
	fmt.Printf("| exporter RSS, MiB | %.0f | | |\n", float64(r.RSSKiB)/1024)
}

// stealNote flags a run whose latencies the host's other guests set: with a
// tenth of the CPU time stolen, the two cores the exporter and the scrapers
// share are no longer two.
func stealNote(pct float64) string {
	if pct >= 10 {
		return "host busy: latencies are upper bounds"
	}
	return ""
}

// get scrapes url (asking for gzip when gz, as Prometheus does) and returns
// the decoded body. The timed scrapes use fetch: the exporter's latency ends
// with the last byte; decompressing is the scraper's cost.
func get(c *http.Client, url string, gz bool) ([]byte, error) {
	raw, enc, err := fetch(c, url, gz)
	if err != nil || enc != "gzip" {
		return raw, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// fetch returns the body as sent and its Content-Encoding.
func fetch(c *http.Client, url string, gz bool) ([]byte, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", acceptPrometheus)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return raw, resp.Header.Get("Content-Encoding"), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
