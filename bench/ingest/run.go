package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/treegen"
	"github.com/hccl-exporter/hccl_exporter/bench/internal/probe"
)

// grepPattern is what the timed grep counts: the lines the exporter acts on
// beyond counting them (ERROR and WARNING lines, [HCCL_ENV] settings). Our
// tools answer the same number as error + warning + hccl_env.
const grepPattern = `^\[(ERROR|WARNING)\]|\[HCCL_ENV\]`

// grepChecks are the untimed per-count greps of the agreement table. The
// fault patterns follow the fault catalog: an ERROR line of HCCL or HCCP
// carrying every part of the fingerprint (the generator never demotes those
// with ErrToWarn).
var grepChecks = []struct {
	name, pattern string
}{
	{"lines", ``},
	{"info", `^\[INFO\]`},
	{"warning", `^\[WARNING\]`},
	{"error", `^\[ERROR\]`},
	{"hccl_env", `\[HCCL_ENV\]`},
	{"ei0011", `^\[ERROR\] HCC[LP]\(.*ra qp create fail.*out of memory`},
	{"ei0006", `^\[ERROR\] HCC[LP]\(.*wait socket establish timeout`},
}

// mtailProg counts what the exporter counts: lines by level, [HCCL_ENV]
// lines and the two fault codes, with the same patterns as grep.
const mtailProg = `# Equivalent of hccl_exporter's plog counting, for the ingest benchmark.
counter lines_total
counter level_lines_total by level
counter hccl_env_lines_total
counter fault_events_total by code

/$/ {
  lines_total++
}
/^\[(?P<level>[A-Z]+)\] / {
  level_lines_total[$level]++
}
/\[HCCL_ENV\]/ {
  hccl_env_lines_total++
}
/^\[ERROR\] HCC[LP]\(.*ra qp create fail.*out of memory/ {
  fault_events_total["EI0011"]++
}
/^\[ERROR\] HCC[LP]\(.*wait socket establish timeout/ {
  fault_events_total["EI0006"]++
}
`

type timing struct {
	wall   time.Duration
	maxRSS int64 // KiB
	cpu    time.Duration
}

type toolResult struct {
	name    string
	runs    []timing
	answer  Answer
	timedN  int64 // the count the timed command printed (grep: matching lines)
	skipped string
}

