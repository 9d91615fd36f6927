//go:build race

package exporter

// Limits and sizes of TestScrapeCostRegressionGuard under the race
// detector, which slows every path about tenfold and the registry's
// per-collector buffering more than client_golang's. Measured: uncached
// 0.6 (1.2–1.4 before the gather and encoding ran in parallel), a stable
// set 0.04, cached 1.0–2.7.
const (
	limitUncached = 2.5
	limitStable   = 0.4
	limitCached   = 30.0
	guardRounds   = 5
	guardScrapes  = 4
)
