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
