package npuhealth

import (
	"fmt"

	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// messages classify an answer by what npu-smi printed. npu-smi prints every
// message on stdout and exits 0 for "does not support" and permission
// refusals, so the text decides, never the status alone. First match wins.
var messages = []sweep.Message{
	// DCMI_ERR_CODE_RESOURCE_OCCUPIED: another DCMI user holds the device
	// (the npu-smi info of a scrape, npu-exporter, a job's dcmi call).
	// Asked again at the next sweep; not a fault of the chip.
	{Text: "ret is -8020", Result: sweep.Busy},
	{Text: "because the device is used", Result: sweep.Busy},
	// The product lacks the query: remembered, not asked again.
	{Text: "does not support querying", Result: sweep.Unsupported},
	{Text: "does not support input parameter of -c", Result: sweep.Unsupported},
	{Text: "Error parameter in querying chip info", Result: sweep.Unsupported},
	// Everything else that is a message, not data.
	{Text: "Failed to query", Result: sweep.Error},
	{Text: "dcmi module initialize failed", Result: sweep.Error},
	{Text: "can be executed only by the root user", Result: sweep.Error},
	{Text: "cannot be executed on a", Result: sweep.Error},
	{Text: "Invalid card id", Result: sweep.Error},
	{Text: "Invalid chip id", Result: sweep.Error},
	{Text: "Error parameter of", Result: sweep.Error},
	{Text: "Must input parameter of chip id", Result: sweep.Error},
}

// classify turns a finished call into a result; err quotes what npu-smi said.
func classify(o vendorcli.Result) (string, error) {
	if result, err, ok := sweep.Unfinished(o); ok {
		return result, err
	}
	if o.Truncated {
		return sweep.Error, fmt.Errorf("printed more than %d bytes; output rejected", maxOutputBytes)
	}
	if m, line, ok := sweep.Match(messages, o.Stdout, o.Stderr); ok {
		return m.Result, fmt.Errorf("exit status %d: %s", o.ExitCode, clip(line))
	}
	if o.ExitCode != 0 {
		msg := vendorcli.FirstLine(o.Stdout)
		if msg == "" {
			msg = vendorcli.FirstLine(o.Stderr)
		}
		if msg == "" {
			return sweep.Error, fmt.Errorf("exit status %d with no output", o.ExitCode)
		}
		return sweep.Error, fmt.Errorf("exit status %d: %s", o.ExitCode, clip(msg))
	}
	return sweep.Success, nil
}

func clip(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
