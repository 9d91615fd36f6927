package npuhealth

import (
	"bytes"
	"fmt"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// Call results, the values of hccl_exporter_npu_smi_detail_calls_total{result}.
const (
	resultSuccess     = "success"
	resultTimeout     = "timeout"
	resultBusy        = "busy"
	resultUnsupported = "unsupported"
	resultError       = "error"
	resultParseError  = "parse_error"
)

var callResults = []string{resultSuccess, resultTimeout, resultBusy, resultUnsupported, resultError, resultParseError}

// messages classify an answer by what npu-smi printed. npu-smi prints every
// message on stdout and exits 0 for "does not support" and permission
// refusals, so the text decides, never the status alone. First match wins.
var messages = []struct{ text, result string }{
	// DCMI_ERR_CODE_RESOURCE_OCCUPIED: another DCMI user holds the device
	// (the npu-smi info of a scrape, npu-exporter, a job's dcmi call).
	// Asked again at the next sweep; not a fault of the chip.
	{"ret is -8020", resultBusy},
	{"because the device is used", resultBusy},
	// The product lacks the query: remembered, not asked again.
	{"does not support querying", resultUnsupported},
	{"does not support input parameter of -c", resultUnsupported},
	{"Error parameter in querying chip info", resultUnsupported},
	// Everything else that is a message, not data.
	{"Failed to query", resultError},
	{"dcmi module initialize failed", resultError},
	{"can be executed only by the root user", resultError},
	{"cannot be executed on a", resultError},
	{"Invalid card id", resultError},
	{"Invalid chip id", resultError},
	{"Error parameter of", resultError},
	{"Must input parameter of chip id", resultError},
}

// classify turns a finished call into a result; err quotes what npu-smi said.
func classify(o vendorcli.Result) (string, error) {
	switch {
	case o.TimedOut:
		return resultTimeout, fmt.Errorf("timed out after %s (its process group was killed)", o.Duration.Round(time.Millisecond))
	case o.Err != nil:
		return resultError, o.Err
	case o.Truncated:
		return resultError, fmt.Errorf("printed more than %d bytes; output rejected", maxOutputBytes)
	}
	both := append(append(append([]byte{}, o.Stdout...), '\n'), o.Stderr...)
	for _, m := range messages {
		if i := bytes.Index(both, []byte(m.text)); i >= 0 {
			return m.result, fmt.Errorf("exit status %d: %s", o.ExitCode, clip(lineAt(both, i)))
		}
	}
	if o.ExitCode != 0 {
		msg := vendorcli.FirstLine(o.Stdout)
		if msg == "" {
			msg = vendorcli.FirstLine(o.Stderr)
		}
		if msg == "" {
			return resultError, fmt.Errorf("exit status %d with no output", o.ExitCode)
		}
		return resultError, fmt.Errorf("exit status %d: %s", o.ExitCode, clip(msg))
	}
	return resultSuccess, nil
}

// lineAt is the line of b holding offset i.
func lineAt(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	end := bytes.IndexByte(b[i:], '\n')
	if end < 0 {
		return string(bytes.TrimSpace(b[start:]))
	}
	return string(bytes.TrimSpace(b[start : i+end]))
}

func clip(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
