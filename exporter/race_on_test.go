//go:build race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard under the race
// detector, which slows every path about tenfold. Measured: uncached
// 0.33–0.44, cached 1.0–1.6.
const (
	limitUncached = 1.5
	limitCached   = 30.0
	guardRounds   = 5
	guardScrapes  = 4
)
