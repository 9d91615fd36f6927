package diagnose

import (
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"

	"github.com/hccl-exporter/hccl_exporter/diagnose/analyse"
)

// Options tune Run (package analyse).
type Options = analyse.Options

// Run reads the bundle at paths and builds its report. An *InputError means
// an input could not be used at all (exit 2, no report); problems reading
// part of an input are listed in Report.Errors (status incomplete).
func Run(paths []string, opts Options) (*model.Report, error) { return analyse.Run(paths, opts) }

// ParseNodeZones reads NODE=ZONE pairs (--node-timezone).
func ParseNodeZones(pairs []string) (map[string]*time.Location, error) {
	return analyse.ParseNodeZones(pairs)
}

// DTypeSizes are the element sizes of the data types `diagnose buffsize`
// accepts, in bytes.
var DTypeSizes = analyse.DTypeSizes

// DTypes lists the accepted data types, sorted.
func DTypes() []string { return analyse.DTypes() }

// BuffSizeMB is the guide's recommended HCCL_BUFFSIZE for large language
// models: ceil(MicrobatchSize × SequenceLength × hiddenSize ×
// sizeof(DataType) / 1 MiB), in HCCL's MB (MiB), at least 1.
func BuffSizeMB(microBatchSize, seqLen, hiddenSize uint64, dtype string) (uint64, error) {
	return analyse.BuffSizeMB(microBatchSize, seqLen, hiddenSize, dtype)
}
