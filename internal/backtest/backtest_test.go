package backtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// Time compression: one simulated minute per real second.
const compression = 60

// The backtest's Prometheus scrapes every second and evaluates every
// 100 ms: 1 min (Prometheus' default scrape interval) and 6 s simulated.
const (
	scrapeInterval = time.Second
	evalInterval   = 100 * time.Millisecond
)

// toReal converts a simulated duration to real time.
func toReal(d time.Duration) time.Duration { return d / compression }

// toSim converts a real duration to simulated time.
func toSim(d time.Duration) time.Duration { return d * compression }

// schedulingJitter is the real-time delay a loaded 2-core test machine adds
// to a rule evaluation or a scrape (measured up to ~50 ms while other test
// packages ran): compressed 60×, it is a few simulated seconds that no
// deployment would see, allowed on top of MinLead.
const schedulingJitter = 100 * time.Millisecond

// result is what the backtest measured on one timeline.
type result struct {
	tl       Timeline
	instance string
	start    time.Time
	failure  time.Time // zero: none scripted
	// since is the failure before the measured one (Timeline.FailureIndex
	// > 0): alerts are read only after it, so that the lead is the
	// restarted process's own.
	since     time.Time
	firstFire map[string]time.Time
	firstPend map[string]time.Time
	// refires counts how often the preventive alert resolved and fired
	// again before the failure.
	refires int
	// maxScrape is the longest scrape of its exporter (real time): a
	// sample shows the node as it was at some point of its scrape.
	maxScrape time.Duration
	// pods are the "namespace/pod" labels the firing alerts carried.
	pods map[string]bool
}

