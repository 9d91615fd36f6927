package exporter

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A stock prometheus.Registry validates, hashes and converts every metric on
// the goroutine that called Gather: on the worst-case node that is about
// 1.8 µs per series, 9 ms of a scrape's 15, on one of the node's cores
// (docs/benchmarks.md). shardedGather splits one scrape's metrics across
// several stock registries, family by family, and gathers them in parallel;
// each registry still does all of its own validation. Their answers are
// disjoint families, so merging them is a sort by name.

// maxParts bounds the goroutines a scrape's per-series work (its gather,
// its encoding) is spread over: past a few, the other of the two bounds it.
const maxParts = 4

// minPartSeries is the number of series below which that work stays on one
// goroutine: splitting costs a few goroutines and a map, worth it only when
// the work it spreads is milliseconds long.
const minPartSeries = 1024

// partsFor returns over how many goroutines the work on n series is spread
// on this machine: the registries a scrape is gathered by, the runs its
// answer is encoded in.
func partsFor(n int) int {
	if n < minPartSeries {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), maxParts)
}

// metricSlice is an unchecked collector over metrics already collected.
type metricSlice []prometheus.Metric

func (metricSlice) Describe(chan<- *prometheus.Desc) {}
func (s metricSlice) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s {
		ch <- m
	}
}

// shardedGather gathers ms and the collectors of own (the exporter's own
// metrics, registered as checked collectors in the first registry) through
// shards stock registries in parallel and merges their families with those
// of gathered (stable sets gathered before).
func shardedGather(own []prometheus.Collector, ms []prometheus.Metric, shards int, gathered ...[]*dto.MetricFamily) ([]*dto.MetricFamily, error) {
	parts := splitByFamily(ms, max(shards, 1))
	regs := make([]*prometheus.Registry, len(parts))
	for i, part := range parts {
		regs[i] = prometheus.NewRegistry()
		if i == 0 {
			for _, c := range own {
				if err := regs[i].Register(c); err != nil {
					return nil, fmt.Errorf("register the exporter's own metrics: %w", err)
				}
			}
		}
		if err := regs[i].Register(metricSlice(part)); err != nil {
			return nil, fmt.Errorf("register collectors for this scrape: %w", err)
		}
	}
	results := make([][]*dto.MetricFamily, len(regs), len(regs)+len(gathered))
	errs := make([]error, len(regs))
	var wg sync.WaitGroup
	for i := 1; i < len(regs); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = regs[i].Gather()
		}()
	}
	results[0], errs[0] = regs[0].Gather() // on this goroutine
	wg.Wait()
	mfs, err := mergeFamilies(append(results, gathered...))
	return mfs, errors.Join(append(errs, err)...)
}

// splitByFamily splits ms into at most n parts so that every metric of one
// Desc is in one part (a family in one registry, so that it is validated as
// a whole) and the parts are about equally large: the largest families first,
// each to the part with the fewest metrics so far. The order of ms is kept
// within each part.
func splitByFamily(ms []prometheus.Metric, n int) [][]prometheus.Metric {
	if n <= 1 || len(ms) == 0 {
		return [][]prometheus.Metric{ms}
	}
	type family struct {
		count, part int
		first       int // index of its first metric, to break ties stably
	}
	index := make(map[*prometheus.Desc]int, 64)
	var fams []family
	of := make([]int32, len(ms)) // the family of each metric
	for i, m := range ms {
		d := m.Desc()
		f, ok := index[d]
		if !ok {
			f = len(fams)
			index[d] = f
			fams = append(fams, family{first: i})
		}
		fams[f].count++
		of[i] = int32(f)
	}
	n = min(n, len(fams))
	if n <= 1 {
		return [][]prometheus.Metric{ms}
	}
	order := make([]int, len(fams))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(fams[b].count, fams[a].count), cmp.Compare(fams[a].first, fams[b].first))
	})
	sizes := make([]int, n)
	for _, f := range order {
		p := 0
		for i := 1; i < n; i++ {
			if sizes[i] < sizes[p] {
				p = i
			}
		}
		fams[f].part = p
		sizes[p] += fams[f].count
	}
	parts := make([][]prometheus.Metric, n)
	for i := range parts {
		parts[i] = make([]prometheus.Metric, 0, sizes[i])
	}
	for i, m := range ms {
		p := fams[of[i]].part
		parts[p] = append(parts[p], m)
	}
	return parts
}

