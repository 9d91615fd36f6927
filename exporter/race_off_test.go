//go:build !race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard without the race
// detector. Measured on the shared 2-core machine: uncached 0.35–0.7,
// cached 0.7–1.3.
const (
	limitUncached = 1.5
	limitCached   = 20.0
	guardRounds   = 7
	guardScrapes  = 10
)
