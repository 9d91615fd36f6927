//go:build !race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard without the race
// detector. Measured on the shared 2-core machine: uncached 0.35–1.05
// (the same registry and encoder as the baseline, plus the per-collector
// buffering), cached 1.1.
const (
	limitUncached = 1.5
	limitCached   = 20.0
	guardRounds   = 7
	guardScrapes  = 10
)
