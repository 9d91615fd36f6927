//go:build race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard under the race
// detector, which slows every path about tenfold; docs/benchmarks.md has
// what is measured.
const (
	limitUncached = 2.5
	limitCached   = 30.0
	guardRounds   = 5
	guardScrapes  = 4
)
