package testtools

import (
	"fmt"
	"strings"
)

// NPUSMIChip is one chip of an `npu-smi info` table (chip 0 of its NPU).
type NPUSMIChip struct {
	NPU         int
	Name        string // "910B3" when empty
	PowerW      float64
	TempC       int
	BusID       string
	AICorePct   int
	HBMUsedMiB  int
	HBMTotalMiB int // 65536 when 0
}

// NPUSMIProcess is one row of the table's process section.
type NPUSMIProcess struct{ NPU, PID, MemoryMiB int }

// NPUSMITable prints `npu-smi info` as npu-smi 24.1 does on Ascend 910B:
// the chips, then per chip its processes in the order given, or the line
// npu-smi prints for a chip without any. Tests write their own tables with
// it, so the numbers they check cannot drift with the demo's captures.
func NPUSMITable(chips []NPUSMIChip, procs []NPUSMIProcess) string {
	const (
		rule = "+------------------------------------------------------------------------------------------------+\n"
		cols = "+---------------------------+---------------+----------------------------------------------------+\n"
		sep  = "+===========================+===============+====================================================+\n"
	)
	var b strings.Builder
	b.WriteString(rule)
	b.WriteString("| npu-smi 24.1.rc3                 Version: 24.1.rc3                                             |\n")
	b.WriteString(cols)
	b.WriteString("| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n")
	b.WriteString("| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n")
	b.WriteString(sep)
	for _, c := range chips {
		name, total := c.Name, c.HBMTotalMiB
		if name == "" {
			name = "910B3"
		}
		if total == 0 {
			total = 65536
		}
		fmt.Fprintf(&b, "| %-5d %-20s| OK            | %-11.1f %-17d 0    / 0             |\n", c.NPU, name, c.PowerW, c.TempC)
		fmt.Fprintf(&b, "| 0                         | %-13s | %-11d 0    / 0          %-5d/ %-14d|\n", c.BusID, c.AICorePct, c.HBMUsedMiB, total)
		b.WriteString(sep)
	}
	b.WriteString(cols)
	b.WriteString("| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n")
	b.WriteString(sep)
	for _, c := range chips {
		n := 0
		for _, p := range procs {
			if p.NPU == c.NPU {
				fmt.Fprintf(&b, "| %-7d 0                 | %-13d | python3                  | %-24d|\n", p.NPU, p.PID, p.MemoryMiB)
				b.WriteString(sep)
				n++
			}
		}
		if n == 0 {
			fmt.Fprintf(&b, "| %-95s|\n", fmt.Sprintf("No running processes found in NPU %d", c.NPU))
			b.WriteString(sep)
		}
	}
	return b.String()
}