// TestBacktest replays every timeline at once: one exporter per timeline,
// one Prometheus with the shipped rules compressed 60×.
func TestBacktest(t *testing.T) {
	if testing.Short() {
		t.Skip("backtest: builds and runs the exporter and Prometheus for about a minute; skipped under -short")
	}
	bin := testtools.BuildExporter(t, filepath.Join("..", "..")) // the backtest runs the real binary
	rules, err := CompressRules(string(alerts.Rules), compression)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	rulesPath := filepath.Join(base, "rules.yml")
	if err := os.WriteFile(rulesPath, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}

	nodes := make([]*node, len(timelines))
	results := make([]*result, len(timelines))
	var targets []string
	for i, tl := range timelines {
		dir := filepath.Join(base, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		n := newNode(t, dir)
		nodes[i] = n
		kubelet := ""
		if ns, pod, ok := strings.Cut(tl.Pod, "/"); ok {
			kubelet = testtools.StartFakeKubelet(t, testtools.PodDevice{Namespace: ns, Pod: pod, Container: "main",
				Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-0"}}).Socket
		}
		addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
		testtools.StartProcess(t, dir, bin,
			"--web.listen-address="+addr,
			"--npusmi.path="+filepath.Join(dir, "npu-smi"),
			"--npusmi.min-interval=0s",
			"--cannlog.root="+n.root,
			"--cannlog.screen-log-path="+filepath.Join(filepath.Dir(n.screen), "*.log"),
			"--cannlog.poll-interval=100ms",
			"--path.procfs="+n.procfs,
			// The node is shared and loaded: leave npu-smi most of the
			// scrape's second.
			"--web.scrape-timeout-offset=50ms",
			// Every scrape gathers anew: the 1 s answer cache is a whole
			// simulated minute here.
			"--web.scrape-cache-ttl=0s",
			"--no-collector.hccn",
			// The fake npu-smi answers `info` only; the hardware sweep's
			// detail queries are not part of these timelines.
			"--no-collector.npuhealth",
			"--pods.kubelet-socket="+kubelet,
		)
		targets = append(targets, addr)
		results[i] = &result{tl: tl, instance: addr}
	}
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets: targets, JobName: "hccl_exporter", RuleFiles: []string{rulesPath},
		ScrapeInterval: scrapeInterval, EvaluationInterval: evalInterval,
	})
	prom.WaitTargetsUp(t, "hccl_exporter", 30*time.Second)

	// Every timeline starts now, on its own goroutine.
	start := time.Now()
	var wg sync.WaitGroup
	for i, tl := range timelines {
		if !selected(tl) {
			continue
		}
		results[i].start = start
		wg.Go(func() {
			for _, ev := range tl.Events {
				time.Sleep(time.Until(start.Add(toReal(ev.At))))
				ev.Do(nodes[i])
			}
		})
	}
	wg.Wait()
	longest := time.Duration(0)
	for _, tl := range timelines {
		if selected(tl) {
			longest = max(longest, tl.Duration)
		}
	}
	time.Sleep(time.Until(start.Add(toReal(longest) + 2*scrapeInterval)))
	end := time.Now()

	var run []*result
	for i, r := range results {
		if !selected(r.tl) {
			continue
		}
		run = append(run, r)
		if os.Getenv("BACKTEST_DEBUG") != "" {
			for _, q := range []string{"hccl_link_setup_headroom_bytes", `hccl_link_setup_pending_queue_pairs{bound="expected"}`,
				`hccl_link_setup_queue_pair_memory_bytes{bound="expected"}`, "hccl_ccl_buffer_pending_bytes", `hccl_link_setup_processes{settings_source="known"}`, `hccl_link_setup_pending_queue_pairs{bound="high"}`, `hccl_link_setup_established_queue_pairs`, "scrape_duration_seconds", "ascend_npu_hbm_used_bytes", "hccl_exporter_npu_smi_last_run_duration_seconds", `sum(hccl_exporter_npu_smi_runs_total) by (instance)`, "count_over_time(up[4s])", `count_over_time(hccl_link_setup_headroom_bytes[4s])`} {
				t.Logf("%s %s: %s", r.tl.Name, q, debugSeries(t, prom.URL, q, r.instance, start, end))
			}
		}
		if f := nodes[i].failures; len(f) > r.tl.FailureIndex {
			r.failure = f[r.tl.FailureIndex]
			if r.tl.FailureIndex > 0 {
				r.since = f[r.tl.FailureIndex-1]
			}
		}
		r.firstFire, r.refires = firstTimes(t, prom.URL, "firing", r, start, end)
		r.maxScrape = maxScrapeDuration(t, prom.URL, r.instance, start, end)
		r.firstPend, _ = firstTimes(t, prom.URL, "pending", r, start, end)
	}
	table := report(run)
	t.Log("\n" + table)
	if p := os.Getenv("BACKTEST_TABLE"); p != "" {
		if err := os.WriteFile(p, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, r := range run {
		check(t, r)
	}
}

// selected reports whether BACKTEST_RUN (a substring of timeline names,
// case-insensitive) selects tl; unset, every timeline runs.
func selected(tl Timeline) bool {
	f := os.Getenv("BACKTEST_RUN")
	return f == "" || strings.Contains(strings.ToLower(tl.Name), strings.ToLower(f))
}

// debugSeries renders expr of instance over the run, one value per
// simulated half minute.
func debugSeries(t *testing.T, promURL, expr, instance string, start, end time.Time) string {
	q := url.Values{
		"query": {fmt.Sprintf(`%s * on (instance) group_left() (up{instance=%q})`, expr, instance)},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {"0.5"},
	}
	resp, err := http.Get(promURL + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data.Result) == 0 {
		return fmt.Sprintf("no data (%v)", err)
	}
	var b strings.Builder
	for _, v := range body.Data.Result[0].Values {
		ts, _ := v[0].(float64)
		val, _ := v[1].(string)
		fmt.Fprintf(&b, "%.1f:%s ", toSim(time.UnixMilli(int64(ts*1000)).Sub(start)).Minutes(), val)
	}
	return b.String()
}

// check fails the test where a timeline missed its expectation.
func check(t *testing.T, r *result) {
	t.Helper()
	if r.tl.Silent {
		for name := range r.firstFire {
			if !slices.Contains(r.tl.Allowed, name) {
				t.Errorf("%s: %s fired on a timeline that expects silence", r.tl.Name, name)
			}
		}
		return
	}
	if r.failure.IsZero() {
		t.Errorf("%s: scripted no failure", r.tl.Name)
		return
	}
	first, ok := r.firstFire[r.tl.Preventive]
	if p, okp := r.firstPend[r.tl.Preventive]; okp && (!ok || p.Before(first)) {
		first, ok = p, true
	}
	switch {
	case !ok || !first.Before(r.failure):
		t.Errorf("%s: %s was not even pending before the failure", r.tl.Name, r.tl.Preventive)
	case r.tl.MinLead > 0 && toSim(r.failure.Sub(first)) < r.tl.MinLead-toSim(r.maxScrape)-toSim(schedulingJitter):
		t.Errorf("%s: %s led the failure by %s (simulated), want at least %s less the longest scrape (%s) and the machine's scheduling jitter (%s)", r.tl.Name, r.tl.Preventive,
			toSim(r.failure.Sub(first)).Round(time.Second), r.tl.MinLead, toSim(r.maxScrape).Round(time.Second), toSim(schedulingJitter))
	}
	if r.tl.Pod != "" && !r.pods[r.tl.Pod] {
		t.Errorf("%s: no alert named the chip's pod %s (alerts named %v)", r.tl.Name, r.tl.Pod, r.pods)
	}
	if r.refires > 0 {
		t.Errorf("%s: %s flapped %d time(s) before the failure", r.tl.Name, r.tl.Preventive, r.refires)
	}
	for name, at := range r.firstFire {
		if name != r.tl.Preventive && at.Before(r.failure) && !slices.Contains(r.tl.Allowed, name) {
			t.Errorf("%s: %s fired before the failure", r.tl.Name, name)
		}
	}
}

// maxScrapeDuration is the longest scrape_duration_seconds of instance
// over the run.
func maxScrapeDuration(t *testing.T, promURL, instance string, start, end time.Time) time.Duration {
	t.Helper()
	window := end.Sub(start).Round(time.Second) + time.Second
	q := url.Values{
		"query": {fmt.Sprintf(`max_over_time(scrape_duration_seconds{instance=%q}[%dms])`, instance, window.Milliseconds())},
		"time":  {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
	}
	resp, err := http.Get(promURL + "/api/v1/query?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data.Result) == 0 {
		t.Fatalf("max scrape duration of %s: %v", instance, err)
	}
	v, _ := body.Data.Result[0].Value[1].(string)
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("max scrape duration of %s: %q: %v", instance, v, err)
	}
	return time.Duration(sec * float64(time.Second))
}

// firstTimes returns when each alert of r's exporter first reached state
// (from Prometheus' ALERTS series), and how often the preventive alert
// returned to state after a gap before the failure.
func firstTimes(t *testing.T, promURL, state string, r *result, start, end time.Time) (map[string]time.Time, int) {
	t.Helper()
	q := url.Values{
		"query": {fmt.Sprintf(`ALERTS{alertstate=%q,instance=%q}`, state, r.instance)},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(evalInterval.Seconds(), 'f', 3, 64)},
	}
	resp, err := http.Get(promURL + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query_range ALERTS: %v %s", err, body.Error)
	}
	first := map[string]time.Time{}
	refires := 0
	for _, s := range body.Data.Result {
		name := s.Metric["alertname"]
		if ns, pod := s.Metric["namespace"], s.Metric["pod"]; state == "firing" && pod != "" {
			if r.pods == nil {
				r.pods = map[string]bool{}
			}
			r.pods[ns+"/"+pod] = true
		}
		var prev time.Time
		for _, v := range s.Values {
			ts, ok := v[0].(float64)
			if !ok {
				continue
			}
			at := time.UnixMilli(int64(ts * 1000))
			if !r.since.IsZero() && !at.After(r.since) {
				continue // the process before the measured one
			}
			if f, seen := first[name]; !seen || at.Before(f) {
				first[name] = at
			}
			// A gap of more than a scrape: resolved in between (the
			// range query carries a sample over for 5 minutes of
			// lookback, compressed to 5 s: gaps shorter than that are
			// not visible, which errs towards "no flap").
			if name == r.tl.Preventive && !prev.IsZero() && at.Sub(prev) > 2*scrapeInterval &&
				(r.failure.IsZero() || at.Before(r.failure)) {
				refires++
			}
			prev = at
		}
	}
	return first, refires
}

// report renders the results as the markdown table docs/headroom.md keeps.
func report(results []*result) string {
	var b strings.Builder
	b.WriteString("| timeline | expects | preventive alert first pending / firing | failure | lead | longest scrape | other alerts (first firing) |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	simAt := func(r *result, at time.Time) string {
		if at.IsZero() {
			return "—"
		}
		return fmt.Sprintf("%.1f min", toSim(at.Sub(r.start)).Minutes())
	}
	for _, r := range results {
		expects := "silence"
		prev, lead := "—", "—"
		if !r.tl.Silent {
			expects = fmt.Sprintf("%s ≥ %.1f min before the failure", r.tl.Preventive, r.tl.MinLead.Minutes())
			p, f := r.firstPend[r.tl.Preventive], r.firstFire[r.tl.Preventive]
			prev = simAt(r, p) + " / " + simAt(r, f)
			first := f
			if !p.IsZero() && (f.IsZero() || p.Before(f)) {
				first = p
			}
			if !first.IsZero() && !r.failure.IsZero() {
				lead = fmt.Sprintf("%.1f min", toSim(r.failure.Sub(first)).Minutes())
			}
		}
		var others []string
		for name, at := range r.firstFire {
			if name != r.tl.Preventive {
				others = append(others, fmt.Sprintf("%s (%s)", name, simAt(r, at)))
			}
		}
		sort.Strings(others)
		o := strings.Join(others, ", ")
		if o == "" {
			o = "none"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f s | %s |\n", r.tl.Name, expects, prev, simAt(r, r.failure), lead,
			toSim(r.maxScrape).Seconds(), o)
	}
	return b.String()
}

// TestMain removes the binary shared by the tests of this package.
func TestMain(m *testing.M) { testtools.Main(m) }
