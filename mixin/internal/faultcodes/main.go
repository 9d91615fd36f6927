// Command faultcodes writes the fault-code table (internal/cann/logstate
// codes.go) in the form the mixin imports, mixin/lib/faultcodes.json, so
// that the alerting policy's code lists come from the one table. `make
// mixin` runs it; mixin's tests fail when the file is stale.
package main

import (
	"fmt"
	"os"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: faultcodes <output.json>")
		os.Exit(2)
	}
	b, err := logstate.FaultTableJSON()
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultcodes:", err)
		os.Exit(1)
	}
}
