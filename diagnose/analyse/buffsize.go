package analyse

import (
	"fmt"
	"math/bits"
	"sort"
)

// DTypeSizes are the element sizes of the data types `diagnose buffsize`
// accepts, in bytes.
var DTypeSizes = map[string]uint64{
	"fp32": 4,
	"fp16": 2,
	"bf16": 2,
	"int8": 1,
}

// DTypes lists the accepted data types, sorted.
func DTypes() []string {
	out := make([]string, 0, len(DTypeSizes))
	for k := range DTypeSizes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// BuffSizeMB is the guide's recommended HCCL_BUFFSIZE for large language
// models: ceil(MicrobatchSize × SequenceLength × hiddenSize ×
// sizeof(DataType) / 1 MiB), in HCCL's MB (MiB), at least 1 (HCCL's
// minimum).
func BuffSizeMB(microBatchSize, seqLen, hiddenSize uint64, dtype string) (uint64, error) {
	size, ok := DTypeSizes[dtype]
	if !ok {
		return 0, fmt.Errorf("unknown data type %q (want one of %v)", dtype, DTypes())
	}
	if microBatchSize == 0 || seqLen == 0 || hiddenSize == 0 {
		return 0, fmt.Errorf("micro-batch size, sequence length and hidden size must be positive")
	}
	prod := uint64(1)
	for _, f := range []uint64{microBatchSize, seqLen, hiddenSize, size} {
		hi, lo := bits.Mul64(prod, f)
		if hi != 0 {
			return 0, fmt.Errorf("%d × %d × %d × %d bytes overflows", microBatchSize, seqLen, hiddenSize, size)
		}
		prod = lo
	}
	const mib = 1 << 20
	mb := prod / mib
	if prod%mib != 0 {
		mb++
	}
	return max(mb, 1), nil
}