func (r *toolResult) median() timing {
	if len(r.runs) == 0 {
		return timing{}
	}
	w := make([]timing, len(r.runs))
	copy(w, r.runs)
	sort.Slice(w, func(i, j int) bool { return w[i].wall < w[j].wall })
	m := w[len(w)/2]
	var rss int64
	for _, t := range r.runs {
		rss = max(rss, t.maxRSS)
	}
	m.maxRSS = rss
	return m
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	exporter := fs.String("exporter", "", "hccl_exporter binary (for diagnose)")
	sizes := fs.String("sizes", "100M,1G", "tree sizes")
	rounds := fs.Int("rounds", 3, "alternated rounds per size (the median is reported)")
	work := fs.String("work", "bench/out", "where trees are written and kept")
	mtailMax := fs.String("mtail-max", "1G", "largest tree mtail reads (it is slow); larger trees skip it")
	mtailRounds := fs.Int("mtail-rounds", 1, "rounds of mtail (at most -rounds)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	_ = fs.Parse(args)
	if *exporter == "" {
		usage()
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	mtMax, err := probe.ParseSize(*mtailMax)
	if err != nil {
		return err
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return fmt.Errorf("/usr/bin/time missing: apt-get install -y time")
	}
	mtailBin, _ := exec.LookPath("mtail")
	progDir := filepath.Join(*work, "mtail-prog")
	if err := os.MkdirAll(progDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(progDir, "cann.mtail"), []byte(mtailProg), 0o644); err != nil {
		return err
	}

	type sizeResult struct {
		label string
		m     manifest
		tools []*toolResult
	}
	var all []sizeResult
	failed := false
	for _, sz := range strings.Split(*sizes, ",") {
		n, err := probe.ParseSize(sz)
		if err != nil {
			return err
		}
		spec := treegen.Default()
		spec.Bytes = n
		dir := filepath.Join(*work, "tree-"+sz)
		t0 := time.Now()
		m, reused, err := ensureTree(dir, spec)
		if err != nil {
			return err
		}
		if !reused {
			fmt.Printf("# wrote %s (%d files, %.0f MB) in %.1fs\n", dir, m.Counts.Files, float64(m.Counts.Bytes)/1e6, time.Since(t0).Seconds())
		}
		root := filepath.Join(dir, "log")
		// Warm the page cache: every tool reads from memory.
		if _, err := newlineScan(root); err != nil {
			return err
		}
		tools := []*toolResult{
			{name: "hccl_exporter ingest (follower+state)"},
			{name: "hccl_exporter diagnose"},
			{name: "grep -rcE (LC_ALL=C)"},
			{name: "mtail --one_shot"},
		}
		ours, diag, grep, mt := tools[0], tools[1], tools[2], tools[3]
		if mtailBin == "" {
			mt.skipped = "mtail not installed (apt-get install -y mtail)"
		} else if n > mtMax {
			mt.skipped = "tree above -mtail-max"
		}
		for r := 0; r < *rounds; r++ {
			// Alternate the order so that no tool always runs first.
			order := []*toolResult{ours, diag, grep, mt}
			if r%2 == 1 {
				order = []*toolResult{mt, grep, diag, ours}
			}
			for _, t := range order {
				if t.skipped != "" || (t == mt && len(t.runs) >= *mtailRounds) {
					continue
				}
				var err error
				switch t {
				case ours:
					err = runOurs(t, self, root)
				case diag:
					err = runDiagnose(t, *exporter, root)
				case grep:
					err = runGrep(t, root)
				case mt:
					err = runMtail(t, mtailBin, progDir, root)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
			}
		}
		grep.answer = grepCounts(root)
		if !agree(sz, m, tools) {
			failed = true
		}
		all = append(all, sizeResult{label: sz, m: m, tools: tools})
	}

	// Timing table.
	fmt.Printf("\n## Ingest: one full pass over a CANN log tree (median of %d alternated rounds; mtail %d)\n\n", *rounds, *mtailRounds)
	fmt.Println("| tree | tool | wall s | MB/s | CPU s | peak RSS MiB | × grep |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|")
	type out struct {
		Size   string         `json:"size"`
		Counts treegen.Counts `json:"counts"`
		Tool   string         `json:"tool"`
		Wall   float64        `json:"wall_seconds"`
		CPU    float64        `json:"cpu_seconds"`
		RSS    int64          `json:"peak_rss_kib"`
	}
	var js []out
	for _, s := range all {
		g := s.tools[2].median().wall.Seconds()
		for _, t := range s.tools {
			if t.skipped != "" {
				fmt.Printf("| %s | %s | — | — | — | — | (%s) |\n", s.label, t.name, t.skipped)
				continue
			}
			md := t.median()
			w := md.wall.Seconds()
			fmt.Printf("| %s (%d files) | %s | %.2f | %.0f | %.2f | %.0f | %.2f |\n", s.label, s.m.Counts.Files, t.name, w,
				float64(s.m.Counts.Bytes)/1e6/w, md.cpu.Seconds(), float64(md.maxRSS)/1024, w/g)
			js = append(js, out{s.label, s.m.Counts, t.name, w, md.cpu.Seconds(), md.maxRSS})
		}
	}

	// Targets.
	fmt.Print("\n## Ingest targets\n\n")
	fmt.Println("| check | measured | target | verdict |")
	fmt.Println("|---|--:|--:|---|")
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	for _, s := range all {
		ours := s.tools[0].median().wall.Seconds()
		g := s.tools[2].median().wall.Seconds()
		fmt.Printf("| %s: ingest time / grep time | %.2f | ≤ 3 (aim 2) | %s |\n", s.label, ours/g, verdict(ours/g <= 3))
		if mt := s.tools[3]; mt.skipped == "" {
			r := mt.median().wall.Seconds() / ours
			fmt.Printf("| %s: mtail time / ingest time | %.1f | ≥ 10 | %s |\n", s.label, r, verdict(r >= 10))
		}
	}
	if len(all) >= 2 {
		a, b := all[0], all[len(all)-1]
		ra, rb := float64(a.tools[0].median().maxRSS), float64(b.tools[0].median().maxRSS)
		fmt.Printf("| ingest peak RSS %s / %s | %.2f (%.0f / %.0f MiB) | ≤ 1.20 | %s |\n", b.label, a.label, rb/ra, rb/1024, ra/1024, verdict(rb/ra <= 1.2))
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(js, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if failed {
		return fmt.Errorf("the tools disagree on the counts (see above)")
	}
	return nil
}

// timed runs argv under /usr/bin/time -v and returns its stdout and timing.
func timed(env []string, argv ...string) ([]byte, timing, error) {
	tf, err := os.CreateTemp("", "time-*.txt")
	if err != nil {
		return nil, timing{}, err
	}
	tf.Close()
	defer os.Remove(tf.Name())
	cmd := exec.Command("/usr/bin/time", append([]string{"-v", "-o", tf.Name()}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	tb, _ := os.ReadFile(tf.Name())
	t, perr := parseTimeV(tb)
	if perr != nil {
		return nil, t, fmt.Errorf("%v (%v): %s %s", perr, runErr, stderr.String(), tb)
	}
	if runErr != nil {
		if ee, ok := runErr.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			return nil, t, fmt.Errorf("%v: %s", runErr, lastLines(stderr.String(), 5))
		}
	}
	return stdout.Bytes(), t, nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

var (
	reWall = regexp.MustCompile(`Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)`)
	reRSS  = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)
	reUser = regexp.MustCompile(`User time \(seconds\): ([\d.]+)`)
	reSys  = regexp.MustCompile(`System time \(seconds\): ([\d.]+)`)
)

func parseTimeV(b []byte) (timing, error) {
	var t timing
	m := reWall.FindSubmatch(b)
	if m == nil {
		return t, fmt.Errorf("no wall time in /usr/bin/time output")
	}
	h, _ := strconv.ParseFloat(string(m[1]), 64)
	mi, _ := strconv.ParseFloat(string(m[2]), 64)
	s, _ := strconv.ParseFloat(string(m[3]), 64)
	t.wall = time.Duration((h*3600 + mi*60 + s) * float64(time.Second))
	if m := reRSS.FindSubmatch(b); m != nil {
		t.maxRSS, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	var cpu float64
	for _, re := range []*regexp.Regexp{reUser, reSys} {
		if m := re.FindSubmatch(b); m != nil {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			cpu += v
		}
	}
	t.cpu = time.Duration(cpu * float64(time.Second))
	return t, nil
}

func runOurs(t *toolResult, self, root string) error {
	out, tm, err := timed(nil, self, "read", "-root", root)
	if err != nil {
		return err
	}
	var a Answer
	if err := json.Unmarshal(out, &a); err != nil {
		return fmt.Errorf("read output %q: %w", out, err)
	}
	t.runs = append(t.runs, tm)
	t.answer = a
	return nil
}

func runDiagnose(t *toolResult, exporter, root string) error {
	out, tm, err := timed(nil, exporter, "diagnose", "--format=json", "--layout=node", root)
	if err != nil {
		return err
	}
	var rep struct {
		Nodes []struct {
			Lines int64 `json:"lines"`
		} `json:"nodes"`
		Faults []struct {
			Code     string `json:"code"`
			BySource struct {
				Plog int64 `json:"plog"`
			} `json:"by_source"`
		} `json:"faults"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return fmt.Errorf("diagnose JSON: %w", err)
	}
	a := unknown()
	a.Lines, a.EI0011, a.EI0006 = 0, 0, 0
	for _, n := range rep.Nodes {
		a.Lines += n.Lines
	}
	for _, f := range rep.Faults {
		switch f.Code {
		case "EI0011":
			a.EI0011 = f.BySource.Plog
		case "EI0006":
			a.EI0006 = f.BySource.Plog
		}
	}
	t.runs = append(t.runs, tm)
	t.answer = a
	return nil
}

func sumGrepC(out []byte) int64 {
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if i := strings.LastIndexByte(l, ':'); i >= 0 {
			v, _ := strconv.ParseInt(l[i+1:], 10, 64)
			n += v
		}
	}
	return n
}

func runGrep(t *toolResult, root string) error {
	out, tm, err := timed([]string{"LC_ALL=C"}, "grep", "-rcE", grepPattern, root)
	if err != nil {
		return err
	}
	t.runs = append(t.runs, tm)
	t.timedN = sumGrepC(out)
	return nil
}

// grepCounts runs the untimed per-count greps.
func grepCounts(root string) Answer {
	a := unknown()
	for _, c := range grepChecks {
		cmd := exec.Command("grep", "-rcE", c.pattern, root)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, _ := cmd.Output() // exit 1 when nothing matched
		n := sumGrepC(out)
		switch c.name {
		case "lines":
			a.Lines = n
		case "info":
			a.Info = n
		case "warning":
			a.Warning = n
		case "error":
			a.Error = n
		case "hccl_env":
			a.HCCLEnv = n
		case "ei0011":
			a.EI0011 = n
		case "ei0006":
			a.EI0006 = n
		}
	}
	return a
}

var reProm = regexp.MustCompile(`(?m)^(\w+)(?:\{([^}]*)\})? ([0-9.e+]+)$`)

func runMtail(t *toolResult, bin, progDir, root string) error {
	out, tm, err := timed(nil, bin, "--one_shot", "--one_shot_format=prometheus", "--emit_prog_label=false",
		"--progs", progDir, "--logs", filepath.Join(root, "run", "plog", "*.log"),
		"--logs", filepath.Join(root, "run", "device-*", "*.log"), "--logtostderr")
	if err != nil {
		return err
	}
	a := unknown()
	a.Info, a.Warning, a.Error, a.EI0011, a.EI0006 = 0, 0, 0, 0, 0
	for _, m := range reProm.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[3]), 64)
		n := int64(v)
		lbl := string(m[2])
		switch string(m[1]) {
		case "lines_total":
			a.Lines = n
		case "hccl_env_lines_total":
			a.HCCLEnv = n
		case "level_lines_total":
			switch {
			case strings.Contains(lbl, `"INFO"`):
				a.Info = n
			case strings.Contains(lbl, `"WARNING"`):
				a.Warning = n
			case strings.Contains(lbl, `"ERROR"`):
				a.Error = n
			}
		case "fault_events_total":
			switch {
			case strings.Contains(lbl, `"EI0011"`):
				a.EI0011 = n
			case strings.Contains(lbl, `"EI0006"`):
				a.EI0006 = n
			}
		}
	}
	t.runs = append(t.runs, tm)
	t.answer = a
	return nil
}

// agree prints the counts side by side and reports whether every tool that
// answers a count answers what the generator wrote.
func agree(label string, m manifest, tools []*toolResult) bool {
	c := m.Counts
	want := Answer{c.Lines, c.Info, c.Warning, c.Error, c.HCCLEnv, c.EI0011, c.EI0006}
	fmt.Printf("\n## Counts, %s tree (%d files, %.0f MB)\n\n", label, c.Files, float64(c.Bytes)/1e6)
	fmt.Printf("| count | generator | %s | %s | %s | %s |\n", tools[0].name, tools[1].name, "grep -rcE", tools[3].name)
	fmt.Println("|---|--:|--:|--:|--:|--:|")
	ok := true
	get := func(a Answer) []int64 {
		return []int64{a.Lines, a.Info, a.Warning, a.Error, a.HCCLEnv, a.EI0011, a.EI0006}
	}
	names := []string{"lines", "INFO lines", "WARNING lines", "ERROR lines", "[HCCL_ENV] lines", "EI0011 events (plog)", "EI0006 events (plog)"}
	w := get(want)
	for i, name := range names {
		row := fmt.Sprintf("| %s | %d", name, w[i])
		for _, t := range tools {
			if t.skipped != "" {
				row += " | —"
				continue
			}
			v := get(t.answer)[i]
			switch {
			case v < 0:
				row += " | n/a"
			case v != w[i]:
				row += fmt.Sprintf(" | **%d MISMATCH**", v)
				ok = false
			default:
				row += fmt.Sprintf(" | %d", v)
			}
		}
		fmt.Println(row + " |")
	}
	timedWant := c.Error + c.Warning + c.HCCLEnv
	g := tools[2].timedN
	mark := ""
	if g != timedWant {
		mark = " **MISMATCH**"
		ok = false
	}
	fmt.Printf("\nTimed grep pattern `%s` matched %d lines; generator error+warning+hccl_env = %d%s.\n", grepPattern, g, timedWant, mark)
	return ok
}
