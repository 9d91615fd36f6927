//go:build !race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard without the race
// detector; docs/benchmarks.md has what is measured. The uncached limit
// leaves room for a busy machine (the ratio moves by a third between runs
// on a shared host), not for a second validation of every series.
const (
	limitUncached = 2.0
	limitCached   = 20.0
	guardRounds   = 7
	guardScrapes  = 10
)