// mergeFamilies merges the registries' answers into one list sorted by name,
// as one registry returns it. A family found in more than one answer (a
// collector that builds a Desc per metric rather than one per family) is
// merged, checked across the answers as a registry checks it, and sorted.
func mergeFamilies(results [][]*dto.MetricFamily) ([]*dto.MetricFamily, error) {
	n := 0
	for _, r := range results {
		n += len(r)
	}
	all := make([]*dto.MetricFamily, 0, n)
	for _, r := range results {
		all = append(all, r...)
	}
	slices.SortStableFunc(all, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	var errs []error
	var merged []int // where out holds a merged family
	out := all[:0]
	for _, mf := range all {
		if len(out) == 0 || out[len(out)-1].GetName() != mf.GetName() {
			out = append(out, mf)
			continue
		}
		prev := out[len(out)-1]
		if prev.GetType() != mf.GetType() {
			errs = append(errs, fmt.Errorf("collected metric family %q is both a %s and a %s: the %s series are left out",
				mf.GetName(), prev.GetType(), mf.GetType(), mf.GetType()))
			continue
		}
		if prev.GetHelp() != mf.GetHelp() {
			errs = append(errs, fmt.Errorf("collected metric family %q has help %q but should have %q: those series are left out",
				mf.GetName(), mf.GetHelp(), prev.GetHelp()))
			continue
		}
		// The registries' families are theirs to give away: merge into
		// a new one rather than append to the first registry's.
		out[len(out)-1] = &dto.MetricFamily{Name: prev.Name, Help: prev.Help, Type: prev.Type, Unit: prev.Unit,
			Metric: append(slices.Clip(prev.Metric), mf.Metric...)}
		if len(merged) == 0 || merged[len(merged)-1] != len(out)-1 {
			merged = append(merged, len(out)-1)
		}
	}
	for _, i := range merged {
		errs = append(errs, sortUnique(out[i])...)
	}
	return out, errors.Join(errs...)
}

// sortUnique sorts a merged family's metrics as a registry does and drops
// the later of two metrics with the same labels, as a registry drops a
// metric collected twice.
func sortUnique(mf *dto.MetricFamily) []error {
	slices.SortStableFunc(mf.Metric, compareMetrics)
	var errs []error
	kept := mf.Metric[:0]
	for _, m := range mf.Metric {
		if len(kept) > 0 && sameSeries(kept[len(kept)-1], m) {
			errs = append(errs, fmt.Errorf("collected metric %q { %s} was collected before with the same name and label values",
				mf.GetName(), m))
			continue
		}
		kept = append(kept, m)
	}
	mf.Metric = kept
	return errs
}

// compareMetrics orders the metrics of one family as client_golang's
// registry does: by label count, then label values, then timestamp (none
// last).
func compareMetrics(a, b *dto.Metric) int {
	if c := cmp.Compare(len(a.Label), len(b.Label)); c != 0 {
		return c
	}
	for i, lp := range a.Label {
		if c := strings.Compare(lp.GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	switch {
	case a.TimestampMs == nil && b.TimestampMs == nil:
		return 0
	case a.TimestampMs == nil:
		return 1
	case b.TimestampMs == nil:
		return -1
	}
	return cmp.Compare(a.GetTimestampMs(), b.GetTimestampMs())
}

// sameSeries reports whether a and b have the same labels and timestamp:
// what a registry's uniqueness check hashes.
func sameSeries(a, b *dto.Metric) bool {
	if len(a.Label) != len(b.Label) || (a.TimestampMs == nil) != (b.TimestampMs == nil) ||
		a.GetTimestampMs() != b.GetTimestampMs() {
		return false
	}
	for i, lp := range a.Label {
		if lp.GetName() != b.Label[i].GetName() || lp.GetValue() != b.Label[i].GetValue() {
			return false
		}
	}
	return true
}
