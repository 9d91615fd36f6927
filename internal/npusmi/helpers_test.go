package npusmi

import (
	"os"
	"testing"
)

// demoScript is the demo's fake npu-smi, whose table is part of the fuzz
// corpus.
const demoScript = "../../examples/demo/npu-smi"

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failingInputs are the testdata files Parse must reject.
var failingInputs = map[string]error{
	"error-dcmi-init-failed.txt": ErrDCMIInit,
	"error-no-card.txt":          ErrNoCard,
	"info-l-910b4.txt":           ErrNoTable,
	"info-m-910a.txt":            ErrNoTable,
	"info-m-910b4-mcu.txt":       ErrNoTable,
	"info-t-proc-mem-a3.txt":     ErrNoTable,
	"info-t-usages-910b1.txt":    ErrNoTable,
	// The reference's §1.2 capture (marked possibly test-edited) lists 4
	// NPUs but accounts for NPU 0 only in its process table: by structure
	// that is a cut table. The -all-npus copy is the whole table.
	"info-910a-warning-v23.0.rc1.txt": ErrTruncated,
}

// sampleTable is a whole 8-NPU table with its processes.
const sampleTable = "testdata/info-910b4-procs-v24.1.rc3.txt"
