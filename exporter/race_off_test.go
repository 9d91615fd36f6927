//go:build !race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard without the race
// detector. Measured on the shared 2-core machine: uncached 0.8 (stock
// registries and expfmt as the baseline, in parallel), a stable set
// 0.035, cached 1.1–1.7.
const (
	limitUncached = 1.5
	limitStable   = 0.25
	limitCached   = 20.0
	guardRounds   = 7
	guardScrapes  = 10
)
