package main

import (
	"fmt"
	"slices"
)

// stealLimit is the steal above which a run's latencies are the host's
// rather than the exporter's (stealNote).
const stealLimit = 10.0

// compare runs the baseline binary and c.exporter alternately, rounds times
// each, on the same node, and prints every run's latencies and CPU with the
// steal during it, then the medians and their ratio (this binary /
// baseline) over the runs with little steal, and over all runs.
func compare(c config, baseline string, rounds int) error {
	var base, head []*result
	for i := 0; i < rounds; i++ {
		for _, side := range []struct {
			bin  string
			into *[]*result
		}{{baseline, &base}, {c.exporter, &head}} {
			rc := c
			rc.exporter = side.bin
			r, err := run(rc)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", side.bin, i+1, err)
			}
			*side.into = append(*side.into, r)
		}
	}
	rows := []struct {
		name string
		get  func(*result) (v, steal float64)
	}{
		{"sequential p50, ms", func(r *result) (float64, float64) { return r.Seq[0], r.SeqSteal }},
		{"sequential p99, ms", func(r *result) (float64, float64) { return r.Seq[1], r.SeqSteal }},
		{"exporter CPU per sequential scrape, ms", func(r *result) (float64, float64) { return r.CPUPerScrape, r.SeqSteal }},
		{fmt.Sprintf("%d scrapers back to back, p99 ms", c.scrapers), func(r *result) (float64, float64) {
			return r.Concurrent[0].MS[1], r.Concurrent[0].Steal
		}},
		{fmt.Sprintf("%d scrapers every %v, p99 ms", c.scrapers, c.pace), func(r *result) (float64, float64) {
			return r.Concurrent[1].MS[1], r.Concurrent[1].Steal
		}},
	}
	fmt.Printf("\n## %s against %s: %d alternated rounds (%s)\n\n", c.exporter, baseline, rounds, c.label)
	fmt.Println("| measurement | run | baseline (steal %) | this binary (steal %) |")
	fmt.Println("|---|--:|--:|--:|")
	for _, row := range rows {
		for i := range base {
			bv, bs := row.get(base[i])
			hv, hs := row.get(head[i])
			fmt.Printf("| %s | %d | %.1f (%.0f) | %.1f (%.0f) |\n", row.name, i+1, bv, bs, hv, hs)
		}
	}
	fmt.Println()
	fmt.Printf("| measurement | baseline, median | this binary, median | ratio | runs with steal < %.0f %% (baseline / this) |\n", stealLimit)
	fmt.Println("|---|--:|--:|--:|--:|")
	for _, row := range rows {
		bq, ball := medians(base, row.get)
		hq, hall := medians(head, row.get)
		quiet := "none"
		if bq.n > 0 && hq.n > 0 {
			quiet = fmt.Sprintf("%.1f / %.1f = %.2f (%d / %d runs)", bq.median, hq.median, hq.median/bq.median, bq.n, hq.n)
		}
		fmt.Printf("| %s | %.1f | %.1f | %.2f | %s |\n", row.name, ball.median, hall.median, hall.median/ball.median, quiet)
	}
	return nil
}

type med struct {
	median float64
	n      int
}

// medians returns the median of get over the runs with steal below
// stealLimit, and over all runs.
func medians(rs []*result, get func(*result) (float64, float64)) (quiet, all med) {
	var q, a []float64
	for _, r := range rs {
		v, steal := get(r)
		a = append(a, v)
		if steal < stealLimit {
			q = append(q, v)
		}
	}
	return median(q), median(a)
}

func median(vs []float64) med {
	if len(vs) == 0 {
		return med{}
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return med{median: m, n: len(vs)}
}
