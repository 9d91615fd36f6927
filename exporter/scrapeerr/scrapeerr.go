// Package scrapeerr owns the errors a collector returns to tell the
// registry how to count and log a scrape's failure (package exporter
// re-exports them). It imports nothing, so that a package whose model is
// also used offline (headroom by diagnose) links no HTTP code for them.
package scrapeerr

import "errors"

// ErrNoData tells the registry that a collector had nothing to report this
// scrape; it is logged at debug level and still counts as success.
var ErrNoData = errors.New("collector returned no data")

// ErrDependency marks a failure caused by a source that another collector
// reads and reports itself (headroom failing because npu-smi failed): the
// scrape still counts as failed, but the registry logs it at debug level so
// one broken npu-smi is not logged twice per scrape.
var ErrDependency = errors.New("a source this collector depends on failed")
