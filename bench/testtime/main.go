// Command testtime says where a `go test -json` run spent its seconds: the
// packages and the top-level tests that took longest, and the run's wall
// time from its first event to its last (docs/benchmarks.md, "Where the
// test suite's time goes"):
//
//	go test -short -count=1 -json ./... > /tmp/tt.json
//	go run ./bench/testtime [-top 15] [-sub] /tmp/tt.json
//
// A package's time is what `go test` reports for its test binary (it runs
// next to others, -p GOMAXPROCS, so the sum exceeds the wall time); a
// test's time is its Elapsed, or, where its subtests ran in parallel after
// it returned (go test then reports the parent's own body only), the span
// from its first subtest's start to its last one's end. With -sub,
// subtests are listed too.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// summary is what one run's events add up to.
type summary struct {
	pkgs         map[string]float64 // package -> seconds of its test binary
	tests        map[string]float64 // "package Test[/sub]" -> seconds
	failed       []string
	spans        map[string][2]time.Time // "package Test" -> its subtests' first start, last end
	first, last  time.Time
	packageCount int
}

func read(r io.Reader, sub bool) (*summary, error) {
	s := &summary{pkgs: map[string]float64{}, tests: map[string]float64{}, spans: map[string][2]time.Time{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			continue // go test's own stderr lines, when merged in
		}
		var e event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if !e.Time.IsZero() {
			if s.first.IsZero() || e.Time.Before(s.first) {
				s.first = e.Time
			}
			if e.Time.After(s.last) {
				s.last = e.Time
			}
		}
		pkg := strings.TrimPrefix(e.Package, modulePrefix(e.Package))
		if parent, _, isSub := strings.Cut(e.Test, "/"); isSub && (e.Action == "run" || e.Action == "pass" || e.Action == "fail") {
			k := pkg + " " + parent
			sp := s.spans[k]
			if sp[0].IsZero() || e.Time.Before(sp[0]) {
				sp[0] = e.Time
			}
			if e.Time.After(sp[1]) {
				sp[1] = e.Time
			}
			s.spans[k] = sp
		}
		if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
			continue
		}
		if e.Test == "" {
			s.pkgs[pkg] = e.Elapsed
			s.packageCount++
			if e.Action == "fail" {
				s.failed = append(s.failed, pkg)
			}
			continue
		}
		if !sub && strings.Contains(e.Test, "/") {
			continue
		}
		s.tests[pkg+" "+e.Test] = e.Elapsed
		if e.Action == "fail" {
			s.failed = append(s.failed, pkg+" "+e.Test)
		}
	}
	for k, sp := range s.spans {
		if d := sp[1].Sub(sp[0]).Seconds(); d > s.tests[k] {
			if _, ok := s.tests[k]; ok {
				s.tests[k] = d
			}
		}
	}
	return s, sc.Err()
}

// modulePrefix is the part of an import path that every row would repeat.
func modulePrefix(pkg string) string {
	const mod = "github.com/hccl-exporter/hccl_exporter"
	if strings.HasPrefix(pkg, mod+"/") {
		return mod + "/"
	}
	return ""
}

type row struct {
	name string
	sec  float64
}

func top(m map[string]float64, n int) ([]row, float64) {
	rows := make([]row, 0, len(m))
	var sum float64
	for k, v := range m {
		rows = append(rows, row{k, v})
		sum += v
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].sec != rows[j].sec {
			return rows[i].sec > rows[j].sec
		}
		return rows[i].name < rows[j].name
	})
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows, sum
}

func print(w io.Writer, s *summary, n int) {
	wall := s.last.Sub(s.first).Seconds()
	fmt.Fprintf(w, "wall %.1fs (first event to last), %d packages\n\n", wall, s.packageCount)
	rows, sum := top(s.pkgs, n)
	fmt.Fprintf(w, "%8s  %s (sum %.1fs)\n", "seconds", "package", sum)
	for _, r := range rows {
		fmt.Fprintf(w, "%8.2f  %s\n", r.sec, r.name)
	}
	rows, sum = top(s.tests, n)
	fmt.Fprintf(w, "\n%8s  %s (sum %.1fs)\n", "seconds", "test", sum)
	for _, r := range rows {
		fmt.Fprintf(w, "%8.2f  %s\n", r.sec, r.name)
	}
	if len(s.failed) > 0 {
		fmt.Fprintf(w, "\nfailed: %s\n", strings.Join(s.failed, ", "))
	}
}

func main() {
	n := flag.Int("top", 15, "rows per table (0: all)")
	sub := flag.Bool("sub", false, "list subtests too")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go test -json ./... | testtime [flags] [file]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	in := io.Reader(os.Stdin)
	if flag.NArg() > 0 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtime:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	s, err := read(in, *sub)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtime: read go test -json:", err)
		os.Exit(1)
	}
	print(os.Stdout, s, *n)
}
